package io.exalt.runner;

import io.exalt.agent.boot.ExaltRuntime;
import io.exalt.bench.Plots;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarStyle;
import org.apache.hadoop.fs.FileSystem;
import org.knowm.xchart.XYChart;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code exalt hdfs}: a real NameNode and N emulated DataNodes in this JVM, driven by emulated clients writing
 * Tardis data; reports aggregate client throughput, client-observed NameNode latency (create, close=complete),
 * NameNode RPC queue/processing time and call queue length (JMX), live DataNodes, CPU and heap.
 * Lists in --datanodes / --handlers run one experiment per value (a sweep).
 */
@Command(name = "hdfs", mixinStandardHelpOptions = true,
        description = "Run an emulated HDFS cluster (real NameNode, emulated DataNodes) and measure it.")
public final class HdfsCommand implements Callable<Integer> {
    @Option(names = "--datanodes", split = ",", defaultValue = "10", description = "Emulated DataNodes; a list runs a sweep (default ${DEFAULT-VALUE}).")
    List<Integer> datanodes;

    @Option(names = "--clients", defaultValue = "0", description = "Emulated clients (0 = as many as DataNodes, at most 64).")
    int clients;

    @Option(names = "--handlers", split = ",", defaultValue = "10", description = "NameNode RPC handler threads (dfs.namenode.handler.count); a list runs a sweep.")
    List<Integer> handlers;

    @Option(names = "--workload", defaultValue = "own-dir", description = "own-dir | same-dir | growing-file (default ${DEFAULT-VALUE}).")
    String workload;

    @Option(names = "--file-size", defaultValue = "192m", description = "Bytes per file (own-dir/same-dir), e.g. 192m (default ${DEFAULT-VALUE}).")
    String fileSize;

    @Option(names = "--block-size", defaultValue = "128m", description = "HDFS block size (default ${DEFAULT-VALUE}).")
    String blockSize;

    @Option(names = "--replication", defaultValue = "3", description = "Replication (default ${DEFAULT-VALUE}).")
    short replication;

    @Option(names = "--bytes-per-checksum", defaultValue = "512", description = "dfs.bytes-per-checksum; .meta files are 4/N of the data and not compressible (default ${DEFAULT-VALUE}).")
    int bytesPerChecksum;

    @Option(names = "--duration", defaultValue = "60", description = "Measured seconds per experiment (default ${DEFAULT-VALUE}).")
    int duration;

    @Mixin
    RunnerOptions.Warmup warmup;

    @Option(names = "--min-files-per-client", defaultValue = "5", description = "Keep measuring after --duration until every"
            + " client has completed (written and closed) at least this many files in the measured window, up to --max-duration;"
            + " 0 = fixed --duration (default ${DEFAULT-VALUE}; ignored for growing-file).")
    int minFilesPerClient;

    @Option(names = "--max-duration", defaultValue = "900", description = "Upper bound of the measured seconds per experiment;"
            + " a run cut here is marked complete=false in the CSV (default ${DEFAULT-VALUE}).")
    int maxDuration;

    @Option(names = "--nn-log", defaultValue = "off", description = "NameNode state-change/audit/INFO log: off (WARN only),"
            + " disk (a file next to the NameNode's edit log, as in the paper's first setup) or tmpfs (/dev/shm, the paper's"
            + " fix) (default ${DEFAULT-VALUE}).")
    String nnLog;

    @Option(names = "--interval", defaultValue = "5", description = "Sampling interval in seconds (default ${DEFAULT-VALUE}).")
    int interval;

    @Option(names = "--prefill", defaultValue = "0", description = "Empty files created in the target directory before measuring (same-dir/own-dir studies).")
    int prefill;

    @Mixin
    RunnerOptions options;

    @Mixin
    RunnerOptions.Ports ports;

    @Option(names = "--name", defaultValue = "exalt-hdfs", description = "File name stem of the outputs (default ${DEFAULT-VALUE}).")
    String name;

