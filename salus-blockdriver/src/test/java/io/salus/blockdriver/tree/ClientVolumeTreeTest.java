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
  static final class Store implements SubtreeSource {
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

  @Test
  void rejectsUnknownHash() {
    assertThrows(IllegalArgumentException.class, () -> TreeHashes.forName("MD5"));
  }
}
