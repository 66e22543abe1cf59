package io.salus.core.hbase.storage;

import io.salus.core.hbase.SalusTableLayout;
import io.salus.core.merkle.Hash;
import io.salus.core.merkle.MerkleProof;
import io.salus.core.merkle.MerkleTree;
import io.salus.core.merkle.NodeStore;
import io.salus.core.protocol.ProtocolConfig;
import io.salus.core.protocol.replica.RegionStore;
import io.salus.core.protocol.replica.RegionStore.StoreStateException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.client.Durability;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Mutation;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.regionserver.HRegion;
import org.apache.hadoop.hbase.regionserver.OperationStatus;
import org.apache.hadoop.hbase.regionserver.Region;
import org.apache.hadoop.hbase.regionserver.RegionScanner;
import org.apache.hadoop.hbase.util.Bytes;

/**
 * A replica's {@link RegionStore} over its HBase region, server side ({@code Region#batchMutate} with
 * {@link Durability#SKIP_WAL}, {@code Region#get}): the Salus log is the write-ahead log.
 *
 * <p>Construction (for the endpoint, in the region coprocessor):
 * <pre>{@code
 * HRegionStore store = HRegionStore.open(env.getRegion(), cfg, regionIndex);  // cfg: the volume's ProtocolConfig
 * }</pre>
 *
 * <p>Cells (family {@link SalusTableLayout#FAMILY} {@code b}, rows = 8-byte big-endian block numbers, so
 * everything stays inside the region's key range):
 * <ul>
 * <li>{@code d}: the block's content, in the block's row;</li>
 * <li>{@code h<level>}: the region tree's node (level, index) in the row of the first block it covers
 * ({@code firstBlock + index·2^level}), in family {@link SalusTableLayout#TREE_FAMILY} {@code t} where the table
 * has it (tables created since issue 27's restart-at-size run: a scan of the leaf hashes reads no block), else next
 * to the block in {@code b}; level 0 is the block's leaf hash. An empty
 * value stands for an empty subtree (nodes are overwritten, never deleted: a delete could hide a later
 * put carrying the same millisecond timestamp).</li>
 * </ul>
 * Opening a region therefore reads tree nodes on demand and never rehashes blocks:
 * {@link #blockReads()} counts the block cells read.
 *
 * <p>{@link #markDurable()} flushes the region's memstore to HFiles (its puts skip the WAL, so that is
 * what durable means for them), then forgets the dirty set. Thread-safe (synchronized).
 */
public final class HRegionStore implements RegionStore {
    public static final byte[] DATA = Bytes.toBytes("d");
    /**
     * Tree nodes kept in memory per region store at most (~130 bytes each: ~0.5 MB whatever the region holds; the top
     * 11 levels of a region's tree fit). 32,768 per store made the node caches of a 2 GiB volume's 24 replica regions
     * in one `salus up` JVM hold 786k nodes, ~100 MB (memory curve of issue 27).
     */
    public static final int NODE_CACHE_ENTRIES = 1 << 12;
    /** markDurable retries a flush that HBase refused (another flush running) this many times, then fails. */
    private static final int MAX_FLUSH_ATTEMPTS = 50;
    /** How long markDurable waits, in all, for flushes of the region that HBase is already running. */
    private static final long FLUSH_WAIT_MS = 300_000;

    private final Region region;
    /**
     * The family of the tree-node cells: {@link SalusTableLayout#TREE_FAMILY} in tables that have it (their leaf
     * hashes are scanned without reading a block: a mount's leaf-hash answer read every block of the region from the
     * shared family, minutes per region at 1 GiB written), else the blocks' family.
     */
    private final byte[] nodeFamily;
    private final ProtocolConfig cfg;
    private final long firstBlock;
    private final long blocks;
    private final MerkleTree tree;
    private final RegionNodes nodes = new RegionNodes();
    /**
     * Whether the region's family keeps earlier versions of its cells (tables created since issue 27): then a
     * checkpoint is metadata only and names {@link #version()}; reads as of a version use the cells' timestamps.
     */
    private final boolean versioned;
    /** Versions older than the newest one at or below this timestamp are not needed (compactions drop them). */
    private volatile long retainFrom = -1;
    private final LinkedHashMap<Long, byte[]> dirty = new LinkedHashMap<>();
    private final AtomicLong blockReads = new AtomicLong();
    private final AtomicLong nodeReads = new AtomicLong();
    private final AtomicLong flushesSkipped = new AtomicLong();
    private final AtomicLong compactionsRequested = new AtomicLong();
    private final AtomicLong compactionRequestFailures = new AtomicLong();
    /** Every cell at or below this timestamp is in HFiles: a flush that started after it was applied completed. */
    private volatile long durableVersion = -1;
    /**
     * Told of every failed read of the region's cells, a GET or a scan (the storage reopens a region whose store file
     * is damaged).
     */
    private volatile java.util.function.Consumer<IOException> readFailed = e -> { };
    /** Timestamp of the last apply's cells; every apply's cells get a higher one (see {@link #nextTimestamp}). */
    private long lastTimestamp;

