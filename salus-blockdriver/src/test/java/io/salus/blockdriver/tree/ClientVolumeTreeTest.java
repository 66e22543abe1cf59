package io.salus.blockdriver.tree;

import static org.junit.jupiter.api.Assertions.*;

import io.salus.blockdriver.metrics.BlockDriverMetrics;
import io.salus.blockdriver.volume.BlockCorruptedException;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.function.BiConsumer;
import org.junit.jupiter.api.Test;

/** The client volume tree over an in-memory hash store standing in for region servers. */
class ClientVolumeTreeTest {
  static final int BS = 512;

  /** Stored leaf hashes, as a region server would keep them. */
  static class Store implements SubtreeSource {
    final TreeMap<Long, byte[]> leaves = new TreeMap<>();
    int fetches;
    /** The next this many fetches fail (a region server briefly unreachable). */
    int failNext;

    @Override
    public synchronized CompletableFuture<Map<Long, byte[]>> fetchLeaves(long first, long count) {
      fetches++;
      if (failNext > 0) {
        failNext--;
        return CompletableFuture.failedFuture(new java.io.IOException("region server down"));
      }
      return CompletableFuture.completedFuture(
          new TreeMap<>(leaves.subMap(first, first + count)));
    }

    @Override
    public synchronized void scanAllLeaves(BiConsumer<Long, byte[]> c) {
      leaves.forEach(c);
    }
  }

  static byte[] block(int seed) {
    byte[] b = new byte[BS];
    new Random(seed).nextBytes(b);
    return b;
  }

  void write(ClientVolumeTree t, Store s, long blockNo, byte[] data) {
    t.acquire(blockNo, 1).join();
    byte[] leaf = t.leafHash(data, 0);
    t.beginUpdate(blockNo, leaf);
    synchronized (s) {
      s.leaves.put(blockNo, leaf);
    }
    t.commitUpdate(blockNo, leaf);
    t.release(blockNo, 1);
  }

  @Test
  void verifiesWritesRejectsCorruptionAndFetchesSubtreesOnDemand() throws Exception {
    for (String alg : new String[] {"SHA-256", "BLAKE3"}) {
      Store store = new Store();
      BlockDriverMetrics m = new BlockDriverMetrics();
      long blocks = 10_000; // not a power of two
      ClientVolumeTree t = new ClientVolumeTree("v", TreeHashes.forName(alg, BS), blocks, 6, store,
          m, 4);
      t.mount();
      byte[] emptyRoot = t.root();
      assertArrayEquals(TreeHashes.forName(alg, BS).empty(t.height()), emptyRoot);
      for (int i = 0; i < 300; i++) {
        write(t, store, (i * 37L) % blocks, block(i));
      }
      assertFalse(java.util.Arrays.equals(emptyRoot, t.root()));
      assertTrue(t.cachedSubtrees() <= 4, "LRU keeps only a few subtrees");
      // read back: each subtree fetched again on demand and verified against the top levels
      int before = store.fetches;
      for (int i = 0; i < 300; i++) {
        long b = (i * 37L) % blocks;
        t.acquire(b, 1).join();
        t.verify(b, block(i), 0, null);
        t.release(b, 1);
      }
      assertTrue(store.fetches > before, "subtrees were fetched on demand");
      // unwritten block reads as zeros and verifies without storage
      t.acquire(1, 1).join();
      t.verify(1, null, 0, null);
      t.verify(1, new byte[BS], 0, null);
      // wrong data is rejected and counted
      long b0 = 0;
      t.acquire(b0, 1).join();
      byte[] bad = block(0);
      bad[7] ^= 1;
      assertThrows(BlockCorruptedException.class, () -> t.verify(b0, bad, 0, null));
      assertThrows(BlockCorruptedException.class, () -> t.verify(b0, null, 0, null));
      t.release(b0, 1);
      t.release(1, 1);
      assertEquals(2, m.verificationFailures.sum());
      // a remount from the stored hashes gives the same root
      byte[] root = t.root();
      ClientVolumeTree t2 = new ClientVolumeTree("v", TreeHashes.forName(alg, BS), blocks, 6, store,
          m, 4);
      t2.mount();
      assertArrayEquals(root, t2.root());
      // tampering with a stored hash makes the fetched subtree fail its check against the top
      synchronized (store) {
        store.leaves.put(37L * 5, t.leafHash(block(12345), 0));
      }
      long victim = 37L * 5;
      java.util.concurrent.CompletionException ce = assertThrows(
          java.util.concurrent.CompletionException.class, () -> t2.acquire(victim, 1).join());
      assertTrue(ce.getCause() instanceof BlockCorruptedException, ce.toString());
      t2.release(victim, 1);
      synchronized (store) {
        store.leaves.put(victim, t.leafHash(block(5), 0)); // storage repaired
      }
      // zero-filled write equals the empty leaf: root returns to empty after zeroing all
      for (Long blk : new java.util.ArrayList<>(store.leaves.keySet())) {
        write(t, store, blk, new byte[BS]);
      }
      assertArrayEquals(emptyRoot, t.root());
    }
  }

