package io.salus.blockdriver.volume;

import io.salus.blockdriver.metrics.BlockDriverMetrics;
import io.salus.blockdriver.metrics.BlockDriverMetricsSource;
import io.salus.blockdriver.tree.ClientVolumeTree;
import io.salus.blockdriver.tree.SubtreeSource;
import io.salus.blockdriver.tree.TreeHashes;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;
import java.util.function.LongFunction;
import java.util.function.Supplier;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.AsyncConnection;
import org.apache.hadoop.hbase.client.AsyncTable;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.Delete;
import org.apache.hadoop.hbase.client.Durability;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.Row;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.ScanResultConsumer;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.util.Bytes;
import me.tongfei.progressbar.DelegatingProgressBarConsumer;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarStyle;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The plain-HBase baseline volume: one table per volume ({@code salus:hb_<name>}), row key =
 * 8-byte big-endian block number, family {@code b} with the block data ({@code b:d}) and its
 * leaf hash ({@code b:h}). Stock region servers, standard WAL (writes are durable when
 * acknowledged, so FUA and flush need no extra round trip). Unwritten, trimmed and zeroed blocks
 * have no row. Requests go through the asynchronous HBase client as one multi-row batch (writes,
 * deletes) or one bounded scan (reads).
 *
 * <p>Every read is checked against the {@link ClientVolumeTree}; a block whose data does not
 * match is never returned ({@link BlockCorruptedException}) and counted in
 * {@link BlockDriverMetrics#verificationFailures}.
 */
public final class HBaseVolume implements Volume {
  private static final Logger LOG = LoggerFactory.getLogger(HBaseVolume.class);
  public static final byte[] FAMILY = Bytes.toBytes("b");
  public static final byte[] DATA = Bytes.toBytes("d");
  public static final byte[] HASH = Bytes.toBytes("h");
  /** Column of the per-region sync markers written by FLUSH (see {@link #flush}). */
  static final byte[] SYNC_MARKER = Bytes.toBytes("s");
  /** Column of a persisted volume-tree node ({@code b:n}, see {@link #nodeRow}). */
  public static final byte[] NODE = Bytes.toBytes("n");
  /** First byte of node rows; block rows (non-negative longs) start with 0x00..0x7f. */
  static final byte NODE_PREFIX = (byte) 0x80;
  /** First byte of dirty-subtree markers (see {@link #markerRow}). */
  static final byte DIRTY_PREFIX = (byte) 0x81;
  /** Row saying the volume's nodes are all persisted (written once, after a scanning mount). */
  static final byte[] NODES_COMPLETE_ROW = {NODE_PREFIX};
  private static final int TRIM_BATCH = 4096;
  static final int SUBTREE_CACHE = 4096;
  private static final int CLOSE_WAIT_SECONDS = 60;

  private final VolumeInfo info;
  private final VolumeCatalog catalog;
  private final AsyncConnection async;
  private final AsyncTable<ScanResultConsumer> table;
  private final Connection connection;
  private final TableName tableName;
  private final ExecutorService executor;
  private final ClientVolumeTree tree;
  private final BlockDriverMetrics metrics = new BlockDriverMetrics();
  /** The volume's metrics in JMX ({@code SalusVolume-<name>}) while open. */
  private final BlockDriverMetricsSource jmx;
  private final int bs;
  private long recordedSeq = -1;
  /** Last in-flight batch per block (for ordering overlapping writes). */
  private final Map<Long, CompletableFuture<Void>> inflight = new HashMap<>();
  /**
   * Blocks whose last update failed: storage may hold the old or the new content. Settled from
   * the stored hash before a root is recorded ({@link #settleUncertain}), so that a partly
   * applied batch does not make the recorded root differ from storage.
   */
  private final java.util.Set<Long> uncertain = java.util.concurrent.ConcurrentHashMap.newKeySet();
  private final byte[] mountRoot;
  private final boolean mountRootMatches;
  private volatile boolean closed;
  /** <b>Tests only</b> ({@link #crashForTest}): this writer died; nothing more is sent. */
  private volatile boolean crashed;
  /** Operations admitted and not yet complete (close waits for them); guarded by itself. */
  private final java.util.Set<CompletableFuture<Void>> outstanding = new java.util.HashSet<>();
  /**
   * Single-writer lease; once it is lost the volume is fenced: every operation fails, read
   * straight from the lease so that no write is acknowledged after the loss is known.
   */
  private final VolumeLease lease;
  /**
   * Subtrees whose dirty marker is stored in this open (the put, shared by concurrent writers):
   * a marker is durable before any block of its subtree is written, and stays until a clean
   * close, so a crash leaves every subtree whose stored nodes may be behind its leaves marked.
   */
  private final java.util.concurrent.ConcurrentHashMap<Long, CompletableFuture<Void>> marked =
      new java.util.concurrent.ConcurrentHashMap<>();
  /** Markers of an earlier open found at mount (their subtrees were recomputed): cleared. */
  private final java.util.Set<Long> staleMarkers = new java.util.HashSet<>();
  /** Test seam: runs after FLUSH's WAL sync, before its root is recorded. */
  volatile Supplier<CompletableFuture<Void>> afterFlushSync;
  /** Explicit cell versions of this open (a delete never hides a later write). */
  private final WriteVersions versions;
  /** This open's writer epoch: the fencing token checked when the root is recorded. */
  private final long writerEpoch;

  private HBaseVolume(Connection connection, VolumeInfo info, boolean acceptCurrentState)
      throws IOException {
    this.connection = connection;
    this.info = info;
    this.bs = info.blockSize();
    this.catalog = new VolumeCatalog(connection);
    this.tableName = TableName.valueOf(info.table());
    this.lease = VolumeLease.acquire(connection.getConfiguration(), info.name());
    // From here on, any failure releases everything acquired so far: the lease (so the volume
    // is not left "in use" by a writer that never started), the connection and the threads.
    AsyncConnection ac = null;
    ExecutorService ex = null;
    try {
      this.writerEpoch = catalog.nextWriterEpoch(info.name());
      this.versions = new WriteVersions(writerEpoch);
      try {
        ac = ConnectionFactory.createAsyncConnection(connection.getConfiguration()).get();
      } catch (ExecutionException e) {
        throw new IOException("cannot connect to HBase for volume '" + info.name() + "'",
            e.getCause());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IOException("interrupted while connecting volume '" + info.name() + "'", e);
      }
      this.async = ac;
      AtomicInteger n = new AtomicInteger();
      ex = Executors.newFixedThreadPool(
          Math.max(2, Runtime.getRuntime().availableProcessors()), r -> {
            Thread t = new Thread(r, "hbase-volume-" + info.name() + "-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
          });
      this.executor = ex;
      this.table = async.getTable(tableName, executor);
      this.tree = new ClientVolumeTree(info.name(), TreeHashes.forName(info.hashAlgorithm(), bs),
          info.sizeInBlocks(), info.subtreeHeight(), new HBaseSubtreeSource(), metrics,
          SUBTREE_CACHE);
      long t0 = System.nanoTime();
      // the scan reads every written block's hash: show how far it got (rows come in block
      // order), as log lines once a second
      try (ProgressBar bar = new ProgressBarBuilder()
          .setTaskName("mount " + info.name())
          .setInitialMax(info.sizeInBlocks())
          .setUnit(" blocks", 1)
          .setUpdateIntervalMillis(1000)
          .setStyle(ProgressBarStyle.ASCII)
          .setConsumer(new DelegatingProgressBarConsumer(LOG::info))
          .build()) {
        tree.mount(bar::stepTo);
      }
      this.mountRoot = tree.root();
      this.mountRootMatches = info.rootHash() == null
          || Arrays.equals(info.rootHash(), mountRoot);
      long seq = info.rootSeq();
      if (!mountRootMatches) {
        String why = info.cleanClose()
            ? "the stored blocks were changed outside the block driver"
            : "the stored blocks were changed outside the block driver, or the previous writer"
                + " did not close cleanly and writes after its last flush landed";
        String problem = "volume '" + info.name() + "': the volume tree rebuilt from storage"
            + " (root " + VolumeCatalog.hex(mountRoot) + ") does not match the root recorded at"
            + " the last " + (info.cleanClose() ? "clean close" : "flush") + " ("
            + VolumeCatalog.hex(info.rootHash()) + ", sequence " + info.rootSeq() + "); " + why
            + ".";
        if (!acceptCurrentState) {
          throw new VolumeException.RootMismatch(problem + " Nothing was mounted and the"
              + " recorded root is kept as evidence. Inspect the table " + info.table()
              + "; to trust what is stored now, mount once with 'salus nbd --volume "
              + info.name() + " --accept-current-state' (HBaseVolume.open(connection, name,"
              + " true)).");
        }
        seq = info.rootSeq() + 1; // a new state: its sequence number is above the old one
        LOG.warn("{} The operator accepted the current state: recording it as sequence {}.",
            problem, seq);
      }
      tree.startSeqAt(seq);
      LOG.info("mounted volume '{}' ({} blocks of {} B) in {} ms, root {} sequence {}",
          info.name(), info.sizeInBlocks(), bs, (System.nanoTime() - t0) / 1_000_000,
          VolumeCatalog.hex(mountRoot), seq);
      catalog.recordRoot(info.name(), mountRoot, seq, false, writerEpoch);
      recordedSeq = seq;
      // the recomputed subtrees' nodes are stored and the root recorded: old markers can go
      deleteMarkers(staleMarkers);
      this.jmx = BlockDriverMetricsSource.register("SalusVolume-" + info.name(), metrics);
    } catch (IOException | RuntimeException | Error e) {
      release(ac, ex, lease, info.name());
      throw e;
    }
  }

  /**
   * Opens an existing volume of kind {@code hbase} and rebuilds its client volume tree; refuses
   * ({@link VolumeException.RootMismatch}) when the rebuilt root differs from the recorded one.
   */
  public static HBaseVolume open(Connection connection, String name) throws IOException {
    return open(connection, name, false);
  }

  /**
   * Like {@link #open(Connection, String)}; with {@code acceptCurrentState} a root mismatch is
   * accepted (the operator's explicit decision to trust what is stored now): the rebuilt root is
   * recorded with the next sequence number.
   */
  public static HBaseVolume open(Connection connection, String name, boolean acceptCurrentState)
      throws IOException {
    VolumeInfo info = new VolumeCatalog(connection).require(name);
    if (!VolumeCatalog.KIND_HBASE.equals(info.kind())) {
      throw new IllegalArgumentException("volume '" + name + "' is of kind '" + info.kind()
          + "', not a plain-HBase volume");
    }
    return new HBaseVolume(connection, info, acceptCurrentState);
  }

  public VolumeInfo info() {
    return info;
  }

  public ClientVolumeTree tree() {
    return tree;
  }

  public BlockDriverMetrics metrics() {
    return metrics;
  }

  /** Whether the root rebuilt at mount equals the root recorded at the last flush/close. */
  public boolean mountRootMatchesRecorded() {
    return mountRootMatches;
  }

  @Override
  public String name() {
    return info.name();
  }

  @Override
  public int blockSize() {
    return bs;
  }

  @Override
  public long sizeInBlocks() {
    return info.sizeInBlocks();
  }

  static byte[] row(long block) {
    return Bytes.toBytes(block);
  }

  private VolumeException check(long first, long count) {
    VolumeException e = unusable();
    return e != null ? e : Volume.checkRange(this, first, count);
  }

  /** Why no operation may run now (closed, or fenced after losing the lease), else null. */
  private VolumeException unusable() {
    if (closed) {
      return new VolumeException.Closed("volume '" + info.name() + "' is closed");
    }
    return lease.fencedError(); // checked before sending and again before acknowledging
  }

  /** Runs {@code op} with the subtrees of the range pinned and loaded. */
  private <T> CompletableFuture<T> withTree(long first, long count,
      Supplier<CompletableFuture<T>> op) {
    CompletableFuture<T> f = tree.acquire(first, count).thenComposeAsync(v -> op.get(), executor)
        .thenApply(r -> { // fenced while in flight: never acknowledge (the lease may be taken)
          VolumeException fenced = lease.fencedError();
          if (fenced != null) {
            throw new CompletionException(fenced);
          }
          return r;
        });
    return f.whenComplete((r, t) -> tree.release(first, count))
        .exceptionallyCompose(t -> CompletableFuture.failedFuture(translate(t)));
  }

  private Throwable translate(Throwable t) {
    Throwable c = t instanceof CompletionException && t.getCause() != null ? t.getCause() : t;
    if (c instanceof VolumeException) {
      return c;
    }
    return new VolumeException("HBase I/O on volume '" + info.name() + "' failed: " + c, c);
  }

  @Override
  public CompletableFuture<byte[]> read(long firstBlock, int count) {
    VolumeException e = check(firstBlock, count);
    if (e != null) {
      return CompletableFuture.failedFuture(e);
    }
    return admitted(() -> withTree(firstBlock, count, () -> {
      CompletableFuture<List<Result>> rows;
      if (count == 1) {
        rows = table.get(new Get(row(firstBlock)).addColumn(FAMILY, DATA).addColumn(FAMILY, HASH))
            .thenApply(List::of);
      } else {
        rows = table.scanAll(new Scan().withStartRow(row(firstBlock))
            .withStopRow(row(firstBlock + count)).addColumn(FAMILY, DATA).addColumn(FAMILY, HASH)
            .setCaching(count).setLimit(count).setReadType(Scan.ReadType.PREAD));
      }
      return rows.thenApply(results -> assemble(firstBlock, count, results));
    }));
  }

  private byte[] assemble(long first, int count, List<Result> results) {
    byte[] out = new byte[count * bs];
    boolean[] seen = new boolean[count];
    for (Result r : results) {
      if (r == null || r.isEmpty()) {
        continue;
      }
      long block = Bytes.toLong(r.getRow());
      int i = (int) (block - first);
      if (i < 0 || i >= count) {
        continue;
      }
      byte[] d = r.getValue(FAMILY, DATA);
      byte[] h = r.getValue(FAMILY, HASH);
      if (d == null || d.length != bs) {
        metrics.verificationFailures.increment();
        BlockDriverMetrics.GLOBAL.verificationFailures.increment();
        throw new BlockCorruptedException(info.name(), block,
            "stored block has " + (d == null ? "no data" : d.length + " bytes"));
      }
      tree.verify(block, d, 0, h);
      System.arraycopy(d, 0, out, i * bs, bs);
      seen[i] = true;
    }
    for (int i = 0; i < count; i++) {
      if (!seen[i]) {
        tree.verify(first + i, null, 0, null);
      }
    }
    return out;
  }

  @Override
  public CompletableFuture<Void> write(long firstBlock, byte[] data, boolean fua) {
    if (data.length % bs != 0 || data.length == 0) {
      return CompletableFuture.failedFuture(new VolumeException.OutOfRange(
          "write of " + data.length + " bytes is not a positive multiple of block size " + bs));
    }
    int count = data.length / bs;
    VolumeException e = check(firstBlock, count);
    if (e != null) {
      return CompletableFuture.failedFuture(e);
    }
    return admitted(() -> withTree(firstBlock, count, () -> {
      byte[][] leaves = new byte[count][];
      boolean[] zero = new boolean[count];
      for (int i = 0; i < count; i++) {
        zero[i] = BlockGeometry.isAllZero(data, i * bs, bs);
        leaves[i] = zero[i] ? tree.emptyLeaf() : tree.leafHash(data, i * bs);
      }
      return apply(firstBlock, leaves, version -> {
        List<Row> batch = new ArrayList<>(count);
        PartialWrite partial = partialForTest;
        for (int i = 0; i < count; i++) {
          long block = firstBlock + i;
          if (partial != null && partial.data() == data && !partial.sent().test(block)) {
            continue; // tests only: this row never left the writer (it died mid-send)
          }
          if (zero[i]) {
            batch.add(new Delete(row(block), version).setDurability(durability(fua)));
          } else {
            batch.add(new Put(row(block), version)
                .addColumn(FAMILY, DATA, Arrays.copyOfRange(data, i * bs, (i + 1) * bs))
                .addColumn(FAMILY, HASH, leaves[i])
                .setDurability(durability(fua)));
          }
        }
        return batch;
      });
    }));
  }

  /**
   * Stores a batch and updates the tree. Overlapping batches are serialized: a batch waits for
   * the in-flight batches touching any of its blocks, so HBase never holds two unordered
   * mutations of one block and the tree's commit order matches the stored state (otherwise two
   * concurrent writes of a block could land in HBase in the opposite order of their
   * acknowledgements, and a correct block would later fail verification). The batch is built
   * when it is sent, with the next explicit cell version ({@link WriteVersions}), so a later
   * batch always carries a higher version than an earlier one.
   */
  private CompletableFuture<Void> apply(long firstBlock, byte[][] leaves,
      LongFunction<List<Row>> batchAt) {
    CompletableFuture<Void> mine = new CompletableFuture<>();
    List<CompletableFuture<Void>> before = new ArrayList<>();
    synchronized (inflight) {
      for (int i = 0; i < leaves.length; i++) {
        if (leaves[i] != null) {
          CompletableFuture<Void> prev = inflight.put(firstBlock + i, mine);
          if (prev != null) {
            before.add(prev);
          }
        }
      }
    }
    CompletableFuture<Void> start = before.isEmpty() ? CompletableFuture.completedFuture(null)
        : CompletableFuture.allOf(before.toArray(new CompletableFuture[0]));
    CompletableFuture<Void> result = start.thenCompose(v -> {
      // the lease is checked when the batch is sent, not only when the write was admitted: a
      // batch queued behind a stalled one must not reach HBase after this writer was fenced
      VolumeException fenced = lease.fencedError();
      if (fenced != null) {
        return CompletableFuture.failedFuture(fenced);
      }
      if (crashed) {
        return CompletableFuture.failedFuture(new VolumeException.Closed("writer crashed (test)"));
      }
      return markDirty(firstBlock, leaves);
    }).thenCompose(v -> {
      if (crashed) { // the process died after its marker reached HBase, before the batch did
        return CompletableFuture.failedFuture(new VolumeException.Closed("writer crashed (test)"));
      }
      for (int i = 0; i < leaves.length; i++) {
        if (leaves[i] != null) {
          tree.beginUpdate(firstBlock + i, leaves[i]);
        }
      }
      List<Row> batch;
      try {
        batch = batchAt.apply(versions.next());
      } catch (RuntimeException e) {
        batch = null;
        for (int i = 0; i < leaves.length; i++) {
          if (leaves[i] != null) {
            tree.abortUpdate(firstBlock + i, leaves[i]);
          }
        }
        return CompletableFuture.failedFuture(e);
      }
      return table.batchAll(batch).handle((r, t) -> {
        for (int i = 0; i < leaves.length; i++) {
          if (leaves[i] != null) {
            if (t == null) {
              tree.commitUpdate(firstBlock + i, leaves[i]);
            } else {
              tree.abortUpdate(firstBlock + i, leaves[i]);
              uncertain.add(firstBlock + i);
            }
          }
        }
        if (t != null) {
          throw new CompletionException(translate(t));
        }
        return null;
      });
    }).thenCompose(v -> writeBackOverCapacity());
    result.whenComplete((r, t) -> {
      synchronized (inflight) {
        for (int i = 0; i < leaves.length; i++) {
          if (leaves[i] != null) {
            inflight.remove(firstBlock + i, mine);
          }
        }
      }
      mine.complete(null); // successors run even if this batch failed
    });
    return result;
  }

  /**
   * FLUSH: every write acknowledged so far is made durable on non-volatile storage (hsync), then
   * the tree root is recorded. Acknowledged writes are already in their region server's WAL
   * (SYNC_WAL: replicated, in DataNode memory); a marker put with {@code FSYNC_WAL} into each
   * region of the volume's table makes that WAL hsync everything appended before the marker
   * (a WAL syncs in order), which covers every acknowledged write of every connection.
   */
  @Override
  public CompletableFuture<Void> flush() {
    return admitted(() -> settleUncertain()
        .thenCompose(v -> persistNodes())
        .thenCompose(v -> {
          // the root is taken before the WAL sync: it covers only writes acknowledged before
          // the sync markers were sent, which the sync makes durable. A write acknowledged
          // after this point may not be hsynced; it belongs to the next flush's root.
          ClientVolumeTree.RootSnapshot snap = tree.snapshot();
          CompletableFuture<Void> synced = syncWals();
          Supplier<CompletableFuture<Void>> hook = afterFlushSync;
          if (hook != null) {
            synced = synced.thenCompose(x -> hook.get());
          }
          return synced.thenApply(x -> snap);
        })
        .thenAcceptAsync(snap -> recordRoot(snap, false), executor)
        .exceptionallyCompose(t -> CompletableFuture.failedFuture(translate(t))));
  }

  /**
   * Marks the subtrees of a batch dirty before any of its blocks is written: the marker put is
   * hsynced ({@code FSYNC_WAL}) and acknowledged first, so no crash can leave a block written
   * in a subtree whose stored nodes the next mount would trust without recomputing.
   */
  private CompletableFuture<Void> markDirty(long firstBlock, byte[][] leaves) {
    List<CompletableFuture<Void>> waits = new ArrayList<>();
    long last = -1;
    for (int i = 0; i < leaves.length; i++) {
      if (leaves[i] == null) {
        continue;
      }
      long s = (firstBlock + i) >>> tree.subtreeHeight();
      if (s == last) {
        continue;
      }
      last = s;
      CompletableFuture<Void> f = marked.get(s);
      if (f == null) {
        CompletableFuture<Void> mine = new CompletableFuture<>();
        f = marked.putIfAbsent(s, mine);
        if (f == null) { // this write stores the marker; concurrent writers wait for it
          f = mine;
          long k = s;
          table.put(new Put(markerRow(k), versions.next())
              .addColumn(FAMILY, NODE, new byte[0]).setDurability(Durability.FSYNC_WAL))
              .whenComplete((r, t) -> {
                if (t != null) {
                  marked.remove(k, mine); // the next write of the subtree tries again
                  mine.completeExceptionally(t);
                } else {
                  mine.complete(null);
                }
              });
        }
      }
      waits.add(f);
    }
    return CompletableFuture.allOf(waits.toArray(new CompletableFuture[0]));
  }

  /**
   * Stores the tree nodes changed since they were last stored (a batch into the node rows,
   * covered by the WAL sync that follows in FLUSH), then lets the tree evict those subtrees.
   */
  private CompletableFuture<Void> persistNodes() {
    Map<io.salus.blockdriver.tree.NodeId, io.salus.core.merkle.Hash> dirty;
    long version;
    synchronized (marked) { // a later snapshot always gets the higher version (it wins)
      dirty = tree.dirtyNodes();
      if (dirty.isEmpty()) {
        return CompletableFuture.completedFuture(null);
      }
      version = versions.next();
    }
    List<Row> rows = new ArrayList<>(dirty.size());
    dirty.forEach((id, h) -> rows.add(nodeMutation(id, h, version)));
    return table.batchAll(rows).thenRun(() -> tree.nodesStored(dirty));
  }

  /**
   * A subtree whose changed nodes are not stored is never evicted, so without a FLUSH every
   * written subtree would stay cached: when the cache is over its capacity, the changed nodes
   * are stored now (as FLUSH does; the subtrees' dirty markers stay, so a crash still
   * recomputes them) and the subtrees become evictable. A failure only leaves them cached: the
   * write it follows is stored and committed already.
   */
  private CompletableFuture<Void> writeBackOverCapacity() {
    if (tree.cachedSubtrees() <= SUBTREE_CACHE) {
      return CompletableFuture.completedFuture(null);
    }
    return persistNodes().exceptionally(t -> {
      LOG.warn("volume '{}': could not store changed tree nodes of a full subtree cache",
          info.name(), t);
      return null;
    });
  }

  static Row nodeMutation(io.salus.blockdriver.tree.NodeId id, io.salus.core.merkle.Hash h,
      long version) {
    byte[] row = nodeRow(id.level(), id.index());
    return h == null ? new Delete(row, version)
        : new Put(row, version).addColumn(FAMILY, NODE, h.bytes());
  }

  /** Row of a persisted tree node: 0x80, level, 8-byte big-endian index (10 bytes). */
  public static byte[] nodeRow(int level, long index) {
    byte[] r = new byte[10];
    r[0] = NODE_PREFIX;
    r[1] = (byte) level;
    System.arraycopy(Bytes.toBytes(index), 0, r, 2, 8);
    return r;
  }

  /** Row of a dirty-subtree marker: 0x81, 8-byte big-endian subtree index (9 bytes). */
  public static byte[] markerRow(long subtree) {
    byte[] r = new byte[9];
    r[0] = DIRTY_PREFIX;
    System.arraycopy(Bytes.toBytes(subtree), 0, r, 1, 8);
    return r;
  }

  private void deleteMarkers(java.util.Collection<Long> subtrees) {
    if (subtrees.isEmpty()) {
      return;
    }
    long version = versions.next();
    List<Delete> deletes = new ArrayList<>();
    for (long s : subtrees) {
      deletes.add(new Delete(markerRow(s), version));
    }
    try (Table t = connection.getTable(tableName)) {
      t.delete(deletes);
    } catch (IOException e) {
      // harmless: the next mount recomputes those subtrees once more
      LOG.warn("volume '{}': could not clear {} dirty markers", info.name(), subtrees.size(), e);
    }
  }

  /**
   * Reads the stored hash of every block whose update failed and settles the tree on it
   * ({@link ClientVolumeTree#settle}), serialized with the writes of that block. A block that
   * cannot be settled stays uncertain (the recorded root may then differ from storage, and the
   * next mount says so).
   */
  private CompletableFuture<Void> settleUncertain() {
    List<CompletableFuture<Void>> all = new ArrayList<>();
    for (Long block : new ArrayList<>(uncertain)) {
      CompletableFuture<Void> mine = new CompletableFuture<>();
      CompletableFuture<Void> prev;
      synchronized (inflight) {
        prev = inflight.put(block, mine);
      }
      CompletableFuture<Void> start = prev == null ? CompletableFuture.completedFuture(null)
          : prev.handle((r, t) -> null);
      CompletableFuture<Void> f = start.thenCompose(v -> tree.acquire(block, 1))
          .thenCompose(v -> table.get(new Get(row(block)).addColumn(FAMILY, HASH)))
          .thenAccept(r -> {
            byte[] h = r == null || r.isEmpty() ? tree.emptyLeaf() : r.getValue(FAMILY, HASH);
            if (h != null && tree.settle(block, h)) {
              uncertain.remove(block);
            }
          });
      f = f.whenComplete((r, t) -> {
        tree.release(block, 1);
        synchronized (inflight) {
          inflight.remove(block, mine);
        }
        mine.complete(null);
      });
      all.add(f);
    }
    return CompletableFuture.allOf(all.toArray(new CompletableFuture[0]));
  }

  /** One {@code FSYNC_WAL} marker put per region of the table (see {@link #flush}). */
  private CompletableFuture<Void> syncWals() {
    return async.getRegionLocator(tableName).getAllRegionLocations().thenCompose(locations -> {
      long version = versions.next();
      List<Row> markers = new ArrayList<>(locations.size());
      for (org.apache.hadoop.hbase.HRegionLocation l : locations) {
        markers.add(new Put(syncMarkerRow(l.getRegion().getStartKey()), version)
            .addColumn(FAMILY, SYNC_MARKER, Bytes.toBytes(version))
            .setDurability(Durability.FSYNC_WAL));
      }
      return table.batchAll(markers).thenApply(r -> (Void) null);
    });
  }

  /**
   * The row of a region's sync marker: its first block's row key plus one zero byte (9 bytes),
   * inside the region and never a block row. Reads select only {@code b:d} and {@code b:h}, so
   * a marker row is never seen as a block.
   */
  static byte[] syncMarkerRow(byte[] regionStartKey) {
    byte[] start = regionStartKey.length == 0 ? row(0) : regionStartKey;
    return Arrays.copyOf(start, start.length + 1);
  }

  /** Durability of a write: FUA means on non-volatile storage when acknowledged (hsync). */
  private static Durability durability(boolean fua) {
    return fua ? Durability.FSYNC_WAL : Durability.USE_DEFAULT;
  }

  private synchronized void recordRoot(ClientVolumeTree.RootSnapshot snap, boolean clean) {
    long seq = snap.seq();
    if (seq < recordedSeq || (seq == recordedSeq && !clean)) {
      return; // a later flush recorded a newer root already; sequence numbers only grow
    }
    VolumeException fenced = lease.fencedError(); // fenced meanwhile: never record (nor ack)
    if (fenced != null) {
      throw fenced;
    }
    try {
      catalog.recordRoot(info.name(), snap.root(), seq, clean, writerEpoch);
      recordedSeq = seq;
    } catch (IOException e) {
      throw new VolumeException("cannot record volume root of '" + info.name() + "'", e);
    }
  }

  @Override
  public CompletableFuture<Void> trim(long firstBlock, long count) {
    return writeZeroes(firstBlock, count, false);
  }

  /** Deletes the stored rows of non-empty blocks, one subtree at a time. */
  @Override
  public CompletableFuture<Void> writeZeroes(long firstBlock, long count, boolean fua) {
    VolumeException e = check(firstBlock, count);
    if (e != null) {
      return CompletableFuture.failedFuture(e);
    }
    return admitted(() -> zeroRange(firstBlock, count, fua));
  }

  /**
   * Zeroes a range. Blocks the tree already holds as empty are not sent; with FUA their emptiness
   * may still rest on an earlier delete that is only in a WAL's memory (a non-FUA TRIM), so when
   * any block was skipped the WALs are hsynced ({@link #syncWals}) before acknowledging.
   */
  private CompletableFuture<Void> zeroRange(long firstBlock, long count, boolean fua) {
    java.util.concurrent.atomic.AtomicBoolean skipped =
        new java.util.concurrent.atomic.AtomicBoolean();
    CompletableFuture<Void> chain = CompletableFuture.completedFuture(null);
    long end = firstBlock + count;
    long pos = firstBlock;
    long span = tree.subtreeLeaves();
    while (pos < end) {
      long chunkStart = pos;
      long chunkEnd = Math.min(end, (pos / span + 1) * span);
      long idx = pos / span;
      pos = chunkEnd;
      chain = chain.thenCompose(v -> {
        if (tree.subtreeEmpty(idx)) {
          skipped.set(true);
          return CompletableFuture.completedFuture(null);
        }
        return withTree(chunkStart, chunkEnd - chunkStart,
            () -> zeroChunk(chunkStart, chunkEnd, fua, skipped));
      });
    }
    if (fua) {
      chain = chain.thenCompose(v -> skipped.get() ? syncWals()
              : CompletableFuture.<Void>completedFuture(null))
          .thenApply(v -> {
            VolumeException fenced = lease.fencedError();
            if (fenced != null) {
              throw new CompletionException(fenced);
            }
            return v;
          })
          .exceptionallyCompose(t -> CompletableFuture.failedFuture(translate(t)));
    }
    return chain;
  }

  private CompletableFuture<Void> zeroChunk(long start, long end, boolean fua,
      java.util.concurrent.atomic.AtomicBoolean skipped) {
    byte[] empty = tree.emptyLeaf();
    List<Long> blocks = new ArrayList<>();
    for (long b = start; b < end; b++) {
      if (!tree.isEmpty(b)) {
        blocks.add(b);
      } else {
        skipped.set(true);
      }
    }
    List<CompletableFuture<Void>> parts = new ArrayList<>();
    for (int i = 0; i < blocks.size(); i += TRIM_BATCH) {
      List<Long> part = blocks.subList(i, Math.min(blocks.size(), i + TRIM_BATCH));
      // leaves indexed from part.get(0); only listed blocks get updates
      long base = part.get(0);
      long last = part.get(part.size() - 1);
      byte[][] leaves = new byte[(int) (last - base + 1)][];
      for (long b : part) {
        leaves[(int) (b - base)] = empty;
      }
      LongFunction<List<Row>> batch = version -> {
        List<Row> rows = new ArrayList<>(part.size());
        for (long b : part) {
          rows.add(new Delete(row(b), version).setDurability(durability(fua)));
        }
        return rows;
      };
      parts.add(apply(base, leaves, batch));
    }
    return CompletableFuture.allOf(parts.toArray(new CompletableFuture[0]));
  }

  /**
   * Runs an operation unless the volume is closed (or fenced), counting it as in flight until it
   * completes; {@link #close} waits for every operation admitted before it.
   */
  private <T> CompletableFuture<T> admitted(Supplier<CompletableFuture<T>> op) {
    CompletableFuture<Void> token = new CompletableFuture<>();
    synchronized (outstanding) {
      VolumeException e = unusable();
      if (e != null) {
        return CompletableFuture.failedFuture(e);
      }
      outstanding.add(token);
    }
    CompletableFuture<T> f;
    try {
      f = op.get();
    } catch (RuntimeException e) {
      f = CompletableFuture.failedFuture(e);
    }
    f.whenComplete((r, t) -> {
      synchronized (outstanding) {
        outstanding.remove(token);
      }
      token.complete(null);
    });
    return f;
  }

  /**
   * Closes the volume: refuses new operations, waits for the ones in flight (bounded, so a
   * hung cluster cannot hang close forever), then records the clean root, which therefore
   * covers every acknowledged write, and releases the lease and the connection.
   */
  @Override
  public void close() {
    List<CompletableFuture<Void>> inFlight;
    synchronized (outstanding) {
      if (closed) {
        return;
      }
      closed = true;
      inFlight = new ArrayList<>(outstanding);
    }
    boolean drained = true;
    try {
      CompletableFuture.allOf(inFlight.toArray(new CompletableFuture[0]))
          .get(CLOSE_WAIT_SECONDS, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      drained = false;
    } catch (ExecutionException | java.util.concurrent.TimeoutException e) {
      drained = false;
    }
    if (!drained) {
      LOG.warn("volume '{}' closed with {} operations still in flight after {} s; its root is"
          + " recorded as unclean", info.name(), inFlight.size(), CLOSE_WAIT_SECONDS);
    }
    if (lease.isHeld()) {
      if (drained && !uncertain.isEmpty()) {
        try {
          settleUncertain().get(CLOSE_WAIT_SECONDS, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        } catch (ExecutionException | java.util.concurrent.TimeoutException e) {
          LOG.warn("volume '{}': could not settle blocks whose writes failed", info.name(), e);
        }
        drained = uncertain.isEmpty();
      }
      if (drained) {
        try {
          persistNodes().get(CLOSE_WAIT_SECONDS, TimeUnit.SECONDS);
          syncWals().get(CLOSE_WAIT_SECONDS, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          drained = false;
        } catch (ExecutionException | java.util.concurrent.TimeoutException e) {
          LOG.warn("volume '{}': could not store its tree nodes at close", info.name(), e);
          drained = false;
        }
      }
      try {
        recordRoot(tree.snapshot(), drained);
        if (drained) { // clean: the stored nodes match the leaves, no subtree needs a recompute
          deleteMarkers(new ArrayList<>(marked.keySet()));
        }
      } catch (RuntimeException e) {
        LOG.warn("could not record root at close of '{}'", info.name(), e);
      }
    } else {
      LOG.warn("volume '{}' closed after losing its writer lease; its root is not recorded"
          + " (another writer may own the volume now)", info.name());
    }
    releaseResources();
  }

  private void releaseResources() {
    jmx.close();
    release(async, executor, lease, info.name());
  }

  private static void release(AsyncConnection async, ExecutorService executor, VolumeLease lease,
      String name) {
    if (async != null) {
      try {
        async.close();
      } catch (IOException e) {
        LOG.warn("closing HBase connection of '{}'", name, e);
      }
    }
    if (executor != null) {
      executor.shutdown();
      try {
        executor.awaitTermination(5, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    lease.close();
  }

  /**
   * <b>Tests only</b>: the writer dies abruptly. What it has already handed to HBase (RPCs on the
   * wire) still lands; nothing else is sent: no batch that waits behind an overlapping one or
   * behind its dirty marker, no tree nodes, no clean root. The lease is released as a dead
   * process's session would expire. Operations in flight never complete (a dead process answers
   * no one); the volume is not usable afterwards.
   */
  /** <b>Tests only</b>: a write ({@code data}, by identity) whose rows are sent only for the blocks {@code sent}. */
  record PartialWrite(byte[] data, java.util.function.LongPredicate sent) {
  }

  private volatile PartialWrite partialForTest;

  /**
   * <b>Tests only</b>: the writer issues one write of {@code data} at {@code firstBlock} of which only the rows of the
   * blocks {@code sent} accepts reach HBase (a client that died in the middle of sending a multi-region batch), waits
   * for that send, then dies as in {@link #crashForTest}.
   */
  void writePartlyThenCrashForTest(long firstBlock, byte[] data, java.util.function.LongPredicate sent) {
    partialForTest = new PartialWrite(data, sent);
    try {
      write(firstBlock, data, false).get(60, java.util.concurrent.TimeUnit.SECONDS);
    } catch (Exception e) {
      LOG.warn("the partial write of the crash test did not complete: {}", e.toString());
    }
    crashForTest();
  }

  void crashForTest() {
    crashed = true;
    closed = true;
    lease.close();
  }

  /** The single-writer lease this volume holds while open. */
  public VolumeLease lease() {
    return lease;
  }

  /**
   * Leaf hashes from the {@code b:h} column of the block rows; interior nodes from the node
   * rows ({@code b:n}, key space 0x80, see {@link #nodeRow}); dirty markers in key space 0x81.
   */
  private final class HBaseSubtreeSource implements SubtreeSource {
    @Override
    public CompletableFuture<Map<Long, byte[]>> fetchLeaves(long firstBlock, long count) {
      return table.scanAll(new Scan().withStartRow(row(firstBlock))
              .withStopRow(row(firstBlock + count)).addColumn(FAMILY, HASH)
              .setCaching((int) Math.min(count, 10_000)))
          .thenApply(results -> {
            Map<Long, byte[]> m = new HashMap<>();
            for (Result r : results) {
              m.put(Bytes.toLong(r.getRow()), r.getValue(FAMILY, HASH));
            }
            return m;
          });
    }

    @Override
    public void scanAllLeaves(BiConsumer<Long, byte[]> consumer) throws IOException {
      try (Table t = connection.getTable(tableName);
          ResultScanner s = t.getScanner(new Scan().withStopRow(new byte[] {NODE_PREFIX})
              .addColumn(FAMILY, HASH).setCaching(10_000))) {
        for (Result r : s) {
          metrics.mountRowsRead.increment();
          consumer.accept(Bytes.toLong(r.getRow()), r.getValue(FAMILY, HASH));
        }
      }
    }

    @Override
    public boolean persistsNodes() {
      return true;
    }

    /**
     * Leaves by Get (or one scan when many are asked: a whole range), interior nodes by Get
     * of their node rows; one round trip of parallel requests.
     */
    @Override
    public CompletableFuture<Map<io.salus.blockdriver.tree.NodeId, byte[]>> fetchNodes(
        List<io.salus.blockdriver.tree.NodeId> nodes) {
      List<io.salus.blockdriver.tree.NodeId> leafIds = new ArrayList<>();
      List<io.salus.blockdriver.tree.NodeId> nodeIds = new ArrayList<>();
      for (io.salus.blockdriver.tree.NodeId id : nodes) {
        (id.level() == 0 ? leafIds : nodeIds).add(id);
      }
      List<Get> gets = new ArrayList<>();
      List<io.salus.blockdriver.tree.NodeId> getIds = new ArrayList<>();
      for (io.salus.blockdriver.tree.NodeId id : nodeIds) {
        gets.add(new Get(nodeRow(id.level(), id.index())).addColumn(FAMILY, NODE));
        getIds.add(id);
      }
      CompletableFuture<Map<Long, byte[]>> leafScan = null;
      if (leafIds.size() > 32) {
        long lo = Long.MAX_VALUE;
        long hi = -1;
        for (io.salus.blockdriver.tree.NodeId id : leafIds) {
          lo = Math.min(lo, id.index());
          hi = Math.max(hi, id.index());
        }
        leafScan = fetchLeaves(lo, hi - lo + 1);
      } else {
        for (io.salus.blockdriver.tree.NodeId id : leafIds) {
          gets.add(new Get(row(id.index())).addColumn(FAMILY, HASH));
          getIds.add(id);
        }
      }
      CompletableFuture<List<Result>> got = gets.isEmpty()
          ? CompletableFuture.completedFuture(List.of()) : table.getAll(gets);
      CompletableFuture<Map<Long, byte[]>> scanned = leafScan == null
          ? CompletableFuture.completedFuture(Map.of()) : leafScan;
      return got.thenCombine(scanned, (results, leaves) -> {
        Map<io.salus.blockdriver.tree.NodeId, byte[]> m = new HashMap<>();
        for (int i = 0; i < results.size(); i++) {
          io.salus.blockdriver.tree.NodeId id = getIds.get(i);
          byte[] v = results.get(i).getValue(FAMILY, id.level() == 0 ? HASH : NODE);
          if (v != null) {
            m.put(id, v);
          }
        }
        for (io.salus.blockdriver.tree.NodeId id : leafIds) {
          byte[] v = leaves.get(id.index());
          if (v != null) {
            m.put(id, v);
          }
        }
        return m;
      });
    }

    @Override
    public PersistedTop readTop(int subtreeHeight) throws IOException {
      try (Table t = connection.getTable(tableName)) {
        metrics.mountRowsRead.increment();
        if (!t.exists(new Get(NODES_COMPLETE_ROW).addColumn(FAMILY, NODE))) {
          // the node rows are not complete: an old-format volume, or one whose scanning mount
          // was interrupted while storing them. Rows such an interrupted rebuild stored may be
          // stale by now (the volume changed since), and the rebuild below overwrites only the
          // nodes it recomputes: remove every node row first, so the rebuild starts from none.
          clearNodeRows(t);
          return null;
        }
        Map<Long, byte[]> roots = new HashMap<>();
        try (ResultScanner s = t.getScanner(new Scan()
            .withStartRow(nodeRow(subtreeHeight, 0))
            .withStopRow(new byte[] {NODE_PREFIX, (byte) (subtreeHeight + 1)})
            .addColumn(FAMILY, NODE).setCaching(10_000))) {
          for (Result r : s) {
            metrics.mountRowsRead.increment();
            byte[] k = r.getRow();
            if (k.length == 10) {
              roots.put(Bytes.toLong(k, 2), r.getValue(FAMILY, NODE));
            }
          }
        }
        java.util.Set<Long> dirty = new java.util.HashSet<>();
        try (ResultScanner s = t.getScanner(new Scan()
            .withStartRow(new byte[] {DIRTY_PREFIX})
            .withStopRow(new byte[] {(byte) (DIRTY_PREFIX + 1)})
            .addColumn(FAMILY, NODE).setCaching(10_000))) {
          for (Result r : s) {
            metrics.mountRowsRead.increment();
            byte[] k = r.getRow();
            if (k.length == 9) {
              dirty.add(Bytes.toLong(k, 1));
            }
          }
        }
        staleMarkers.addAll(dirty);
        return new PersistedTop(roots, dirty);
      }
    }

    /**
     * Deletes every node row (key space 0x80) before a scanning mount rebuilds them; an
     * interruption leaves the completion row absent, so the next mount clears again.
     */
    private void clearNodeRows(Table t) throws IOException {
      long version = versions.next(); // newer than every node of earlier opens
      long cleared = 0;
      try (ResultScanner s = t.getScanner(new Scan().withStartRow(new byte[] {NODE_PREFIX})
              .withStopRow(new byte[] {DIRTY_PREFIX}).addColumn(FAMILY, NODE)
              .setFilter(new org.apache.hadoop.hbase.filter.KeyOnlyFilter()).setCaching(10_000));
          org.apache.hadoop.hbase.client.BufferedMutator m =
              connection.getBufferedMutator(tableName)) {
        for (Result r : s) {
          metrics.mountRowsRead.increment();
          m.mutate(new Delete(r.getRow(), version));
          cleared++;
        }
        m.flush();
      }
      if (cleared > 0) {
        LOG.warn("volume '{}': removed {} node rows of an interrupted node rebuild; rebuilding"
            + " them from the blocks", info.name(), cleared);
      }
    }

    @Override
    public void writeNodes(Map<io.salus.blockdriver.tree.NodeId, io.salus.core.merkle.Hash> nodes,
        int subtreeHeight, long replaceSubtree) throws IOException {
      long version = versions.next();
      List<org.apache.hadoop.hbase.client.Mutation> rows = new ArrayList<>(nodes.size());
      try (Table t = connection.getTable(tableName)) {
        if (replaceSubtree >= 0) { // delete every stored node of the subtree not in the map
          for (int level = 1; level <= subtreeHeight; level++) {
            long lo = replaceSubtree << (subtreeHeight - level);
            long hi = (replaceSubtree + 1) << (subtreeHeight - level);
            try (ResultScanner s = t.getScanner(new Scan().withStartRow(nodeRow(level, lo))
                .withStopRow(nodeRow(level, hi)).addColumn(FAMILY, NODE).setCaching(4096))) {
              for (Result r : s) {
                io.salus.blockdriver.tree.NodeId id = new io.salus.blockdriver.tree.NodeId(
                    level, Bytes.toLong(r.getRow(), 2));
                if (nodes.get(id) == null) {
                  rows.add(new Delete(r.getRow(), version));
                }
              }
            }
          }
        }
        nodes.forEach((id, h) -> {
          if (h != null || replaceSubtree < 0) {
            rows.add((org.apache.hadoop.hbase.client.Mutation) nodeMutation(id, h, version));
          }
        });
        try (org.apache.hadoop.hbase.client.BufferedMutator m =
            connection.getBufferedMutator(tableName)) {
          m.mutate(rows);
          m.flush();
        }
      }
    }

    @Override
    public void markNodesComplete() throws IOException {
      try (Table t = connection.getTable(tableName)) {
        t.put(new Put(NODES_COMPLETE_ROW, versions.next()).addColumn(FAMILY, NODE,
            Bytes.toBytes(1)));
      }
    }
  }
}