    /** The store of region {@code regionIndex} of the volume; checks that {@code region} starts at its first block. */
    public static HRegionStore open(Region region, ProtocolConfig cfg, int regionIndex) {
        return new HRegionStore(region, cfg, regionIndex);
    }

    private HRegionStore(Region region, ProtocolConfig cfg, int regionIndex) {
        this.region = region;
        this.cfg = cfg;
        this.firstBlock = cfg.layout().firstBlock(regionIndex);
        this.blocks = cfg.layout().blocksPerRegion();
        byte[] start = region.getRegionInfo().getStartKey();
        boolean ok = start.length == 0 ? firstBlock == 0 : Arrays.equals(start, Bytes.toBytes(firstBlock));
        if (!ok) {
            throw new IllegalArgumentException("region " + region.getRegionInfo().getRegionNameAsString()
                    + " starts at row " + Bytes.toStringBinary(start) + ", not at block " + firstBlock + " (region "
                    + regionIndex + " of volume " + cfg.volume() + " with " + blocks
                    + " blocks per region): open the store with the region's own index");
        }
        this.nodeFamily = region.getTableDescriptor().getColumnFamily(SalusTableLayout.TREE_FAMILY) != null
                ? SalusTableLayout.TREE_FAMILY : SalusTableLayout.FAMILY;
        this.tree = cfg.layout().newRegionTree(cfg.hash(), cfg.blockSize(), nodes);
        org.apache.hadoop.hbase.client.ColumnFamilyDescriptor cf =
                region.getTableDescriptor().getColumnFamily(SalusTableLayout.FAMILY);
        this.versioned = cf != null && cf.getMaxVersions() > 1;
        // every apply rewrites the root node, in local row 0: the row's newest cell is the newest apply. With the nodes
        // in their own family HBase may have flushed the blocks' family and not the nodes' (a memory-pressure flush
        // picks the large stores) before a crash: the newest timestamp of every store file counts too (review of
        // 2026-12-02), or a reopen on a server whose clock is behind would write cells older than surviving ones
        try {
            Result r0 = region.get(new Get(row(0)).addFamily(SalusTableLayout.FAMILY).addFamily(nodeFamily));
            for (Cell c : r0.rawCells()) {
                lastTimestamp = Math.max(lastTimestamp, c.getTimestamp());
            }
            if (region instanceof org.apache.hadoop.hbase.regionserver.HRegion h) {
                for (org.apache.hadoop.hbase.regionserver.HStore st : h.getStores()) {
                    for (org.apache.hadoop.hbase.regionserver.HStoreFile f : st.getStorefiles()) {
                        lastTimestamp = Math.max(lastTimestamp, f.getMaximumTimestamp().orElse(Long.MIN_VALUE));
                    }
                }
            }
        } catch (IOException e) {
            throw new io.salus.core.protocol.replica.RegionStore.ReadFailed("cannot read the newest cell of " + region.getRegionInfo().getEncodedName(), e);
        }
    }

    /**
     * The largest store version a checkpoint may name: applies run ahead of the clock (one millisecond per block
     * applied faster than that), never by centuries; a larger one is damaged metadata, and taken as the next cells'
     * floor it would overflow their timestamps.
     */
    static final long MAX_VERSION = Long.MAX_VALUE / 2;

    /**
     * The timestamp of the next apply's cells: the region server's clock, but above every earlier apply's. A
     * cell with a higher timestamp hides a later put with a lower one, so a region reopened on a server whose
     * clock is behind (HBase admits up to 30 s of skew) would otherwise write blocks and nodes no read sees.
     */
    private long nextTimestamp() {
        lastTimestamp = Math.max(org.apache.hadoop.hbase.util.EnvironmentEdgeManager.currentTime(), lastTimestamp + 1);
        return lastTimestamp;
    }

