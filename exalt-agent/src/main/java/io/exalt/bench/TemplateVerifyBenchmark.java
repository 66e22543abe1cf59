package io.exalt.bench;

import io.exalt.tardis.TardisCompressor;
import io.exalt.tardis.TardisFormat;
import io.exalt.tardis.TardisGenerator;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;

/**
 * Benchmark (run by hand, not a test): is "verify a run with {@code Arrays.mismatch} against a pre-built template"
 * faster than the compressor's word-compare loop? Per 64 KiB packet of Tardis data, GB per thread CPU-second, best
 * of 10 rounds of 20,000 packets: (1) {@code TardisCompressor.compressTo} (every byte verified), (2) expand the
 * template for this packet, then {@code Arrays.mismatch} (a template built per verify), (3) {@code Arrays.mismatch}
 * against a template that already exists (what a template shared by the packet's 6 verifies would cost each of them).
 *
 * <pre>java -cp exalt-agent/target/exalt-agent-0.1.0-SNAPSHOT.jar io.exalt.bench.TemplateVerifyBenchmark</pre>
 *
 * Prints one CSV line: compress_verify_GBps,expand_plus_mismatch_GBps,mismatch_only_GBps.
 */
public final class TemplateVerifyBenchmark {
    public static void main(String[] args) {
        ThreadMXBean cpu = ManagementFactory.getThreadMXBean();
        int n = 65536;
        byte[] data = new byte[n];
        new TardisGenerator(32L << 20).fill(1 << 20, data, 0, n); // starts inside a unit, as HDFS packet data does
        TardisFormat f = TardisFormat.defaultFormat();
        TardisCompressor c = new TardisCompressor(f);
        int p0 = 0;
        while (!f.isFlagAt(data, p0)) {
            p0++;
        }
        long marker = TardisFormat.markerAt(data, p0 + TardisFormat.FLAG_SIZE) + TardisFormat.UNIT; // the cut unit before
        long skip = TardisFormat.UNIT - p0;
        byte[] out = new byte[TardisCompressor.maxEncodedLength(n)];
        byte[] tmpl = new byte[n];
        f.expand(marker, skip, tmpl, 0, n);
        if (Arrays.mismatch(data, tmpl) != -1) {
            throw new IllegalStateException("template does not match the packet: benchmark broken");
        }
        double[] best = new double[3];
        long sink = 0;
        for (int r = 0; r < 10; r++) {
            int it = 20_000;
            long t0 = cpu.getCurrentThreadCpuTime();
            for (int i = 0; i < it; i++) {
                sink += c.compressTo(data, 0, n, out, 0);
            }
            long t1 = cpu.getCurrentThreadCpuTime();
            for (int i = 0; i < it; i++) {
                f.expand(marker, skip, tmpl, 0, n);
                sink += Arrays.mismatch(data, tmpl);
            }
            long t2 = cpu.getCurrentThreadCpuTime();
            for (int i = 0; i < it; i++) {
                int m = n - (i & 7); // a different range each time: the JIT cannot hoist the compare out of the loop
                sink += Arrays.mismatch(data, 0, m, tmpl, 0, m);
            }
            long t3 = cpu.getCurrentThreadCpuTime();
            if (Arrays.mismatch(data, tmpl) != -1) {
                throw new IllegalStateException("data changed: benchmark broken");
            }
            best[0] = Math.max(best[0], (double) n * it / (t1 - t0));
            best[1] = Math.max(best[1], (double) n * it / (t2 - t1));
            best[2] = Math.max(best[2], (double) n * it / (t3 - t2));
        }
        System.out.printf(java.util.Locale.ROOT, "%.1f,%.1f,%.1f%n", best[0], best[1], best[2]);
        if (sink == 42) {
            System.out.println();
        }
    }
}
