package io.salus.blockdriver.tree;

import io.salus.blockdriver.metrics.BlockDriverMetrics;
import io.salus.blockdriver.volume.BlockCorruptedException;
import io.salus.core.merkle.Hash;
import io.salus.core.merkle.InMemoryNodeStore;
import io.salus.core.merkle.MerkleTree;
import io.salus.core.merkle.NodeStore;
import io.salus.core.merkle.RegionLayout;
import io.salus.core.merkle.TieredNodeStore;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * The client's volume tree (§3.3.3): a Merkle tree over the leaf hashes of all blocks of a
 * volume, updated on every write and checked on every read.
 *
 * <p>Shape: the volume's blocks are cut into subtrees of {@code 2^subtreeHeight} consecutive
 * blocks (the unit a region server serves; a Salus region tree is one or more of them). The
 * client always keeps the <em>top levels</em> — the roots of all subtrees and the tree above
 * them — and fetches a subtree's leaves from a {@link SubtreeSource} on demand, verifying the
 * rebuilt subtree root against the top levels before trusting any leaf in it. Recently used
 * subtrees are cached (LRU); subtrees with requests in progress are pinned.
 *
 * <p>The tree itself is salus-core's {@link MerkleTree} over a {@link TieredNodeStore}: levels at
 * or above the subtree level live in the client's memory, lower levels resolve to the cached
 * subtree (a salus-core region tree of {@link RegionLayout}) that holds them.
 *
 * <p>Writes in flight: between {@link #beginUpdate} and {@link #commitUpdate} a block may be
 * stored with either its old or its new content, so a read accepts either leaf. A read never
 * returns data whose hash matches neither; it fails with {@link BlockCorruptedException}.
 */
public final class ClientVolumeTree {
  /** Rows between two progress reports of the mount scan. */
  public static final int PROGRESS_EVERY = 4096;
  private final String volume;
  private final TreeHashes hashes;
  private final int blockSize;
  private final long sizeInBlocks;
  private final int subtreeHeight;
  private final long subtreeLeaves;
  private final RegionLayout layout;
  private final MerkleTree tree;
  private final SubtreeSource source;
  private final BlockDriverMetrics metrics;
  private final int cacheCapacity;
  private final LinkedHashMap<Long, Subtree> cache = new LinkedHashMap<>(16, 0.75f, true);
  private final Map<Long, List<byte[]>> pending = new HashMap<>();
  private final byte[] emptyLeaf;
  private long seq;

  /**
   * A subtree's nodes below its root (levels 0 .. subtreeHeight - 1, local indices) as far as
   * they are known and verified. A complete store knows every node (an absent one is empty);
   * a partial one (persisted-node mode) knows the paths fetched so far, and asking it for any
   * other node is a bug. Changes made by writes (level >= 1) are remembered as dirty until they
   * are stored ({@link #dirtyNodes}, {@link #nodesStored}).
   */
  private static final class Nodes implements NodeStore {
    final boolean complete;
    /** key(level, local) -> hash; a null value is a known empty subtree (partial stores). */
    final Map<Long, Hash> known = new HashMap<>();
    /** Changed by writes since last stored, level >= 1: key -> hash (null = empty). */
    final Map<Long, Hash> dirty = new HashMap<>();
    boolean track;

    Nodes(boolean complete) {
      this.complete = complete;
    }

    static long key(int level, long local) {
      return ((long) level << 56) | local;
    }

    boolean knows(int level, long local) {
      return complete || known.containsKey(key(level, local));
    }

    @Override
    public Hash get(int level, long local) {
      long k = key(level, local);
      Hash h = known.get(k);
      if (h != null || complete || known.containsKey(k)) {
        return h;
      }
      throw new IllegalStateException("tree node (" + level + ", " + local
          + ") of a subtree used before its path was fetched");
    }

    @Override
    public void put(int level, long local, Hash hash) {
      long k = key(level, local);
      known.put(k, hash);
      if (track && level > 0) {
        dirty.put(k, hash);
      }
    }

    @Override
    public void remove(int level, long local) {
      long k = key(level, local);
      if (complete) {
        known.remove(k);
      } else {
        known.put(k, null);
      }
      if (track && level > 0) {
        dirty.put(k, null);
      }
    }

    /** A node fetched from storage and verified (not a change: not dirty). */
    void install(int level, long local, Hash hash) {
      known.putIfAbsent(key(level, local), hash);
    }
  }

  /**
   * A cached subtree. {@code nodes} is null until the subtree is usable: in leaf-only mode its
   * leaves are fetched whole ({@code loading}); a fetch that fails or does not match the
   * trusted top levels installs nothing, and the next acquire fetches and checks again (on the
   * same object, so pins taken by requests in flight stay counted).
   */
  private static final class Subtree {
    final long index;
    Nodes nodes;
    CompletableFuture<Void> loading;
    int pins;
    /** The subtree's root (top levels) changed since it was last stored. */
    boolean rootDirty;

    Subtree(long index) {
      this.index = index;
    }

    boolean evictable() {
      return pins == 0 && (loading == null || loading.isDone()) && !rootDirty
          && (nodes == null || nodes.dirty.isEmpty());
    }
  }

  /** Levels below the subtree level: routed to the cached subtree holding the node. */
  private final class CachedSubtrees implements NodeStore {
    private NodeStore storeFor(int level, long index) {
      long sub = index >>> (subtreeHeight - level);
      Subtree s = cache.get(sub);
      if (s == null || s.nodes == null) {
        throw new IllegalStateException("subtree " + sub + " of volume '" + volume
            + "' used without acquire()");
      }
      return s.nodes;
    }

    private long local(int level, long index) {
      return index & ((1L << (subtreeHeight - level)) - 1);
    }

    @Override
    public Hash get(int level, long index) {
      return storeFor(level, index).get(level, local(level, index));
    }

    @Override
    public void put(int level, long index, Hash hash) {
      storeFor(level, index).put(level, local(level, index), hash);
    }

    @Override
    public void remove(int level, long index) {
      storeFor(level, index).remove(level, local(level, index));
    }
  }

  public ClientVolumeTree(String volume, TreeHashes hashes, long sizeInBlocks, int subtreeHeight,
      SubtreeSource source, BlockDriverMetrics metrics, int cacheCapacity) {
    this.volume = volume;
    this.hashes = hashes;
    this.blockSize = hashes.blockSize();
    this.sizeInBlocks = sizeInBlocks;
    this.subtreeHeight = Math.max(0, Math.min(subtreeHeight, MerkleTree.depthFor(sizeInBlocks)));
    this.subtreeLeaves = 1L << this.subtreeHeight;
    this.layout = new RegionLayout(sizeInBlocks, this.subtreeHeight);
    this.tree = new MerkleTree(hashes.algorithm(), blockSize, sizeInBlocks,
        new TieredNodeStore(this.subtreeHeight, new InMemoryNodeStore(), new CachedSubtrees()));
    this.source = source;
    this.metrics = metrics;
    this.cacheCapacity = Math.max(1, cacheCapacity);
    this.emptyLeaf = hashes.empty(0);
  }

  public TreeHashes hashes() {
    return hashes;
  }

  public int subtreeHeight() {
    return subtreeHeight;
  }

  public long numSubtrees() {
    return layout.regionCount();
  }

  public long subtreeLeaves() {
    return subtreeLeaves;
  }

  /** Height of the whole tree (leaves at 0). */
  public int height() {
    return tree.depth();
  }

  public byte[] leafHash(byte[] data, int off) {
    return hashes.leaf(data, off);
  }

  public byte[] emptyLeaf() {
    return emptyLeaf.clone();
  }

  /** Volume root hash. */
  public synchronized byte[] root() {
    return tree.root().bytes();
  }

  /** A root and the write sequence number it belongs to, read together. */
  public record RootSnapshot(byte[] root, long seq) {}

  /** The current root and its sequence number (one consistent pair). */
  public synchronized RootSnapshot snapshot() {
    return new RootSnapshot(tree.root().bytes(), seq);
  }

  /** The write sequence number: the base set at mount plus the block updates applied since. */
  public synchronized long seq() {
    return seq;
  }

  /**
   * Continues the write sequence from {@code base} (the sequence number recorded for the
   * mounted root), so that sequence numbers only grow across opens.
   */
  public synchronized void startSeqAt(long base) {
    if (base < seq) {
      throw new IllegalStateException("write sequence cannot go back from " + seq + " to "
          + base);
    }
    seq = base;
  }

  /**
   * Mount (§3.3.3): installs every subtree root as the top levels
   * ({@link MerkleTree#installRegionRoots}); no subtree stays cached. With persisted nodes the
   * roots are read as stored (one row per written subtree); a subtree marked dirty (written
   * since its nodes were stored: a crash may have left them behind its leaves) is recomputed
   * from its leaves and its nodes are stored again. Without persisted nodes (a volume written
   * before they existed) every leaf is scanned, and with a node-persisting source the nodes are
   * stored as the scan goes, so the next mount does not scan. Either way the caller compares
   * the resulting root with the root it trusts: until then nothing read here is trusted.
   */
  public void mount() throws IOException {
    mount(block -> { });
  }

  /**
   * Like {@link #mount()}, reporting progress when it must scan every leaf: {@code progress}
   * receives the block number the scan has reached (rows come in block order) every
   * {@value #PROGRESS_EVERY} rows, and {@code sizeInBlocks} when the scan is done.
   */
  public void mount(java.util.function.LongConsumer progress) throws IOException {
    SubtreeSource.PersistedTop top = source.persistsNodes() ? source.readTop(subtreeHeight) : null;
    Map<Long, Hash> roots = top == null ? scanRoots(progress) : persistedRoots(top);
    synchronized (this) {
      cache.clear();
      tree.installRegionRoots(subtreeHeight, roots);
    }
  }

  private Map<Long, Hash> persistedRoots(SubtreeSource.PersistedTop top) throws IOException {
    Map<Long, Hash> roots = new HashMap<>();
    long subtrees = layout.regionCount();
    for (Map.Entry<Long, byte[]> e : top.subtreeRoots().entrySet()) {
      long s = e.getKey();
      byte[] h = e.getValue();
      if (s < 0 || s >= subtrees || h == null || h.length != Hash.LENGTH) {
        warn("malformed stored root of subtree " + s + " ignored");
        continue;
      }
      roots.put(s, Hash.of(h));
    }
    for (long s : new java.util.TreeSet<>(top.dirtySubtrees())) {
      if (s < 0 || s >= subtrees) {
        continue;
      }
      long first = layout.firstBlock(s);
      long count = Math.min(subtreeLeaves, sizeInBlocks - first);
      Map<Long, byte[]> leaves;
      try {
        leaves = source.fetchLeaves(first, count).get();
      } catch (InterruptedException ie) {
        Thread.currentThread().interrupt();
        throw new IOException("interrupted while recomputing subtree " + s, ie);
      } catch (java.util.concurrent.ExecutionException ee) {
        throw new IOException("cannot read the leaves of dirty subtree " + s + " of volume '"
            + volume + "'", ee.getCause());
      }
      Nodes n = new Nodes(true);
      MerkleTree rt = layout.newRegionTree(hashes.algorithm(), blockSize, n);
      for (Map.Entry<Long, byte[]> e : leaves.entrySet()) {
        long b = e.getKey();
        if (b >= first && b < first + count && e.getValue() != null
            && e.getValue().length == Hash.LENGTH) {
          rt.setLeaf(b - first, Hash.of(e.getValue()));
        }
      }
      Hash root = rt.root();
      if (root.equals(tree.emptyHash(subtreeHeight))) {
        roots.remove(s);
      } else {
        roots.put(s, root);
      }
      source.writeNodes(storedNodes(s, n, root), subtreeHeight, s);
    }
    return roots;
  }

  /** The nodes of levels 1..subtreeHeight of a complete subtree store, in volume coordinates. */
  private Map<NodeId, Hash> storedNodes(long s, Nodes n, Hash root) {
    Map<NodeId, Hash> out = new HashMap<>();
    for (Map.Entry<Long, Hash> e : n.known.entrySet()) {
      int level = (int) (e.getKey() >>> 56);
      long local = e.getKey() & ((1L << 56) - 1);
      if (level >= 1 && level < subtreeHeight && e.getValue() != null) {
        out.put(new NodeId(level, (s << (subtreeHeight - level)) | local), e.getValue());
      }
    }
    out.put(new NodeId(subtreeHeight, s),
        root.equals(tree.emptyHash(subtreeHeight)) ? null : root);
    return out;
  }

  private Map<Long, Hash> scanRoots(java.util.function.LongConsumer progress) throws IOException {
    boolean store = source.persistsNodes();
    long[] rows = {0};
    Map<Long, Hash> roots = new HashMap<>();
    MerkleTree[] cur = {null};
    Nodes[] curNodes = {null};
    long[] curIndex = {-1};
    String[] bad = {null};
    IOException[] failed = {null};
    Map<NodeId, Hash> toStore = new HashMap<>();
    Runnable finish = () -> {
      if (cur[0] == null) {
        return;
      }
      roots.put(curIndex[0], cur[0].root());
      if (store) {
        toStore.putAll(storedNodes(curIndex[0], curNodes[0], cur[0].root()));
        if (toStore.size() >= 8192) {
          try {
            source.writeNodes(toStore, subtreeHeight, -1);
          } catch (IOException e) {
            failed[0] = e;
          }
          toStore.clear();
        }
      }
    };
    source.scanAllLeaves((block, hash) -> {
      if (block < 0 || block >= sizeInBlocks) {
        return;
      }
      if (++rows[0] % PROGRESS_EVERY == 0) {
        progress.accept(block);
      }
      long idx = layout.regionOf(block);
      if (idx != curIndex[0]) {
        finish.run();
        curNodes[0] = new Nodes(true);
        cur[0] = layout.newRegionTree(hashes.algorithm(), blockSize, curNodes[0]);
        curIndex[0] = idx;
      }
      if (hash == null || hash.length != Hash.LENGTH) {
        bad[0] = "block " + block + " has a malformed stored hash";
        return;
      }
      cur[0].setLeaf(layout.localIndex(block), Hash.of(hash));
    });
    finish.run();
    progress.accept(sizeInBlocks);
    if (bad[0] != null) {
      warn(bad[0]);
    }
    if (store) {
      if (failed[0] != null) {
        throw failed[0];
      }
      if (!toStore.isEmpty()) {
        source.writeNodes(toStore, subtreeHeight, -1);
      }
      source.markNodesComplete();
    }
    return roots;
  }

  private void warn(String msg) {
    org.slf4j.LoggerFactory.getLogger(ClientVolumeTree.class).warn("volume '{}': {}", volume, msg);
  }

  // ------------------------------------------------------------------ pin / load

  /**
   * Pins and loads every subtree covering [firstBlock, firstBlock + count): afterwards the
   * leaves of the range and the siblings of their paths are known and verified. Call
   * {@link #release} with the same range when the request is done.
   */
  public CompletableFuture<Void> acquire(long firstBlock, long count) {
    long a = firstBlock >>> subtreeHeight;
    long b = (firstBlock + count - 1) >>> subtreeHeight;
    List<CompletableFuture<Void>> loads = new ArrayList<>();
    List<Subtree> held = new ArrayList<>();
    synchronized (this) {
      for (long i = a; i <= b; i++) {
        Subtree s = cache.get(i);
        if (s == null) {
          s = new Subtree(i);
          cache.put(i, s);
        }
        s.pins++;
        held.add(s);
        if (s.nodes == null) {
          if (tree.node(subtreeHeight, i).equals(tree.emptyHash(subtreeHeight))) {
            s.nodes = newNodes(true); // empty subtree: nothing stored, nothing to fetch
          } else if (source.persistsNodes()) {
            s.nodes = newNodes(false);
          } else {
            if (s.loading == null || s.loading.isDone()) {
              s.loading = loadWhole(s); // first use, or the last fetch failed: fetch again
            }
            loads.add(s.loading);
            continue;
          }
        }
        if (!s.nodes.complete) {
          long first = layout.firstBlock(i);
          long lo = Math.max(firstBlock, first) - first;
          long hi = Math.min(firstBlock + count, first + subtreeLeaves) - 1 - first;
          List<NodeId> missing = missing(s, lo, hi);
          if (!missing.isEmpty()) {
            loads.add(loadPath(s, lo, hi, missing));
          }
        }
      }
      evict();
    }
    return CompletableFuture.allOf(loads.toArray(new CompletableFuture[0]))
        .thenRun(() -> usable(held));
  }

  private Nodes newNodes(boolean complete) {
    Nodes n = new Nodes(complete);
    n.track = source.persistsNodes();
    return n;
  }

  /** Fails the request when one of its subtrees is not loaded (its fetch failed). */
  private void usable(List<Subtree> held) {
    synchronized (this) {
      for (Subtree s : held) {
        if (s.nodes == null) {
          throw new io.salus.blockdriver.volume.VolumeException("subtree " + s.index
              + " of volume '" + volume + "' is not loaded");
        }
      }
    }
  }

  public synchronized void release(long firstBlock, long count) {
    long a = firstBlock >>> subtreeHeight;
    long b = (firstBlock + count - 1) >>> subtreeHeight;
    for (long i = a; i <= b; i++) {
      Subtree s = cache.get(i);
      if (s != null && s.pins > 0) {
        s.pins--;
      }
    }
    evict();
  }

  /**
   * Evicts least recently used subtrees beyond the capacity: never one in use, and never one
   * whose changed nodes are not stored yet (its stored nodes are behind; fetching its paths
   * again would fail their check).
   */
  private void evict() {
    if (cache.size() <= cacheCapacity) {
      return;
    }
    Iterator<Subtree> it = cache.values().iterator();
    while (cache.size() > cacheCapacity && it.hasNext()) {
      Subtree s = it.next();
      if (s.evictable()) {
        it.remove();
      }
    }
  }

  /**
   * Nodes (local indices of subtree {@code s}) needed to verify and update leaves lo..hi that
   * are not known yet: the leaves and, per level, the siblings just outside the range.
   */
  private List<NodeId> missing(Subtree s, long lo, long hi) {
    List<NodeId> out = new ArrayList<>();
    long base = layout.firstBlock(s.index);
    for (long l = lo; l <= hi; l++) {
      if (!s.nodes.knows(0, l)) {
        out.add(new NodeId(0, base + l));
      }
    }
    long a = lo;
    long b = hi;
    for (int level = 0; level < subtreeHeight; level++) {
      long levelBase = s.index << (subtreeHeight - level);
      if ((a & 1) == 1 && !s.nodes.knows(level, a - 1)) {
        out.add(new NodeId(level, levelBase + a - 1));
      }
      if ((b & 1) == 0 && !s.nodes.knows(level, b + 1)) {
        out.add(new NodeId(level, levelBase + b + 1));
      }
      a >>>= 1;
      b >>>= 1;
    }
    return out;
  }

  /**
   * Fetches the missing nodes of leaves lo..hi of a subtree and checks them: with the known
   * nodes they must hash up to the trusted subtree root. Untrusted stays untrusted: on a
   * mismatch nothing fetched is kept and the request fails.
   */
  private CompletableFuture<Void> loadPath(Subtree s, long lo, long hi, List<NodeId> ids) {
    metrics.subtreeFetches.increment();
    metrics.nodeRowsFetched.add(ids.size());
    long base = layout.firstBlock(s.index);
    return source.fetchNodes(ids).handle((fetched, t) -> {
      if (t != null) {
        Throwable c = t instanceof java.util.concurrent.CompletionException
            && t.getCause() != null ? t.getCause() : t;
        throw new io.salus.blockdriver.volume.VolumeException("cannot fetch the tree nodes of"
            + " blocks [" + (base + lo) + ", " + (base + hi + 1) + ") of volume '" + volume
            + "': " + c, c);
      }
      synchronized (this) {
        if (s.nodes == null || s.nodes.complete) {
          return null;
        }
        Map<Long, Hash> fresh = new HashMap<>();
        for (NodeId id : ids) {
          byte[] h = fetched.get(id);
          if (h != null && h.length != Hash.LENGTH) {
            throw corrupt(base + lo, "stored tree node (" + id.level() + ", " + id.index()
                + ") is malformed");
          }
          long local = id.index() & ((1L << (subtreeHeight - id.level())) - 1);
          Hash v = h == null || Arrays.equals(h, hashes.empty(id.level())) ? null : Hash.of(h);
          fresh.put(Nodes.key(id.level(), local), v);
        }
        Map<Long, Hash> computed = new HashMap<>();
        long a = lo;
        long b = hi;
        for (int level = 0; level < subtreeHeight; level++) {
          for (long p = a >>> 1; p <= b >>> 1; p++) {
            Hash left = value(s, level, 2 * p, fresh, computed);
            Hash right = value(s, level, 2 * p + 1, fresh, computed);
            Hash parent = hashes.algorithm().nodeHash(left, right);
            computed.put(Nodes.key(level + 1, p),
                parent.equals(tree.emptyHash(level + 1)) ? null : parent);
          }
          a >>>= 1;
          b >>>= 1;
        }
        Hash root = computed.get(Nodes.key(subtreeHeight, 0));
        if (root == null) {
          root = tree.emptyHash(subtreeHeight);
        }
        if (!root.equals(tree.node(subtreeHeight, s.index))) {
          throw corrupt(base + lo, "stored tree nodes of blocks [" + (base + lo) + ", "
              + (base + hi + 1) + ") do not hash up to the trusted volume tree");
        }
        fresh.forEach((k, v) -> s.nodes.install((int) (k >>> 56), k & ((1L << 56) - 1), v));
        computed.forEach((k, v) -> {
          int level = (int) (k >>> 56);
          if (level < subtreeHeight) {
            s.nodes.install(level, k & ((1L << 56) - 1), v);
          }
        });
      }
      return null;
    });
  }

  private Hash value(Subtree s, int level, long local, Map<Long, Hash> fresh,
      Map<Long, Hash> computed) {
    long k = Nodes.key(level, local);
    Hash h;
    if (level > 0 && computed.containsKey(k)) {
      h = computed.get(k);
    } else if (s.nodes.known.containsKey(k)) {
      h = s.nodes.known.get(k); // known and trusted (may be newer than storage)
    } else if (fresh.containsKey(k)) {
      h = fresh.get(k);
    } else {
      throw new IllegalStateException("node (" + level + ", " + local + ") neither known nor"
          + " fetched");
    }
    return h == null ? tree.emptyHash(level) : h;
  }

  private BlockCorruptedException corrupt(long block, String problem) {
    metrics.verificationFailures.increment();
    BlockDriverMetrics.GLOBAL.verificationFailures.increment();
    return new BlockCorruptedException(volume, block, problem);
  }

  /** Leaf-only mode: fetches a subtree's leaves whole and checks its root. */
  private CompletableFuture<Void> loadWhole(Subtree s) {
    long first = layout.firstBlock(s.index);
    long count = Math.min(subtreeLeaves, sizeInBlocks - first);
    metrics.subtreeFetches.increment();
    return source.fetchLeaves(first, count).handle((leaves, t) -> {
      if (t != null) {
        throw new io.salus.blockdriver.volume.VolumeException("cannot fetch subtree of blocks ["
            + first + ", " + (first + count) + ") of volume '" + volume + "': " + t, t);
      }
      Nodes n = newNodes(true);
      n.track = false;
      MerkleTree rt = layout.newRegionTree(hashes.algorithm(), blockSize, n);
      for (Map.Entry<Long, byte[]> e : leaves.entrySet()) {
        long b = e.getKey();
        if (b < first || b >= first + count) {
          continue;
        }
        byte[] h = e.getValue();
        if (h == null || h.length != Hash.LENGTH) {
          throw corrupt(b, "block " + b + " has a malformed stored hash");
        }
        rt.setLeaf(b - first, Hash.of(h));
      }
      synchronized (this) {
        if (!rt.root().equals(tree.node(subtreeHeight, s.index))) {
          // untrusted stays untrusted: the forged leaves are dropped, never installed
          throw corrupt(first, "stored leaf hashes of blocks [" + first + ", "
              + (first + count) + ") do not match the volume tree");
        }
        n.known.remove(Nodes.key(subtreeHeight, 0)); // the root lives in the top levels
        n.track = source.persistsNodes();
        s.nodes = n;
      }
      return null;
    });
  }

  // ------------------------------------------------------------------ persisted nodes

  /**
   * Nodes changed by writes since they were last stored (levels 1 .. subtree height, volume
   * coordinates; a null hash is an empty subtree, to delete). Store them, then call
   * {@link #nodesStored} with the same map.
   */
  public synchronized Map<NodeId, Hash> dirtyNodes() {
    Map<NodeId, Hash> out = new HashMap<>();
    for (Subtree s : cache.values()) {
      if (s.nodes != null) {
        for (Map.Entry<Long, Hash> e : s.nodes.dirty.entrySet()) {
          int level = (int) (e.getKey() >>> 56);
          long local = e.getKey() & ((1L << 56) - 1);
          out.put(new NodeId(level, (s.index << (subtreeHeight - level)) | local), e.getValue());
        }
      }
      if (s.rootDirty) {
        Hash r = tree.node(subtreeHeight, s.index);
        out.put(new NodeId(subtreeHeight, s.index),
            r.equals(tree.emptyHash(subtreeHeight)) ? null : r);
      }
    }
    return out;
  }

  /** The nodes of {@code stored} are in storage: unless changed meanwhile, they are clean. */
  public synchronized void nodesStored(Map<NodeId, Hash> stored) {
    for (Map.Entry<NodeId, Hash> e : stored.entrySet()) {
      NodeId id = e.getKey();
      Subtree s = cache.get(id.index() >>> (subtreeHeight - id.level()));
      if (s == null) {
        continue;
      }
      if (id.level() == subtreeHeight) {
        Hash r = tree.node(subtreeHeight, s.index);
        Hash now = r.equals(tree.emptyHash(subtreeHeight)) ? null : r;
        if (java.util.Objects.equals(now, e.getValue())) {
          s.rootDirty = false;
        }
      } else if (s.nodes != null) {
        long k = Nodes.key(id.level(), id.index() & ((1L << (subtreeHeight - id.level())) - 1));
        if (s.nodes.dirty.containsKey(k)
            && java.util.Objects.equals(s.nodes.dirty.get(k), e.getValue())) {
          s.nodes.dirty.remove(k);
        }
      }
    }
    evict();
  }

  // ------------------------------------------------------------------ verify

  /**
   * Checks one block returned by storage. {@code data == null} means the block is not stored
   * (reads as zeros). Throws when the data (or the stored hash) does not match the tree.
   */
  public void verify(long block, byte[] data, int off, byte[] storedHash) {
    byte[] actual = data == null ? emptyLeaf : hashes.leaf(data, off);
    String problem = null;
    synchronized (this) {
      loadedSubtree(block);
      byte[] leaf = tree.leaf(block).bytes();
      boolean ok = Arrays.equals(leaf, actual) || matchesPending(block, actual);
      if (!ok) {
        problem = data == null ? "block is missing from storage" : "data hash mismatch";
      } else if (data != null && storedHash != null && !Arrays.equals(storedHash, actual)) {
        problem = "stored hash does not match stored data";
      }
    }
    if (problem != null) {
      metrics.verificationFailures.increment();
      BlockDriverMetrics.GLOBAL.verificationFailures.increment();
      throw new BlockCorruptedException(volume, block, problem);
    }
    metrics.blocksVerified.increment();
  }

  private Subtree loadedSubtree(long block) {
    Subtree s = cache.get(block >>> subtreeHeight);
    if (s == null || s.nodes == null) {
      throw new IllegalStateException("block " + block + " of volume '" + volume
          + "' used without acquire()");
    }
    return s;
  }

  private boolean matchesPending(long block, byte[] actual) {
    List<byte[]> p = pending.get(block);
    if (p == null) {
      return false;
    }
    for (byte[] h : p) {
      if (Arrays.equals(h, actual)) {
        return true;
      }
    }
    return false;
  }

  /** Leaf hash the tree holds for a block (the block's subtree must be acquired). */
  public synchronized byte[] leaf(long block) {
    loadedSubtree(block);
    return tree.leaf(block).bytes();
  }

  /** True when the leaf of {@code block} is the empty-block hash (subtree must be acquired). */
  public synchronized boolean isEmpty(long block) {
    loadedSubtree(block);
    return tree.leaf(block).equals(tree.emptyHash(0));
  }

  /** True when a whole subtree is unwritten (known from the top levels, no fetch needed). */
  public synchronized boolean subtreeEmpty(long subtreeIndex) {
    return tree.node(subtreeHeight, subtreeIndex).equals(tree.emptyHash(subtreeHeight));
  }

  // ------------------------------------------------------------------ update

  /** Announces that {@code block} is being stored with leaf hash {@code leaf}. */
  public synchronized void beginUpdate(long block, byte[] leaf) {
    pending.computeIfAbsent(block, k -> new ArrayList<>(1)).add(leaf);
  }

  /**
   * The store acknowledged the update: the leaf becomes part of the tree. Updates of one block
   * are stored in the order they began (the volume serializes them, and a later one carries a
   * higher cell version), so the block now holds this content: every update begun before it
   * (an aborted one whose content was acceptable until now) stops being acceptable.
   */
  public synchronized void commitUpdate(long block, byte[] leaf) {
    removePendingThrough(block, leaf);
    loadedSubtree(block).rootDirty |= source.persistsNodes();
    tree.setLeaf(block, Hash.of(leaf));
    seq++;
  }

  /**
   * The store failed the update. The block may now hold the old or the new content (a failed
   * batch can be partly applied), so both stay acceptable and the subtree stays pinned in memory
   * (its stored hashes no longer determine one root).
   */
  public synchronized void abortUpdate(long block, byte[] leaf) {
    Subtree s = cache.get(block >>> subtreeHeight);
    if (s != null) {
      s.pins++;
    }
  }

  /** Removes {@code leaf} and every update of {@code block} begun before it. */
  private void removePendingThrough(long block, byte[] leaf) {
    List<byte[]> p = pending.get(block);
    if (p != null) {
      int at = -1;
      for (int i = 0; i < p.size(); i++) {
        if (p.get(i) == leaf) {
          at = i;
          break;
        }
      }
      if (at >= 0) {
        p.subList(0, at + 1).clear();
      }
      if (p.isEmpty()) {
        pending.remove(block);
      }
    }
  }

  /**
   * Settles a block whose update failed (after {@link #abortUpdate}) once the store says what it
   * holds: when {@code storedLeaf} is the tree's leaf or one of the block's pending leaves, it
   * becomes the tree's leaf and nothing else stays acceptable. No update of the block may be in
   * flight. Returns false (changing nothing) when the stored leaf matches none of them.
   */
  public synchronized boolean settle(long block, byte[] storedLeaf) {
    loadedSubtree(block);
    Hash current = tree.leaf(block);
    boolean known = Arrays.equals(current.bytes(), storedLeaf) || matchesPending(block, storedLeaf);
    if (!known) {
      return false;
    }
    pending.remove(block);
    if (!Arrays.equals(current.bytes(), storedLeaf)) {
      loadedSubtree(block).rootDirty |= source.persistsNodes();
      tree.setLeaf(block, Hash.of(storedLeaf));
      seq++;
    }
    return true;
  }

  /** Number of subtrees currently cached (for tests). */
  public synchronized int cachedSubtrees() {
    return cache.size();
  }
}
