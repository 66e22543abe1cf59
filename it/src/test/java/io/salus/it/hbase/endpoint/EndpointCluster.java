package io.salus.it.hbase.endpoint;

import static org.junit.jupiter.api.Assertions.*;

import io.salus.core.cert.CertType;
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
import io.salus.core.hbase.storage.SalusFavoredNodes;
import io.salus.core.protocol.client.BlockWrite;
import io.salus.core.protocol.client.ClientListener;
import io.salus.core.protocol.replica.RegionReplica;
import io.salus.hdfs.witness.WitnessClientConnector;
import io.salus.hdfs.witness.WitnessDaemon;
import io.salus.hdfs.witness.WitnessDataNodePlugin;
import io.salus.hdfs.witness.WitnessNode;
import io.salus.hdfs.witness.WitnessTrust;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.Function;
import org.apache.hadoop.conf.Configuration;
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

/**
 * The one real cluster the replica-endpoint tests of this package share (one per test class): ZooKeeper, HBase with
 * one master (the placement observer) and three region servers, one Salus volume whose replica regions sit on three
 * distinct servers with their endpoint running, and a protocol client ({@link HBaseVolumeClientRunner}) recording
 * what it was told. Optional parts, chosen by {@link Options}:
 * <ul>
 *   <li>real replica storage: a MiniDFSCluster with three DataNodes, region server {@code k} paired with DataNode
 *   {@code k} ({@link SalusFavoredNodes#DATANODE_KEY}; in one JVM all are 127.0.0.1, told apart by port); without it
 *   the replicas keep their state in memory and there is no DFS;</li>
 *   <li>real witness stores as the five metadata holders of every RRS: the witness plugin on every DataNode and two
 *   standalone {@link WitnessDaemon}s, trusting the endpoint's test keys; the region servers then have fixed ports
 *   (the pairing of region server and DataNode witness names them as {@code *:port}).</li>
 * </ul>
 * Nothing is mocked; the deadlines are generous and never asserted as timings.
 */
final class EndpointCluster implements AutoCloseable {
    /**
     * Log entries between checkpoints in these tests (set explicitly: the endpoint's default is 64, task tput18; the
     * tests were written for checkpoints, log GC and witness truncation every 4 entries).
     */
    static final int CHECKPOINT_EVERY = 4;

    /** What the cluster is made of. */
    static final class Options {
        String volume;
        long seed;
        int regions;
        long blocksPerRegion;
        int block = 4096;
        long deadlineMs = 300_000;
        boolean dfs = true;
        boolean witnesses;
        long witnessSegmentBytes;
        boolean balancerOff = true;
        Consumer<Configuration> conf = c -> { };

        Options(String volume, long seed, int regions, long blocksPerRegion) {
            this.volume = volume;
            this.seed = seed;
            this.regions = regions;
            this.blocksPerRegion = blocksPerRegion;
        }

        /** The replicas keep their state in memory (no MiniDFSCluster). */
        Options inMemory() {
            dfs = false;
            return this;
        }

        /** Real witness stores hold every RRS's certificates ({@code segmentBytes} 0: the store's default). */
        Options witnesses(long segmentBytes) {
            witnesses = true;
            witnessSegmentBytes = segmentBytes;
            return this;
        }

        /** Leaves HBase's balancer switched on (the test switches it off itself, e.g. after placement). */
        Options balancerOn() {
            balancerOff = false;
            return this;
        }

        Options conf(Consumer<Configuration> c) {
            conf = c;
            return this;
        }

        Options deadlineMs(long ms) {
            deadlineMs = ms;
            return this;
        }
    }

    /** Where a replica region is open: its server, region and endpoint. */
    record Located(HRegionServer rs, HRegion region, SalusReplicaEndpoint endpoint) {
    }

