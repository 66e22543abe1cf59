package io.salus.it.hbase.endpoint;

import static org.junit.jupiter.api.Assertions.*;

import io.salus.core.cert.CertType;
import io.salus.core.cert.Certificate;
import io.salus.core.crypto.NodeKeys;
import io.salus.core.crypto.SignatureScheme;
import io.salus.core.hbase.SalusPlacementObserver;
import io.salus.core.hbase.SalusTableLayout;
import io.salus.core.hbase.VolumeGeometry;
import io.salus.core.hbase.endpoint.EndpointKeyring;
import io.salus.core.hbase.endpoint.HBaseVolumeClientRunner;
import io.salus.core.hbase.endpoint.ReplicaFaultInjector;
import io.salus.core.hbase.endpoint.ReplicaHost;
import io.salus.core.hbase.endpoint.SalusReplicaEndpoint;
import io.salus.core.hbase.endpoint.VolumeAddressing;
import io.salus.core.merkle.Hash;
import io.salus.core.protocol.client.BlockWrite;
import io.salus.core.protocol.client.ClientListener;
import io.salus.core.protocol.message.Message;
import io.salus.core.protocol.message.Put;
import io.salus.core.protocol.message.SubBatch;
import io.salus.core.protocol.replica.RegionReplica;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
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
import org.apache.hadoop.hbase.util.JVMClusterUtil;
import org.apache.log4j.Level;
import org.apache.log4j.LogManager;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * The Salus write and read path on real region servers (issue 13 items 3 and 4 as far as built): an HBase mini
 * cluster with three region servers and only {@value #HANDLERS} RPC handlers each, one Salus volume created by
 * {@link SalusTableLayout} (the replica endpoint is a table attribute), and a {@code VolumeClient} in the test
 * driving the replica endpoints over HBase RPC with 32 batches in flight. Replica storage is the in-memory
 * default ({@code ReplicaStorageFactory.InMemory}); nothing else is mocked. Deadlines are generous and never
 * asserted as timings.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class SalusReplicaEndpointTest {
    static final int HANDLERS = 3;
    static final long DEADLINE_MS = 240_000;
    static final long SEED = 42;
    static final int BLOCK = 4096;
    static final long BLOCKS_PER_REGION = 16;
    static final int REGIONS = 4;
    static EndpointCluster cluster;

    @BeforeAll
    static void start() throws Exception {
        cluster = EndpointCluster.start(new EndpointCluster.Options("ev", SEED, REGIONS, BLOCKS_PER_REGION)
                .inMemory().balancerOn().deadlineMs(DEADLINE_MS).conf(conf -> {
                    conf.setBoolean("hbase.unsafe.stream.capability.enforce", false);
                    conf.set("hbase.wal.provider", "filesystem");
                    conf.setInt("hbase.regionserver.handler.count", HANDLERS);
                    // inert until a test switches a fault on
                    conf.set(ReplicaFaultInjector.CLASS_KEY, GetFaults.class.getName());
                    // this class tests the protocol path on in-memory replica storage (no mini DFS); the real
                    // storage is tested by SalusReplicaStorageTest
                    conf.set(io.salus.core.hbase.endpoint.ReplicaStorageFactory.CLASS_KEY,
                            io.salus.core.hbase.endpoint.ReplicaStorageFactory.InMemory.class.getName());
                }));
        try (Admin admin = cluster.util.getConnection().getAdmin()) {
            admin.balancerSwitch(false, true); // no moves during the test: the in-memory replica state would go
        }
    }

    @AfterAll
    static void stop() throws Exception {
        if (cluster != null) {
            cluster.close();
        }
    }

    static byte[] data(Random rnd) {
        byte[] d = new byte[BLOCK];
        rnd.nextBytes(d);
        return d;
    }

    @Test
    @Order(1)
    void streamOfBatchesAcrossRrssCommitsOnEveryReplicaAndReadsBackVerified() throws Exception {
        Random rnd = new Random(7);
        List<Long> ids = new ArrayList<>();
        int batches = 160;
        for (int i = 0; i < batches; i++) {
            // every batch spans two RRSs (the leader is the first block's region)
            long a = (i % REGIONS) * BLOCKS_PER_REGION + rnd.nextInt((int) BLOCKS_PER_REGION);
            long b = ((i + 1) % REGIONS) * BLOCKS_PER_REGION + rnd.nextInt((int) BLOCKS_PER_REGION);
            ids.add(cluster.submit(List.of(new BlockWrite(a, data(rnd)), new BlockWrite(b, data(rnd)))));
        }
        cluster.awaitTrue("all " + batches + " batches acknowledged (acked " + cluster.acked.size() + ")",
                () -> cluster.acked.containsAll(ids) || !cluster.failed.isEmpty());
        assertEquals(List.of(), cluster.failed);
        assertEquals(List.of(), cluster.recovery);

        Hash clientRoot = cluster.runner.call(c -> c.volumeRoot()).get();
        for (int r = 0; r < REGIONS; r++) {
            Hash root0 = null;
            cluster.awaitApplied(r);
            for (int k = 0; k < 3; k++) {
                final int region = r;
                for (Map.Entry<Long, byte[]> e : referenceOf(region).entrySet()) {
                    long local = e.getKey() - region * BLOCKS_PER_REGION;
                    byte[] stored = cluster.inspect(r, k, rep -> rep.block(local));
                    assertArrayEquals(e.getValue(), stored, "block " + e.getKey() + " at replica " + k + " of RRS " + r);
                }
                Hash root = cluster.inspect(r, k, RegionReplica::regionRoot);
                if (root0 == null) {
                    root0 = root;
                }
                assertEquals(root0, root, "the three replicas of RRS " + r + " have the same region root");
            }
        }
        // the newest volume-root record any replica holds is the client's volume root
        Hash newest = null;
        long newestSeq = -1;
        for (int r = 0; r < REGIONS; r++) {
            var rec = cluster.inspect(r, 0, RegionReplica::rootRecord);
            if (rec.seq() > newestSeq) {
                newestSeq = rec.seq();
                newest = rec.root();
            }
        }
        assertEquals(clientRoot, newest);

        // GETs: the client verifies each reply's Merkle proof against the region root it expects
        Map<Long, Long> reqs = new HashMap<>();
        for (long block : List.copyOf(cluster.reference.keySet())) {
            reqs.put(cluster.runner.call(c -> c.get(block)).get(), block);
        }
        long unwritten = -1;
        for (long b = 0; b < REGIONS * BLOCKS_PER_REGION && unwritten < 0; b++) {
            if (!cluster.reference.containsKey(b)) {
                unwritten = b;
            }
        }
        final long zeroBlock = unwritten;
        long zeroReq = cluster.runner.call(c -> c.get(zeroBlock)).get();
        cluster.awaitTrue("every GET answered with a verified proof", () -> cluster.got.keySet().containsAll(reqs.keySet())
                && cluster.got.containsKey(zeroReq));
        reqs.forEach((req, block) -> assertArrayEquals(cluster.reference.get(block), cluster.got.get(req), "GET of block " + block));
        assertArrayEquals(new byte[BLOCK], cluster.got.get(zeroReq), "an unwritten block reads as zeros");
        System.out.println("client link counters: " + cluster.runner.counters());
    }

    static Map<Long, byte[]> referenceOf(int region) {
        Map<Long, byte[]> m = new HashMap<>();
        synchronized (cluster.reference) {
            cluster.reference.forEach((b, d) -> {
                if (b / BLOCKS_PER_REGION == region) {
                    m.put(b, d);
                }
            });
        }
        return m;
    }

    @Test
    @Order(2)
    void forgedSubBatchIsRefusedAndNothingIsApplied() throws Exception {
        long block = 3; // RRS 0
        long appliedBefore = cluster.inspect(0, 0, RegionReplica::appliedSeq);
        byte[] before = cluster.inspect(0, 0, rep -> rep.block(block));
        long receivedBefore = cluster.host(0, 0).counters().get("received");
        // a sub-batch that would be next in RRS 0's chain, signed with a key that is not the client's
        byte[] evil = new byte[BLOCK];
        java.util.Arrays.fill(evil, (byte) 0x66);
        long nextSeq = cluster.runner.call(c -> c.nextSeq()).get();
        Hash h = cluster.addressing.protocolConfig().hash().leafHash(evil);
        Put p = new Put(nextSeq + 1000, appliedBefore, block, evil, h, h);
        SubBatch sb = new SubBatch("ev", 0, 10_000, 0, List.of(p), null);
        NodeKeys forger = NodeKeys.deterministic(SignatureScheme.ED25519, cluster.addressing.client(), SEED + 1);
        cluster.runner.sendRaw(cluster.addressing.replica(0, 0), new Message.SubBatchMsg(sb.withSignature(forger.signer().sign(sb.signedBytes()))));
        cluster.awaitTrue("the forged sub-batch reached the primary's event loop",
                () -> cluster.host(0, 0).counters().get("received") > receivedBefore);
        // a genuine batch to RRS 0, sent after the forgery on the same link (FIFO per region): it chains on the
        // same prevNum, so it commits only if the forgery was not accepted
        byte[] good = data(new Random(99));
        long id = cluster.submit(List.of(new BlockWrite(block + 1, good)));
        cluster.awaitTrue("the genuine batch after the forgery is acknowledged", () -> cluster.acked.contains(id) || !cluster.failed.isEmpty());
        assertEquals(List.of(), cluster.failed);
        cluster.awaitApplied(0);
        for (int k = 0; k < 3; k++) {
            assertArrayEquals(before, cluster.inspect(0, k, rep -> rep.block(block)), "replica " + k + " applied the forgery");
            assertArrayEquals(good, cluster.inspect(0, k, rep -> rep.block(block + 1)));
        }
    }

    /**
     * Item 4: a GET is served by one replica with a Merkle proof; a reply that fails the client's end-to-end check
     * (a replica returning a flipped bit) or no reply at all (a silent replica) makes the client retry at another
     * replica, and the bad replica is counted. (The client asks replica {@code tries % 3} first: replica 0.)
     */
    @Test
    @Order(3)
    void getRetriesAnotherReplicaOnBadProofOrTimeoutAndCountsTheBadOne() throws Exception {
        long b1 = BLOCKS_PER_REGION + 5; // RRS 1
        long b2 = 2 * BLOCKS_PER_REGION + 6; // RRS 2
        byte[] d1 = data(new Random(11));
        byte[] d2 = data(new Random(12));
        long id = cluster.submit(List.of(new BlockWrite(b1, d1), new BlockWrite(b2, d2)));
        cluster.awaitTrue("the batch is acknowledged", () -> cluster.acked.contains(id) || !cluster.failed.isEmpty());
        var liar = cluster.addressing.replica(1, 0);
        var mute = cluster.addressing.replica(2, 0);
        try {
            GetFaults.corrupt.add(liar);
            GetFaults.silent.add(mute);
            long r1 = cluster.runner.call(c -> c.get(b1)).get();
            long r2 = cluster.runner.call(c -> c.get(b2)).get();
            cluster.awaitTrue("both GETs answered by an honest replica", () -> cluster.got.containsKey(r1) && cluster.got.containsKey(r2));
            assertArrayEquals(d1, cluster.got.get(r1), "the corrupted reply was not accepted");
            assertArrayEquals(d2, cluster.got.get(r2));
        } finally {
            GetFaults.corrupt.clear();
            GetFaults.silent.clear();
        }
        Map<io.salus.core.crypto.NodeId, Long> bad = cluster.runner.getRetriesByReplica();
        assertTrue(bad.getOrDefault(liar, 0L) >= 1, "the lying replica is counted: " + bad);
        assertTrue(bad.getOrDefault(mute, 0L) >= 1, "the silent replica is counted: " + bad);
        // (no assertion that honest replicas have no count: on a loaded machine an honest replica can miss the
        // retransmission period, and a timeout is counted as such)
    }

    /**
     * Item 2 of issue 13: 64-block batches (256 KiB) with 32 in flight commit. Before, the replicas re-forwarded every
     * unresolved 256 KiB sub-batch each retransmission period while earlier copies still waited in the link's queue,
     * re-validated each copy (signature and 64 block hashes), and the event loops fell behind until the client gave
     * up ("no PUT_SUCCESS after 4 retries"). A volume of its own (4 RRSs of 1024 blocks), a client of its own.
     */
    @Test
    @Order(4)
    void sixtyFourBlockBatchesWithThirtyTwoInFlightAllCommit() throws Exception {
        VolumeGeometry g = new VolumeGeometry("evbig", 4096L * BLOCK, BLOCK, 1024);
        try (Admin admin = cluster.util.getConnection().getAdmin()) {
            SalusTableLayout.create(admin, g);
        }
        VolumeAddressing big = new VolumeAddressing(g);
        cluster.awaitTrue("every replica region of evbig on three distinct servers with its endpoint running", () -> {
            if (!cluster.util.getMiniHBaseCluster().getMaster().getAssignmentManager().getRegionsInTransition().isEmpty()) {
                return false;
            }
            for (int r = 0; r < 4; r++) {
                Set<ServerName> servers = new HashSet<>();
                for (int k = 0; k < 3; k++) {
                    HRegion region = null;
                    ServerName where = null;
                    for (JVMClusterUtil.RegionServerThread rst : cluster.util.getMiniHBaseCluster().getLiveRegionServerThreads()) {
                        for (HRegion x : rst.getRegionServer().getRegions(SalusTableLayout.tableName("evbig", k))) {
                            byte[] start = x.getRegionInfo().getStartKey();
                            long first = start.length == 0 ? 0 : org.apache.hadoop.hbase.util.Bytes.toLong(start);
                            if (first == r * 1024L) {
                                region = x;
                                where = rst.getRegionServer().getServerName();
                            }
                        }
                    }
                    SalusReplicaEndpoint ep = region == null ? null
                            : region.getCoprocessorHost().findCoprocessor(SalusReplicaEndpoint.class);
                    if (ep == null || ep.host() == null) {
                        return false;
                    }
                    servers.add(where);
                }
                if (servers.size() != 3) {
                    return false;
                }
            }
            return true;
        });
        EndpointKeyring bigKeys = EndpointKeyring.deterministic(SignatureScheme.DEFAULT_CLIENT,
                SignatureScheme.DEFAULT_SERVER, SEED, big);
        Set<Long> bigAcked = ConcurrentHashMap.newKeySet();
        List<String> bigTrouble = new java.util.concurrent.CopyOnWriteArrayList<>();
        try (HBaseVolumeClientRunner r = new HBaseVolumeClientRunner(cluster.conn, big, bigKeys.signer(big.client()),
                bigKeys.verifier(), new ClientListener() {
                    @Override
                    public void putSucceeded(long batchId, long firstSeq, long lastSeq, List<Certificate> certs) {
                        bigAcked.add(batchId);
                    }

                    @Override
                    public void putFailed(long batchId) {
                        bigTrouble.add("batch " + batchId + " failed");
                    }

                    @Override
                    public void recoveryNeeded(String reason) {
                        bigTrouble.add(reason);
                    }

                    @Override
                    public void getSucceeded(long requestId, long block, byte[] data) {
                    }
                }, 32, 5_000)) {
            Random rnd = new Random(64);
            List<Long> ids = new ArrayList<>();
            for (int b = 0; b < 64; b++) {
                List<BlockWrite> ws = new ArrayList<>();
                for (int i = 0; i < 64; i++) {
                    ws.add(new BlockWrite(b * 64L + i, data(rnd)));
                }
                long end = System.currentTimeMillis() + DEADLINE_MS;
                long id;
                while ((id = r.call(c -> c.submit(ws)).get(60, TimeUnit.SECONDS)) < 0 && bigTrouble.isEmpty()) {
                    if (System.currentTimeMillis() > end) {
                        fail("the pipeline stayed full: " + r.call(Object::toString).get());
                    }
                    Thread.sleep(2);
                }
                assertEquals(List.of(), bigTrouble);
                ids.add(id);
            }
            cluster.awaitTrue("all 64 batches of 64 blocks acknowledged", () -> bigAcked.containsAll(ids) || !bigTrouble.isEmpty());
            assertEquals(List.of(), bigTrouble);
            System.out.println("64-block batches, client link counters: " + r.counters());
        }
    }

    /**
     * Issue 27 item 4 (every queue bounded): a replica whose event loop stops running (here: held on a latch, as a
     * slow HBase flush or apply would hold it) refuses messages past its inbound bound, answering "busy", instead of
     * queueing them in the region server's heap; its senders retransmit, and once the loop runs again every batch
     * commits on every replica. The bound is lowered to 8 messages so that a few dozen batches pass it.
     */
    @Test
    @Order(5)
    void aReplicaWhoseLoopFallsBehindRefusesPastItsBoundAndEveryBatchStillCommits() throws Exception {
        ReplicaHost slow = cluster.host(0, 1);
        long refusedBefore = slow.inbound().refused();
        slow.limitInbound(8, 1 << 20);
        java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CompletableFuture<Object> held = slow.inspect(rep -> {
            try {
                release.await(120, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return null;
        });
        Random rnd = new Random(55);
        List<Long> ids = new ArrayList<>();
        try {
            for (int i = 0; i < 20; i++) { // fewer than the client's pipeline holds: submit never waits
                long a = rnd.nextInt((int) BLOCKS_PER_REGION); // region 0 leads: replica 0/1 is in every batch
                long b = BLOCKS_PER_REGION + rnd.nextInt((int) BLOCKS_PER_REGION);
                ids.add(cluster.submit(List.of(new BlockWrite(a, data(rnd)), new BlockWrite(b, data(rnd)))));
            }
            cluster.awaitTrue("the held replica refused messages past its bound of 8 (refused "
                    + slow.inbound().refused() + ", queued " + slow.inbound().queuedMessages() + ")",
                    () -> slow.inbound().refused() > refusedBefore);
            assertTrue(slow.inbound().queuedMessages() <= 8, "queued " + slow.inbound().queuedMessages());
            List<Long> early = ids.stream().filter(cluster.acked::contains).toList();
            assertEquals(List.of(), early, "acknowledged while replica 0/1's loop was held, of " + ids + "; "
                    + slow.counters());
        } finally {
            release.countDown();
        }
        held.get(60, TimeUnit.SECONDS);
        cluster.awaitTrue("all 20 batches acknowledged after the loop runs again",
                () -> cluster.acked.containsAll(ids) || !cluster.failed.isEmpty());
        assertEquals(List.of(), cluster.failed);
        for (int r = 0; r < 2; r++) {
            cluster.awaitApplied(r); // the held replica applies the last batches after they are acknowledged
            for (int k = 0; k < 3; k++) {
                for (Map.Entry<Long, byte[]> e : referenceOf(r).entrySet()) {
                    long local = e.getKey() - r * BLOCKS_PER_REGION;
                    assertArrayEquals(e.getValue(), cluster.inspect(r, k, rep -> rep.block(local)),
                            "block " + e.getKey() + " at replica " + k + " of RRS " + r);
                }
            }
        }
        System.out.println("held replica 0/1: refused " + (slow.inbound().refused() - refusedBefore) + " messages, peak "
                + slow.inbound().peakMessages() + " queued; " + slow.counters());
        slow.limitInbound(ReplicaHost.MAX_QUEUED_MESSAGES, ReplicaHost.MAX_QUEUED_BYTES);
    }
}