  @Test
  void pendingWriteAcceptsOldOrNewContent() {
    Store store = new Store();
    ClientVolumeTree t = new ClientVolumeTree("v", TreeHashes.forName("SHA-256", BS), 64, 3,
        store, new BlockDriverMetrics(), 8);
    write(t, store, 5, block(1));
    t.acquire(5, 1).join();
    byte[] newLeaf = t.leafHash(block(2), 0);
    t.beginUpdate(5, newLeaf);
    t.verify(5, block(1), 0, null);
    t.verify(5, block(2), 0, null);
    assertThrows(BlockCorruptedException.class, () -> t.verify(5, block(3), 0, null));
    t.commitUpdate(5, newLeaf);
    assertThrows(BlockCorruptedException.class, () -> t.verify(5, block(1), 0, null));
    t.verify(5, block(2), 0, null);
    t.release(5, 1);
  }

  /**
   * Untrusted stays untrusted: a fetched subtree whose leaves do not match the trusted top
   * levels is refused, no write lands in it (so no trusted hash is ever computed from its forged
   * leaves), and after eviction and a fresh fetch the forged block still does not verify.
   */
  @Test
  void forgedSubtreeNeverBecomesTrusted() {
    Store store = new Store();
    BlockDriverMetrics m = new BlockDriverMetrics();
    ClientVolumeTree t = new ClientVolumeTree("v", TreeHashes.forName("SHA-256", BS), 64, 3,
        store, m, 1);
    write(t, store, 0, block(1));
    write(t, store, 1, block(2));
    byte[] trustedRoot = t.root();
    t.acquire(40, 1).join(); // evicts subtree 0 (cache of one)
    t.release(40, 1);
    synchronized (store) {
      store.leaves.put(0L, t.leafHash(block(99), 0)); // forged: data and hash replaced
    }
    java.util.concurrent.CompletionException e = assertThrows(
        java.util.concurrent.CompletionException.class, () -> t.acquire(1, 1).join());
    assertTrue(e.getCause() instanceof BlockCorruptedException, e.toString());
    // a write into the forged subtree is refused before anything is stored or committed
    assertThrows(RuntimeException.class, () -> write(t, store, 1, block(3)));
    t.release(1, 1); // the failed write's pin (write() does not release on failure)
    t.release(1, 1);
    assertArrayEquals(trustedRoot, t.root(), "trusted root unchanged");
    for (int round = 0; round < 2; round++) {
      t.acquire(40, 1).join();
      t.release(40, 1);
      assertThrows(RuntimeException.class, () -> {
        try {
          t.acquire(0, 1).join();
          t.verify(0, block(99), 0, null);
        } finally {
          t.release(0, 1);
        }
      }, "the forged block never verifies");
    }
    assertTrue(m.verificationFailures.sum() >= 1);
    // repairing storage makes the subtree trusted again
    synchronized (store) {
      store.leaves.put(0L, t.leafHash(block(1), 0));
    }
    t.acquire(40, 1).join();
    t.release(40, 1);
    t.acquire(0, 1).join();
    t.verify(0, block(1), 0, null);
    t.release(0, 1);
  }

