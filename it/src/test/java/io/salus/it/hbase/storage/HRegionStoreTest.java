package io.salus.it.hbase.storage;

import static org.junit.jupiter.api.Assertions.*;

import io.salus.core.cert.CertType;
import io.salus.core.cert.Certificate;
import io.salus.core.cert.RegionId;
import io.salus.core.cert.Statement;
import io.salus.core.crypto.KeyDirectory;
import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.NodeKeys;
import io.salus.core.crypto.SignatureScheme;
import io.salus.core.hbase.SalusTableLayout;
import io.salus.core.hbase.VolumeGeometry;
import io.salus.core.hbase.storage.HRegionStore;
import io.salus.core.hbase.storage.HdfsReplicaDisk;
import io.salus.core.hbase.storage.ReplicaRecovery;
import io.salus.core.hbase.storage.SalusFavoredNodes;
import io.salus.hdfs.placement.LocationHintMetrics;
import io.salus.hdfs.placement.LocationHintPlacementPolicy;
import java.io.IOException;
import java.net.InetSocketAddress;
import org.apache.hadoop.fs.BlockLocation;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.regionserver.HStoreFile;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import io.salus.core.merkle.Hash;
import io.salus.core.merkle.HashAlgorithm;
import io.salus.core.merkle.RegionLayout;
import io.salus.core.protocol.ProtocolConfig;
import io.salus.core.protocol.message.Put;
import io.salus.core.protocol.message.SubBatch;
import io.salus.core.protocol.replica.InMemoryRegionStore;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.function.Supplier;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hbase.HBaseTestingUtility;
import org.apache.hadoop.hbase.MiniHBaseCluster;
import org.apache.hadoop.hbase.StartMiniClusterOption;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.regionserver.HRegion;
import org.apache.hadoop.hbase.regionserver.HRegionServer;
import org.apache.hadoop.hbase.util.Bytes;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.log4j.Level;
import org.apache.log4j.LogManager;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * {@link HRegionStore} over real regions of a Salus volume's replica table, and restart replay
 * ({@link ReplicaRecovery}) from an {@link HdfsReplicaDisk} after a region server is aborted: one HBase mini
 * cluster on a MiniDFSCluster (2 region servers, 3 DataNodes) for the class; the abort test runs last.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class HRegionStoreTest {
    private static final long SETTLE_MS = 240_000;
    private static final int BLOCK = 4096;
    private static final long PER_REGION = 64;
    private static HBaseTestingUtility util;
    private static Admin admin;
    private static ProtocolConfig cfg;

    @BeforeAll
    static void start() throws Exception {
        LogManager.getRootLogger().setLevel(Level.WARN);
        util = new HBaseTestingUtility();
        Configuration conf = util.getConfiguration();
        conf.setInt("hbase.master.info.port", -1);
        conf.setInt("hbase.regionserver.info.port", -1);
        conf.setBoolean("hbase.unsafe.stream.capability.enforce", false);
        conf.set("hbase.wal.provider", "filesystem");
        conf.setInt("hbase.regionserver.handler.count", 8);
        conf.setInt("hbase.client.retries.number", 10);
        // salus-hdfs's placement policy on the NameNode: follows favored nodes and counts followed/refused
        conf.set("dfs.block.replicator.classname", LocationHintPlacementPolicy.class.getName());
        util.startMiniCluster(StartMiniClusterOption.builder().numMasters(1).numRegionServers(2).numDataNodes(3).build());
        admin = util.getConnection().getAdmin();
        VolumeGeometry g = new VolumeGeometry("st1", 4 * PER_REGION * BLOCK, BLOCK, PER_REGION);
        SalusTableLayout.create(admin, g);
        cfg = ProtocolConfig.of("st1", BLOCK, HashAlgorithm.SHA256, RegionLayout.ofRegionSize(4 * PER_REGION, PER_REGION));
    }

    @AfterAll
    static void stop() throws Exception {
        if (admin != null) {
            admin.close();
        }
        if (util != null) {
            util.shutdownMiniCluster();
        }
    }

    private static TableName table(int replica) {
        return TableName.valueOf("salus", "st1_r" + replica);
    }

    /** The region of {@code table} holding region index {@code idx}, as open on its region server now. */
    private static HRegion region(TableName table, int idx) {
        byte[] start = idx == 0 ? new byte[0] : Bytes.toBytes(idx * PER_REGION);
        for (HRegion r : util.getMiniHBaseCluster().getRegions(table)) {
            if (Bytes.equals(r.getRegionInfo().getStartKey(), start) && r.isAvailable()) {
                return r;
            }
        }
        return null;
    }

    private static <T> T await(String what, Supplier<T> s) throws InterruptedException {
        long deadline = System.currentTimeMillis() + SETTLE_MS;
        while (true) {
            T v = s.get();
            if (v != null) {
                return v;
            }
            if (System.currentTimeMillis() > deadline) {
                fail("gave up waiting for " + what);
            }
            Thread.sleep(250);
        }
    }

    private static byte[] block(long seed) {
        byte[] b = new byte[BLOCK];
        new Random(seed).nextBytes(b);
        return b;
    }

    @Test
    @Order(1)
    void storeMatchesTheInMemoryStoreAndReopensWithoutRehashingBlocks() throws Exception {
        HRegion r = region(table(0), 1);
        HRegionStore store = HRegionStore.open(r, cfg, 1);
        InMemoryRegionStore ref = new InMemoryRegionStore(cfg, Map.of());
        Random rnd = new Random(3);
        Set<Long> written = new java.util.TreeSet<>();
        for (int i = 0; i < 30; i++) {
            long local = rnd.nextInt((int) PER_REGION);
            byte[] data = block(i);
            store.apply(local, data);
            ref.apply(local, data.clone());
            written.add(local);
        }
        store.apply(7, new byte[BLOCK]); // a zero block (the tree may drop its subtree: never a delete)
        ref.apply(7, new byte[BLOCK]);
        written.add(7L);
        assertEquals(ref.root(), store.root());
        assertEquals(ref.leafHashes(), store.leafHashes());
        for (long b : written) {
            assertArrayEquals(ref.read(b), store.read(b), "block " + b);
            assertEquals(ref.proof(b), store.proof(b), "proof of " + b);
        }
        long unwritten = java.util.stream.LongStream.range(0, PER_REGION).filter(b -> !written.contains(b)).findFirst().orElseThrow();
        assertArrayEquals(new byte[BLOCK], store.read(unwritten), "never written reads as zeros");
        // issue 27: a Salus table keeps cell versions; its checkpoints name a version, so the store keeps no dirty
        // copy of any block
        assertTrue(store.versioned(), "a Salus replica table keeps versions of its cells");
        assertEquals(Set.of(), store.dirty().keySet());

        store.markDurable();
        assertTrue(store.dirty().isEmpty());
        assertEquals(0, r.getMemStoreDataSize(), "markDurable flushed the region (its puts skip the WAL)");
        // the state now: a version, read back as of it after later applies, and set back to it
        long v1 = store.version();
        io.salus.core.merkle.Hash root1 = store.root();
        Map<Long, io.salus.core.merkle.Hash> leaves1 = ref.leafHashes();
        byte[] before1 = ref.read(1);
        store.apply(1, block(100));
        ref.apply(1, block(100));
        written.add(1L);
        assertArrayEquals(before1, store.readAt(v1, 1), "block 1 as of the version before its apply");
        assertArrayEquals(block(100), store.readAt(store.version(), 1), "block 1 as of the latest version");
        Map<Long, io.salus.core.merkle.Hash> at1 = new java.util.TreeMap<>(leaves1);
        at1.values().removeIf(h -> h.equals(io.salus.core.merkle.EmptyHashes.of(cfg.hash(), BLOCK).at(0)));
        assertEquals(at1, store.leafHashesAt(v1), "the leaves as of the version");
        store.markDurable(); // the later apply is in the HFiles too (HBase flushed it: a close, memory pressure)
        assertEquals(1, store.resetTo(v1, root1), "only the block applied after the version is set back");
        assertEquals(root1, store.root());
        assertArrayEquals(before1, store.read(1));
        assertThrows(io.salus.core.protocol.replica.RegionStore.StoreStateException.class,
            () -> store.resetTo(v1, ref.root()), "a root other than the cells' as of the version is refused");
        store.apply(1, block(100)); // back to the reference's state
        store.markDurable();

        // the region closes and opens again (a new HRegion object); the new store rehashes nothing
        admin.disableTable(table(0));
        admin.enableTable(table(0));
        HRegion again = await("region 1 of r0 to reopen", () -> region(table(0), 1));
        assertNotSame(r, again);
        HRegionStore reopened = HRegionStore.open(again, cfg, 1);
        assertEquals(ref.root(), reopened.root());
        assertEquals(ref.proof(5), reopened.proof(5));
        assertEquals(ref.leafHashes(), reopened.leafHashes());
        assertEquals(0, reopened.blockReads(), "opening the region tree read block cells");
        for (long b : written) {
            assertArrayEquals(ref.read(b), reopened.read(b), "block " + b);
        }
        assertEquals(written.size(), reopened.blockReads());
        assertTrue(reopened.dirty().isEmpty());

        IllegalArgumentException wrong = assertThrows(IllegalArgumentException.class, () -> HRegionStore.open(again, cfg, 2));
        assertTrue(wrong.getMessage().contains("not at block 128"), wrong.getMessage());
        assertThrows(IndexOutOfBoundsException.class, () -> reopened.apply(PER_REGION, block(1)));
    }

    // ------------------------------------------------------------------ favored nodes (item 2)

    @Test
    @Order(2)
    void replicaRegionsHFilesLandOnTheirRegionServersFavoredDataNode() throws Exception {
        MiniHBaseCluster mc = util.getMiniHBaseCluster();
        List<DataNode> dns = util.getDFSCluster().getDataNodes();
        // all region servers and DataNodes run on 127.0.0.1: tell each region server which DataNode is "its own"
        Map<String, InetSocketAddress> favoredByServer = new HashMap<>();
        for (int i = 0; i < mc.getNumLiveRegionServers(); i++) {
            HRegionServer rs = mc.getRegionServer(i);
            InetSocketAddress dn = dns.get(1 + i % (dns.size() - 1)).getXferAddress(); // DataNode 0 is nobody's
            rs.getConfiguration().set(SalusFavoredNodes.DATANODE_KEY, "127.0.0.1:" + dn.getPort());
            favoredByServer.put(rs.getServerName().getServerName(), dn);
        }
        TableName t = table(2);
        // SalusTableLayout sets SalusFavoredNodes on the table; the regions opened before the region servers were
        // told their DataNodes: a descriptor change reopens them so that postOpen runs again
        assertTrue(admin.getDescriptor(t).hasCoprocessor(SalusFavoredNodes.class.getName()),
                "SalusTableLayout sets SalusFavoredNodes on the replica tables");
        admin.modifyTable(TableDescriptorBuilder.newBuilder(admin.getDescriptor(t))
                .setValue("salus.test.reopen", "1").build()); // reopens the regions
        LocationHintMetrics hints = ((LocationHintPlacementPolicy) util.getDFSCluster().getNamesystem()
                .getBlockManager().getBlockPlacementPolicy()).getMetrics();
        long followedBefore = hints.followed();
        DistributedFileSystem dfs = util.getDFSCluster().getFileSystem();
        for (int idx = 0; idx < 4; idx++) {
            int fi = idx;
            HRegion r = await("region " + idx + " of r2 with its favored node", () -> {
                HRegion x = region(t, fi);
                return x != null && x.getCoprocessorHost().findCoprocessor(SalusFavoredNodes.class) != null ? x : null;
            });
            HRegionServer rs = mc.getRegionServer(mc.getServerWith(r.getRegionInfo().getRegionName()));
            InetSocketAddress want = favoredByServer.get(rs.getServerName().getServerName());
            InetSocketAddress[] fav = rs.getFavoredNodesForRegion(r.getRegionInfo().getEncodedName());
            assertNotNull(fav, "no favored nodes for region " + idx);
            assertEquals(want.getPort(), fav[0].getPort());
            HRegionStore store = HRegionStore.open(r, cfg, idx);
            for (long b = 0; b < 8; b++) {
                store.apply(b, block(idx * 100 + b));
            }
            store.markDurable(); // flush: HBase writes the HFile with the favored node
            int files = 0;
            for (HStoreFile f : r.getStore(SalusTableLayout.FAMILY).getStorefiles()) {
                FileStatus st = dfs.getFileStatus(f.getPath());
                assertEquals(1, st.getReplication(), f.getPath() + " replication");
                for (BlockLocation b : dfs.getFileBlockLocations(st, 0, st.getLen())) {
                    assertEquals(List.of("127.0.0.1:" + want.getPort()), List.of(b.getNames()),
                            f.getPath() + " (region " + idx + " on " + rs.getServerName() + ") not on its favored DataNode");
                }
                files++;
            }
            assertTrue(files > 0, "no HFile after the flush of region " + idx);
        }
        assertTrue(hints.followed() > followedBefore, "the NameNode's placement policy counted no followed hint");
        assertEquals(0, hints.fallbacks(), "hints refused: " + hints.fallbacks());
    }

    // ------------------------------------------------------------------ review: a flush already running

    /**
     * Holds the first armed store flush inside HBase's flush (the region's {@code writestate.flushing} is set),
     * as a flush started by global memstore pressure or the periodic flusher would be while it writes its HFile.
     */
    public static class HoldFlush implements org.apache.hadoop.hbase.coprocessor.RegionCoprocessor,
            org.apache.hadoop.hbase.coprocessor.RegionObserver {
        static final java.util.concurrent.atomic.AtomicBoolean ARMED = new java.util.concurrent.atomic.AtomicBoolean();
        static final java.util.concurrent.CountDownLatch ENTERED = new java.util.concurrent.CountDownLatch(1);
        static final java.util.concurrent.CountDownLatch RELEASE = new java.util.concurrent.CountDownLatch(1);

        @Override
        public java.util.Optional<org.apache.hadoop.hbase.coprocessor.RegionObserver> getRegionObserver() {
            return java.util.Optional.of(this);
        }

        @Override
        public org.apache.hadoop.hbase.regionserver.InternalScanner preFlush(
                org.apache.hadoop.hbase.coprocessor.ObserverContext<org.apache.hadoop.hbase.coprocessor.RegionCoprocessorEnvironment> c,
                org.apache.hadoop.hbase.regionserver.Store store, org.apache.hadoop.hbase.regionserver.InternalScanner scanner,
                org.apache.hadoop.hbase.regionserver.FlushLifeCycleTracker tracker) throws IOException {
            if (ARMED.compareAndSet(true, false)) {
                ENTERED.countDown();
                try {
                    RELEASE.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new java.io.InterruptedIOException();
                }
            }
            return scanner;
        }
    }

    /**
     * Review finding: {@code HRegion#flush(true)} does not throw when another flush of the region is running
     * (memstore pressure, periodic flush): it returns CANNOT_FLUSH ("already flushing"). markDurable ignored the
     * result and forgot the dirty set, so puts applied after the running flush's snapshot stayed only in the
     * memstore (SKIP_WAL) while the checkpoint counted them durable; the log is then garbage-collected through
     * that checkpoint, and a region server crash loses them with nothing left to replay.
     */
    @Test
    @Order(3)
    void markDurableWhileAnotherFlushRunsStillMakesEveryDirtyBlockDurable() throws Exception {
        TableName t = table(0);
        admin.modifyTable(TableDescriptorBuilder.newBuilder(admin.getDescriptor(t))
                .setCoprocessor(HoldFlush.class.getName()).build()); // reopens the regions
        int idx = 3;
        HRegion r = await("region 3 of r0 with the flush holder", () -> {
            HRegion x = region(t, idx);
            return x != null && x.getCoprocessorHost().findCoprocessor(HoldFlush.class) != null ? x : null;
        });
        HRegionStore store = HRegionStore.open(r, cfg, idx);
        store.apply(0, block(500));
        store.markDurable();
        assertEquals(0, r.getMemStoreDataSize());
        store.apply(1, block(501)); // in the snapshot of the flush below
        HoldFlush.ARMED.set(true);
        java.util.concurrent.ExecutorService ex = java.util.concurrent.Executors.newFixedThreadPool(2);
        try {
            java.util.concurrent.Future<?> pressure = ex.submit(() -> r.flush(true)); // e.g. global memstore pressure
            assertTrue(HoldFlush.ENTERED.await(SETTLE_MS, java.util.concurrent.TimeUnit.MILLISECONDS));
            store.apply(2, block(502)); // after that flush took its snapshot: only in the memstore
            java.util.concurrent.Future<?> durable = ex.submit(() -> store.markDurable());
            try {
                durable.get(5, java.util.concurrent.TimeUnit.SECONDS); // the old code returns here at once
            } catch (java.util.concurrent.TimeoutException waiting) {
                // the fixed code waits for the running flush: let it finish
            }
            HoldFlush.RELEASE.countDown();
            pressure.get();
            durable.get();
        } finally {
            HoldFlush.RELEASE.countDown();
            ex.shutdownNow();
        }
        assertTrue(store.dirty().isEmpty());
        assertEquals(0, r.getMemStoreDataSize(), "markDurable returned and forgot the dirty set, but block 2's"
                + " cells (SKIP_WAL) are still only in the memstore: a crash now loses them");
        admin.modifyTable(TableDescriptorBuilder.newBuilder(admin.getDescriptor(t))
                .removeCoprocessor(HoldFlush.class.getName()).build());
    }

    /**
     * Refuses the next armed batch of puts with the exception HBase throws under memstore pressure (a
     * coprocessor stands in for the pressure: filling 4× the flush size of a region is slow here).
     */
    public static class RefusePuts implements org.apache.hadoop.hbase.coprocessor.RegionCoprocessor,
            org.apache.hadoop.hbase.coprocessor.RegionObserver {
        static final java.util.concurrent.atomic.AtomicBoolean ARMED = new java.util.concurrent.atomic.AtomicBoolean();

        @Override
        public java.util.Optional<org.apache.hadoop.hbase.coprocessor.RegionObserver> getRegionObserver() {
            return java.util.Optional.of(this);
        }

        @Override
        public void preBatchMutate(
                org.apache.hadoop.hbase.coprocessor.ObserverContext<org.apache.hadoop.hbase.coprocessor.RegionCoprocessorEnvironment> c,
                org.apache.hadoop.hbase.regionserver.MiniBatchOperationInProgress<org.apache.hadoop.hbase.client.Mutation> m)
                throws IOException {
            if (ARMED.compareAndSet(true, false)) {
                throw new org.apache.hadoop.hbase.RegionTooBusyException("test: over the memstore blocking size");
            }
        }
    }

    /**
     * Review finding: when the region threw from batchMutate (RegionTooBusyException under memstore pressure),
     * the store's node cache kept the hashes of the write that never reached the region: root() and the proofs
     * of the block's neighbours covered data the cells do not hold, and the next apply persisted ancestors
     * computed from them, so even a reopened store's root disagreed with its cells for good.
     */
    @Test
    @Order(4)
    void aPutTheRegionRefusesLeavesRootAndProofsMatchingTheCells() throws Exception {
        TableName t = table(0);
        admin.modifyTable(TableDescriptorBuilder.newBuilder(admin.getDescriptor(t))
                .setCoprocessor(RefusePuts.class.getName()).build()); // reopens the regions
        int idx = 0;
        HRegion r = await("region 0 of r0 with the put refuser", () -> {
            HRegion x = region(t, idx);
            return x != null && x.getCoprocessorHost().findCoprocessor(RefusePuts.class) != null ? x : null;
        });
        HRegionStore store = HRegionStore.open(r, cfg, idx);
        InMemoryRegionStore ref = new InMemoryRegionStore(cfg, Map.of());
        for (long b = 0; b < 8; b++) {
            store.apply(b, block(700 + b));
            ref.apply(b, block(700 + b));
        }
        RefusePuts.ARMED.set(true);
        assertThrows(java.io.UncheckedIOException.class, () -> store.apply(4, block(799)));
        assertArrayEquals(block(704), store.read(4), "the refused write is not in the region");
        assertEquals(ref.root(), store.root(), "root after a refused put covers data the region does not hold");
        assertEquals(ref.proof(5), store.proof(5), "proof of the neighbour of the refused block");
        store.apply(5, block(805)); // shares every ancestor with block 4
        ref.apply(5, block(805));
        assertEquals(ref.root(), store.root());
        assertEquals(ref.root(), HRegionStore.open(r, cfg, idx).root(), "the persisted tree disagrees with the cells");
        admin.modifyTable(TableDescriptorBuilder.newBuilder(admin.getDescriptor(t))
                .removeCoprocessor(RefusePuts.class.getName()).build());
    }

    /**
     * Review finding: the store's puts took the region server's clock as their timestamp, and a cell with a
     * higher timestamp hides a later put with a lower one. A region that moves (failover, balancer) to a server
     * whose clock is behind (HBase admits up to 30 s of skew, {@code hbase.master.maxclockskew}) then writes
     * blocks and tree nodes that reads never see: the acknowledged write (and its replay) is silently lost.
     * The skew is injected with HBase's own clock ({@code EnvironmentEdgeManager}) for the second write only.
     */
    @Test
    @Order(5)
    void aWriteUnderAClockBehindTheRegionsCellsIsNotHiddenByThem() throws Exception {
        int idx = 3;
        HRegion r = region(table(1), idx);
        HRegionStore store = HRegionStore.open(r, cfg, idx);
        store.apply(0, block(900));
        store.markDurable();
        HRegionStore behind = HRegionStore.open(r, cfg, idx); // e.g. the region reopened on a slower-clocked server
        org.apache.hadoop.hbase.util.EnvironmentEdgeManager.injectEdge(
                () -> System.currentTimeMillis() - 20_000);
        try {
            behind.apply(0, block(901));
            behind.apply(1, block(902));
            behind.markDurable();
        } finally {
            org.apache.hadoop.hbase.util.EnvironmentEdgeManager.reset();
        }
        HRegionStore reopened = HRegionStore.open(r, cfg, idx);
        assertArrayEquals(block(901), reopened.read(0), "the later write of block 0 is hidden by the earlier cell");
        InMemoryRegionStore ref = new InMemoryRegionStore(cfg, Map.of(0L, block(901), 1L, block(902)));
        assertEquals(ref.root(), reopened.root(), "region root after the write under a clock behind");
        assertEquals(ref.proof(1), reopened.proof(1));
    }

    /**
     * A checkpoint writer behind by several checkpoints flushes once for all of them: makeDurableThrough(v) flushes
     * only while no flush that started after v was applied has completed. One flush per checkpoint (two store files
     * each with the tree-node family) fell behind the writes, and the Salus logs, held until the checkpoints are
     * certified, grew with the run (SalusStorageBoundedTest with the family: 0.5 -> 7 MB).
     */
    @Test
    @Order(6)
    void aCheckpointWhoseVersionIsDurableAlreadyDoesNotFlushAgain() throws Exception {
        int idx = 1;
        HRegion r = region(table(2), idx);
        HRegionStore store = HRegionStore.open(r, cfg, idx);
        store.apply(0, block(950));
        long v1 = store.version();
        store.apply(1, block(951));
        long v2 = store.version();
        assertTrue(v2 > v1);
        assertTrue(r.getMemStoreDataSize() > 0);
        store.makeDurableThrough(v1); // flushes: covers v2 as well (applied before the flush started)
        assertEquals(0, r.getMemStoreDataSize(), "the state at v1 is not durable");
        assertEquals(0, store.flushesSkipped());
        store.makeDurableThrough(v2); // the flush above started after v2 was applied
        assertEquals(1, store.flushesSkipped(), "v2 was durable already, yet the region was flushed again");
        store.apply(2, block(952));
        long v3 = store.version();
        store.makeDurableThrough(v2);
        assertEquals(2, store.flushesSkipped());
        assertTrue(r.getMemStoreDataSize() > 0, "nothing asked for v3 yet");
        store.makeDurableThrough(v3);
        assertEquals(0, r.getMemStoreDataSize(), "the state at v3 is not durable: block 2 is only in the memstore");
        assertEquals(2, store.flushesSkipped());
    }

    /**
     * A checkpoint's flush is called on the region directly, and HBase requests a compaction only after the flushes of
     * its own MemStoreFlusher (its periodic check runs every 10,000 s): in a 4 GiB fill of `salus up` no replica region
     * was ever compacted, and every superseded tree-node version stayed. After six flushes of a store (HBase compacts at
     * three files by default) its files must be compacted.
     */
    @Test
    @Order(7)
    void checkpointFlushesGetTheRegionCompacted() throws Exception {
        int idx = 2;
        HRegion r = region(table(2), idx);
        HRegionStore store = HRegionStore.open(r, cfg, idx);
        int flushes = 6;
        Map<Long, byte[]> last = new java.util.HashMap<>();
        for (int i = 0; i < flushes; i++) {
            store.apply(i, block(960 + i));
            store.apply(i + 1, block(970 + i));
            last.put((long) i, block(960 + i));
            last.put(i + 1L, block(970 + i));
            store.makeDurableThrough(store.version());
        }
        Hash root = store.root();
        var b = r.getStore(io.salus.core.hbase.SalusTableLayout.FAMILY);
        await("the region's store files compacted (" + b.getStorefilesCount() + " files after " + flushes
                + " flushes, " + store.compactionsRequested() + " compactions requested)",
                () -> b.getStorefilesCount() < flushes && r.getCompactionState()
                        == org.apache.hadoop.hbase.client.CompactionState.NONE ? Boolean.TRUE : null);
        assertTrue(store.compactionsRequested() > 0);
        HRegionStore reopened = HRegionStore.open(r, cfg, idx);
        assertEquals(root, reopened.root(), "the compacted cells hold the same region tree");
        last.forEach((k, v) -> assertArrayEquals(v, reopened.read(k), "block " + k + " after the compaction"));
    }

    /**
     * Review rv38: a replica's start replays its log over the region's cells, and an HFile block damaged on disk fails
     * a tree node read there. That failure was taken as the Salus log's damage: the healthy log was moved aside (a
     * full catch-up from a peer, and the log's own copy of the state lost). A failed read of the cells is now a
     * {@link io.salus.core.protocol.replica.RegionStore.ReadFailed}, which proves the store damaged, not the log.
     */
    @Test
    @Order(8)
    void aReadOfADamagedStoreFileIsTheStoresDamageNotTheLogs() throws Exception {
        // a volume of its own, deleted at the end: the damaged files are never opened again by the later tests
        OwnVolume own = ownVolume("st2");
        ProtocolConfig cfg2 = own.cfg();
        HRegion r = own.region();
        int idx = 0;
        HRegionStore store = HRegionStore.open(r, cfg2, idx);
        for (long b = 0; b < 8; b++) {
            store.apply(b, block(1100 + b));
        }
        r.flush(true);
        DistributedFileSystem fs = util.getDFSCluster().getFileSystem();
        int corrupted = 0;
        for (var st : r.getStores()) {
            for (HStoreFile sf : st.getStorefiles()) {
                st.getCacheConfig().getBlockCache().ifPresent(bc -> bc.evictBlocksByHfileName(sf.getPath().getName()));
                for (var lb : fs.getClient().getLocatedBlocks(sf.getPath().toUri().getPath(), 0, Long.MAX_VALUE)
                        .getLocatedBlocks()) {
                    for (int dn = 0; dn < util.getDFSCluster().getDataNodes().size(); dn++) {
                        try {
                            util.getDFSCluster().corruptReplica(dn, lb.getBlock());
                            corrupted++;
                        } catch (IOException notHere) {
                            // no replica of this block on that DataNode
                        }
                    }
                }
            }
        }
        assertTrue(corrupted > 0, "the fault acted: the region's store file blocks were corrupted on disk");
        RuntimeException e = assertThrows(RuntimeException.class, () -> {
            HRegionStore fresh = HRegionStore.open(r, cfg2, idx); // an empty node cache, as a replica's start has
            for (long b = 0; b < 8; b++) {
                fresh.read(b);
                fresh.proof(b);
            }
        }, "a read of the damaged store file fails");
        assertTrue(io.salus.core.hbase.SalusStoreQuarantine.damaged(fs, e), "the read proves damage: " + e);
        assertInstanceOf(io.salus.core.protocol.replica.RegionStore.ReadFailed.class, e, "the store says it is its read");
        assertFalse(io.salus.core.hbase.storage.HdfsReplicaStorage.provesLogDamaged(fs, e),
                "the store's damage does not prove the Salus log damaged (its log would be moved aside)");
        assertTrue(io.salus.core.hbase.storage.HdfsReplicaStorage.provesLogDamaged(fs,
                new java.io.UncheckedIOException((IOException) e.getCause())), "control: the same checksum failure"
                + " met reading the log proves the log damaged");
        dropVolume("st2");
    }

    /** A one-region volume of its own (its replica 0's region), for a test that leaves its cells unusable. */
    private record OwnVolume(ProtocolConfig cfg, HRegion region) {
    }

    private static OwnVolume ownVolume(String name) throws Exception {
        SalusTableLayout.create(admin, new VolumeGeometry(name, PER_REGION * BLOCK, BLOCK, PER_REGION));
        TableName t = TableName.valueOf("salus", name + "_r0");
        HRegion r = await("region 0 of " + t, () -> {
            for (HRegion x : util.getMiniHBaseCluster().getRegions(t)) {
                if (x.isAvailable()) {
                    return x;
                }
            }
            return null;
        });
        return new OwnVolume(ProtocolConfig.of(name, BLOCK, HashAlgorithm.SHA256,
                RegionLayout.ofRegionSize(PER_REGION, PER_REGION)), r);
    }

    private static void dropVolume(String name) throws IOException {
        for (int k = 0; k < 3; k++) {
            TableName tk = TableName.valueOf("salus", name + "_r" + k);
            admin.disableTable(tk);
            admin.deleteTable(tk);
        }
    }

    /**
     * Review rv39: a checkpoint names a store version, and applies run ahead of the clock (each block applied takes a
     * new millisecond: a rebuild's 65,536 leaves ~66 s). A store whose files were moved aside opens with no cell to
     * continue from; the rebuild that follows wrote its leaves (empty data cells) at the clock's time, under the
     * version, and at the next reopen the reset to the checkpoint saw no cell after the version and a root equal to
     * the checkpoint's: the replica served and voted without its blocks. Now every cell after a reset is written above
     * the version, and the next reset finds them.
     */
    @Test
    @Order(9)
    void aRebuildOverAnEmptiedStoreWritesAboveTheCheckpointsVersion() throws Exception {
        // the certified checkpoint this replica stored before its files were lost: 8 blocks, its store version ahead
        // of the clock by what its last applies ran ahead
        Map<Long, byte[]> blocks = new java.util.TreeMap<>();
        for (long b = 0; b < 8; b++) {
            blocks.put(b, block(1200 + b));
        }
        OwnVolume own = ownVolume("st3");
        ProtocolConfig cfg3 = own.cfg();
        HRegion r = own.region();
        InMemoryRegionStore certified = new InMemoryRegionStore(cfg3, blocks);
        long version = System.currentTimeMillis() + 60_000;
        Hash root = certified.root();
        Map<Long, Hash> leaves = new java.util.TreeMap<>();
        blocks.keySet().forEach(b -> leaves.put(b, certified.leaf(b)));
        HRegionStore emptied = HRegionStore.open(r, cfg3, 0); // its store files moved aside: no cell
        assertThrows(io.salus.core.protocol.replica.RegionStore.StoreStateException.class,
                () -> emptied.resetTo(version, root), "an empty store does not hold the checkpoint");
        // the rebuild from the peers: metadata first (the certified leaves, data cells empty), one block fetched
        emptied.setLeaves(leaves);
        emptied.apply(0, blocks.get(0L));
        assertEquals(root, emptied.root(), "the rebuild installed the certified tree");
        r.flush(true);
        // the region closes before the rebuild fetched the other blocks, and opens again
        HRegionStore reopened = HRegionStore.open(r, cfg3, 0);
        assertFalse(reopened.holds(1, leaves.get(1L)), "the fault acted: block 1's content was never fetched");
        assertThrows(io.salus.core.protocol.replica.RegionStore.StoreStateException.class,
                () -> reopened.resetTo(version, root), "the store's cells under the checkpoint's version are the"
                        + " rebuild's empty data cells, not the checkpoint's blocks: the reset must not accept them");
        dropVolume("st3");
    }

    // ------------------------------------------------------------------ restart replay (item 5)

    private static final List<NodeKeys> LEADERS = List.of(
            NodeKeys.deterministic(SignatureScheme.HMAC_SHA256, NodeId.of("rs-a"), 1),
            NodeKeys.deterministic(SignatureScheme.HMAC_SHA256, NodeId.of("rs-b"), 2),
            NodeKeys.deterministic(SignatureScheme.HMAC_SHA256, NodeId.of("rs-c"), 3));

    private static Certificate commit(SubBatch sb, long gen) {
        Statement.Decision st = new Statement.Decision(true, cfg.volume(), sb.batchId(), sb.firstSeq(), sb.lastSeq(),
                new RegionId(cfg.volume(), sb.leaderRegion()), gen);
        List<Certificate> t = new ArrayList<>();
        for (NodeKeys k : LEADERS) {
            t.add(Certificate.sign(CertType.TENTATIVE_COMMIT, st, k.signer()));
        }
        return Certificate.combine(t);
    }

    @Test
    @Order(10)
    void abortedRegionServerLosesUnflushedPutsAndReplayFromTheSalusLogRestoresThem() throws Exception {
        int idx = 2;
        long gen = 1;
        TableName t = table(1);
        HRegion r = region(t, idx);
        String encoded = r.getRegionInfo().getEncodedName();
        DistributedFileSystem dfs = util.getDFSCluster().getFileSystem();
        HdfsReplicaDisk disk = HdfsReplicaDisk.forRegion(dfs, new Path("/salus/logs"), t.getNameAsString(), encoded, null);
        HRegionStore store = HRegionStore.open(r, cfg, idx);
        long first = cfg.layout().firstBlock(idx);
        Map<Long, byte[]> expected = new HashMap<>();
        long seq = 0;
        for (long i = 0; i < 9; i++) {
            List<Put> puts = new ArrayList<>();
            for (int k = 0; k < 3; k++) {
                long blk = first + (i * 5 + k * 3) % PER_REGION;
                byte[] data = block(1000 + i * 10 + k);
                seq++;
                puts.add(new Put(seq, seq - 1, blk, data, cfg.hash().hash(data), Hash.of(new byte[Hash.LENGTH])));
            }
            SubBatch sb = new SubBatch(cfg.volume(), idx, 100 + i, idx, puts, new byte[0]);
            disk.append(gen, i, sb.encode()); // logged (hsync) ...
            if (i == 8) {
                break; // ... the last one is never decided: replay must leave it to the protocol
            }
            disk.recordDecision(gen, commit(sb, gen)); // ... committed ...
            for (Put p : puts) {
                store.apply(p.block() - first, p.data()); // ... applied (SKIP_WAL)
                expected.put(p.block() - first, p.data());
            }
            if (i == 3) {
                store.markDurable(); // a checkpoint: entries 0..3 in HFiles, 4..7 only in the memstore
            }
        }
        disk.close();

        MiniHBaseCluster mc = util.getMiniHBaseCluster();
        HRegionServer host = mc.getRegionServer(mc.getServerWith(r.getRegionInfo().getRegionName()));
        host.abort("test: region server dies with unflushed SKIP_WAL puts");
        mc.waitForRegionServerToStop(host.getServerName(), SETTLE_MS);
        HRegion back = await("region " + encoded + " to reopen elsewhere", () -> {
            HRegion x = region(t, idx);
            return x != null && x != r ? x : null;
        });
        HRegionStore reopened = HRegionStore.open(back, cfg, idx);
        int stale = 0;
        for (Map.Entry<Long, byte[]> e : expected.entrySet()) {
            if (!java.util.Arrays.equals(e.getValue(), reopened.read(e.getKey()))) {
                stale++;
            }
        }
        assertTrue(stale > 0, "the abort lost no unflushed put: the test did not create the case it is about");

        KeyDirectory verifier = new KeyDirectory(SignatureScheme.HMAC_SHA256);
        LEADERS.forEach(verifier::register);
        Set<NodeId> leaderSet = Set.of(LEADERS.get(0).id(), LEADERS.get(1).id(), LEADERS.get(2).id());
        HdfsReplicaDisk diskBack = HdfsReplicaDisk.forRegion(dfs, new Path("/salus/logs"), t.getNameAsString(), encoded, null);
        ReplicaRecovery.Result res = ReplicaRecovery.replay(diskBack, gen, reopened, cfg, idx, -1,
                c -> c.verify(verifier, leaderSet));
        assertEquals(8, res.applied());
        assertEquals(7, res.lastIndex());
        assertEquals(8, res.stoppedAt(), "the undecided entry is left to the protocol");
        for (Map.Entry<Long, byte[]> e : expected.entrySet()) {
            assertArrayEquals(e.getValue(), reopened.read(e.getKey()), "block " + e.getKey() + " after replay");
        }
        InMemoryRegionStore ref = new InMemoryRegionStore(cfg, expected);
        assertEquals(ref.root(), reopened.root(), "region tree after replay");
        reopened.markDurable();

        // a forged decision (not signed by the leaders) is not replayed
        HRegionStore other = HRegionStore.open(back, cfg, idx);
        ReplicaRecovery.Result none = ReplicaRecovery.replay(diskBack, gen, other, cfg, idx, -1, c -> false);
        assertEquals(0, none.applied());
        assertEquals(0, none.stoppedAt());
        diskBack.close();
    }
}
