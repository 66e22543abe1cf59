package io.exalt.bench;

import io.exalt.tardis.TardisCompressor;
import io.exalt.tardis.TardisFormat;
import io.exalt.tardis.TardisGenerator;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * Benchmark (run by hand, not a test): the compressor's verify with the shared template pages against the word
 * compare, on the runner's workload: 64 KiB packets that walk through a 32 MiB Tardis file (so the pages of the
 * whole file, 32 MiB, are in play, not one page hot in cache), each starting inside a unit as HDFS packet data does.
 * GB per thread CPU-second, best of {@code rounds} passes over the file; the templates are warmed by one pass first.
 *
 * <pre>java -cp exalt-agent/target/exalt-agent-0.1.0-SNAPSHOT.jar io.exalt.bench.TemplatePagesBenchmark [label] [rounds]</pre>
 *
 * Prints one CSV line: label,expand_GBps,expand_plus_2_word_verifies_GBps,expand_plus_2_template_verifies_GBps,
 * template_verify_hot_GBps (one packet's verify over and over, its page hot in cache),
 * template_copy_plus_2_template_verifies_GBps (the receive copies from the pages instead of expanding).
 */
public final class TemplatePagesBenchmark {
    public static void main(String[] args) {
        String label = args.length > 0 ? args[0] : "run";
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 12;
        ThreadMXBean cpu = ManagementFactory.getThreadMXBean();
        int fileLen = 32 << 20;
        int pkt = 65536;
        byte[] file = new byte[fileLen];
        new TardisGenerator(fileLen).fill(0, file, 0, fileLen);
        TardisFormat f = TardisFormat.defaultFormat();
        TardisCompressor word = TardisCompressor.withoutTemplates(f);
        TardisCompressor tmpl = new TardisCompressor(f);
        byte[] out = new byte[TardisCompressor.maxEncodedLength(pkt)];
        int packets = fileLen / pkt - 1;
        int shift = 7; // packets start inside a unit
        long sink = 0;
        for (int i = 0; i < packets; i++) { // warm the pages and the JIT
            sink += tmpl.compressTo(file, shift + i * pkt, pkt, out, 0) + word.compressTo(file, shift + i * pkt, pkt, out, 0);
        }
        // per packet as on a forwarding DataNode: the receive expands it into a (hot) buffer, then it is verified twice
        // (forward to the mirror, write to the block file); the walk covers the whole file's markers
        byte[] buf = new byte[pkt];
        double[] best = new double[5];
        for (int r = 0; r < rounds; r++) {
            long t0 = cpu.getCurrentThreadCpuTime();
            for (int i = 0; i < packets; i++) {
                long skip = shift + (long) i * pkt;
                f.expand(fileLen - TardisFormat.UNIT, skip, buf, 0, pkt);
                sink += buf[i & 0xFFFF];
            }
            long t1 = cpu.getCurrentThreadCpuTime();
            for (int i = 0; i < packets; i++) {
                f.expand(fileLen - TardisFormat.UNIT, shift + (long) i * pkt, buf, 0, pkt);
                sink += word.compressTo(buf, 0, pkt, out, 0) + word.compressTo(buf, 0, pkt, out, 0);
            }
            long t2 = cpu.getCurrentThreadCpuTime();
            for (int i = 0; i < packets; i++) {
                f.expand(fileLen - TardisFormat.UNIT, shift + (long) i * pkt, buf, 0, pkt);
                sink += tmpl.compressTo(buf, 0, pkt, out, 0) + tmpl.compressTo(buf, 0, pkt, out, 0);
            }
            long t3 = cpu.getCurrentThreadCpuTime();
            for (int i = 0; i < packets; i++) {
                sink += tmpl.compressTo(file, shift + (1 << 20), pkt, out, 0);
            }
            long t4 = cpu.getCurrentThreadCpuTime();
            for (int i = 0; i < packets; i++) {
                f.expandCached(fileLen - TardisFormat.UNIT, shift + (long) i * pkt, buf, 0, pkt);
                sink += tmpl.compressTo(buf, 0, pkt, out, 0) + tmpl.compressTo(buf, 0, pkt, out, 0);
            }
            long t5 = cpu.getCurrentThreadCpuTime();
            best[4] = Math.max(best[4], (double) pkt * packets / (t5 - t4));
            best[0] = Math.max(best[0], (double) pkt * packets / (t1 - t0));
            best[1] = Math.max(best[1], (double) pkt * packets / (t2 - t1));
            best[2] = Math.max(best[2], (double) pkt * packets / (t3 - t2));
            best[3] = Math.max(best[3], (double) pkt * packets / (t4 - t3));
        }
        System.out.printf(java.util.Locale.ROOT, "%s,%.1f,%.1f,%.1f,%.1f,%.1f%n", label, best[0], best[1], best[2], best[3], best[4]);
        if (sink == 42) {
            System.out.println();
        }
    }
}