    @Option(names = "--measure-disk", description = "Also measure this disk's sequential write bandwidth (fsync'd) and report the effective/physical ratio.")
    boolean measureDisk;

    static long size(String s) {
        String t = s.trim().toLowerCase(Locale.ROOT);
        long mul = 1;
        if (t.endsWith("k")) {
            mul = 1L << 10;
        } else if (t.endsWith("m")) {
            mul = 1L << 20;
        } else if (t.endsWith("g")) {
            mul = 1L << 30;
        }
        try {
            return Long.parseLong(mul == 1 ? t : t.substring(0, t.length() - 1)) * mul;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("size '" + s + "' is not a number with optional k/m/g suffix, e.g. 192m");
        }
    }

    @Override
    public Integer call() throws Exception {
        File base = options.base();
        int ports = this.ports.portBase();
        Workload.Kind kind = switch (workload) {
            case "own-dir" -> Workload.Kind.OWN_DIR;
            case "same-dir" -> Workload.Kind.SAME_DIR;
            case "growing-file" -> Workload.Kind.GROWING_FILE;
            default -> throw new IllegalArgumentException("--workload must be own-dir, same-dir or growing-file, not " + workload);
        };
        if (!List.of("off", "disk", "tmpfs").contains(nnLog)) {
            throw new IllegalArgumentException("--nn-log must be off, disk or tmpfs, not " + nnLog);
        }
        int maxDn = datanodes.stream().mapToInt(Integer::intValue).max().orElse(1);
        EmulatedHdfs.checkAgent(new File(base, "data"), ports, maxDn);
        double diskMBps = measureDisk ? measureDisk(base) : Double.NaN;
        Path summary = options.out.resolve(name + ".csv");
        List<String> rows = new ArrayList<>();
        String header = "workload,datanodes,clients,handlers,file_size,block_size,replication,bytes_per_checksum,duration_s,"
                + "throughput_MBps,files,create_ms,close_ms,rpc_queue_ms,rpc_processing_ms,call_queue_len,live_datanodes_min,"
                + "cpu_cores,heap_MB,heap_MB_per_datanode,disk_bytes,logical_bytes_on_datanodes,disk_ratio,errors,disk_MBps,ratio,"
                + "files_per_s,min_files_per_client,complete,nn_log,load_avg_start";
        for (int dn : datanodes) {
            for (int h : handlers) {
                rows.add(runOne(base, ports, kind, dn, h, diskMBps));
                Plots.csv(summary, header, rows);
            }
        }
        plotSummary(summary, rows);
        System.out.println("wrote " + summary + " (+ .png and per-run time series)");
        return 0;
    }

