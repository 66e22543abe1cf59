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
   * A cached subtree: a salus-core region tree (local indices) once loaded and verified. A
   * subtree whose fetched leaves do not match the trusted top levels keeps no region tree at all
   * ({@code corrupt}); one whose fetch failed ({@code failed}) is fetched again by the next
   * acquire, on the same object, so pins taken by requests in flight stay counted.
   */
  private static final class Subtree {
    final long index;
    MerkleTree regionTree;
    CompletableFuture<Void> loaded;
    int pins;
    String corrupt;
    String failed;

    Subtree(long index) {
      this.index = index;
    }
  }

  /** Levels below the subtree level: routed to the cached subtree holding the node. */
  private final class CachedSubtrees implements NodeStore {
    private NodeStore storeFor(int level, long index) {
      long sub = index >>> (subtreeHeight - level);
      Subtree s = cache.get(sub);
      if (s == null || s.regionTree == null) {
        throw new IllegalStateException("subtree " + sub + " of volume '" + volume
            + "' used without acquire()");
      }
      return s.regionTree.store();
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
   * Mount (§3.3.3): rebuilds every subtree root from the stored leaf hashes and installs them
   * as the top levels ({@link MerkleTree#installRegionRoots}). No subtree stays cached.
   */
  public void mount() throws IOException {
    mount(block -> { });
  }

  /**
   * Like {@link #mount()}, reporting progress: {@code progress} receives the block number the
   * scan has reached (rows come in block order) every {@value #PROGRESS_EVERY} rows, and
   * {@code sizeInBlocks} when the scan is done.
   */
  public void mount(java.util.function.LongConsumer progress) throws IOException {
    long[] rows = {0};
    Map<Long, Hash> roots = new HashMap<>();
    MerkleTree[] cur = {null};
    long[] curIndex = {-1};
    String[] bad = {null};
    source.scanAllLeaves((block, hash) -> {
      if (block < 0 || block >= sizeInBlocks) {
        return;
      }
      if (++rows[0] % PROGRESS_EVERY == 0) {
        progress.accept(block);
      }
      long idx = layout.regionOf(block);
      if (idx != curIndex[0]) {
        if (cur[0] != null) {
          roots.put(curIndex[0], cur[0].root());
        }
        cur[0] = layout.newRegionTree(hashes.algorithm(), blockSize, new InMemoryNodeStore());
        curIndex[0] = idx;
      }
      if (hash == null || hash.length != Hash.LENGTH) {
        bad[0] = "block " + block + " has a malformed stored hash";
        return;
      }
      cur[0].setLeaf(layout.localIndex(block), Hash.of(hash));
    });
    if (cur[0] != null) {
      roots.put(curIndex[0], cur[0].root());
    }
    progress.accept(sizeInBlocks);
    if (bad[0] != null) {
      warn(bad[0]);
    }
    synchronized (this) {
      cache.clear();
      tree.installRegionRoots(subtreeHeight, roots);
    }
  }

  private void warn(String msg) {
    org.slf4j.LoggerFactory.getLogger(ClientVolumeTree.class).warn("volume '{}': {}", volume, msg);
  }

  // ------------------------------------------------------------------ pin / load

  /**
   * Pins and loads every subtree covering [firstBlock, firstBlock + count). Call
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
          s.loaded = load(s);
        } else if (s.failed != null && s.loaded.isDone()) {
          s.failed = null; // the last fetch failed (transient): fetch again
          s.loaded = load(s);
        }
        s.pins++;
        loads.add(s.loaded);
        held.add(s);
      }
      evict();
    }
    return CompletableFuture.allOf(loads.toArray(new CompletableFuture[0]))
        .thenRun(() -> usable(held));
  }

  /**
   * Fails the request when one of its subtrees is untrusted: its stored leaves did not match
   * the trusted top levels (nothing in it is returned, and nothing is written that would make
   * a trusted hash depend on its forged leaves), or it could not be fetched.
   */
  private void usable(List<Subtree> held) {
    synchronized (this) {
      for (Subtree s : held) {
        if (s.corrupt != null) {
          throw new BlockCorruptedException(volume, layout.firstBlock(s.index), s.corrupt);
        }
        if (s.regionTree == null) {
          throw new io.salus.blockdriver.volume.VolumeException(
              s.failed != null ? s.failed : "subtree " + s.index + " is not loaded");
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

  private void evict() {
    if (cache.size() <= cacheCapacity) {
      return;
    }
    Iterator<Subtree> it = cache.values().iterator();
    while (cache.size() > cacheCapacity && it.hasNext()) {
      Subtree s = it.next();
      if (s.pins == 0 && s.loaded.isDone()) {
        it.remove(); // includes untrusted ones: a later acquire fetches and checks again
      }
    }
  }

  private MerkleTree newRegionTree() {
    return layout.newRegionTree(hashes.algorithm(), blockSize, new InMemoryNodeStore());
  }

  private CompletableFuture<Void> load(Subtree s) {
    Hash expected = tree.node(subtreeHeight, s.index);
    if (expected.equals(tree.emptyHash(subtreeHeight))) {
      s.regionTree = newRegionTree(); // empty subtree: nothing stored, nothing to fetch
      return CompletableFuture.completedFuture(null);
    }
    long first = layout.firstBlock(s.index);
    long count = Math.min(subtreeLeaves, sizeInBlocks - first);
    metrics.subtreeFetches.increment();
    return source.fetchLeaves(first, count).handle((leaves, t) -> {
      MerkleTree rt = newRegionTree();
      String problem = null;
      if (t != null) {
        problem = "cannot fetch subtree of blocks [" + first + ", " + (first + count) + "): " + t;
      } else {
        for (Map.Entry<Long, byte[]> e : leaves.entrySet()) {
          long b = e.getKey();
          if (b < first || b >= first + count) {
            continue;
          }
          byte[] h = e.getValue();
          if (h == null || h.length != Hash.LENGTH) {
            problem = "block " + b + " has a malformed stored hash";
            break;
          }
          rt.setLeaf(b - first, Hash.of(h));
        }
      }
      synchronized (this) {
        if (problem == null && !rt.root().equals(tree.node(subtreeHeight, s.index))) {
          problem = "stored leaf hashes of blocks [" + first + ", " + (first + count)
              + ") do not match the volume tree";
        }
        if (problem == null) {
          s.regionTree = rt;
        } else if (t == null) {
          // untrusted stays untrusted: the forged leaves are dropped, never installed
          s.corrupt = problem;
          metrics.verificationFailures.increment();
          BlockDriverMetrics.GLOBAL.verificationFailures.increment();
        } else {
          s.failed = problem; // transient; stays cached (pinned by its requests) until retried
        }
      }
      return null;
    });
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
      Subtree c = cache.get(block >>> subtreeHeight);
      if (c != null && c.corrupt != null) {
        problem = c.corrupt;
      } else {
        loadedSubtree(block);
        byte[] leaf = tree.leaf(block).bytes();
        boolean ok = Arrays.equals(leaf, actual) || matchesPending(block, actual);
        if (!ok) {
          problem = data == null ? "block is missing from storage" : "data hash mismatch";
        } else if (data != null && storedHash != null && !Arrays.equals(storedHash, actual)) {
          problem = "stored hash does not match stored data";
        }
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
    if (s == null || s.regionTree == null) {
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
    loadedSubtree(block);
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