  /**
   * A transient fetch error fails only the requests waiting for that fetch; it does not drop a
   * subtree that requests in flight still hold, so a write that landed is committed, not EIO.
   */
  @Test
  void transientFetchErrorKeepsSubtreesInUse() {
    Store store = new Store();
    ClientVolumeTree t = new ClientVolumeTree("v", TreeHashes.forName("SHA-256", BS), 64, 3,
        store, new BlockDriverMetrics(), 1);
    write(t, store, 0, block(1));
    t.acquire(40, 1).join(); // evicts subtree 0
    t.release(40, 1);
    synchronized (store) {
      store.failNext = 1;
    }
    CompletableFuture<Void> a = t.acquire(0, 1); // request A: its fetch fails
    assertTrue(a.isCompletedExceptionally());
    CompletableFuture<Void> w = t.acquire(1, 1); // write W: fetched again, succeeds
    w.join();
    t.release(0, 1); // A finishes (with an error) after W started
    t.acquire(40, 1).join(); // cache pressure while W is in flight
    t.release(40, 1);
    byte[] leaf = t.leafHash(block(5), 0);
    t.beginUpdate(1, leaf);
    synchronized (store) {
      store.leaves.put(1L, leaf);
    }
    t.commitUpdate(1, leaf); // the write landed: it must be committed
    t.verify(1, block(5), 0, null);
    t.release(1, 1);
  }

  /** A mount that scans reports how far it got, in block order, ending at the volume size. */
  @Test
  void mountScanReportsProgress() throws Exception {
    Store store = new Store();
    long blocks = 20_000;
    ClientVolumeTree t = new ClientVolumeTree("v", TreeHashes.forName("SHA-256", BS), blocks, 6,
        store, new BlockDriverMetrics(), 4);
    for (long b = 0; b < 9000; b++) {
      store.leaves.put(b * 2, t.leafHash(block((int) b), 0));
    }
    java.util.List<Long> seen = new java.util.ArrayList<>();
    t.mount(seen::add);
    assertTrue(seen.size() >= 3, "intermediate progress reported: " + seen);
    for (int i = 1; i < seen.size(); i++) {
      assertTrue(seen.get(i) >= seen.get(i - 1), "progress only grows: " + seen);
    }
    assertEquals(blocks, seen.get(seen.size() - 1));
    assertTrue(seen.get(0) < blocks);
  }

  /**
   * review: a write whose batch failed leaves its content acceptable (the store may or may not
   * have applied it), but once a later write of the same block is acknowledged the block holds
   * that later content (explicit cell versions: the later write always wins). The failed write's
   * content must then stop verifying; otherwise a server can serve the never-acknowledged,
   * overwritten data forever and the client returns it without an error.
   */
  @Test
  void abortedWriteStopsVerifyingOnceALaterWriteIsAcknowledged() {
    Store store = new Store();
    ClientVolumeTree t = new ClientVolumeTree("v", TreeHashes.forName("SHA-256", BS), 64, 3,
        store, new BlockDriverMetrics(), 8);
    write(t, store, 5, block(1));
    t.acquire(5, 1).join();
    byte[] failedLeaf = t.leafHash(block(2), 0);
    t.beginUpdate(5, failedLeaf);
    t.abortUpdate(5, failedLeaf);
    t.verify(5, block(1), 0, null); // either may be stored now
    t.verify(5, block(2), 0, null);
    byte[] laterLeaf = t.leafHash(block(3), 0);
    t.beginUpdate(5, laterLeaf);
    t.commitUpdate(5, laterLeaf);
    t.verify(5, block(3), 0, null);
    assertThrows(BlockCorruptedException.class, () -> t.verify(5, block(1), 0, null));
    assertThrows(BlockCorruptedException.class, () -> t.verify(5, block(2), 0, null),
        "the overwritten content of a failed write still verifies after a later acknowledged"
            + " write of the block");
    t.release(5, 1);
  }

