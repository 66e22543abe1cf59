package io.exalt.runner;

import io.exalt.bench.Plots;
import java.io.File;
import java.lang.reflect.Method;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarStyle;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.hdfs.server.datanode.DirectoryScanner;
import org.knowm.xchart.XYChart;
import picocli.CommandLine.Option;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/**
 * {@code exalt blockscan}: one emulated DataNode accumulates blocks (1 MiB Tardis blocks, replication 1); at each
 * step the DataNode's DirectoryScanner is run to completion and timed, while a probe client measures the
 * latency of small writes issued during the scan (does the scan block writes?). §4.5.1 "DataNode scalability".
 */
@Command(name = "blockscan", mixinStandardHelpOptions = true, description = "Time the DataNode block scan as blocks per DataNode grow.")
public final class BlockScanCommand implements Callable<Integer> {
    @Option(names = "--steps", split = ",", defaultValue = "1000,5000,10000,20000", description = "Block counts at which to time the scan.")
    List<Integer> steps;

    @Mixin
    RunnerOptions options;

    @Mixin
    RunnerOptions.Ports ports;

    @Override
    public Integer call() throws Exception {
        File base = options.base();
        int ports = this.ports.portBase();
        EmulatedHdfs.checkAgent(new File(base, "data"), ports, 1);
        List<String> rows = new ArrayList<>();
        try (EmulatedHdfs hdfs = EmulatedHdfs.start(base, 1, ports, 10, 1L << 20, 512, 1, null)) {
            FileSystem fs = hdfs.fs();
            DataNode dn = hdfs.dataNode(0);
            Method gm = DataNode.class.getDeclaredMethod("getDirectoryScanner");
            gm.setAccessible(true);
            DirectoryScanner scanner = (DirectoryScanner) gm.invoke(dn);
            if (scanner == null) {
                throw new IllegalStateException("DataNode has no DirectoryScanner (dfs.datanode.directoryscan.interval <= 0?)");
            }
            byte[] block = new byte[1 << 20];
            new io.exalt.tardis.TardisGenerator(block.length).fill(0, block, 0, block.length);
            // setup only: 16 parallel writers, and a short completeFile retry delay (default 400 ms) so that
            // thousands of one-block files can be created quickly
            org.apache.hadoop.conf.Configuration cc = new org.apache.hadoop.conf.Configuration(hdfs.conf);
            cc.setInt("dfs.client.block.write.locateFollowingBlock.initial.delay.ms", 20);
            FileSystem writer = FileSystem.newInstance(fs.getUri(), cc);
            java.util.concurrent.atomic.AtomicInteger next = new java.util.concurrent.atomic.AtomicInteger();
            int have = 0;
            for (int target : steps) {
                try (ProgressBar pb = new ProgressBarBuilder().setTaskName("blocks").setInitialMax(target).setStyle(ProgressBarStyle.ASCII)
                        .setUpdateIntervalMillis(1000).build()) {
                    pb.stepTo(have);
                    final int goal = target;
                    Thread[] ws = new Thread[16];
                    java.util.concurrent.atomic.AtomicReference<Exception> err = new java.util.concurrent.atomic.AtomicReference<>();
                    for (int i = 0; i < ws.length; i++) {
                        ws[i] = new Thread(() -> {
                            int k;
                            while ((k = next.getAndIncrement()) < goal && err.get() == null) {
                                try (FSDataOutputStream o = writer.create(new org.apache.hadoop.fs.Path("/scan/d" + (k / 1000) + "/b" + k),
                                        (short) 1)) {
                                    o.write(block);
                                } catch (Exception e) {
                                    err.set(e);
                                }
                                pb.step();
                            }
                        });
                        ws[i].start();
                    }
                    for (Thread w : ws) {
                        w.join();
                    }
                    next.set(goal);
                    if (err.get() != null) {
                        throw err.get();
                    }
                    have = goal;
                }
                // probe writer: small files written while the scan runs
                List<Long> lat = new ArrayList<>();
                java.util.concurrent.atomic.AtomicBoolean stopProbe = new java.util.concurrent.atomic.AtomicBoolean();
                java.util.concurrent.atomic.AtomicBoolean measuring = new java.util.concurrent.atomic.AtomicBoolean();
                Thread probe = new Thread(() -> {
                    int k = 0;
                    while (!stopProbe.get()) {
                        long t0 = System.nanoTime();
                        try (FSDataOutputStream o = fs.create(new org.apache.hadoop.fs.Path("/probe/p" + k++), (short) 1)) {
                            o.write(block, 0, 4096);
                        } catch (Exception e) {
                            return;
                        }
                        if (measuring.get()) {
                            synchronized (lat) {
                                lat.add(System.nanoTime() - t0);
                            }
                        }
                    }
                });
                probe.start();
                Thread.sleep(500);
                measuring.set(true); // only writes that complete while the scan runs are counted
                long t0 = System.nanoTime();
                scanner.reconcile();
                double scanMs = (System.nanoTime() - t0) / 1e6;
                measuring.set(false);
                stopProbe.set(true); // no interrupt: an interrupted DFSOutputStream.close() can wedge shutdown
                probe.join(30_000);
                long max;
                double avg;
                synchronized (lat) {
                    max = lat.stream().mapToLong(Long::longValue).max().orElse(0);
                    avg = lat.stream().mapToLong(Long::longValue).average().orElse(0);
                }
                System.out.printf(Locale.ROOT, "%d blocks: scan %.1f ms; probe writes during scan: %d, avg %.1f ms, max %.1f ms%n", have,
                        scanMs, lat.size(), avg / 1e6, max / 1e6);
                rows.add(String.format(Locale.ROOT, "%d,%.1f,%d,%.2f,%.2f", have, scanMs, lat.size(), avg / 1e6, max / 1e6));
                Plots.csv(options.out.resolve("exalt-blockscan.csv"), "blocks_per_datanode,scan_ms,probe_writes,probe_avg_ms,probe_max_ms", rows);
            }
            writer.close();
        }
        XYChart ch = Plots.xy("DataNode block scan time vs blocks (Hadoop 3.4.2, emulated DataNode)", "blocks on the DataNode",
                "scan time (ms)", false);
        double[] x = rows.stream().mapToDouble(r -> Double.parseDouble(r.split(",")[0])).toArray();
        double[] y = rows.stream().mapToDouble(r -> Double.parseDouble(r.split(",")[1])).toArray();
        ch.addSeries("DirectoryScanner.reconcile()", x, y);
        Plots.png(ch, options.out.resolve("exalt-blockscan.png"));
        return 0;
    }

}