    final Options o;
    HBaseTestingUtility util;
    MiniDFSCluster dfs;
    AsyncConnection conn;
    VolumeAddressing addressing;
    EndpointKeyring keys;
    HBaseVolumeClientRunner runner;
    /** Temporary directory of the witness daemons and the trust file (with witnesses). */
    Path dir;
    Path trustFile;
    final WitnessNode[] standalone = new WitnessNode[2];
    final int[] standalonePorts = new int[2];
    /** The witness address of DataNode k, paired with region server k (with witnesses). */
    final List<InetSocketAddress> dnWitness = new ArrayList<>();
    /** Journal directories of the five witnesses: the three DataNodes' then the two standalone ones. */
    final List<Path> witnessDirs = new ArrayList<>();
    /** Region server k's fixed port (with witnesses). */
    final int[] rsPorts = new int[3];
    /** DataNode transfer address ("127.0.0.1:port") region server k was started with (with DFS). */
    final List<String> dataNodes = new ArrayList<>();

    final Set<Long> acked = ConcurrentHashMap.newKeySet();
    final List<Long> failed = new CopyOnWriteArrayList<>();
    final List<String> recovery = new CopyOnWriteArrayList<>();
    final Map<Long, byte[]> got = new ConcurrentHashMap<>();
    /** What the client wrote and was handed to it: block -> data. */
    final Map<Long, byte[]> reference = new HashMap<>();

