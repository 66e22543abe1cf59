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
import io.salus.core.hbase.storage.HdfsReplicaDisk;
import io.salus.core.hbase.storage.HdfsReplicaStorage;
import io.salus.core.hbase.storage.SalusFavoredNodes;
import io.salus.core.merkle.Hash;
import io.salus.core.protocol.client.BlockWrite;
import io.salus.core.protocol.client.ClientListener;
import io.salus.core.protocol.replica.RegionReplica;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.BlockLocation;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.hadoop.hbase.HBaseTestingUtility;
import org.apache.hadoop.hbase.ServerName;
import org.apache.hadoop.hbase.StartMiniClusterOption;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.AsyncConnection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.regionserver.HRegion;
import org.apache.hadoop.hbase.regionserver.HRegionServer;
import org.apache.hadoop.hbase.util.Bytes;
import org.apache.hadoop.hbase.util.CommonFSUtils;
import org.apache.hadoop.hbase.util.JVMClusterUtil;
import org.apache.hadoop.hbase.wal.WAL;
import org.apache.hadoop.hbase.wal.WALFactory;
import org.apache.hadoop.hbase.wal.WALStreamReader;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.log4j.Level;
import org.apache.log4j.LogManager;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import io.salus.core.cert.RegionId;
import io.salus.core.cert.Statement;
import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.NodeKeys;
import io.salus.core.hbase.endpoint.WitnessHolders;
import io.salus.core.protocol.message.Message;
import io.salus.hdfs.witness.WitnessClient;
import io.salus.hdfs.witness.WitnessClientConnector;
import io.salus.hdfs.witness.WitnessDaemon;
import io.salus.hdfs.witness.WitnessDataNodePlugin;
import io.salus.hdfs.witness.WitnessNode;
import io.salus.hdfs.witness.WitnessTrust;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;

