package io.salus.it.launcher;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.salus.blockdriver.volume.HBaseVolume;
import io.salus.blockdriver.volume.VolumeCatalog;
import io.salus.blockdriver.volume.VolumeInfo;
import io.salus.it.volume.MiniHBase;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.RegionInfo;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.util.Bytes;
import org.apache.hadoop.hbase.zookeeper.ZKConfig;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Review: a FLUSH of a writer that is fenced while the flush is in flight must not record its
 * tree root in the catalog. Before the fix the root was recorded without any lease check: the
 * fenced writer's higher sequence number overwrote the root of the new writer, whose FLUSHes
 * were then refused ("sequence below the recorded one") and whose next mount was refused (root
 * mismatch), and the fenced writer's FLUSH was acknowledged. The pause between the WAL sync and
 * the root record (a GC pause, a busy executor) is injected by holding the volume's monitor.
 */
class HBaseVolumeStaleFlushTest {
  private static MiniHBase hbase;

  @BeforeAll
  static void start() throws Exception {
    hbase = new MiniHBase();
  }

  @AfterAll
  static void stop() throws Exception {
    if (hbase != null) {
      hbase.close();
    }
  }

  static byte[] block(int v) {
    byte[] b = new byte[4096];
    Arrays.fill(b, (byte) v);
    return b;
  }

  @Test
  void aFencedWritersFlushDoesNotOverwriteTheNewWritersRoot() throws Exception {
    VolumeCatalog catalog = new VolumeCatalog(hbase.connection());
    catalog.create("stale", 256, 4096, "SHA-256", 1);
    HBaseVolume a = HBaseVolume.open(hbase.connection(), "stale");
    HBaseVolume b;
    CompletableFuture<Void> staleFlush;
    try {
      for (int i = 0; i < 10; i++) {
        a.write(i, block(i + 1), false).join(); // A's sequence is well above the recorded one
      }
      synchronized (a) { // A's flush syncs the WALs, then pauses before recording its root
        staleFlush = a.flush();
        Thread.sleep(3000);
        LeaseSessions.expire(ZKConfig.getZKQuorumServersString(hbase.conf()), a.lease());
        b = HBaseVolume.open(hbase.connection(), "stale", true); // the operator takes over
        b.write(20, block(0x55), false).join();
        b.flush().join();
      }
      ExecutionException e = assertThrows(ExecutionException.class,
          () -> staleFlush.get(60, TimeUnit.SECONDS),
          "the fenced writer's FLUSH was acknowledged");
      assertTrue(String.valueOf(e.getCause()).contains("fenced"), String.valueOf(e.getCause()));
    } finally {
      a.close();
    }
    try {
      assertArrayEquals(b.tree().root(), catalog.require("stale").rootHash(),
          "the fenced writer overwrote the new writer's recorded root");
      b.write(21, block(0x66), false).join();
      b.flush().get(60, TimeUnit.SECONDS); // the new writer can still flush
    } finally {
      b.close();
    }
    try (HBaseVolume c = HBaseVolume.open(hbase.connection(), "stale")) { // strict mount
      assertArrayEquals(block(0x66), c.read(21, 1).join());
    }
  }

  /**
   * Review: the lease was checked when a write was admitted, not when its batch was sent. A
   * write queued behind an earlier write of the same block (held up by an offline region) was
   * sent after the writer had been fenced, so a fenced writer changed the stored block (a new
   * writer would read it as corrupt, and its next strict mount would be refused).
   */
  @Test
  void aWriteQueuedBehindAStalledWriteIsNotSentAfterFencing() throws Exception {
    VolumeCatalog catalog = new VolumeCatalog(hbase.connection());
    VolumeInfo info = catalog.create("queued", 256, 4096, "SHA-256", 1);
    HBaseVolume v = HBaseVolume.open(hbase.connection(), "queued");
    try (Admin admin = hbase.connection().getAdmin()) {
      v.write(0, block(1), false).join();
      v.read(0, 256).join(); // the whole tree is loaded
      List<RegionInfo> regions = admin.getRegions(TableName.valueOf(info.table()));
      for (RegionInfo r : regions) {
        admin.unassign(r.getRegionName());
      }
      CompletableFuture<Void> first = v.write(1, block(2), false); // sent, held by HBase
      Thread.sleep(1000); // first is in flight before second is issued
      CompletableFuture<Void> second = v.write(1, block(3), false); // queued behind it
      Thread.sleep(1000);
      assertFalse(first.isDone(), "the first write is held by the offline region");
      LeaseSessions.expire(ZKConfig.getZKQuorumServersString(hbase.conf()), v.lease());
      for (RegionInfo r : regions) {
        admin.assign(r.getRegionName());
      }
      assertThrows(ExecutionException.class, () -> first.get(120, TimeUnit.SECONDS));
      assertThrows(ExecutionException.class, () -> second.get(120, TimeUnit.SECONDS));
      try (Table t = hbase.connection().getTable(TableName.valueOf(info.table()))) {
        byte[] stored = t.get(new Get(Bytes.toBytes(1L)).addColumn(HBaseVolume.FAMILY,
            HBaseVolume.DATA)).getValue(HBaseVolume.FAMILY, HBaseVolume.DATA);
        assertFalse(Arrays.equals(block(3), stored),
            "a write queued before the fencing was sent after it");
      }
    } finally {
      v.close();
    }
  }
}