    private String runOne(File base, int ports, Workload.Kind kind, int dn, int h, double diskMBps) throws Exception {
        int c = clients > 0 ? clients : Math.min(dn, 64);
        long fs0 = size(fileSize);
        long bs = size(blockSize);
        String tag = String.format("%s-%s-dn%d-h%d", name, workload, dn, h);
        System.out.printf("== %s: %d DataNodes, %d clients, %d handlers, %s files, %s blocks, replication %d%n", tag, dn, c, h,
                fileSize, blockSize, replication);
        long logical0 = ExaltRuntime.LOGICAL_BYTES_WRITTEN.get();
        double load0 = loadAverage();
        NameNodeLog.configure(nnLog, base);
        long tStart = System.nanoTime();
        EmulatedHdfs hdfs;
        try (ProgressBar pb = new ProgressBarBuilder().setTaskName("start DNs").setInitialMax(dn).setStyle(ProgressBarStyle.ASCII)
                .setUpdateIntervalMillis(500).build()) {
            hdfs = EmulatedHdfs.start(base, dn, ports, h, bs, bytesPerChecksum, replication, pb::stepTo);
        }
        for (int i = 0; hdfs.liveDataNodes() < dn; i++) { // a DataNode that failed to register would make every write fail
            if (i == 120) {
                hdfs.close();
                throw new IllegalStateException("only " + hdfs.liveDataNodes() + " of " + dn + " DataNodes registered with the"
                        + " NameNode within 2 minutes of start-up (machine overloaded? see the DataNode warnings above)");
            }
            Thread.sleep(1000);
        }
        System.out.printf("   cluster up in %.1f s%n", (System.nanoTime() - tStart) / 1e9);
        List<String> series = new ArrayList<>();
        String result;
        try {
            FileSystem fs = hdfs.fs();
            Sampler s = new Sampler(hdfs.nnRpcPort);
            if (prefill > 0) {
                prefill(fs, kind, c);
            }
            Workload w = new Workload(kind, fs, c, kind == Workload.Kind.GROWING_FILE ? Long.MAX_VALUE : fs0, bs, replication);
            w.start();
            Thread.sleep(warmup.warmup * 1000L);
            long b0 = w.bytes.sum();
            long f0 = w.files.sum();
            double cpuSum = 0;
            double heapMax = 0;
            double rpcQ = 0;
            double rpcP = 0;
            double cq = 0;
            int samples = 0;
            int liveMin = Integer.MAX_VALUE;
            long lastB = b0;
            long lastF = f0;
            long lastCn = w.createNanos.sum();
            long lastC = w.creates.sum();
            long lastXn = w.closeNanos.sum();
            long lastX = w.closes.sum();
            s.cpuCores();
            long t0 = System.nanoTime();
            long[] files0 = w.clientFilesSnapshot();
            final long startCn = lastCn;
            final long startC = lastC;
            final long startXn = lastXn;
            final long startX = lastX;
            long minFiles = 0;
            boolean wantFiles = minFilesPerClient > 0 && kind != Workload.Kind.GROWING_FILE;
            try (ProgressBar pb = new ProgressBarBuilder().setTaskName(tag).setInitialMax(duration).setUnit(" s", 1)
                    .setStyle(ProgressBarStyle.ASCII).setUpdateIntervalMillis(1000).build()) {
                for (int t = interval; t <= Math.max(duration, maxDuration); t += interval) {
                    Thread.sleep(Math.max(0, t0 / 1_000_000 + t * 1000L - System.nanoTime() / 1_000_000));
                    long b = w.bytes.sum();
                    long f = w.files.sum();
                    long cn = w.createNanos.sum();
                    long cc = w.creates.sum();
                    long xn = w.closeNanos.sum();
                    long xx = w.closes.sum();
                    double cpu = s.cpuCores();
                    double heap = s.heapMb();
                    int live = hdfs.liveDataNodes();
                    double q = s.rpc("RpcQueueTimeAvgTime");
                    double pr = s.rpc("RpcProcessingTimeAvgTime");
                    double ql = s.rpc("CallQueueLength");
                    double mbps = (b - lastB) / 1048576.0 / interval;
                    double createMs = cc > lastC ? (cn - lastCn) / 1e6 / (cc - lastC) : Double.NaN;
                    double closeMs = xx > lastX ? (xn - lastXn) / 1e6 / (xx - lastX) : Double.NaN;
                    series.add(String.format(Locale.ROOT, "%d,%.1f,%d,%d,%.3f,%.3f,%.3f,%.3f,%.0f,%d,%.2f,%.0f", t, mbps, f - f0,
                            kind == Workload.Kind.GROWING_FILE ? b / Math.max(1, bs) / c : f + prefill, createMs, closeMs, q, pr,
                            ql, live, cpu, heap));
                    cpuSum += cpu;
                    heapMax = Math.max(heapMax, heap);
                    rpcQ += Double.isNaN(q) ? 0 : q;
                    rpcP += Double.isNaN(pr) ? 0 : pr;
                    cq += Double.isNaN(ql) ? 0 : ql;
                    samples++;
                    liveMin = Math.min(liveMin, live);
                    lastB = b;
                    lastF = f;
                    lastCn = cn;
                    lastC = cc;
                    lastXn = xn;
                    lastX = xx;
                    long[] fnow = w.clientFilesSnapshot();
                    minFiles = Long.MAX_VALUE;
                    for (int i = 0; i < fnow.length; i++) {
                        minFiles = Math.min(minFiles, fnow[i] - files0[i]);
                    }
                    if (t >= duration && pb.getMax() < t + interval) {
                        pb.maxHint(t + interval); // still waiting for files to complete
                    }
                    pb.stepTo(t);
                    pb.setExtraMessage(String.format(" %.0f MB/s, %d live DNs, files/client min %d%s", mbps, live, minFiles,
                            wantFiles ? " (need " + minFilesPerClient + ")" : ""));
                    if (t >= duration && (!wantFiles || minFiles >= minFilesPerClient)) {
                        break;
                    }
                    if (t >= maxDuration) {
                        break;
                    }
                }
            }
            boolean complete = !wantFiles || minFiles >= minFilesPerClient;
            if (!complete) {
                System.out.printf("   WARNING: stopped at --max-duration %d s with only %d files per client (wanted %d):"
                        + " complete=false%n", maxDuration, minFiles, minFilesPerClient);
            }
            double secs = (System.nanoTime() - t0) / 1e9;
            long bytes = w.bytes.sum() - b0;
            long files = w.files.sum() - f0;
            // latencies over the measured window only (not the warm-up)
            long nc = w.creates.sum() - startC;
            long nx = w.closes.sum() - startX;
            double createMs = nc > 0 ? (w.createNanos.sum() - startCn) / 1e6 / nc : Double.NaN;
            double closeMs = nx > 0 ? (w.closeNanos.sum() - startXn) / 1e6 / nx : Double.NaN;
            w.stop();
            long disk = Sampler.diskUsage(new File(base, "data"));
            long logical = ExaltRuntime.LOGICAL_BYTES_WRITTEN.get() - logical0;
            double mbps = bytes / 1048576.0 / secs;
            System.out.printf(Locale.ROOT, "   %.1f MB/s aggregate client throughput (%d files, %.2f files/s, >= %d per client),"
                    + " create %.2f ms, close %.2f ms, %d/%d live DNs,"
                    + " CPU %.2f cores, heap max %.0f MB; DataNode disk %d B for %d logical bytes; errors %d%s%n", mbps, files,
                    files / secs, minFiles,
                    createMs, closeMs, liveMin, dn, cpuSum / samples, heapMax, disk, logical, w.errors.get(),
                    w.lastError == null ? "" : " (last: " + w.lastError + ")");
            double eff = mbps * replication;
            if (!Double.isNaN(diskMBps)) {
                System.out.printf(Locale.ROOT, "   effective DataNode write bandwidth %.0f MB/s vs measured disk %.0f MB/s: %.1fx%n", eff,
                        diskMBps, eff / diskMBps);
            }
            result = String.format(Locale.ROOT, "%s,%d,%d,%d,%d,%d,%d,%d,%.1f,%.1f,%d,%.3f,%.3f,%.3f,%.3f,%.1f,%d,%.2f,%.0f,%.2f,%d,%d,%.1f,%d,%.1f,%.1f,"
                    + "%.3f,%d,%b,%s,%.2f",
                    workload, dn, c, h, fs0, bs, replication, bytesPerChecksum, secs, mbps, files, createMs, closeMs, rpcQ / samples,
                    rpcP / samples, cq / samples, liveMin, cpuSum / samples, heapMax, heapMax / dn, disk, logical,
                    disk > 0 ? (double) logical / disk : Double.NaN, w.errors.get(), diskMBps,
                    Double.isNaN(diskMBps) ? Double.NaN : eff / diskMBps, files / secs, minFiles, complete, nnLog, load0);
        } finally {
            hdfs.close();
        }
        Path ts = options.out.resolve(tag + "-timeseries.csv");
        Plots.csv(ts, "t_s,throughput_MBps,files_completed,files_in_dir_or_blocks_per_file,create_ms,close_ms,rpc_queue_ms,"
                + "rpc_processing_ms,call_queue_len,live_datanodes,cpu_cores,heap_MB", series);
        plotSeries(ts, series, tag);
        return result;
    }

