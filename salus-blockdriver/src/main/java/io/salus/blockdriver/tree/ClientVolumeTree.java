package io.salus.blockdriver.tree;

import io.salus.blockdriver.metrics.BlockDriverMetrics;
import io.salus.blockdriver.volume.BlockCorruptedException;
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
 * <p>Writes in flight: between {@link #beginUpdate} and {@link #commitUpdate} a block may be
 * stored with either its old or its new content, so a read accepts either leaf. A read never
 * returns data whose hash matches neither; it fails with {@link BlockCorruptedException}.
 */
public final class ClientVolumeTree {
  private final String volume;
  private final TreeHashes hashes;
  private final int blockSize;
  private final long sizeInBlocks;
  private final int subtreeHeight;
  private final long subtreeLeaves;
  private final int numSubtrees;
  private final int topHeight;
  /** top[l][i]: node at height subtreeHeight + l; null = empty. top[0] = subtree roots. */
  private final byte[][][] top;
  private final SubtreeSource source;
  private final BlockDriverMetrics metrics;
  private final int cacheCapacity;
  private final LinkedHashMap<Integer, Subtree> cache = new LinkedHashMap<>(16, 0.75f, true);
  private final Map<Long, List<byte[]>> pending = new HashMap<>();
  private long seq;

  /** A cached subtree: levels[0] = leaves ... levels[h] = root; null entries are empty. */
  private static final class Subtree {
    final int index;
    byte[][][] levels;
    CompletableFuture<Void> loaded;
    int pins;
    String corrupt;

    Subtree(int index) {
      this.index = index;
    }
  }

  public ClientVolumeTree(String volume, TreeHashes hashes, long sizeInBlocks, int subtreeHeight,
      SubtreeSource source, BlockDriverMetrics metrics, int cacheCapacity) {
    this.volume = volume;
    this.hashes = hashes;
    this.blockSize = hashes.blockSize();
    this.sizeInBlocks = sizeInBlocks;
    int maxH = 64 - Long.numberOfLeadingZeros(Math.max(1, sizeInBlocks - 1));
    this.subtreeHeight = Math.max(0, Math.min(subtreeHeight, maxH));
    this.subtreeLeaves = 1L << this.subtreeHeight;
    long n = (sizeInBlocks + subtreeLeaves - 1) / subtreeLeaves;
    if (n > Integer.MAX_VALUE / 2) {
      throw new IllegalArgumentException("volume too large for subtree height " + subtreeHeight);
    }
    this.numSubtrees = (int) n;
    this.topHeight = numSubtrees <= 1 ? 0 : 32 - Integer.numberOfLeadingZeros(numSubtrees - 1);
    this.top = new byte[topHeight + 1][][];
    for (int l = 0; l <= topHeight; l++) {
      top[l] = new byte[(int) (((long) numSubtrees + (1L << l) - 1) >> l)][];
    }
    this.source = source;
    this.metrics = metrics;
    this.cacheCapacity = Math.max(1, cacheCapacity);
  }

  public TreeHashes hashes() {
    return hashes;
  }

  public int subtreeHeight() {
    return subtreeHeight;
  }

  public int numSubtrees() {
    return numSubtrees;
  }

  /** Height of the whole tree (leaves at 0). */
  public int height() {
    return subtreeHeight + topHeight;
  }

  public byte[] leafHash(byte[] data, int off) {
    return hashes.leaf(data, off);
  }

  public byte[] emptyLeaf() {
    return hashes.empty(0);
  }

  /** Volume root hash. */
  public synchronized byte[] root() {
    byte[] r = top[topHeight][0];
    return r == null ? hashes.empty(height()) : r;
  }

  /** Number of block updates applied (the write sequence number). */
  public synchronized long seq() {
    return seq;
  }

  /** Mount: rebuilds the top levels from all stored leaf hashes (subtrees are not cached). */
  public void mount() throws IOException {
    byte[][] roots = new byte[numSubtrees][];
    Map<Long, byte[]>[] cur = new Map[] {new HashMap<>()};
    int[] curIndex = {-1};
    source.scanAllLeaves((block, hash) -> {
      if (block < 0 || block >= sizeInBlocks) {
        return;
      }
      int idx = (int) (block >>> subtreeHeight);
      if (idx != curIndex[0]) {
        if (curIndex[0] >= 0) {
          roots[curIndex[0]] = buildLevels(curIndex[0], cur[0])[subtreeHeight][0];
        }
        cur[0] = new HashMap<>();
        curIndex[0] = idx;
      }
      cur[0].put(block, hash);
    });
    if (curIndex[0] >= 0) {
      roots[curIndex[0]] = buildLevels(curIndex[0], cur[0])[subtreeHeight][0];
    }
    synchronized (this) {
      for (int i = 0; i < numSubtrees; i++) {
        top[0][i] = roots[i];
      }
      for (int l = 1; l <= topHeight; l++) {
        for (int i = 0; i < top[l].length; i++) {
          top[l][i] = combine(top[l - 1], 2 * i, subtreeHeight + l - 1);
        }
      }
      cache.clear();
    }
  }

  private byte[] combine(byte[][] below, int leftIndex, int belowHeight) {
    byte[] l = leftIndex < below.length ? below[leftIndex] : null;
    byte[] r = leftIndex + 1 < below.length ? below[leftIndex + 1] : null;
    if (l == null && r == null) {
      return null;
    }
    return hashes.node(l == null ? hashes.empty(belowHeight) : l,
        r == null ? hashes.empty(belowHeight) : r);
  }

  /** Builds a subtree's levels from its leaves; empty nodes stay null. */
  private byte[][][] buildLevels(int index, Map<Long, byte[]> leaves) {
    byte[][][] levels = new byte[subtreeHeight + 1][][];
    levels[0] = new byte[(int) subtreeLeaves][];
    long base = (long) index << subtreeHeight;
    byte[] empty0 = hashes.empty(0);
    for (Map.Entry<Long, byte[]> e : leaves.entrySet()) {
      int i = (int) (e.getKey() - base);
      if (i >= 0 && i < subtreeLeaves && !Arrays.equals(e.getValue(), empty0)) {
        levels[0][i] = e.getValue();
      }
    }
    for (int l = 1; l <= subtreeHeight; l++) {
      levels[l] = new byte[levels[l - 1].length / 2][];
      for (int i = 0; i < levels[l].length; i++) {
        levels[l][i] = combine(levels[l - 1], 2 * i, l - 1);
      }
    }
    return levels;
  }

  // ------------------------------------------------------------------ pin / load

  /**
   * Pins and loads every subtree covering [firstBlock, firstBlock + count). Call
   * {@link #release} with the same range when the request is done.
   */
  public CompletableFuture<Void> acquire(long firstBlock, long count) {
    int a = (int) (firstBlock >>> subtreeHeight);
    int b = (int) ((firstBlock + count - 1) >>> subtreeHeight);
    List<CompletableFuture<Void>> loads = new ArrayList<>();
    synchronized (this) {
      for (int i = a; i <= b; i++) {
        Subtree s = cache.get(i);
        if (s == null) {
          s = new Subtree(i);
          cache.put(i, s);
          s.loaded = load(s);
        }
        s.pins++;
        loads.add(s.loaded);
      }
      evict();
    }
    return CompletableFuture.allOf(loads.toArray(new CompletableFuture[0]));
  }

  public synchronized void release(long firstBlock, long count) {
    int a = (int) (firstBlock >>> subtreeHeight);
    int b = (int) ((firstBlock + count - 1) >>> subtreeHeight);
    for (int i = a; i <= b; i++) {
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
        it.remove();
      }
    }
  }

  private CompletableFuture<Void> load(Subtree s) {
    byte[] expected = top[0][s.index];
    if (expected == null) {
      // empty subtree: nothing stored, nothing to fetch
      s.levels = buildLevels(s.index, Map.of());
      return CompletableFuture.completedFuture(null);
    }
    long first = (long) s.index << subtreeHeight;
    long count = Math.min(subtreeLeaves, sizeInBlocks - first);
    metrics.subtreeFetches.increment();
    return source.fetchLeaves(first, count).thenAccept(leaves -> {
      byte[][][] levels = buildLevels(s.index, leaves);
      synchronized (this) {
        byte[] want = top[0][s.index];
        byte[] got = levels[subtreeHeight][0];
        if (!Arrays.equals(want, got)) {
          s.corrupt = "stored leaf hashes of blocks [" + first + ", " + (first + count)
              + ") do not match the volume tree";
          metrics.verificationFailures.increment();
          BlockDriverMetrics.GLOBAL.verificationFailures.increment();
        }
        s.levels = levels;
      }
    });
  }

  // ------------------------------------------------------------------ verify

  /**
   * Checks one block returned by storage. {@code data == null} means the block is not stored
   * (reads as zeros). Throws when the data (or the stored hash) does not match the tree.
   */
  public void verify(long block, byte[] data, int off, byte[] storedHash) {
    byte[] actual = data == null ? hashes.empty(0) : hashes.leaf(data, off);
    String problem = null;
    synchronized (this) {
      Subtree s = cache.get((int) (block >>> subtreeHeight));
      if (s == null || s.levels == null) {
        throw new IllegalStateException("verify of block " + block + " without acquire");
      }
      if (s.corrupt != null) {
        problem = s.corrupt;
      } else {
        byte[] leaf = s.levels[0][(int) (block & (subtreeLeaves - 1))];
        if (leaf == null) {
          leaf = hashes.empty(0);
        }
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

  /** Leaf hash the tree holds for a block (block's subtree must be acquired). */
  public synchronized byte[] leaf(long block) {
    Subtree s = cache.get((int) (block >>> subtreeHeight));
    byte[] leaf = s.levels[0][(int) (block & (subtreeLeaves - 1))];
    return leaf == null ? hashes.empty(0) : leaf;
  }

  /** True when the whole subtree containing {@code block} is empty (no fetch needed). */
  public synchronized boolean subtreeEmpty(int subtreeIndex) {
    return top[0][subtreeIndex] == null;
  }

  public long subtreeLeaves() {
    return subtreeLeaves;
  }

  // ------------------------------------------------------------------ update

  /** Announces that {@code block} is being stored with leaf hash {@code leaf}. */
  public synchronized void beginUpdate(long block, byte[] leaf) {
    pending.computeIfAbsent(block, k -> new ArrayList<>(1)).add(leaf);
  }

  /** The store acknowledged the update: the leaf becomes part of the tree. */
  public synchronized void commitUpdate(long block, byte[] leaf) {
    removePending(block, leaf);
    int idx = (int) (block >>> subtreeHeight);
    Subtree s = cache.get(idx);
    if (s == null || s.levels == null) {
      throw new IllegalStateException("update of block " + block + " without acquire");
    }
    int i = (int) (block & (subtreeLeaves - 1));
    s.levels[0][i] = Arrays.equals(leaf, hashes.empty(0)) ? null : leaf;
    for (int l = 1; l <= subtreeHeight; l++) {
      i >>= 1;
      s.levels[l][i] = combine(s.levels[l - 1], 2 * i, l - 1);
    }
    top[0][idx] = s.levels[subtreeHeight][0];
    int j = idx;
    for (int l = 1; l <= topHeight; l++) {
      j >>= 1;
      top[l][j] = combine(top[l - 1], 2 * j, subtreeHeight + l - 1);
    }
    seq++;
  }

  /**
   * The store failed the update. The block may now hold the old or the new content (a failed
   * batch can be partly applied), so both stay acceptable and the subtree stays pinned in memory
   * (its stored hashes no longer determine one root) until the block is written successfully.
   */
  public synchronized void abortUpdate(long block, byte[] leaf) {
    Subtree s = cache.get((int) (block >>> subtreeHeight));
    if (s != null) {
      s.pins++;
    }
  }

  private void removePending(long block, byte[] leaf) {
    List<byte[]> p = pending.get(block);
    if (p != null) {
      for (Iterator<byte[]> it = p.iterator(); it.hasNext();) {
        if (it.next() == leaf) {
          it.remove();
          break;
        }
      }
      if (p.isEmpty()) {
        pending.remove(block);
      }
    }
  }

  /** Number of subtrees currently cached (for tests). */
  public synchronized int cachedSubtrees() {
    return cache.size();
  }
}
