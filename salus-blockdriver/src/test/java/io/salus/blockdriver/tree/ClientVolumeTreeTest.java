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

    @Override
    public synchronized CompletableFuture<Map<Long, byte[]>> fetchLeaves(long first, long count) {
      fetches++;
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
      t2.acquire(victim, 1).join();
      assertThrows(BlockCorruptedException.class, () -> t2.verify(victim, block(5), 0, null));
      t2.release(victim, 1);
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

  @Test
  void rejectsUnknownHash() {
    assertThrows(IllegalArgumentException.class, () -> TreeHashes.forName("MD5"));
  }
}