    private void prefill(FileSystem fs, Workload.Kind kind, int c) throws Exception {
        int threads = 8;
        Thread[] ts = new Thread[threads];
        java.util.concurrent.atomic.AtomicInteger next = new java.util.concurrent.atomic.AtomicInteger();
        try (ProgressBar pb = new ProgressBarBuilder().setTaskName("prefill").setInitialMax(prefill).setStyle(ProgressBarStyle.ASCII)
                .setUpdateIntervalMillis(1000).build()) {
            for (int i = 0; i < threads; i++) {
                ts[i] = new Thread(() -> {
                    int k;
                    while ((k = next.getAndIncrement()) < prefill) {
                        String dir = kind == Workload.Kind.SAME_DIR ? "/exalt/shared" : "/exalt/prefill" + (k % c);
                        try {
                            fs.create(new org.apache.hadoop.fs.Path(dir + "/p" + k), replication).close();
                        } catch (Exception e) {
                            throw new RuntimeException(e);
                        }
                        pb.step();
                    }
                });
                ts[i].start();
            }
            for (Thread t : ts) {
                t.join();
            }
        }
    }

    static double loadAverage() {
        try {
            return Double.parseDouble(Files.readString(Paths.get("/proc/loadavg")).split(" ")[0]);
        } catch (Exception e) {
            return Double.NaN;
        }
    }

