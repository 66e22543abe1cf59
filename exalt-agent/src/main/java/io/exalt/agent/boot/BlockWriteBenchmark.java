package io.exalt.agent.boot;

import io.exalt.tardis.TardisGenerator;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.BasicFileAttributes;

/**
 * Benchmark (run by hand, not a test): the agent's cost per DataNode block-file write, in CPU microseconds of the
 * writing thread (user + system: thread CPU time, so other users of a shared machine do not count). Writes 16 MiB
 * block files in 64 KiB pieces of Tardis data as HDFS does (each piece starts inside a unit), through
 * {@link CompressedFile} with the agent's JDK access initialised, into DIR (a real file system: the per-write
 * fstat/stat, ftruncate and xattr system calls are part of the cost). Best of 9 rounds of 8 files. Put an older
 * build's classes first on the class path to measure that build with this class:
 *
 * <pre>java --add-opens java.base/java.io=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED
 *   --add-opens java.base/sun.nio.fs=ALL-UNNAMED -cp OLD.jar:exalt-agent/target/exalt-agent-0.1.0-SNAPSHOT.jar
 *   io.exalt.agent.boot.BlockWriteBenchmark LABEL DIR</pre>
 *
 * Prints one CSV line: label,cpu_us_per_write,user_us_per_write,system_us_per_write.
 */
public final class BlockWriteBenchmark {
    public static void main(String[] args) throws Exception {
        String label = args.length > 0 ? args[0] : "this-build";
        Path dir = Paths.get(args.length > 1 ? args[1] : System.getProperty("java.io.tmpdir"));
        JdkAccess.init();
        ThreadMXBean cpu = ManagementFactory.getThreadMXBean();
        int packet = 65536;
        int perFile = 256; // 16 MiB blocks
        byte[] data = new byte[packet * perFile];
        new TardisGenerator(64L << 20).fill(1 << 20, data, 0, data.length);
        double best = Double.MAX_VALUE;
        double bestUser = 0;
        for (int r = 0; r < 9; r++) {
            long c0 = cpu.getCurrentThreadCpuTime();
            long u0 = cpu.getCurrentThreadUserTime();
            int writes = 0;
            for (int f = 0; f < 8; f++) {
                Path p = Files.createFile(dir.resolve("blk_" + r + "_" + f));
                Object key = Files.readAttributes(p, BasicFileAttributes.class).fileKey();
                CompressedFile cf = new CompressedFile(key, p, true);
                for (int i = 0; i < perFile; i++) {
                    cf.write((long) i * packet, data, i * packet, packet);
                    writes++;
                }
                cf.close();
                Files.delete(p);
            }
            double us = (cpu.getCurrentThreadCpuTime() - c0) / 1e3 / writes;
            if (us < best) {
                best = us;
                bestUser = (cpu.getCurrentThreadUserTime() - u0) / 1e3 / writes;
            }
        }
        System.out.printf(java.util.Locale.ROOT, "%s,%.2f,%.2f,%.2f%n", label, best, bestUser, best - bestUser);
    }
}