    private void checkLocal(long localBlock) {
        if (localBlock < 0 || localBlock >= blocks) {
            throw new IndexOutOfBoundsException("local block " + localBlock + " outside the region's [0, " + blocks + ")");
        }
    }

    private byte[] row(long localBlock) {
        return Bytes.toBytes(firstBlock + localBlock);
    }

    private static byte[] nodeQualifier(int level) {
        return Bytes.toBytes("h" + level);
    }

    @Override
    public synchronized void apply(long localBlock, byte[] data) {
        checkLocal(localBlock);
        if (data.length != cfg.blockSize()) {
            throw new IllegalArgumentException("block of " + data.length + " bytes; the volume's block size is " + cfg.blockSize());
        }
        byte[] copy = data.clone();
        nodes.timestamp = nextTimestamp();
        nodes.pending(localBlock).addColumn(SalusTableLayout.FAMILY, DATA, copy);
        tree.putBlock(localBlock, copy);
        nodes.writePending();
        if (!versioned) {
            // a carried checkpoint writes the changed blocks; a stored one names a version (the region keeps them)
            dirty.put(localBlock, copy);
        }
    }

    @Override
    public synchronized Hash leaf(long localBlock) {
        checkLocal(localBlock);
        return tree.leaf(localBlock);
    }

    /**
     * Sets the region tree to {@code leaves} without the blocks: each block's {@code h0} and the nodes above it are
     * written, its data cell emptied (reads as zeros); every block not in {@code leaves} is emptied (data and leaf).
     * Not in the dirty set: nothing of it is new since the certified checkpoint the leaves come from.
     */
    @Override
    public synchronized void setLeaves(Map<Long, Hash> leaves) {
        java.util.Set<Long> all = new java.util.TreeSet<>(leafHashes().keySet());
        all.addAll(leaves.keySet());
        for (long k : all) {
            checkLocal(k);
            Hash leaf = leaves.get(k);
            if (leaf != null && tree.leaf(k).equals(leaf)) {
                continue; // its leaf is the certified one already: its content (if held) stays (holds tells)
            }
            nodes.timestamp = nextTimestamp();
            nodes.pending(k).addColumn(SalusTableLayout.FAMILY, DATA, new byte[0]);
            tree.setLeaf(k, leaf == null ? tree.emptyHash(0) : leaf);
            nodes.writePending();
            dirty.remove(k);
        }
    }

    /** Its leaf is {@code leaf} and its data cell holds content hashing to it (one GET of the row's two cells). */
    @Override
    public synchronized boolean holds(long localBlock, Hash leaf) {
        checkLocal(localBlock);
        if (!tree.leaf(localBlock).equals(leaf)) {
            return false;
        }
        byte[] d = dirty.get(localBlock);
        if (d == null) {
            blockReads.incrementAndGet();
            d = get(row(localBlock), DATA);
        }
        return d != null && d.length == cfg.blockSize() && cfg.hash().leafHash(d).equals(leaf);
    }

    @Override
    public synchronized byte[] read(long localBlock) {
        checkLocal(localBlock);
        byte[] b = dirty.get(localBlock);
        if (b != null) {
            return b.clone();
        }
        blockReads.incrementAndGet();
        byte[] v = get(row(localBlock), DATA);
        return v == null || v.length == 0 ? new byte[cfg.blockSize()] : v;
    }

    @Override
    public synchronized MerkleProof proof(long localBlock) {
        checkLocal(localBlock);
        return tree.proof(localBlock, tree.depth());
    }

    @Override
    public synchronized Hash root() {
        return tree.root();
    }

    @Override
    public synchronized Map<Long, Hash> leafHashes() {
        return leafHashes(0, blocks);
    }

    /** Leaf hashes of the written blocks in [{@code fromBlock}, {@code toBlock}) (local), read by one range scan. */
    @Override
    public synchronized java.util.SortedMap<Long, Hash> leafHashes(long fromBlock, long toBlock) {
        // a failed scan is reported as a failed GET is (scan): a mount query the replica cannot answer because its
        // cells cannot be read must get the region reopened (damaged store files moved aside, cells restored), or the
        // mount waits for it for ever
        java.util.SortedMap<Long, Hash> out = new TreeMap<>();
        long from = Math.max(0, fromBlock);
        long to = Math.min(blocks, toBlock);
        if (from >= to) {
            return out;
        }
        scan(new Scan().addColumn(nodeFamily, nodeQualifier(0)), 0, Long.MAX_VALUE, from, to, (local, c) -> {
            if (c.getValueLength() == Hash.LENGTH) {
                out.put(local, Hash.of(CellUtil.cloneValue(c)));
            } else if (c.getValueLength() == 0) {
                out.put(local, tree.emptyHash(0)); // written with zeros: its leaf is the empty leaf
            }
        });
        return out;
    }

