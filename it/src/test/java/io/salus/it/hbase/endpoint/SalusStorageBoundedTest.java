package io.salus.it.hbase.endpoint;

import static org.junit.jupiter.api.Assertions.*;

import io.salus.core.cert.Certificate;
import io.salus.core.crypto.SignatureScheme;
import io.salus.core.hbase.SalusPlacementObserver;
import io.salus.core.hbase.SalusTableLayout;
import io.salus.core.hbase.VolumeGeometry;
import io.salus.core.hbase.endpoint.EndpointKeyring;
import io.salus.core.hbase.endpoint.HBaseVolumeClientRunner;
import io.salus.core.hbase.endpoint.ReplicaHost;
import io.salus.core.hbase.endpoint.SalusReplicaEndpoint;
import io.salus.core.hbase.endpoint.VolumeAddressing;
import io.salus.core.hbase.endpoint.WitnessHolders;
import io.salus.core.hbase.storage.HdfsReplicaStorage;
import io.salus.core.hbase.storage.SalusFavoredNodes;
import io.salus.core.protocol.client.BlockWrite;
import io.salus.core.protocol.client.ClientListener;
import io.salus.hdfs.witness.WitnessClientConnector;
import io.salus.hdfs.witness.WitnessDaemon;
import io.salus.hdfs.witness.WitnessDataNodePlugin;
import io.salus.hdfs.witness.WitnessNode;
import io.salus.hdfs.witness.WitnessTrust;
import java.io.File;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.hadoop.hbase.HBaseTestingUtility;
import org.apache.hadoop.hbase.ServerName;
import org.apache.hadoop.hbase.StartMiniClusterOption;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.AsyncConnection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.regionserver.HRegion;
import org.apache.hadoop.hbase.regionserver.HRegionServer;
import org.apache.hadoop.hbase.util.Bytes;
import org.apache.hadoop.hbase.util.JVMClusterUtil;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.log4j.Level;
import org.apache.log4j.LogManager;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;

/**
 * Issue 14 item 1, Done-when "log and witness storage stay bounded under a long write". One real cluster as in
 * {@link SalusWitnessStoresTest}: a MiniDFSCluster whose three DataNodes run the witness plugin, two standalone
 * witness daemons, three region servers each paired with one DataNode; the replicas' Salus logs, decision records and
 * checkpoint files on HDFS ({@code /salus/logs}), the five metadata holders of every RRS real witness stores (their
 * journals in 32 KiB segments, so that reclaimed segments show within a short run). Nothing mocked.
 *
 * <p>{@link #storageStaysBoundedWhileTheWritesGoOn} (the test): a stream of two-region batches, sampled every
 * {@link #SAMPLE_EVERY} batches; the mean HDFS bytes (logs + decision records + checkpoint files) and witness
 * journals' bytes over batches 3N/2..2N may exceed their means over N/2..N by at most 30%, and the journals stay
 * under three segments per witness. Without GC both grow with every batch, so the test fails on code that lets them
 * accumulate.
 *
 * <p>{@link #longWriteBench} (the measurement, runs only with {@code -Dsalus.bench.storage.out=DIR}): writes for
 * {@code -Dsalus.bench.storage.seconds} (default 240), sampling every 5 s, and writes {@code DIR/salus-storage-bounded.csv}
 * and {@code .png}. Command (repository root):
 * {@code mvn -B -o verify -pl it -am -DskipITs -Dtest=SalusStorageBoundedTest -Dsurefire.failIfNoSpecifiedTests=false
 * -Dsalus.bench.storage.out=$PWD/docs/benchmarks}
 */
class SalusStorageBoundedTest {
    /** Log entries between checkpoints in this test (set explicitly: the default is 64). */
    static final int CHECKPOINT_EVERY = 4;
    static final long SEED = 53;
    static final String VOLUME = "gc";
    static final int BLOCK = 4096;
    static final long BLOCKS_PER_REGION = 16;
    static final int REGIONS = 2;
    static final long DEADLINE_MS = 300_000;
    static final long WITNESS_SEGMENT_BYTES = 32 << 10;
    static final int N = Integer.getInteger("salus.test.storage.n", 300);
    static final int SAMPLE_EVERY = 10;

    static HBaseTestingUtility util;
    static MiniDFSCluster dfs;
    static AsyncConnection conn;
    static VolumeAddressing addressing;
    static EndpointKeyring keys;
    static HBaseVolumeClientRunner runner;
    static Path dir;
    static final WitnessNode[] standalone = new WitnessNode[2];
    static final List<Path> witnessDirs = new ArrayList<>();
    static final Set<Long> acked = ConcurrentHashMap.newKeySet();
    static final List<Long> failed = new CopyOnWriteArrayList<>();
    static final int[] rsPorts = new int[3];
    static int nextBatch;

