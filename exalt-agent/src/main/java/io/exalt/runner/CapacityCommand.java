package io.exalt.runner;

import io.exalt.bench.Plots;
import java.io.File;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.management.ObjectName;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarStyle;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.crypto.CryptoProtocolVersion;
import org.apache.hadoop.fs.CreateFlag;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.protocol.Block;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.server.blockmanagement.BlockManager;
import org.apache.hadoop.hdfs.server.blockmanagement.DatanodeDescriptor;
import org.apache.hadoop.hdfs.server.namenode.FSNamesystem;
import org.apache.hadoop.hdfs.server.namenode.NotReplicatedYetException;
import org.apache.hadoop.hdfs.server.protocol.NamenodeProtocols;
import org.apache.hadoop.io.EnumSetWritable;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYSeries;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code exalt capacity}: Table 4.1 — how much raw HDFS storage a NameNode heap can describe. A real NameNode runs in
 * this JVM; a few {@link ProtocolDataNode}s register with it. Files are created through the NameNode's client
 * protocol, each block is allocated by the NameNode, reported as received by every DataNode the NameNode chose and
 * the file is completed — so every block is COMPLETE with {@code replication} live replicas, as in a healthy cluster.
 * At each step (a number of files) the heap used after a full GC is measured; a line per series (files of k blocks)
 * gives bytes per file, two series separate bytes per file and per block, and those give the capacity of 1/2/4/8 GiB
 * of NameNode heap with 128 MiB blocks and 3 replicas.
 *
 * <p>The block length is only a number in the NameNode ({@code BlockInfo.numBytes}, a long): blocks are recorded with
 * their full {@code --block-size} length without any data being written, and the NameNode's memory per block is the
 * same for any length.
 */
@Command(name = "capacity", mixinStandardHelpOptions = true,
        description = "Table 4.1: NameNode heap per file/block/replica and HDFS capacity per GB of NameNode heap.")
public final class CapacityCommand implements Callable<Integer> {
    @Option(names = "--steps", split = ",", defaultValue = "20000,100000,200000,300000,400000",
            description = "Files in the namespace at which the heap is measured, increasing (default ${DEFAULT-VALUE}).")
    List<Long> steps;

    @Option(names = "--blocks-per-file", split = ",", defaultValue = "1,4", description = "Blocks per file; one NameNode and"
            + " one series per value; two values separate the cost of a file from the cost of a block (default ${DEFAULT-VALUE}).")
    List<Integer> blocksPerFile;

    @Option(names = "--datanodes", defaultValue = "6", description = "Protocol-level emulated DataNodes (default ${DEFAULT-VALUE}).")
    int datanodes;

    @Option(names = "--replication", defaultValue = "3", description = "Replicas per block (default ${DEFAULT-VALUE}).")
    short replication;

    @Option(names = "--block-size", defaultValue = "128m", description = "Block size and recorded length of every block (default ${DEFAULT-VALUE}).")
    String blockSize;

    @Option(names = "--files-per-dir", defaultValue = "1000", description = "Files per directory (default ${DEFAULT-VALUE}).")
    int filesPerDir;

    @Option(names = "--threads", defaultValue = "4", description = "Threads issuing NameNode calls (default ${DEFAULT-VALUE}).")
    int threads;

    @Option(names = "--heap-gib", split = ",", defaultValue = "1,2,4,8", description = "NameNode heap sizes of the derived table (default ${DEFAULT-VALUE}).")
    List<Integer> heapGib;

    @Option(names = "--paper-file-size", defaultValue = "192m", description = "File size of the paper's workload, for the second"
            + " capacity column (default ${DEFAULT-VALUE}).")
    String paperFileSize;

    @Option(names = "--until-full", description = "After the steps, keep adding --full-chunk files until the NameNode's heap is"
            + " full: live heap after full GC >= --full-fraction of -Xmx, or GC took >= half of a chunk's time, or an"
            + " OutOfMemoryError. Validates the extrapolation at this JVM's real -Xmx (set EXALT_HEAP).")
    boolean untilFull;

    @Option(names = "--full-chunk", defaultValue = "100000", description = "Files per chunk with --until-full (default ${DEFAULT-VALUE}).")
    long fullChunk;

    @Option(names = "--full-fraction", defaultValue = "0.9", description = "Live share of -Xmx that counts as full (default ${DEFAULT-VALUE}).")
    double fullFraction;