    /**
     * The blocks applied since they were last made durable. The values are the store's own copies, one per apply and
     * never modified (not to be modified by the caller either): {@link #markDurable(Map)} tells by them which apply
     * a checkpoint wrote.
     */
    @Override
    public synchronized Map<Long, byte[]> dirty() {
        return new TreeMap<>(dirty);
    }

    /**
     * Flushes the region (its puts skip the WAL) and forgets the blocks of {@code written} (a {@link #dirty()} taken
     * earlier) that were not applied again since: compared by the apply's copy, not by content (review rvw21-2: a
     * block written A, B, then A again while the checkpoints that took A and B were being written was forgotten when
     * the one with A completed, and the checkpoint files then composed B). The flush runs outside this store's lock:
     * the event loop keeps applying while a checkpoint writer thread flushes; what it applies stays dirty for the
     * next checkpoint.
     */
    @Override
    public void markDurable(Map<Long, byte[]> written) {
        flushRegion();
        synchronized (this) {
            written.forEach((k, v) -> {
                if (dirty.get(k) == v) {
                    dirty.remove(k);
                }
            });
        }
    }

    /** Flushes the region (its puts skip the WAL) and forgets the dirty set. */
    @Override
    public synchronized void markDurable() {
        flushRegion();
        dirty.clear();
    }

    /**
     * Flushes the region unless a flush that started after {@code version} was applied has completed: every cell at
     * or below it is then in HFiles. A checkpoint writer behind by n checkpoints flushes once, not n times (with the
     * tree nodes in their own family a flush writes two store files, and one flush per checkpoint fell behind the
     * writes: the Salus logs of SalusStorageBoundedTest grew 0.5 -> 7 MB).
     */
    @Override
    public void makeDurableThrough(long version) {
        requireVersions();
        if (durableVersion >= version) {
            flushesSkipped.incrementAndGet();
            return;
        }
        long covers;
        synchronized (this) {
            covers = lastTimestamp; // applied (in the memstore) before the flush below snapshots it
        }
        flushRegion();
        synchronized (this) {
            durableVersion = Math.max(durableVersion, covers);
        }
    }

    /** Checkpoints that found their version durable already and flushed nothing ({@link #makeDurableThrough}). */
    public long flushesSkipped() {
        return flushesSkipped.get();
    }

    private void flushRegion() {
        if (!(region instanceof HRegion h)) {
            throw new IllegalStateException("markDurable needs an HRegion to flush, got " + region.getClass().getName());
        }
        String name = region.getRegionInfo().getEncodedName();
        try {
            // flush(true) does not throw when it cannot flush: it returns CANNOT_FLUSH when another flush of
            // the region is running (memstore pressure, periodic flush; its snapshot may predate our puts) or
            // writes are disabled (closing). Wait for the running flush and flush again; never clear the dirty
            // set on a flush that did not happen.
            long deadline = System.currentTimeMillis() + FLUSH_WAIT_MS;
            for (int attempt = 0; ; attempt++) {
                HRegion.FlushResult fr = h.flush(true);
                if (fr.isFlushSucceeded() || fr.getResult() == HRegion.FlushResult.Result.CANNOT_FLUSH_MEMSTORE_EMPTY) {
                    if (fr.isCompactionNeeded()) {
                        requestCompaction(h);
                    }
                    break;
                }
                long left = deadline - System.currentTimeMillis();
                if (h.isClosing() || h.isClosed() || attempt >= MAX_FLUSH_ATTEMPTS || left <= 0) {
                    throw new IOException("HBase did not flush the region (" + fr.getResult() + " after " + (attempt + 1)
                            + " attempts in at most " + FLUSH_WAIT_MS + " ms; closing=" + h.isClosing() + ", closed="
                            + h.isClosed() + "): is a flush of it stuck (HDFS)?");
                }
                h.waitForFlushes(left);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot flush " + name
                    + "; its state is not durable and the dirty set is kept", e);
        }
    }