  /**
   * A source that also stores interior nodes, as the plain-HBase volume does: a node map next
   * to the leaves, and dirty markers. Counts what a mount and a cache miss read.
   */
  static final class NodeStore extends Store {
    final Map<NodeId, byte[]> nodes = new java.util.HashMap<>();
    final java.util.Set<Long> dirty = new java.util.HashSet<>();
    boolean complete;
    int scans;
    int nodeReads;

    @Override
    public boolean persistsNodes() {
      return true;
    }

    @Override
    public synchronized void scanAllLeaves(BiConsumer<Long, byte[]> c) {
      scans++;
      super.scanAllLeaves(c);
    }

    @Override
    public synchronized CompletableFuture<Map<NodeId, byte[]>> fetchNodes(
        java.util.List<NodeId> ids) {
      Map<NodeId, byte[]> m = new java.util.HashMap<>();
      for (NodeId id : ids) {
        nodeReads++;
        byte[] v = id.level() == 0 ? leaves.get(id.index()) : nodes.get(id);
        if (v != null) {
          m.put(id, v);
        }
      }
      return CompletableFuture.completedFuture(m);
    }

    @Override
    public synchronized PersistedTop readTop(int h) {
      if (!complete) {
        return null;
      }
      Map<Long, byte[]> roots = new java.util.HashMap<>();
      nodes.forEach((id, v) -> {
        if (id.level() == h) {
          roots.put(id.index(), v);
        }
      });
      return new PersistedTop(roots, new java.util.HashSet<>(dirty));
    }

    @Override
    public synchronized void writeNodes(Map<NodeId, io.salus.core.merkle.Hash> w, int h,
        long replace) {
      if (replace >= 0) {
        nodes.keySet().removeIf(id -> id.level() >= 1
            && (id.index() >>> (h - id.level())) == replace);
      }
      w.forEach((id, v) -> {
        if (v == null) {
          nodes.remove(id);
        } else {
          nodes.put(id, v.bytes());
        }
      });
    }

    @Override
    public synchronized void markNodesComplete() {
      complete = true;
    }

    /** What the volume does at FLUSH: store the changed nodes, then tell the tree. */
    void persist(ClientVolumeTree t) {
      Map<NodeId, io.salus.core.merkle.Hash> d = t.dirtyNodes();
      writeNodes(d, 0, -1);
      t.nodesStored(d);
    }
  }