    private static double measureDisk(File base) throws Exception {
        Path p = base.toPath().resolve("disk-bandwidth-probe");
        Files.createDirectories(base.toPath());
        byte[] buf = new byte[8 << 20];
        new java.util.Random(1).nextBytes(buf);
        long total = 1L << 30;
        long t0 = System.nanoTime();
        try (var ch = java.nio.channels.FileChannel.open(p, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            for (long w = 0; w < total; w += buf.length) {
                java.nio.ByteBuffer bb = java.nio.ByteBuffer.wrap(buf);
                while (bb.hasRemaining()) {
                    ch.write(bb);
                }
            }
            ch.force(true);
        } finally {
            Files.deleteIfExists(p);
        }
        double mbps = total / 1048576.0 / ((System.nanoTime() - t0) / 1e9);
        System.out.printf(Locale.ROOT, "measured disk bandwidth: %.0f MB/s (1 GiB sequential write + fsync)%n", mbps);
        return mbps;
    }

    private void plotSeries(Path csv, List<String> series, String tag) throws Exception {
        XYChart ch = Plots.xy(tag + " (shared 2-core machine)", "time (s)", "aggregate client throughput (MB/s)", false);
        double[] x = new double[series.size()];
        double[] y = new double[series.size()];
        for (int i = 0; i < series.size(); i++) {
            String[] f = series.get(i).split(",");
            x[i] = Double.parseDouble(f[0]);
            y[i] = Double.parseDouble(f[1]);
        }
        if (x.length > 0) {
            ch.addSeries("throughput", x, y);
            Plots.png(ch, Paths.get(csv.toString().replace(".csv", ".png")));
        }
    }

    private void plotSummary(Path summary, List<String> rows) throws Exception {
        boolean byHandlers = handlers.size() > 1 && datanodes.size() == 1;
        XYChart ch = Plots.xy(name + ": throughput vs " + (byHandlers ? "NameNode handlers" : "emulated DataNodes"),
                byHandlers ? "NameNode RPC handlers" : "emulated DataNodes", "aggregate client throughput (MB/s)", false);
        double[] x = new double[rows.size()];
        double[] y = new double[rows.size()];
        for (int i = 0; i < rows.size(); i++) {
            String[] f = rows.get(i).split(",");
            x[i] = Double.parseDouble(f[byHandlers ? 3 : 1]);
            y[i] = Double.parseDouble(f[9]);
        }
        if (x.length > 0) {
            ch.addSeries(workload, x, y);
            Plots.png(ch, Paths.get(summary.toString().replace(".csv", ".png")));
        }
    }

}