    static int freePort() throws Exception {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    @BeforeAll
    static void start() throws Exception {
        LogManager.getRootLogger().setLevel(Level.WARN);
        dir = Files.createTempDirectory("salus-storage-bounded");
        Path trustFile = dir.resolve("trust.conf");
        Files.writeString(trustFile, "scheme ed25519\nendpoint-volume " + VOLUME + " test-seed " + SEED + "\n");
        util = new HBaseTestingUtility();
        Configuration conf = util.getConfiguration();
        conf.setInt("hbase.master.info.port", -1);
        conf.setInt("hbase.regionserver.info.port", -1);
        conf.setInt("hbase.regionserver.handler.count", 3);
        conf.setInt("hbase.client.retries.number", 10);
        conf.set("hbase.coprocessor.master.classes", SalusPlacementObserver.class.getName());
        conf.setLong(SalusPlacementObserver.PERIOD_KEY, 1000);
        conf.setLong(EndpointKeyring.TEST_SEED_KEY, SEED);
        // checkpoints every 4 log entries, as this test was written for (the default is 64, task tput18)
        conf.setInt(SalusReplicaEndpoint.CHECKPOINT_EVERY_KEY, CHECKPOINT_EVERY);
        conf.set("dfs.datanode.plugins", WitnessDataNodePlugin.class.getName());
        conf.setInt(WitnessDataNodePlugin.PORT_KEY, 0);
        conf.set(WitnessDataNodePlugin.TRUST_FILE_KEY, trustFile.toString());
        conf.setLong(WitnessDataNodePlugin.SEGMENT_BYTES_KEY, WITNESS_SEGMENT_BYTES);
        dfs = util.startMiniDFSCluster(3);
        List<String> dataNodes = new ArrayList<>();
        List<String> dnWitness = new ArrayList<>();
        for (var dn : dfs.getDataNodes()) {
            dataNodes.add("127.0.0.1:" + dn.getXferAddress().getPort());
            WitnessNode w = WitnessDataNodePlugin.running(dn);
            assertNotNull(w, "DataNode " + dn.getXferAddress() + " runs the witness plugin");
            dnWitness.add(w.address().getHostString() + ":" + w.address().getPort());
            witnessDirs.add(w.store().directory());
        }
        int[] standalonePorts = new int[2];
        for (int w = 0; w < 2; w++) {
            standalonePorts[w] = freePort();
            standalone[w] = WitnessDaemon.start(WitnessNode.Settings.of(dir.resolve("w" + w), standalonePorts[w])
                    .withTrust(WitnessTrust.load(trustFile)).withNodeId("standalone-w" + w)
                    .withSegmentBytes(WITNESS_SEGMENT_BYTES));
            witnessDirs.add(standalone[w].store().directory());
        }
        StringBuilder paired = new StringBuilder();
        for (int k = 0; k < 3; k++) {
            rsPorts[k] = freePort();
            paired.append(k == 0 ? "" : ",").append("*:").append(rsPorts[k]).append('=').append(dnWitness.get(k));
        }
        conf.set(WitnessHolders.CONNECTOR_KEY, WitnessClientConnector.class.getName());
        conf.set(WitnessHolders.STANDALONE_KEY, "127.0.0.1:" + standalonePorts[0] + ",127.0.0.1:" + standalonePorts[1]);
        conf.set(WitnessHolders.PAIRED_KEY, paired.toString());
        conf.setBoolean("hbase.localcluster.assign.random.ports", false);
        util.startMiniZKCluster();
        conf.set(SalusFavoredNodes.DATANODE_KEY, dataNodes.get(0));
        conf.setInt("hbase.regionserver.port", rsPorts[0]);
        util.startMiniHBaseCluster(StartMiniClusterOption.builder().numMasters(1).numRegionServers(1).build());
        for (int i = 1; i < 3; i++) {
            util.getMiniHBaseCluster().getConfiguration().set(SalusFavoredNodes.DATANODE_KEY, dataNodes.get(i));
            util.getMiniHBaseCluster().getConfiguration().setInt("hbase.regionserver.port", rsPorts[i]);
            util.getMiniHBaseCluster().startRegionServer();
        }
        VolumeGeometry g = new VolumeGeometry(VOLUME, REGIONS * BLOCKS_PER_REGION * BLOCK, BLOCK, BLOCKS_PER_REGION);
        try (Admin admin = util.getConnection().getAdmin()) {
            admin.balancerSwitch(false, true);
            SalusTableLayout.create(admin, g);
        }
        addressing = new VolumeAddressing(g);
        keys = EndpointKeyring.deterministic(SignatureScheme.ED25519, SEED, addressing);
        awaitPlaced();
        conn = ConnectionFactory.createAsyncConnection(conf).get();
        runner = new HBaseVolumeClientRunner(conn, addressing, keys.signer(addressing.client()), keys.verifier(),
                new ClientListener() {
                    @Override
                    public void putSucceeded(long batchId, long firstSeq, long lastSeq, List<Certificate> certs) {
                        acked.add(batchId);
                    }

                    @Override
                    public void putFailed(long batchId) {
                        failed.add(batchId);
                    }

                    @Override
                    public void recoveryNeeded(String reason) {
                    }

                    @Override
                    public void getSucceeded(long requestId, long block, byte[] data) {
                    }
                }, 32, 5_000);
    }

    @AfterAll
    static void stop() throws Exception {
        if (runner != null) {
            runner.close();
        }
        if (conn != null) {
            conn.close();
        }
        if (util != null) {
            util.shutdownMiniCluster(); // first: the region servers stop offering to the witnesses
        }
        for (WitnessNode w : standalone) {
            if (w != null) {
                try {
                    w.close();
                } catch (IOException e) {
                    // seen once (ClosedChannelException from the journal's final force): teardown only, not asserted
                    System.out.println("closing witness " + w.address() + ": " + e);
                }
            }
        }
    }

    static void awaitPlaced() throws InterruptedException {
        awaitTrue("every replica region on three distinct servers with its replica running", () -> {
            if (!util.getMiniHBaseCluster().getMaster().getAssignmentManager().getRegionsInTransition().isEmpty()) {
                return false;
            }
            for (int r = 0; r < REGIONS; r++) {
                Set<ServerName> servers = new HashSet<>();
                for (int k = 0; k < 3; k++) {
                    SalusReplicaStorageTest.Located l = locate(r, k);
                    if (l == null || l.endpoint().host() == null) {
                        return false;
                    }
                    servers.add(l.rs().getServerName());
                }
                if (servers.size() != 3) {
                    return false;
                }
            }
            return true;
        });
    }

    static SalusReplicaStorageTest.Located locate(int r, int k) {
        TableName t = SalusTableLayout.tableName(VOLUME, k);
        for (JVMClusterUtil.RegionServerThread rst : util.getMiniHBaseCluster().getLiveRegionServerThreads()) {
            HRegionServer rs = rst.getRegionServer();
            if (rs.isAborted() || rs.isStopped()) {
                continue;
            }
            for (HRegion region : rs.getRegions(t)) {
                byte[] start = region.getRegionInfo().getStartKey();
                long first = start.length == 0 ? 0 : Bytes.toLong(start);
                if (first == r * BLOCKS_PER_REGION) {
                    SalusReplicaEndpoint ep = region.getCoprocessorHost().findCoprocessor(SalusReplicaEndpoint.class);
                    return ep == null ? null : new SalusReplicaStorageTest.Located(rs, region, ep);
                }
            }
        }
        return null;
    }

    static void awaitTrue(String what, BooleanSupplier cond) throws InterruptedException {
        long end = System.currentTimeMillis() + DEADLINE_MS;
        while (!cond.getAsBoolean()) {
            if (System.currentTimeMillis() > end) {
                fail("not reached within the deadline: " + what);
            }
            Thread.sleep(50);
        }
    }

    /** Submits one batch writing one random block of each region (waits while the client's pipeline is full). */
    static long submitOne(Random rnd) throws Exception {
        List<BlockWrite> writes = new ArrayList<>();
        int b = nextBatch++;
        for (int r = 0; r < REGIONS; r++) {
            int region = (b + r) % REGIONS; // the first write's region leads the batch: both regions lead in turn
            byte[] d = new byte[BLOCK];
            rnd.nextBytes(d);
            writes.add(new BlockWrite(region * BLOCKS_PER_REGION + rnd.nextInt((int) BLOCKS_PER_REGION), d));
        }
        long end = System.currentTimeMillis() + DEADLINE_MS;
        while (true) {
            long id = runner.call(c -> c.submit(writes)).get(60, TimeUnit.SECONDS);
            if (id > 0) {
                return id;
            }
            if (System.currentTimeMillis() > end) {
                fail("the client's pipeline stayed full");
            }
            Thread.sleep(2);
        }
    }

    static void awaitAcked(List<Long> ids) throws InterruptedException {
        awaitTrue(ids.size() + " batches acknowledged", () -> acked.containsAll(ids) || !failed.isEmpty());
        assertTrue(failed.isEmpty(), "batches failed: " + failed);
    }

    /** Bytes on HDFS under the Salus log root by kind (log, decisions, state) and of the five witness journals. */
    static Map<String, Long> sizes() throws IOException {
        Map<String, Long> m = new LinkedHashMap<>();
        m.put("log", 0L);
        m.put("decisions", 0L);
        m.put("state", 0L);
        org.apache.hadoop.fs.Path root = new org.apache.hadoop.fs.Path(HdfsReplicaStorage.DEFAULT_LOG_ROOT);
        var fs = dfs.getFileSystem();
        if (fs.exists(root)) {
            RemoteIterator<LocatedFileStatus> it = fs.listFiles(root, true);
            while (it.hasNext()) {
                LocatedFileStatus st = it.next();
                String p = st.getPath().toUri().getPath();
                for (String kind : List.of("log", "decisions", "state")) {
                    if (p.contains("/" + kind + "/g")) {
                        m.merge(kind, st.getLen(), Long::sum);
                    }
                }
            }
        }
        long w = 0;
        for (Path d : witnessDirs) {
            try (Stream<Path> files = Files.list(d)) {
                for (Path f : (Iterable<Path>) files::iterator) {
                    if (f.getFileName().toString().endsWith(".log")) {
                        w += Files.size(f);
                    }
                }
            }
        }
        m.put("witness", w);
        return m;
    }

    static long hdfs(Map<String, Long> s) {
        return s.get("log") + s.get("decisions") + s.get("state");
    }

    /** The witness holders' truncation counters of every replica (summed). */
    static Map<String, Long> witnessCounters() {
        Map<String, Long> m = new TreeMap<>();
        for (int r = 0; r < REGIONS; r++) {
            for (int k = 0; k < 3; k++) {
                ReplicaHost h = locate(r, k).endpoint().host();
                for (String c : List.of("witnessTruncations", "witnessTruncationFailures", "witnessFailures")) {
                    m.merge(c, h.counters().getOrDefault(c, 0L), Long::sum);
                }
            }
        }
        return m;
    }

    /**
     * The mean of the HDFS bytes (logs + decision records + checkpoint files) and of the witness journals' bytes over
     * batches 3N/2..2N is at most 1.3 times their mean over N/2..N (sampled every {@link #SAMPLE_EVERY} batches; the
     * checkpoint files and the journals are sawtooths, so means, not single samples, are compared), and the witness
     * journals never hold more than three segments per witness (the one being written, the one before it with the
     * entries after the last truncation, one more while a truncation is in flight). Without GC both grow with every
     * batch: the means of the two windows differ about 2.3 times, and the journals pass three segments each before N.
     */
    @Test
    void storageStaysBoundedWhileTheWritesGoOn() throws Exception {
        Random rnd = new Random(14);
        List<Long> hdfs1 = new ArrayList<>();
        List<Long> witness1 = new ArrayList<>();
        List<Long> hdfs2 = new ArrayList<>();
        List<Long> witness2 = new ArrayList<>();
        long witnessPeak = 0;
        List<Long> ids = new ArrayList<>();
        for (int i = 1; i <= 2 * N; i++) {
            ids.add(submitOne(rnd));
            if (i % SAMPLE_EVERY == 0) {
                awaitAcked(ids);
                Map<String, Long> s = sizes();
                System.out.println("storage after " + i + " batches: " + s + " " + witnessCounters());
                witnessPeak = Math.max(witnessPeak, s.get("witness"));
                if (i > N / 2 && i <= N) {
                    hdfs1.add(hdfs(s));
                    witness1.add(s.get("witness"));
                }
                if (i > 3 * N / 2) {
                    hdfs2.add(hdfs(s));
                    witness2.add(s.get("witness"));
                }
            }
        }
        awaitAcked(ids);
        double h1 = mean(hdfs1);
        double h2 = mean(hdfs2);
        double w1 = mean(witness1);
        double w2 = mean(witness2);
        long witnessBound = 5 * 3 * WITNESS_SEGMENT_BYTES;
        System.out.printf("mean HDFS bytes over batches %d..%d: %.0f, over %d..%d: %.0f; witness journals: %.0f, %.0f;"
                + " witness peak %d (bound %d)%n", N / 2, N, h1, 3 * N / 2, 2 * N, h2, w1, w2, witnessPeak, witnessBound);
        assertTrue(h2 <= 1.3 * h1, String.format("the replicas' files on HDFS grow with the run: mean %.0f bytes over"
                + " batches %d..%d, %.0f over %d..%d", h1, N / 2, N, h2, 3 * N / 2, 2 * N));
        assertTrue(w2 <= 1.3 * w1, String.format("the witness stores grow with the run: mean %.0f bytes over batches"
                + " %d..%d, %.0f over %d..%d", w1, N / 2, N, w2, 3 * N / 2, 2 * N));
        assertTrue(witnessPeak <= witnessBound, "the five witness journals held " + witnessPeak + " bytes, more than"
                + " three " + WITNESS_SEGMENT_BYTES + "-byte segments each");
        assertTrue(witnessCounters().get("witnessTruncations") > 0, "the real witnesses accepted truncations");
    }

    static double mean(List<Long> l) {
        return l.stream().mapToLong(Long::longValue).average().orElse(0);
    }

    /** The long-write measurement (not run unless {@code -Dsalus.bench.storage.out=DIR}). */
    @Test
    void longWriteBench() throws Exception {
        String out = System.getProperty("salus.bench.storage.out");
        Assumptions.assumeTrue(out != null, "-Dsalus.bench.storage.out=DIR runs the long-write measurement");
        long seconds = Long.getLong("salus.bench.storage.seconds", 240);
        Random rnd = new Random(15);
        List<String> rows = new ArrayList<>();
        rows.add("# SalusStorageBoundedTest#longWriteBench: two-region batches (one 4 KiB block per region) on one mini"
                + " cluster (3 RS + 3 DataNodes with witness plugins + 2 witness daemons, journal segments "
                + WITNESS_SEGMENT_BYTES + " B), " + seconds + " s, started " + java.time.Instant.now()
                + ", loadavg " + loadavg());
        rows.add("seconds,batches_acked,log_bytes,decision_bytes,checkpoint_bytes,witness_bytes");
        List<Double> t = new ArrayList<>();
        Map<String, List<Double>> series = new LinkedHashMap<>();
        for (String k : List.of("log", "decisions", "state", "witness")) {
            series.put(k, new ArrayList<>());
        }
        long start = System.currentTimeMillis();
        long nextSample = start;
        List<Long> ids = new ArrayList<>();
        while (System.currentTimeMillis() - start < seconds * 1000) {
            ids.add(submitOne(rnd));
            if (System.currentTimeMillis() >= nextSample) {
                nextSample += 5_000;
                double sec = (System.currentTimeMillis() - start) / 1000.0;
                Map<String, Long> s = sizes();
                long done = ids.stream().filter(acked::contains).count();
                rows.add(String.format(java.util.Locale.ROOT, "%.1f,%d,%d,%d,%d,%d", sec, done, s.get("log"),
                        s.get("decisions"), s.get("state"), s.get("witness")));
                t.add(sec);
                s.forEach((k, v) -> series.get(k).add(v / 1024.0));
            }
        }
        awaitAcked(ids);
        rows.add("# ended " + java.time.Instant.now() + ", " + ids.size() + " batches acknowledged, loadavg " + loadavg()
                + ", " + witnessCounters());
        File dirOut = new File(out);
        dirOut.mkdirs();
        File csv = new File(dirOut, "salus-storage-bounded.csv");
        try (PrintWriter pw = new PrintWriter(csv, StandardCharsets.UTF_8)) {
            rows.forEach(pw::println);
        }
        XYChart chart = new XYChartBuilder().width(1000).height(500)
                .title("Salus storage during a long write (salus-storage-bounded.csv)")
                .xAxisTitle("seconds").yAxisTitle("KiB").build();
        Map<String, String> label = Map.of("log", "Salus logs (HDFS)", "decisions", "decision records (HDFS)",
                "state", "checkpoint files (HDFS)", "witness", "witness journals (5 stores)");
        series.forEach((k, v) -> chart.addSeries(label.get(k), t, v));
        BitmapEncoder.saveBitmap(chart, new File(dirOut, "salus-storage-bounded").getPath(),
                BitmapEncoder.BitmapFormat.PNG);
        System.out.println("wrote " + csv + " and salus-storage-bounded.png");
    }

    static String loadavg() {
        try {
            return Files.readString(Path.of("/proc/loadavg")).trim().split(" ")[0];
        } catch (IOException e) {
            return "?";
        }
    }
}