    /**
     * Asks the region server to compact the region (HBase's policy picks the files, or none), as its own MemStoreFlusher
     * does after a flush that leaves a store with enough files. A flush called on the region directly, as a
     * checkpoint's is, requests nothing, and HBase's periodic check runs every 10,000 s by default: in a 4 GiB fill of
     * `salus up` no replica region had ever been compacted (16+ store files per family, every tree node's superseded
     * versions kept: the `t` family at 27% of the blocks' bytes). A refused request leaves the files for the next one.
     */
    private void requestCompaction(HRegion h) {
        try {
            h.requestCompaction("Salus checkpoint flush", org.apache.hadoop.hbase.regionserver.Store.NO_PRIORITY, false,
                    org.apache.hadoop.hbase.regionserver.compactions.CompactionLifeCycleTracker.DUMMY);
            compactionsRequested.incrementAndGet();
        } catch (IOException | RuntimeException e) {
            compactionRequestFailures.incrementAndGet();
        }
    }

    /** Compactions this store asked the region server for after its flushes ({@link #requestCompaction}). */
    public long compactionsRequested() {
        return compactionsRequested.get();
    }

    /** Requests for a compaction that the region server refused (closing region, no region server services). */
    public long compactionRequestFailures() {
        return compactionRequestFailures.get();
    }

    // ------------------------------------------------------------------ versions (issue 27)

    @Override
    public boolean versioned() {
        return versioned;
    }

    /** The timestamp of the last apply's cells: the state of every cell at or below it is the current one. */
    @Override
    public synchronized long version() {
        requireVersions();
        return lastTimestamp;
    }

    @Override
    public byte[] readAt(long version, long localBlock) {
        requireVersions();
        checkLocal(localBlock);
        blockReads.incrementAndGet();
        byte[] v = get(row(localBlock), SalusTableLayout.FAMILY, DATA, version);
        return v == null || v.length == 0 ? new byte[cfg.blockSize()] : v;
    }

    /** The non-empty leaf hashes as of {@code version} (one scan of the {@code h0} cells, no block read). */
    @Override
    public Map<Long, Hash> leafHashesAt(long version) {
        requireVersions();
        Map<Long, Hash> out = new TreeMap<>();
        scan(new Scan().addColumn(nodeFamily, nodeQualifier(0)), 0, version + 1, (local, c) -> {
            if (c.getValueLength() == Hash.LENGTH) {
                out.put(local, Hash.of(CellUtil.cloneValue(c)));
            }
        });
        return out;
    }

    /**
     * Finds the blocks whose data or leaf cell is newer than {@code version} (a scan HBase answers from the store files
     * whose time range reaches past it), sets each back to its content as of {@code version}, and checks the root.
     * Each set-back block's content must hash to its leaf as of {@code version}, else the cells are damaged.
     */
    @Override
    public synchronized int resetTo(long version, Hash expectedRoot) {
        if (version < 0 || version > MAX_VERSION) {
            throw new StoreStateException(region.getRegionInfo().getEncodedName() + ": the checkpoint's store version "
                    + version + " is no cell timestamp (damaged checkpoint metadata): rebuilt from the peers");
        }
        // review rv39: every later cell is written above the checkpoint's version. Applies run ahead of the clock (each
        // block applied takes a new millisecond), and a store whose files were moved aside opens with no cell to continue
        // from: the leaves a rebuild wrote under the version read, at the next reopen, as the checkpoint's own cells
        // (the root matched with the data cells empty) and the replica served and voted without its blocks.
        lastTimestamp = Math.max(lastTimestamp, version);
        try {
            return resetToChecked(version, expectedRoot);
        } catch (UncheckedIOException e) {
            // review rvw27: cells that cannot be read (a damaged store file) are the region's problem, not the
            // disk's: the replica is rebuilt from its peers with its disk kept (and the region reopens itself)
            throw new StoreStateException(region.getRegionInfo().getEncodedName() + ": its cells cannot be read back"
                    + " to version " + version + ": " + e.getMessage());
        }
    }

