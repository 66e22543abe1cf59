package io.exalt.bench;

import io.exalt.tardis.TardisCompressor;
import io.exalt.tardis.TardisDecompressor;
import io.exalt.tardis.TardisGenerator;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;

/**
 * Benchmark (run by hand, not a test): the per-packet codec work of an emulated DataNode, in GB of logical data per
 * CPU-second of one thread (thread CPU time, so other users of a shared machine do not count): compressing a 64 KiB
 * packet of Tardis data (every byte verified) and decompressing its frame. Best of 12 rounds of 20,000 packets.
 * Put an older build's classes first on the class path to measure that build with this class:
 *
 * <pre>java -cp OLD.jar:exalt-agent/target/exalt-agent-0.1.0-SNAPSHOT.jar io.exalt.bench.PacketCodecBenchmark LABEL</pre>
 *
 * Prints one CSV line: label,compress_verify_GBps_per_cpu_s,decompress_expand_GBps_per_cpu_s.
 */
public final class PacketCodecBenchmark {
    public static void main(String[] args) {
        String label = args.length > 0 ? args[0] : "this-build";
        ThreadMXBean cpu = ManagementFactory.getThreadMXBean();
        int n = 65536;
        byte[] data = new byte[n];
        new TardisGenerator(32L << 20).fill(1 << 20, data, 0, n); // starts inside a unit, as HDFS packet data does
        TardisCompressor c = new TardisCompressor();
        TardisDecompressor d = new TardisDecompressor();
        byte[] out = new byte[TardisCompressor.maxEncodedLength(n)];
        byte[] frame = Arrays.copyOf(out, c.compressTo(data, 0, n, out, 0));
        byte[] back = new byte[n];
        double bestC = 0;
        double bestD = 0;
        long sink = 0;
        for (int r = 0; r < 12; r++) {
            int it = 20_000;
            long t0 = cpu.getCurrentThreadCpuTime();
            for (int i = 0; i < it; i++) {
                sink += c.compressTo(data, 0, n, out, 0);
            }
            long t1 = cpu.getCurrentThreadCpuTime();
            for (int i = 0; i < it; i++) {
                sink += d.decompressTo(frame, 0, frame.length, back, 0);
            }
            long t2 = cpu.getCurrentThreadCpuTime();
            double gb = (double) n * it / 1e9;
            bestC = Math.max(bestC, gb / ((t1 - t0) / 1e9));
            bestD = Math.max(bestD, gb / ((t2 - t1) / 1e9));
        }
        if (!Arrays.equals(data, back) || sink == 42) {
            throw new AssertionError("round trip differs");
        }
        System.out.printf(java.util.Locale.ROOT, "%s,%.1f,%.1f%n", label, bestC, bestD);
    }
}