    /** --base-dir (the NameNode's metadata goes to its capacity/ subdirectory) and --out. */
    @Mixin
    RunnerOptions options;

    @Option(names = "--name", defaultValue = "exalt-capacity", description = "File name stem of the outputs (default ${DEFAULT-VALUE}).")
    String name;

    /** The paper's Table 4.1 (NameNode memory in GB -> HDFS capacity in PB). */
    static final Map<Integer, Double> PAPER = Map.of(1, 1.15, 2, 2.35, 4, 4.76, 8, 9.49);

    private static final int BATCH = 200;

    /** One measured point. */
    record Point(int blocksPerFile, long files, long blocks, long replicas, long lowRedundancy, long pending, long corrupt,
            long heapUsed, long liveBytes, double fillSeconds, double gcSeconds, double load, String phase) {
    }

    void validate() {
        for (int i = 1; i < steps.size(); i++) {
            if (steps.get(i) <= steps.get(i - 1)) {
                throw new IllegalArgumentException("--steps must increase, got " + steps + ": e.g. --steps 0,100000,200000");
            }
        }
        if (steps.isEmpty() || steps.get(0) < 0) {
            throw new IllegalArgumentException("--steps must be file counts >= 0, got " + steps);
        }
        if (replication < 1 || datanodes < replication) {
            throw new IllegalArgumentException("--datanodes " + datanodes + " cannot hold --replication " + replication
                    + " replicas of each block: use --datanodes >= " + Math.max(1, (int) replication));
        }
        if (blocksPerFile.stream().anyMatch(k -> k < 1)) {
            throw new IllegalArgumentException("--blocks-per-file values must be >= 1, got " + blocksPerFile);
        }
        if (threads < 1 || filesPerDir < 1) {
            throw new IllegalArgumentException("--threads and --files-per-dir must be >= 1");
        }
    }

    @Override
    public Integer call() throws Exception {
        validate();
        long bs = HdfsCommand.size(blockSize);
        File base = options.base();
        List<Point> points = new ArrayList<>();
        Map<Integer, NameNodeCapacityModel.Fit> fits = new LinkedHashMap<>(); // on the histogram's live bytes
        Map<Integer, NameNodeCapacityModel.Fit> usedFits = new LinkedHashMap<>(); // on MemoryMXBean used after System.gc()
        List<String> classRows = new ArrayList<>();
        String header = "blocks_per_file,files,blocks,replicas,low_redundancy,pending_reconstruction,corrupt,heap_used_after_gc_bytes,live_bytes_histogram,"
                + "heap_max_bytes,fill_s,gc_s,load_avg,replication,block_size,datanodes,files_per_dir,phase";
        long heapMax = Runtime.getRuntime().maxMemory();
        for (int k : blocksPerFile) {
            runSeries(base, k, bs, points, classRows);
            List<String> rows = new ArrayList<>();
            for (Point p : points) {
                rows.add(String.format(Locale.ROOT, "%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%.1f,%.1f,%.2f,%d,%d,%d,%d,%s", p.blocksPerFile, p.files,
                        p.blocks, p.replicas, p.lowRedundancy, p.pending, p.corrupt, p.heapUsed, p.liveBytes, heapMax, p.fillSeconds, p.gcSeconds,
                        p.load, replication, bs, datanodes, filesPerDir, p.phase));
            }
            Plots.csv(options.out.resolve(name + ".csv"), header, rows);
            List<double[]> xy = new ArrayList<>();
            List<double[]> xyUsed = new ArrayList<>();
            points.stream().filter(p -> p.blocksPerFile == k && p.phase.equals("steps")).forEach(p -> {
                xy.add(new double[] {p.files, p.liveBytes});
                xyUsed.add(new double[] {p.files, p.heapUsed});
            });
            NameNodeCapacityModel.Fit f = NameNodeCapacityModel.fit(xy);
            NameNodeCapacityModel.Fit fu = NameNodeCapacityModel.fit(xyUsed);
            fits.put(k, f);
            usedFits.put(k, fu);
            System.out.printf(Locale.ROOT, "   files of %d block(s): %.1f live heap bytes per file (%.1f per block), intercept %.1f MiB,"
                    + " R^2 %.5f; MemoryMXBean used after System.gc(): %.1f bytes per file, R^2 %.5f%n", k, f.slope(), f.slope() / k,
                    f.intercept() / 1048576, f.r2(), fu.slope(), fu.r2());
            points.stream().filter(p -> p.blocksPerFile == k && p.phase.startsWith("full")).reduce((a, b) -> b).ifPresent(p -> {
                double h = heapMax;
                System.out.printf(Locale.ROOT, "   VALIDATION (-Xmx %.0f MiB): full (%s) at %d files; the fit over the steps (%d-%d files)"
                        + " predicts %.0f files for all of -Xmx and %.0f for -Xmx minus the intercept: measured/predicted %.2f resp. %.2f%n",
                        h / 1048576, p.phase, p.files, steps.get(0), steps.get(steps.size() - 1), h / f.slope(),
                        (h - f.intercept()) / f.slope(), p.files / (h / f.slope()), p.files / ((h - f.intercept()) / f.slope()));
            });
        }
        Plots.csv(options.out.resolve(name + "-classes.csv"), "blocks_per_file,class,instances_per_file,bytes_per_file", classRows);
        writeTable(fits, usedFits, bs);
        plot(points, fits);
        System.out.println("wrote " + options.out.resolve(name + ".csv") + ", " + name + "-table41.csv, " + name + "-classes.csv and PNGs");
        return 0;
    }