    private int resetToChecked(long version, Hash expectedRoot) {
        requireVersions();
        java.util.TreeSet<Long> changed = new java.util.TreeSet<>();
        scan(new Scan().addColumn(SalusTableLayout.FAMILY, DATA).addColumn(nodeFamily, nodeQualifier(0)),
                version + 1, Long.MAX_VALUE, (local, c) -> changed.add(local));
        int reset = 0;
        for (long k : changed) {
            byte[] old = readAt(version, k);
            byte[] leafCell = get(row(k), nodeFamily, nodeQualifier(0), version);
            Hash oldLeaf = leafCell == null || leafCell.length != Hash.LENGTH ? tree.emptyHash(0) : Hash.of(leafCell);
            if (!cfg.hash().leafHash(old).equals(oldLeaf)) {
                throw new StoreStateException(region.getRegionInfo().getEncodedName() + ": block " + k
                        + " as of version " + version + " does not hash to its leaf then (cells lost or damaged)");
            }
            if (!tree.leaf(k).equals(oldLeaf) || !Arrays.equals(read(k), old)) {
                apply(k, old);
                reset++;
            }
        }
        Hash root = tree.root();
        if (!root.equals(expectedRoot)) {
            throw new StoreStateException(region.getRegionInfo().getEncodedName() + ": the region tree root as of version "
                    + version + " is " + root + ", the checkpoint's " + expectedRoot + " (" + changed.size()
                    + " blocks changed since; cells lost or damaged)");
        }
        return reset;
    }

    @Override
    public void retainFrom(long version) {
        if (versioned && version > retainFrom) {
            retainFrom = version;
        }
    }

    /**
     * Versions older than the newest one at or below this timestamp may be dropped by a compaction (-1: none may:
     * no certified stored checkpoint is known yet). Read by the endpoint's compaction hook.
     */
    public long retainedFrom() {
        return retainFrom;
    }

    private void requireVersions() {
        if (!versioned) {
            throw new UnsupportedOperationException(region.getRegionInfo().getTable() + " keeps one version of its"
                    + " cells (created before issue 27): its checkpoints carry blocks");
        }
    }

    /** Scans the region's block rows (not other rows) with cells in [minTs, maxTs), giving each cell's local block. */
    private void scan(Scan scan, long minTs, long maxTs, java.util.function.BiConsumer<Long, Cell> each) {
        scan(scan, minTs, maxTs, 0, blocks, each);
    }

    /** Scans the rows of local blocks [{@code fromLocal}, {@code toLocal}). */
    private void scan(Scan scan, long minTs, long maxTs, long fromLocal, long toLocal,
                      java.util.function.BiConsumer<Long, Cell> each) {
        try {
            scan.withStartRow(row(fromLocal)).withStopRow(Bytes.toBytes(firstBlock + toLocal)).setTimeRange(minTs, maxTs)
                    .setCacheBlocks(false);
        } catch (IOException e) {
            throw new IllegalArgumentException(e);
        }
        try (RegionScanner s = region.getScanner(scan)) {
            List<Cell> cells = new ArrayList<>();
            boolean more;
            do {
                cells.clear();
                more = s.next(cells);
                for (Cell c : cells) {
                    if (c.getRowLength() == Long.BYTES) {
                        each.accept(Bytes.toLong(c.getRowArray(), c.getRowOffset()) - firstBlock, c);
                    }
                }
            } while (more);
        } catch (IOException e) {
            readFailed.accept(e);
            throw new io.salus.core.protocol.replica.RegionStore.ReadFailed("cannot scan " + region.getRegionInfo().getEncodedName(), e);
        }
    }

    /**
     * Calls {@code hook} with the error of every read of the region's cells that fails, a GET ({@link #read}, tree
     * nodes) or the scan of {@link #leafHashes} (a mount query, a catch-up), before it is rethrown as an
     * {@link UncheckedIOException}, e.g. an HFile block that fails its checksum.
     */
    public void onReadFailure(java.util.function.Consumer<IOException> hook) {
        this.readFailed = hook;
    }

    /** Block cells read from the region since this store was opened (tree nodes excluded). */
    public long blockReads() {
        return blockReads.get();
    }

    /** Tree nodes read from the region (cache misses) since this store was opened. */
    public long nodeReads() {
        return nodeReads.get();
    }

    private byte[] get(byte[] row, byte[] qualifier) {
        return get(row, SalusTableLayout.FAMILY, qualifier, CURRENT);
    }

    /** Reads of the newest cell, with no time range. */
    private static final long CURRENT = Long.MAX_VALUE;