  /**
   * Persisted nodes: a remount reads the subtree roots only (no leaf scan), and a cache miss of
   * one block fetches one path (the leaf and one sibling per level), not the subtree's leaves.
   */
  @Test
  void persistedNodesMountWithoutScanAndFetchOnePath() throws Exception {
    NodeStore store = new NodeStore();
    int h = 8;
    long blocks = 5000;
    ClientVolumeTree t = new ClientVolumeTree("v", TreeHashes.forName("SHA-256", BS), blocks, h,
        store, new BlockDriverMetrics(), 2);
    t.mount(); // a new volume: scans (nothing) and records that nodes are complete
    assertTrue(store.complete);
    for (int i = 0; i < 410; i++) {
      write(t, store, (i * 131L) % blocks, block(i));
      if (i % 50 == 49) {
        store.persist(t);
      }
    }
    assertTrue(t.cachedSubtrees() > 2, "subtrees with unstored node changes are not evicted");
    store.persist(t);
    t.acquire(4999, 1).join();
    t.release(4999, 1);
    assertTrue(t.cachedSubtrees() <= 2, "stored subtrees are evictable again");
    byte[] root = t.root();
    BlockDriverMetrics m = new BlockDriverMetrics();
    ClientVolumeTree t2 = new ClientVolumeTree("v", TreeHashes.forName("SHA-256", BS), blocks, h,
        store, m, 2);
    int scansBefore = store.scans;
    t2.mount();
    assertEquals(scansBefore, store.scans, "a mount with persisted nodes scans no leaf");
    assertArrayEquals(root, t2.root());
    for (int i = 0; i < 400; i += 7) {
      long b = (i * 131L) % blocks;
      long before = m.nodeRowsFetched.sum();
      t2.acquire(b, 1).join();
      t2.verify(b, block(i), 0, null);
      t2.release(b, 1);
      long fetched = m.nodeRowsFetched.sum() - before;
      assertTrue(fetched <= h + 1, "one path is at most h + 1 = " + (h + 1) + " rows, fetched "
          + fetched + " for block " + b);
    }
    // writes after a remount keep working from fetched paths, and a third mount agrees
    for (int i = 0; i < 50; i++) {
      write(t2, store, (i * 977L) % blocks, block(1000 + i));
    }
    store.persist(t2);
    ClientVolumeTree t3 = new ClientVolumeTree("v", TreeHashes.forName("SHA-256", BS), blocks, h,
        store, new BlockDriverMetrics(), 2);
    t3.mount();
    assertArrayEquals(t2.root(), t3.root());
    for (int i = 0; i < 50; i++) {
      long b = (i * 977L) % blocks;
      t3.acquire(b, 1).join();
      t3.verify(b, block(1000 + i), 0, null);
      t3.release(b, 1);
    }
    // a range read: leaves of the range plus boundary siblings, verified together
    t3.acquire(0, 300).join();
    t3.release(0, 300);
  }

  /** Untrusted stays untrusted: a forged persisted node never verifies, however often tried. */
  @Test
  void forgedPersistedNodeFailsItsCheck() throws Exception {
    NodeStore store = new NodeStore();
    int h = 6;
    BlockDriverMetrics m = new BlockDriverMetrics();
    ClientVolumeTree t = new ClientVolumeTree("v", TreeHashes.forName("SHA-256", BS), 256, h,
        store, m, 1);
    t.mount();
    for (int b = 0; b < 64; b++) {
      write(t, store, b, block(b));
    }
    store.persist(t);
    ClientVolumeTree t2 = new ClientVolumeTree("v", TreeHashes.forName("SHA-256", BS), 256, h,
        store, m, 1);
    t2.mount();
    // forge the stored node (3, 0) (blocks 0..7): block 9's path uses it as its level-3 sibling
    synchronized (store) {
      store.nodes.put(new NodeId(3, 0), t.leafHash(block(555), 0));
    }
    for (int round = 0; round < 2; round++) {
      java.util.concurrent.CompletionException e = assertThrows(
          java.util.concurrent.CompletionException.class, () -> t2.acquire(9, 1).join());
      assertTrue(e.getCause() instanceof BlockCorruptedException, e.toString());
      t2.release(9, 1);
    }
    assertTrue(m.verificationFailures.sum() >= 2);
    assertThrows(RuntimeException.class, () -> t2.verify(9, block(9), 0, null),
        "nothing of the failed fetch was kept");
    // block 3's path does not use the forged node (its level-3 sibling is (3, 1)): fine, and
    // it computes (3, 0) from verified leaves; that trusted copy then wins over the forged one
    t2.acquire(3, 1).join();
    t2.verify(3, block(3), 0, null);
    t2.release(3, 1);
    t2.acquire(9, 1).join();
    t2.verify(9, block(9), 0, null);
    t2.release(9, 1);
  }

  @Test
  void rejectsUnknownHash() {
    assertThrows(IllegalArgumentException.class, () -> TreeHashes.forName("MD5"));
  }
}