    private EndpointCluster(Options o) {
        this.o = o;
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    static EndpointCluster start(Options o) throws Exception {
        EndpointCluster c = new EndpointCluster(o);
        c.startCluster();
        return c;
    }

    private void startCluster() throws Exception {
        LogManager.getRootLogger().setLevel(Level.WARN);
        util = new HBaseTestingUtility();
        Configuration conf = util.getConfiguration();
        conf.setInt("hbase.master.info.port", -1);
        conf.setInt("hbase.regionserver.info.port", -1);
        // few handlers: a handler that waited for a peer region server would deadlock the write path
        conf.setInt("hbase.regionserver.handler.count", 3);
        conf.setInt("hbase.client.retries.number", 10);
        conf.set("hbase.coprocessor.master.classes", SalusPlacementObserver.class.getName());
        conf.setLong(SalusPlacementObserver.PERIOD_KEY, 1000);
        conf.setLong(EndpointKeyring.TEST_SEED_KEY, o.seed);
        conf.setInt(SalusReplicaEndpoint.CHECKPOINT_EVERY_KEY, CHECKPOINT_EVERY);
        o.conf.accept(conf);
        if (o.witnesses) {
            dir = Files.createTempDirectory("salus-endpoint-" + o.volume);
            trustFile = dir.resolve("trust.conf");
            Files.writeString(trustFile, "scheme ed25519\nendpoint-volume " + o.volume + " test-seed " + o.seed + "\n");
            conf.set("dfs.datanode.plugins", WitnessDataNodePlugin.class.getName());
            conf.setInt(WitnessDataNodePlugin.PORT_KEY, 0);
            conf.set(WitnessDataNodePlugin.TRUST_FILE_KEY, trustFile.toString());
            if (o.witnessSegmentBytes > 0) {
                conf.setLong(WitnessDataNodePlugin.SEGMENT_BYTES_KEY, o.witnessSegmentBytes);
            }
        }
        if (o.dfs) {
            dfs = util.startMiniDFSCluster(3);
            for (var dn : dfs.getDataNodes()) {
                dataNodes.add("127.0.0.1:" + dn.getXferAddress().getPort());
                if (o.witnesses) {
                    WitnessNode w = WitnessDataNodePlugin.running(dn);
                    assertNotNull(w, "DataNode " + dn.getXferAddress() + " runs the witness plugin");
                    dnWitness.add(w.address());
                    witnessDirs.add(w.store().directory());
                }
            }
        }
        if (o.witnesses) {
            for (int w = 0; w < 2; w++) {
                standalonePorts[w] = freePort();
                standalone[w] = startStandalone(w);
                witnessDirs.add(standalone[w].store().directory());
            }
            StringBuilder paired = new StringBuilder();
            for (int k = 0; k < 3; k++) {
                rsPorts[k] = freePort();
                paired.append(k == 0 ? "" : ",").append("*:").append(rsPorts[k]).append('=')
                        .append(dnWitness.get(k).getHostString()).append(':').append(dnWitness.get(k).getPort());
            }
            conf.set(WitnessHolders.CONNECTOR_KEY, WitnessClientConnector.class.getName());
            conf.set(WitnessHolders.STANDALONE_KEY,
                    "127.0.0.1:" + standalonePorts[0] + ",127.0.0.1:" + standalonePorts[1]);
            conf.set(WitnessHolders.PAIRED_KEY, paired.toString());
            conf.setBoolean("hbase.localcluster.assign.random.ports", false);
        }
        util.startMiniZKCluster();
        if (o.dfs) {
            // each region server copies the cluster configuration when it starts: one at a time, each told its own
            // DataNode (and, with witnesses, its fixed port)
            conf.set(SalusFavoredNodes.DATANODE_KEY, dataNodes.get(0));
            if (o.witnesses) {
                conf.setInt("hbase.regionserver.port", rsPorts[0]);
            }
            util.startMiniHBaseCluster(StartMiniClusterOption.builder().numMasters(1).numRegionServers(1).build());
            for (int i = 1; i < 3; i++) {
                Configuration cc = util.getMiniHBaseCluster().getConfiguration();
                cc.set(SalusFavoredNodes.DATANODE_KEY, dataNodes.get(i));
                if (o.witnesses) {
                    cc.setInt("hbase.regionserver.port", rsPorts[i]);
                }
                util.getMiniHBaseCluster().startRegionServer();
            }
        } else {
            util.startMiniHBaseCluster(StartMiniClusterOption.builder().numMasters(1).numRegionServers(3).build());
        }
        if (o.witnesses) {
            for (JVMClusterUtil.RegionServerThread rst : util.getMiniHBaseCluster().getLiveRegionServerThreads()) {
                int port = rst.getRegionServer().getServerName().getPort();
                assertTrue(port == rsPorts[0] || port == rsPorts[1] || port == rsPorts[2],
                        "region server on its fixed port (the pairing names it): " + port);
            }
        }
        VolumeGeometry g = new VolumeGeometry(o.volume, o.regions * o.blocksPerRegion * o.block, o.block,
                o.blocksPerRegion);
        try (Admin admin = util.getConnection().getAdmin()) {
            if (o.balancerOff) {
                admin.balancerSwitch(false, true); // the placement observer alone moves replicas
            }
            SalusTableLayout.create(admin, g);
        }
        addressing = new VolumeAddressing(g);
        keys = EndpointKeyring.deterministic(SignatureScheme.DEFAULT_CLIENT, SignatureScheme.DEFAULT_SERVER, o.seed,
                addressing);
        awaitPlaced();
        conn = ConnectionFactory.createAsyncConnection(conf).get();
        runner = new HBaseVolumeClientRunner(conn, addressing, keys.signer(addressing.client()), keys.verifier(),
                new ClientListener() {
                    @Override
                    public void putSucceeded(long batchId, long firstSeq, long lastSeq, List<Certificate> certs) {
                        // each region's PUT_SUCCESS, or the batch's COMMIT where a region's did not form (asked for on a
                        // retransmission, task fix21); an assertion failing here ran on the client's loop and stalled it
                        certs.forEach(c -> assertTrue(c.type() == CertType.PUT_SUCCESS || c.type() == CertType.COMMIT,
                                "a PUT_SUCCESS or the batch's COMMIT: " + c.type()));
                        acked.add(batchId);
                    }

                    @Override
                    public void putFailed(long batchId) {
                        failed.add(batchId);
                    }

                    @Override
                    public void recoveryNeeded(String reason) {
                        recovery.add(reason);
                    }

                    @Override
                    public void getSucceeded(long requestId, long block, byte[] data) {
                        got.put(requestId, data);
                    }
                }, 32, 5_000);
    }

    /** (Re)starts standalone witness {@code w} on its port and directory. */
    WitnessNode startStandalone(int w) throws Exception {
        WitnessNode.Settings s = WitnessNode.Settings.of(dir.resolve("w" + w), standalonePorts[w])
                .withTrust(WitnessTrust.load(trustFile)).withNodeId("standalone-w" + w);
        if (o.witnessSegmentBytes > 0) {
            s = s.withSegmentBytes(o.witnessSegmentBytes);
        }
        return WitnessDaemon.start(s);
    }

    @Override
    public void close() throws Exception {
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

    /** Waits until every replica region is open on three distinct servers with its replica running. */
    void awaitPlaced() throws InterruptedException {
        awaitTrue("every replica region on three distinct servers with its replica running", () -> {
            if (!util.getMiniHBaseCluster().getMaster().getAssignmentManager().getRegionsInTransition().isEmpty()) {
                return false;
            }
            for (int r = 0; r < o.regions; r++) {
                Set<ServerName> servers = new HashSet<>();
                for (int k = 0; k < 3; k++) {
                    Located l = locate(r, k);
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

    /** Where region {@code r} of replica table {@code k} is open on a live server, with its endpoint; else null. */
    Located locate(int r, int k) {
        TableName t = SalusTableLayout.tableName(o.volume, k);
        for (JVMClusterUtil.RegionServerThread rst : util.getMiniHBaseCluster().getLiveRegionServerThreads()) {
            HRegionServer rs = rst.getRegionServer();
            if (rs.isAborted() || rs.isStopped()) {
                continue;
            }
            for (HRegion region : rs.getRegions(t)) {
                byte[] start = region.getRegionInfo().getStartKey();
                long first = start.length == 0 ? 0 : Bytes.toLong(start);
                if (first == r * o.blocksPerRegion) {
                    SalusReplicaEndpoint ep = region.getCoprocessorHost().findCoprocessor(SalusReplicaEndpoint.class);
                    return ep == null ? null : new Located(rs, region, ep);
                }
            }
        }
        return null;
    }

    /** The running replica of region {@code r}, replica table {@code k}. */
    ReplicaHost host(int r, int k) {
        Located l = locate(r, k);
        assertNotNull(l, "region " + r + " of replica table " + k + " is open with its endpoint");
        assertNotNull(l.endpoint().host(), "the replica of region " + r + " table " + k + " is running");
        return l.endpoint().host();
    }

    /** Runs {@code f} on the replica's event loop. */
    <T> T inspect(int r, int k, Function<RegionReplica, T> f) throws Exception {
        return host(r, k).inspect(f).get(60, TimeUnit.SECONDS);
    }

    /**
     * Waits until each replica of RRS {@code r} has acted on every log index one of them had committed when called. A
     * batch is acknowledged once it is committed; a replica that was behind applies it to its store after that, so a
     * test reading a replica's blocks right after the acknowledgement could see the block's previous value.
     */
    void awaitApplied(int r) throws Exception {
        long target = 0;
        for (int k = 0; k < 3; k++) {
            target = Math.max(target, inspect(r, k, RegionReplica::committedIndex));
        }
        for (int k = 0; k < 3; k++) {
            final int kk = k;
            final long t = target;
            awaitTrue("replica " + k + " of RRS " + r + " applied through log index " + t, () -> {
                try {
                    return inspect(r, kk, RegionReplica::committedIndex) >= t;
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
        }
    }

    void awaitTrue(String what, BooleanSupplier cond) throws InterruptedException {
        long end = System.currentTimeMillis() + o.deadlineMs;
        while (!cond.getAsBoolean()) {
            if (System.currentTimeMillis() > end) {
                fail("not reached within the deadline: " + what);
            }
            Thread.sleep(50);
        }
    }

    /** Submits a batch, waiting while the client's pipeline is full; records the writes in {@link #reference}. */
    long submit(List<BlockWrite> writes) throws Exception {
        long end = System.currentTimeMillis() + o.deadlineMs;
        while (true) {
            long id = runner.call(c -> c.submit(writes)).get(60, TimeUnit.SECONDS);
            if (id > 0) {
                synchronized (reference) {
                    writes.forEach(w -> reference.put(w.block(), w.data()));
                }
                return id;
            }
            if (System.currentTimeMillis() > end) {
                fail("the client's pipeline stayed full: " + runner.call(Object::toString).get());
            }
            Thread.sleep(2);
        }
    }
}