    private void runSeries(File base, int k, long bs, List<Point> points, List<String> classRows) throws Exception {
        System.out.printf("== NameNode capacity: files of %d block(s) of %s, replication %d, %d protocol-level DataNodes, steps %s%n", k,
                blockSize, replication, datanodes, steps);
        Configuration conf = new Configuration();
        conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, new File(base, "capacity").getAbsolutePath());
        conf.set(DFSConfigKeys.DFS_NAMENODE_HTTP_ADDRESS_KEY, "127.0.0.1:0");
        conf.setBoolean("dfs.webhdfs.enabled", false);
        conf.setLong(DFSConfigKeys.DFS_BLOCK_SIZE_KEY, bs);
        conf.setLong(DFSConfigKeys.DFS_NAMENODE_MIN_BLOCK_SIZE_KEY, Math.min(bs, 1L << 20));
        conf.setInt(DFSConfigKeys.DFS_REPLICATION_KEY, replication);
        conf.setBoolean(DFSConfigKeys.DFS_NAMENODE_REDUNDANCY_CONSIDERLOAD_KEY, false);
        // a heartbeat delayed by a loaded machine must never declare a DataNode dead (its replicas would be dropped)
        conf.setInt(DFSConfigKeys.DFS_NAMENODE_HEARTBEAT_RECHECK_INTERVAL_KEY, 3_600_000);
        MiniDFSCluster cluster = new MiniDFSCluster.Builder(conf).numDataNodes(0).format(true).build();
        AtomicBoolean stop = new AtomicBoolean();
        Thread hb = null;
        try {
            cluster.waitActive();
            FSNamesystem ns = cluster.getNamesystem();
            NamenodeProtocols rpc = cluster.getNameNodeRpc();
            Map<String, ProtocolDataNode> dns = new HashMap<>();
            for (int i = 0; i < datanodes; i++) {
                ProtocolDataNode dn = ProtocolDataNode.register(cluster.getNameNode(), i, 40000);
                dns.put(dn.uuid(), dn);
            }
            hb = new Thread(() -> {
                while (!stop.get()) {
                    try {
                        for (ProtocolDataNode dn : dns.values()) {
                            dn.heartbeat();
                        }
                        Thread.sleep(3000);
                    } catch (InterruptedException e) {
                        return;
                    } catch (IOException e) {
                        System.out.println("   heartbeat failed: " + e);
                    }
                }
            }, "exalt-capacity-heartbeats");
            hb.setDaemon(true);
            hb.start();
            for (int i = 0; ns.getNumLiveDataNodes() < datanodes; i++) {
                if (i == 300) {
                    throw new IllegalStateException("only " + ns.getNumLiveDataNodes() + " of " + datanodes + " DataNodes live after 30 s");
                }
                Thread.sleep(100);
            }
            Map<String, long[]> hist0 = null;
            Map<String, long[]> hist = null;
            long have = 0;
            long firstFiles = 0;
            for (int s = 0; s < steps.size() || untilFull; s++) {
                boolean full = s >= steps.size();
                long target = full ? have + fullChunk : steps.get(s);
                long t0 = System.nanoTime();
                double gc0 = gcSeconds();
                String phase = full ? "fill" : "steps";
                if (target > have) {
                    try {
                        fill(rpc, dns, k, bs, have, target);
                    } catch (OutOfMemoryError e) {
                        phase = "full-oom";
                    }
                }
                double secs = (System.nanoTime() - t0) / 1e9;
                double gc = gcSeconds() - gc0;
                have = phase.equals("full-oom") ? ns.getFilesTotal() : target;
                Point p = measure(ns, k, have, secs, gc, phase);
                if (full && !phase.equals("full-oom")) {
                    if (p.liveBytes >= fullFraction * Runtime.getRuntime().maxMemory()) {
                        phase = "full-live";
                    } else if (gc >= 0.5 * secs) {
                        phase = "full-gc";
                    }
                    p = new Point(p.blocksPerFile, p.files, p.blocks, p.replicas, p.lowRedundancy, p.pending, p.corrupt, p.heapUsed,
                            p.liveBytes, p.fillSeconds, p.gcSeconds, p.load, phase);
                }
                hist = lastHistogram;
                points.add(p);
                System.out.printf(Locale.ROOT, "   %d files, %d blocks, %d replicas (low redundancy %d, pending %d, corrupt %d):"
                        + " live heap %.1f MiB, used after System.gc() %.1f MiB (fill %.1f s, GC %.1f s, load %.1f) %s%n", p.files, p.blocks,
                        p.replicas, p.lowRedundancy, p.pending, p.corrupt, p.liveBytes / 1048576.0, p.heapUsed / 1048576.0, secs, gc, p.load,
                        p.phase);
                if (p.phase.startsWith("full")) {
                    break;
                }
                if (s == 0) {
                    hist0 = hist;
                    firstFiles = have;
                } else if (s == steps.size() - 1 && !full) {
                    classRows.addAll(histogramDiff(k, hist0, hist, have - firstFiles));
                }
            }
        } finally {
            stop.set(true);
            if (hb != null) {
                hb.interrupt();
                hb.join(10_000);
            }
            cluster.shutdown(true);
        }
    }

    private static String path(int k, long i, int filesPerDir) {
        return "/capacity/k" + k + "/d" + (i / filesPerDir) + "/f" + i;
    }

    /** Creates files [from, to): create, k x (addBlock + every chosen DataNode reports the replica), complete. */
    private void fill(NamenodeProtocols rpc, Map<String, ProtocolDataNode> dns, int k, long bs, long from, long to) throws Exception {
        AtomicLong next = new AtomicLong(from);
        AtomicReference<Exception> err = new AtomicReference<>();
        AtomicReference<OutOfMemoryError> oom = new AtomicReference<>();
        Thread[] ts = new Thread[threads];
        try (ProgressBar pb = new ProgressBarBuilder().setTaskName("files (" + k + " blk)").setInitialMax(to)
                .setStyle(ProgressBarStyle.ASCII).setUpdateIntervalMillis(1000).build()) {
            pb.stepTo(from);
            for (int t = 0; t < threads; t++) {
                String client = "exalt-capacity-" + k + "-" + t + "-" + from;
                ts[t] = new Thread(() -> {
                    try {
                        long start;
                        while (err.get() == null && oom.get() == null && (start = next.getAndAdd(BATCH)) < to) {
                            int n = (int) Math.min(BATCH, to - start);
                            batch(rpc, dns, client, k, bs, start, n);
                            pb.stepBy(n);
                        }
                    } catch (Exception e) {
                        err.compareAndSet(null, e);
                    } catch (OutOfMemoryError e) {
                        oom.compareAndSet(null, e);
                    }
                }, "exalt-capacity-" + t);
                ts[t].start();
            }
            for (Thread t : ts) {
                t.join();
            }
        }
        if (oom.get() != null) {
            throw oom.get();
        }
        if (err.get() != null) {
            throw err.get();
        }
    }

    private void batch(NamenodeProtocols rpc, Map<String, ProtocolDataNode> dns, String client, int k, long bs, long start, int n)
            throws Exception {
        String[] src = new String[n];
        long[] ids = new long[n];
        ExtendedBlock[] last = new ExtendedBlock[n];
        EnumSetWritable<CreateFlag> flags = new EnumSetWritable<>(EnumSet.of(CreateFlag.CREATE));
        for (int i = 0; i < n; i++) {
            src[i] = path(k, start + i, filesPerDir);
            ids[i] = rpc.create(src[i], FsPermission.getFileDefault(), client, flags, true, replication, bs,
                    CryptoProtocolVersion.supported(), null, null).getFileId();
        }
        for (int j = 0; j < k; j++) {
            Map<String, List<Block>> received = new HashMap<>();
            for (int i = 0; i < n; i++) {
                LocatedBlock lb = addBlock(rpc, src[i], client, last[i], ids[i]);
                ExtendedBlock b = lb.getBlock();
                b.setNumBytes(bs); // the replica is "finalized" at full length; the client commits the same length
                last[i] = b;
                for (DatanodeInfo d : lb.getLocations()) {
                    received.computeIfAbsent(d.getDatanodeUuid(), u -> new ArrayList<>()).add(new Block(b.getLocalBlock()));
                }
            }
            for (Map.Entry<String, List<Block>> e : received.entrySet()) {
                ProtocolDataNode dn = dns.get(e.getKey());
                if (dn == null) {
                    throw new IllegalStateException("NameNode chose unknown DataNode " + e.getKey());
                }
                dn.received(e.getValue());
            }
        }
        for (int i = 0; i < n; i++) {
            for (int tries = 0; !rpc.complete(src[i], client, last[i], ids[i]); tries++) {
                if (tries > 60_000) {
                    throw new IllegalStateException("complete(" + src[i] + ") still false after 60 s: replicas not accepted by the NameNode");
                }
                Thread.sleep(1);
            }
        }
    }

    private static LocatedBlock addBlock(NamenodeProtocols rpc, String src, String client, ExtendedBlock prev, long id) throws Exception {
        for (int tries = 0;; tries++) {
            try {
                return rpc.addBlock(src, client, prev, null, id, null, null);
            } catch (NotReplicatedYetException e) { // the previous block's replicas are still in the NameNode's IBR queue
                if (tries > 60_000) {
                    throw e;
                }
                Thread.sleep(1);
            }
        }
    }

    /** Waits until the NameNode processed every replica report, then the heap used after full GCs (smallest of 3). */
    static double gcSeconds() {
        return ManagementFactory.getGarbageCollectorMXBeans().stream().mapToLong(b -> Math.max(0, b.getCollectionTime())).sum() / 1e3;
    }

    private Point measure(FSNamesystem ns, int k, long files, double fillSeconds, double gcSeconds, String phase) throws Exception {
        BlockManager bm = ns.getBlockManager();
        for (int i = 0; i < 600 && (bm.getBlockOpQueueLength() > 0 || bm.getPendingReconstructionBlocksCount() > 0
                || bm.getLowRedundancyBlocksCount() > 0); i++) {
            Thread.sleep(100);
        }
        long replicas = 0;
        for (DatanodeDescriptor d : bm.getDatanodeManager().getDatanodeListForReport(
                org.apache.hadoop.hdfs.protocol.HdfsConstants.DatanodeReportType.LIVE)) {
            replicas += d.numBlocks();
        }
        double load = HdfsCommand.loadAverage();
        long used = heapAfterFullGc();
        lastHistogram = classHistogram();
        return new Point(k, files, ns.getBlocksTotal(), replicas, bm.getLowRedundancyBlocksCount(),
                bm.getPendingReconstructionBlocksCount(), bm.getCorruptReplicaBlocksCount(), used, lastHistogram.get(TOTAL)[1], fillSeconds,
                gcSeconds, load, phase);
    }

    static long heapAfterFullGc() throws InterruptedException {
        long best = Long.MAX_VALUE;
        for (int i = 0; i < 3; i++) {
            System.gc();
            Thread.sleep(200);
            best = Math.min(best, ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed());
        }
        return best;
    }

    private static final Pattern HIST = Pattern.compile("^\\s*\\d+:\\s+(\\d+)\\s+(\\d+)\\s+(\\S+)");
    private static final Pattern HIST_TOTAL = Pattern.compile("^\\s*Total\\s+(\\d+)\\s+(\\d+)");
    /** Key of the histogram's total (all live objects). */
    static final String TOTAL = "(total)";
    private Map<String, long[]> lastHistogram;

    /** Live objects per class ({@code jcmd GC.class_histogram}, which runs a full GC first). */
    static Map<String, long[]> classHistogram() throws Exception {
        String h = (String) ManagementFactory.getPlatformMBeanServer().invoke(new ObjectName("com.sun.management:type=DiagnosticCommand"),
                "gcClassHistogram", new Object[] {new String[0]}, new String[] {String[].class.getName()});
        Map<String, long[]> m = new HashMap<>();
        for (String line : h.split("\n")) {
            Matcher x = HIST.matcher(line);
            Matcher t = HIST_TOTAL.matcher(line);
            if (x.find()) {
                m.put(x.group(3), new long[] {Long.parseLong(x.group(1)), Long.parseLong(x.group(2))});
            } else if (t.find()) {
                m.put(TOTAL, new long[] {Long.parseLong(t.group(1)), Long.parseLong(t.group(2))});
            }
        }
        return m;
    }

    private static List<String> histogramDiff(int k, Map<String, long[]> a, Map<String, long[]> b, long files) {
        List<Map.Entry<String, long[]>> es = new ArrayList<>(b.entrySet());
        es.sort((x, y) -> Long.compare(y.getValue()[1] - a.getOrDefault(y.getKey(), new long[2])[1],
                x.getValue()[1] - a.getOrDefault(x.getKey(), new long[2])[1]));
        List<String> rows = new ArrayList<>();
        for (Map.Entry<String, long[]> e : es) {
            if (e.getKey().equals(TOTAL)) {
                continue;
            }
            long[] before = a.getOrDefault(e.getKey(), new long[2]);
            double inst = (e.getValue()[0] - before[0]) / (double) files;
            double bytes = (e.getValue()[1] - before[1]) / (double) files;
            if (Math.abs(bytes) < 1.0 || rows.size() >= 20) {
                continue;
            }
            rows.add(String.format(Locale.ROOT, "%d,%s,%.3f,%.1f", k, e.getKey(), inst, bytes));
        }
        return rows;
    }

    private void writeTable(Map<Integer, NameNodeCapacityModel.Fit> fits, Map<Integer, NameNodeCapacityModel.Fit> usedFits, long bs)
            throws Exception {
        List<Integer> ks = new ArrayList<>(fits.keySet());
        NameNodeCapacityModel.Costs c;
        if (ks.size() >= 2) {
            c = NameNodeCapacityModel.separate(ks.get(0), fits.get(ks.get(0)).slope(), ks.get(ks.size() - 1),
                    fits.get(ks.get(ks.size() - 1)).slope());
        } else {
            c = null; // one series: only files of exactly that many blocks
        }
        int k1 = ks.get(0);
        double intercept = fits.get(k1).intercept();
        long paperFile = HdfsCommand.size(paperFileSize);
        List<String> rows = new ArrayList<>();
        System.out.printf(Locale.ROOT, "   %s%n", c == null ? "one series: per-file and per-block costs not separated"
                : String.format(Locale.ROOT, "per file %.1f B, per block (with its %d replicas) %.1f B", c.perFile(), replication,
                c.perBlock()));
        for (int g : heapGib) {
            double heap = g * (double) (1L << 30);
            double oneBlockFiles;
            double oneBlockFilesFixed;
            if (c != null) {
                oneBlockFiles = NameNodeCapacityModel.rawCapacity(c, heap, 0, bs, bs, replication);
                oneBlockFilesFixed = NameNodeCapacityModel.rawCapacity(c, heap, intercept, bs, bs, replication);
            } else {
                // files of k1 blocks: capacity per block
                double perBlock = fits.get(k1).slope() / k1;
                oneBlockFiles = heap / perBlock * bs * replication;
                oneBlockFilesFixed = Math.max(0, heap - intercept) / perBlock * bs * replication;
            }
            double paperWl = c != null ? NameNodeCapacityModel.rawCapacity(c, heap, 0, paperFile, bs, replication) : Double.NaN;
            rows.add(String.format(Locale.ROOT, "%d,%.2f,%.2f,%.2f,%s", g, oneBlockFiles / 1e15, oneBlockFilesFixed / 1e15, paperWl / 1e15,
                    PAPER.containsKey(g) ? String.format(Locale.ROOT, "%.2f", PAPER.get(g)) : ""));
            System.out.printf(Locale.ROOT, "   %d GiB NameNode heap: %.2f PB raw (one-block files, all heap), %.2f PB (minus this run's"
                    + " fixed %.0f MiB), %.2f PB (%s files); paper: %s PB%n", g, oneBlockFiles / 1e15, oneBlockFilesFixed / 1e15,
                    intercept / 1048576, paperWl / 1e15, paperFileSize, PAPER.getOrDefault(g, Double.NaN));
        }
        String costs = c == null ? "" : String.format(Locale.ROOT, "# per_file_bytes=%.1f per_block_bytes=%.1f", c.perFile(), c.perBlock());
        List<String> out2 = new ArrayList<>(rows);
        if (!costs.isEmpty()) {
            out2.add(costs);
        }
        for (Map.Entry<Integer, NameNodeCapacityModel.Fit> e : fits.entrySet()) {
            NameNodeCapacityModel.Fit u = usedFits.get(e.getKey());
            out2.add(String.format(Locale.ROOT, "# blocks_per_file=%d slope_bytes_per_file=%.1f intercept_bytes=%.0f r2=%.6f points=%d"
                    + " (live bytes, class histogram); heap_used_after_gc: slope_bytes_per_file=%.1f r2=%.6f", e.getKey(),
                    e.getValue().slope(), e.getValue().intercept(), e.getValue().r2(), e.getValue().points(), u.slope(), u.r2()));
        }
        out2.add(String.format(Locale.ROOT, "# hadoop=%s java=%s heap_max_bytes=%d gc=%s", org.apache.hadoop.util.VersionInfo.getVersion(),
                System.getProperty("java.version"), Runtime.getRuntime().maxMemory(),
                ManagementFactory.getGarbageCollectorMXBeans().stream().map(b -> b.getName()).toList()));
        Plots.csv(options.out.resolve(name + "-table41.csv"), "heap_GiB,PB_raw_one_block_files,PB_raw_one_block_files_minus_fixed,"
                + "PB_raw_paper_workload_files,paper_PB", out2);
        XYChart ch = Plots.xy("Table 4.1: HDFS raw capacity (" + blockSize + " blocks, r=" + replication + ") vs NameNode heap, Hadoop 3.4.2",
                "NameNode heap (GiB)", "raw capacity (PB)", false);
        double[] x = heapGib.stream().mapToDouble(Integer::doubleValue).toArray();
        ch.addSeries("measured: one-block files", x, rows.stream().mapToDouble(r -> Double.parseDouble(r.split(",")[1])).toArray());
        if (c != null) {
            ch.addSeries("measured: " + paperFileSize + " files (paper's workload)", x,
                    rows.stream().mapToDouble(r -> Double.parseDouble(r.split(",")[3])).toArray());
        }
        List<double[]> pp = new ArrayList<>();
        for (int g : heapGib) {
            if (PAPER.containsKey(g)) {
                pp.add(new double[] {g, PAPER.get(g)});
            }
        }
        if (!pp.isEmpty()) {
            ch.addSeries("paper (dissertation Table 4.1)", pp.stream().mapToDouble(p -> p[0]).toArray(),
                    pp.stream().mapToDouble(p -> p[1]).toArray());
        }
        Plots.png(ch, options.out.resolve(name + "-table41.png"));
    }

    private void plot(List<Point> points, Map<Integer, NameNodeCapacityModel.Fit> fits) throws Exception {
        XYChart ch = Plots.xy("NameNode heap (live objects after full GC) vs files (Hadoop 3.4.2, r=" + replication + ")",
                "files in the namespace", "live heap after full GC (MiB)", false);
        for (Map.Entry<Integer, NameNodeCapacityModel.Fit> e : fits.entrySet()) {
            int k = e.getKey();
            double[] x = points.stream().filter(p -> p.blocksPerFile == k).mapToDouble(p -> p.files).toArray();
            double[] y = points.stream().filter(p -> p.blocksPerFile == k).mapToDouble(p -> p.liveBytes / 1048576.0).toArray();
            ch.addSeries(k + " block(s) per file (measured)", x, y).setXYSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.Scatter);
            NameNodeCapacityModel.Fit f = e.getValue();
            double[] fy = new double[x.length];
            for (int i = 0; i < x.length; i++) {
                fy[i] = (f.intercept() + f.slope() * x[i]) / 1048576.0;
            }
            ch.addSeries(String.format(Locale.ROOT, "fit: %.0f B/file", f.slope()), x, fy);
        }
        Plots.png(ch, options.out.resolve(name + ".png"));
    }
}