    /** A cell's value as of {@code version} ({@link #CURRENT}: the newest), or null; a failed read is reported. */
    private byte[] get(byte[] row, byte[] family, byte[] qualifier, long version) {
        try {
            Get g = new Get(row).addColumn(family, qualifier);
            if (version != CURRENT) {
                g.setTimeRange(0, version + 1);
            }
            Result r = region.get(g);
            return r.getValue(family, qualifier);
        } catch (IOException e) {
            if (region.isClosing() || region.isClosed()) {
                // review rv38: an apply's tree-node read on a closing region (a node cache miss) is no disk failure
                // either; it was reported as one and an operator's unassign was undone
                throw new io.salus.core.protocol.replica.RegionStore.Closing("cannot read "
                        + Bytes.toStringBinary(row) + " from " + region.getRegionInfo().getEncodedName()
                        + ": the region is closing", e);
            }
            readFailed.accept(e);
            throw new io.salus.core.protocol.replica.RegionStore.ReadFailed("cannot read " + Bytes.toStringBinary(row)
                    + (version == CURRENT ? "" : " as of " + version) + " from "
                    + region.getRegionInfo().getEncodedName(), e);
        }
    }

    /** The region tree's nodes: cached, read on demand from the region, written with the block's put. */
    private final class RegionNodes implements NodeStore {
        private static final Hash ABSENT = Hash.of(new byte[Hash.LENGTH]);
        /**
         * Nodes read or written lately, at most {@link #NODE_CACHE_ENTRIES} (least recently used out): the tree of a
         * region of any size costs a bounded heap (issue 27). A node written by an apply is in its row's pending put
         * until the apply's {@code writePending}, and an apply touches ~2 × depth nodes, so it is never evicted
         * before its write.
         */
        private final LinkedHashMap<Long, Hash> cache = new LinkedHashMap<>(1024, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<Long, Hash> eldest) {
                return size() > NODE_CACHE_ENTRIES;
            }
        };
        private final LinkedHashMap<Long, Put> pending = new LinkedHashMap<>();
        long timestamp;

        Put pending(long localRow) {
            return pending.computeIfAbsent(localRow, r -> new Put(row(r), timestamp).setDurability(Durability.SKIP_WAL));
        }

        private long rowOf(int level, long index) {
            return index << level;
        }

        private static long key(int level, long index) {
            return (long) level << 56 | index;
        }

        @Override
        public Hash get(int level, long index) {
            long key = key(level, index);
            Hash h = cache.get(key);
            if (h == null) {
                nodeReads.incrementAndGet();
                byte[] v = HRegionStore.this.get(row(rowOf(level, index)), nodeFamily, nodeQualifier(level), CURRENT);
                h = v == null || v.length != Hash.LENGTH ? ABSENT : Hash.of(v);
                cache.put(key, h);
            }
            return h == ABSENT ? null : h;
        }

        @Override
        public void put(int level, long index, Hash hash) {
            cache.put(key(level, index), hash);
            pending(rowOf(level, index)).addColumn(nodeFamily, nodeQualifier(level), hash.bytes());
        }

        @Override
        public void remove(int level, long index) {
            cache.put(key(level, index), ABSENT);
            pending(rowOf(level, index)).addColumn(nodeFamily, nodeQualifier(level), new byte[0]);
        }

        void writePending() {
            if (pending.isEmpty()) {
                return;
            }
            Mutation[] ms = pending.values().toArray(new Mutation[0]);
            pending.clear();
            try {
                OperationStatus[] st = region.batchMutate(ms);
                for (OperationStatus s : st) {
                    if (s.getOperationStatusCode() != org.apache.hadoop.hbase.HConstants.OperationStatusCode.SUCCESS) {
                        throw new IOException("put refused: " + s.getOperationStatusCode() + " " + s.getExceptionMsg());
                    }
                }
            } catch (IOException | RuntimeException e) {
                // the cache holds the refused write's nodes (RegionTooBusyException under memstore pressure,
                // a closing region, a status other than SUCCESS): drop it so root and proofs come from the cells
                cache.clear();
                if (region.isClosing() || region.isClosed()) {
                    throw new io.salus.core.protocol.replica.RegionStore.Closing("cannot write to "
                            + region.getRegionInfo().getEncodedName() + ": the region is closing", e);
                }
                if (e instanceof RuntimeException re) {
                    throw re;
                }
                throw new UncheckedIOException("cannot write to " + region.getRegionInfo().getEncodedName(), (IOException) e);
            }
        }
    }
}
