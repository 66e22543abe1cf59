package io.salus.blockdriver.volume;

import static org.junit.jupiter.api.Assertions.*;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import org.apache.hadoop.hbase.HBaseTestingUtility;
import org.apache.hadoop.hbase.StartMiniClusterOption;
import org.apache.log4j.Level;
import org.apache.log4j.LogManager;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * FLUSH records a root only over writes its WAL sync made durable. The interleaving is forced
 * with a test seam of HBaseVolume (package-private, hence this test lives in the volume package, in the it module whose test class path has the mini clusters;
 * with its own HBase mini cluster): a write is acknowledged after FLUSH's WAL sync completed and
 * before FLUSH records its root. That write was never hsynced (SYNC_WAL: DataNode memory), so
 * the recorded root must not include it.
 */
class HBaseVolumeFlushRootTest {
  static HBaseTestingUtility util;

  @BeforeAll
  static void start() throws Exception {
    LogManager.getRootLogger().setLevel(Level.WARN);
    util = new HBaseTestingUtility();
    util.getConfiguration().setInt("hbase.master.info.port", -1);
    util.getConfiguration().setInt("hbase.regionserver.info.port", -1);
    util.getConfiguration().setBoolean("hbase.unsafe.stream.capability.enforce", false);
    util.getConfiguration().set("hbase.wal.provider", "filesystem");
    util.startMiniZKCluster();
    util.startMiniHBaseCluster(StartMiniClusterOption.builder().numRegionServers(1).build());
  }

  @AfterAll
  static void stop() throws Exception {
    if (util != null) {
      util.shutdownMiniCluster();
    }
  }

  static byte[] random(int seed) {
    byte[] b = new byte[4096];
    new Random(seed).nextBytes(b);
    return b;
  }

  @Test
  void flushRootCoversOnlyWritesItsSyncMadeDurable() throws Exception {
    VolumeCatalog catalog = new VolumeCatalog(util.getConnection());
    catalog.create("flushroot", 1024, 4096, "SHA-256", 1);
    try (HBaseVolume v = HBaseVolume.open(util.getConnection(), "flushroot")) {
      v.write(0, random(1), false).join();
      byte[][] covered = new byte[1][];
      CompletableFuture<?>[] late = new CompletableFuture<?>[1];
      v.afterFlushSync = () -> {
        covered[0] = v.tree().root(); // every write the sync covered, nothing after it
        late[0] = v.write(1, random(2), false); // acknowledged after the sync: not hsynced
        return late[0].thenApply(x -> null);
      };
      v.flush().join();
      v.afterFlushSync = null;
      assertTrue(late[0].isDone() && !late[0].isCompletedExceptionally());
      byte[] recorded = catalog.require("flushroot").rootHash();
      assertFalse(Arrays.equals(v.tree().root(), recorded),
          "FLUSH recorded a root that includes a write acknowledged after its WAL sync");
      assertArrayEquals(covered[0], recorded, "the recorded root is the one the sync covered");
      v.flush().join(); // the next FLUSH covers the late write
      assertArrayEquals(v.tree().root(), catalog.require("flushroot").rootHash());
    }
  }

  /**
   * Review finding: a written subtree's changed nodes stay in memory until FLUSH or close, and a
   * subtree with unstored nodes is never evicted, so writes without FLUSH (a client that never
   * syncs) grow the subtree cache without bound: memory no longer bounded by the cache capacity.
   * Writes one block into more subtrees than the cache holds, never flushing; the cache must
   * stay within its capacity, and the evicted subtrees must read back (paths re-fetched from the
   * stored nodes) and remount to the same root.
   */
  @Test
  void writesWithoutFlushKeepTheSubtreeCacheBounded() throws Exception {
    VolumeCatalog catalog = new VolumeCatalog(util.getConnection());
    int subtrees = HBaseVolume.SUBTREE_CACHE + 104;
    long leaves = 1L << VolumeCatalog.DEFAULT_SUBTREE_HEIGHT;
    catalog.create("noflush", subtrees * leaves, 512, "SHA-256", 1);
    byte[] root;
    try (HBaseVolume v = HBaseVolume.open(util.getConnection(), "noflush")) {
      for (int s = 0; s < subtrees; s += 64) {
        List<CompletableFuture<Void>> batch = new ArrayList<>();
        for (int k = s; k < Math.min(subtrees, s + 64); k++) {
          batch.add(v.write(k * leaves, Arrays.copyOf(random(k), 512), false));
        }
        CompletableFuture.allOf(batch.toArray(new CompletableFuture[0])).join();
      }
      assertTrue(v.tree().cachedSubtrees() <= HBaseVolume.SUBTREE_CACHE,
          "subtree cache grew to " + v.tree().cachedSubtrees() + " without a FLUSH (capacity "
              + HBaseVolume.SUBTREE_CACHE + ")");
      for (int k : new int[] {0, 1, 17, subtrees - 1}) {
        assertArrayEquals(Arrays.copyOf(random(k), 512), v.read(k * leaves, 1).join());
      }
      root = v.tree().root();
    }
    try (HBaseVolume v = HBaseVolume.open(util.getConnection(), "noflush")) {
      assertArrayEquals(root, v.tree().root());
      assertArrayEquals(Arrays.copyOf(random(5), 512), v.read(5 * leaves, 1).join());
    }
  }
}