/**
 * Issue 13, Done-when "certificates in five witness stores": the five metadata holders of every RRS are real
 * witness stores. A MiniDFSCluster whose three DataNodes run the witness plugin, two standalone
 * {@link WitnessDaemon}s, three region servers each paired with one DataNode (its favored node, and its witness in
 * {@link WitnessHolders#PAIRED_KEY}; in one JVM all are 127.0.0.1, so region servers have fixed ports and the
 * pairing names them as {@code *:port}). The witnesses check the endpoint's tentatives with the trust-file line
 * {@code endpoint-volume <volume> test-seed <seed>} (test keys). Nothing mocked; no timing asserted.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class SalusWitnessStoresTest {
    /** Log entries between checkpoints in this test (set explicitly: the default is 64). */
    static final int CHECKPOINT_EVERY = 4;
    static final long SEED = 47;
    static final String VOLUME = "ww";
    static final int BLOCK = 4096;
    static final long BLOCKS_PER_REGION = 16;
    static final int REGIONS = 2;
    static final long DEADLINE_MS = 300_000;

    static HBaseTestingUtility util;
    static MiniDFSCluster dfs;
    static AsyncConnection conn;
    static VolumeAddressing addressing;
    static EndpointKeyring keys;
    static HBaseVolumeClientRunner runner;
    static java.nio.file.Path dir;
    static java.nio.file.Path trustFile;
    static final WitnessNode[] standalone = new WitnessNode[2];
    static final int[] standalonePorts = new int[2];
    static final Set<Long> acked = ConcurrentHashMap.newKeySet();
    static final List<Long> failed = new CopyOnWriteArrayList<>();
    /** The witness address of DataNode k, paired with region server k. */
    static final List<InetSocketAddress> dnWitness = new ArrayList<>();
    /** Region server k's port. */
    static final int[] rsPorts = new int[3];

    static int freePort() throws Exception {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    static WitnessNode startStandalone(int w) throws Exception {
        return WitnessDaemon.start(WitnessNode.Settings.of(dir.resolve("w" + w), standalonePorts[w])
                .withTrust(WitnessTrust.load(trustFile)).withNodeId("standalone-w" + w));
    }

    @BeforeAll
    static void start() throws Exception {
        LogManager.getRootLogger().setLevel(Level.WARN);
        dir = Files.createTempDirectory("salus-witness-stores");
        trustFile = dir.resolve("trust.conf");
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
        dfs = util.startMiniDFSCluster(3);
        List<String> dataNodes = new ArrayList<>();
        for (var dn : dfs.getDataNodes()) {
            dataNodes.add("127.0.0.1:" + dn.getXferAddress().getPort());
            WitnessNode w = WitnessDataNodePlugin.running(dn);
            assertNotNull(w, "DataNode " + dn.getXferAddress() + " runs the witness plugin");
            dnWitness.add(w.address());
        }
        for (int w = 0; w < 2; w++) {
            standalonePorts[w] = freePort();
            standalone[w] = startStandalone(w);
        }
        StringBuilder paired = new StringBuilder();
        for (int k = 0; k < 3; k++) {
            rsPorts[k] = freePort();
            paired.append(k == 0 ? "" : ",").append("*:").append(rsPorts[k]).append('=')
                    .append(dnWitness.get(k).getHostString()).append(':').append(dnWitness.get(k).getPort());
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
        for (JVMClusterUtil.RegionServerThread rst : util.getMiniHBaseCluster().getLiveRegionServerThreads()) {
            int port = rst.getRegionServer().getServerName().getPort();
            assertTrue(port == rsPorts[0] || port == rsPorts[1] || port == rsPorts[2],
                    "region server on its fixed port (the pairing names it): " + port);
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
        for (WitnessNode w : standalone) {
            if (w != null) {
                w.close();
            }
        }
        if (util != null) {
            util.shutdownMiniCluster();
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

    static ReplicaHost host(int r, int k) {
        SalusReplicaStorageTest.Located l = locate(r, k);
        assertNotNull(l, "region " + r + " of replica table " + k + " is open with its endpoint");
        assertNotNull(l.endpoint().host(), "the replica of region " + r + " table " + k + " is running");
        return l.endpoint().host();
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

    static long submit(List<BlockWrite> writes) throws Exception {
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

    /** The witness address serving holder {@code s<k>} of region r: the DataNode paired with replica k's server. */
    static InetSocketAddress pairedWitness(int r, int k) {
        int port = locate(r, k).rs().getServerName().getPort();
        for (int i = 0; i < 3; i++) {
            if (rsPorts[i] == port) {
                return dnWitness.get(i);
            }
        }
        throw new AssertionError("no pairing for region server port " + port);
    }

    static List<InetSocketAddress> fiveStores(int r) {
        return List.of(pairedWitness(r, 0), pairedWitness(r, 1), pairedWitness(r, 2), standalone[0].address(),
                standalone[1].address());
    }

    /**
     * After a stream of batches, every committed log index of every region has a LOG_ENTRY certificate in each of
     * its five witness stores (three DataNode plugins, two standalone daemons), asked with {@code WitnessClient.query}.
     */
    @Test
    @Order(1)
    void everyCommittedEntryHasALogEntryInFiveWitnessStores() throws Exception {
        Random rnd = new Random(5);
        List<Long> ids = new ArrayList<>();
        for (int i = 0; i < 30; i++) {
            long a = (i % REGIONS) * BLOCKS_PER_REGION + rnd.nextInt((int) BLOCKS_PER_REGION);
            long b = ((i + 1) % REGIONS) * BLOCKS_PER_REGION + rnd.nextInt((int) BLOCKS_PER_REGION);
            byte[] da = new byte[BLOCK];
            byte[] db = new byte[BLOCK];
            rnd.nextBytes(da);
            rnd.nextBytes(db);
            ids.add(submit(List.of(new BlockWrite(a, da), new BlockWrite(b, db))));
        }
        awaitTrue("all batches acknowledged", () -> acked.containsAll(ids) || !failed.isEmpty());
        assertEquals(List.of(), failed);
        for (int r = 0; r < REGIONS; r++) {
            long committed = host(r, 0).inspect(RegionReplica::committedIndex).get(60, TimeUnit.SECONDS);
            assertTrue(committed >= 0, "region " + r + " committed entries");
            Set<InetSocketAddress> distinct = new HashSet<>(fiveStores(r));
            assertEquals(5, distinct.size(), "five distinct witness stores for RRS " + r + ": " + fiveStores(r));
            for (InetSocketAddress w : fiveStores(r)) {
                try (WitnessClient c = WitnessClient.connect(w)) {
                    // issue 14 item 1: a CHECKPOINT certificate through k truncates the entries <= k (the witness
                    // answers nothing stored there); what it holds is every entry after the prefix it truncated
                    long truncated = -1;
                    for (long i = 0; i <= committed; i++) {
                        Certificate got = c.query(new RegionId(VOLUME, r), 0, i);
                        if (got == null && truncated == i - 1) {
                            truncated = i;
                            continue;
                        }
                        assertNotNull(got, "witness " + w + " holds region " + r + " index " + i + " (truncated"
                                + " through " + truncated + ")");
                        assertEquals(CertType.LOG_ENTRY, got.type(), "at " + w + " region " + r + " index " + i);
                    }
                    assertTrue(truncated == -1 || (truncated + 1) % CHECKPOINT_EVERY == 0,
                            "witness " + w + " truncated region " + r + " through " + truncated + ", not a"
                                    + " checkpoint index");
                }
            }
        }
        Map<String, Long> c = host(0, 0).counters();
        assertTrue(c.get("witnessAcks") > 0, "acks came from the witnesses: " + c);
    }

    /**
     * A standalone witness that is down makes writes wait (they do not commit with four acks) until it returns; a
     * store ack forged for it with the region server's test key (right index and digest, wrong signer) is not
     * counted.
     */
    @Test
    @Order(2)
    void aDownWitnessMakesWritesWaitAndAForgedAckIsNotCounted() throws Exception {
        long before = host(0, 0).inspect(RegionReplica::committedIndex).get(60, TimeUnit.SECONDS);
        standalone[1].close();
        byte[] d = new byte[BLOCK];
        new Random(9).nextBytes(d);
        long id = submit(List.of(new BlockWrite(3, d)));
        long index = before + 1;
        // the four live witnesses store the entry ...
        Certificate stored = null;
        long end = System.currentTimeMillis() + DEADLINE_MS;
        while (stored == null) {
            try (WitnessClient c = WitnessClient.connect(standalone[0].address())) {
                stored = c.query(new RegionId(VOLUME, 0), 0, index);
            }
            if (System.currentTimeMillis() > end) {
                fail("the live witness never stored index " + index);
            }
            Thread.sleep(50);
        }
        Statement.LogEntry st = stored.statement(Statement.LogEntry.class);
        // ... and the replicas noticed that w1 is unreachable (several offers failed)
        awaitTrue("offers to the down witness failed", () -> host(0, 0).counters().get("witnessFailures") >= 3);
        // a forged ack for w1, signed with the test keyring key the region servers know
        NodeId w1 = addressing.membership().current(0).metadataHolders().get(4);
        byte[] forgedSig = NodeKeys.deterministic(SignatureScheme.ED25519, w1, SEED).signer().sign(
                Message.StoreAck.signedBytes(0, 0, index, st.digest()));
        for (int k = 0; k < 3; k++) {
            host(0, k).enqueue(w1, addressing.replica(0, k),
                    new Message.StoreAck(0, 0, index, st.digest(), forgedSig));
        }
        // the batch waits: more failed offers (retransmissions) and it is still not acknowledged
        long failures = host(0, 0).counters().get("witnessFailures");
        awaitTrue("the replicas kept retrying the down witness",
                () -> host(0, 0).counters().get("witnessFailures") >= failures + 3);
        assertFalse(acked.contains(id), "a write committed with only four witness acks (or a forged fifth)");
        assertEquals(before, (long) host(0, 0).inspect(RegionReplica::committedIndex).get(60, TimeUnit.SECONDS));
        // the witness returns (same journal, same port): the write commits
        standalone[1] = startStandalone(1);
        awaitTrue("the write commits once the witness is back", () -> acked.contains(id));
        try (WitnessClient c = WitnessClient.connect(standalone[1].address())) {
            assertEquals(CertType.LOG_ENTRY, c.query(new RegionId(VOLUME, 0), 0, index).type());
        }
    }
}
