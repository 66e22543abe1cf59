package io.salus.it.volume;

import static org.junit.jupiter.api.Assertions.*;

import io.salus.blockdriver.volume.BlockCorruptedException;
import io.salus.blockdriver.volume.HBaseVolume;
import io.salus.blockdriver.volume.VolumeCatalog;
import io.salus.blockdriver.volume.VolumeException;
import io.salus.blockdriver.volume.VolumeLease;
import java.util.Arrays;
import java.util.Random;
import java.util.concurrent.CompletionException;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.Table;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Persisted volume-tree nodes of the plain-HBase volume: the mount reads the subtree roots
 * only, a cache miss fetches one path, a forged stored node never verifies, and a crash between
 * a block's put and its nodes' put does not make the next mount trust stale nodes.
 */
class HBaseVolumeNodesTest {
  static MiniHBase hbase;
  static VolumeCatalog catalog;

  @BeforeAll
  static void start() throws Exception {
    hbase = new MiniHBase();
    catalog = new VolumeCatalog(hbase.connection());
  }

  @AfterAll
  static void stop() throws Exception {
    if (hbase != null) {
      hbase.close();
    }
  }

  static byte[] random(int len, int seed) {
    byte[] b = new byte[len];
    new Random(seed).nextBytes(b);
    return b;
  }

  /** The version a tamperer uses to replace a stored node: one newer than the stored cell. */
  static long newerNodeVersion(Table t, byte[] row) throws Exception {
    Result r = t.get(new Get(row));
    return r.getColumnLatestCell(HBaseVolume.FAMILY, HBaseVolume.NODE).getTimestamp() + 1;
  }

  /**
   * Before: every mount scanned every written block's hash row (3000 here), and a read after a
   * cache miss scanned a whole subtree (1024 rows). Now: the subtree roots, and one path.
   */
  @Test
  void mountReadsSubtreeRootsAndAMissFetchesOnePath() throws Exception {
    catalog.create("nodes", 1L << 20, 4096); // 4 GiB, 1024 subtrees of 1024 blocks
    int h = catalog.require("nodes").subtreeHeight();
    byte[][] data = new byte[30][];
    try (HBaseVolume v = HBaseVolume.open(hbase.connection(), "nodes")) {
      for (int k = 0; k < 30; k++) {
        data[k] = random(100 * 4096, k);
        v.write(k * 30_000L, data[k], false).join();
      }
    }
    try (HBaseVolume v = HBaseVolume.open(hbase.connection(), "nodes")) {
      assertTrue(v.mountRootMatchesRecorded());
      long mountRows = v.metrics().mountRowsRead.sum();
      assertTrue(mountRows <= 1 + 60, "the mount reads the written subtrees' roots (<= 60 here),"
          + " not the 3000 block rows: read " + mountRows);
      Random r = new Random(7);
      for (int i = 0; i < 20; i++) {
        int k = r.nextInt(30);
        int off = r.nextInt(100);
        long before = v.metrics().nodeRowsFetched.sum();
        byte[] got = v.read(k * 30_000L + off, 1).join();
        assertArrayEquals(Arrays.copyOfRange(data[k], off * 4096, (off + 1) * 4096), got);
        long fetched = v.metrics().nodeRowsFetched.sum() - before;
        assertTrue(fetched <= h + 1, "a miss fetches one path (<= " + (h + 1) + " rows), fetched "
            + fetched);
      }
      // a write after the remount, then a range read across two subtrees
      byte[] w = random(4096, 99);
      v.write(30_050, w, true).join();
      assertArrayEquals(w, v.read(30_050, 1).join());
      v.read(1000, 100).join();
    }
    try (HBaseVolume v = HBaseVolume.open(hbase.connection(), "nodes")) {
      assertTrue(v.mountRootMatchesRecorded());
      assertArrayEquals(random(4096, 99), v.read(30_050, 1).join());
    }
  }

  /** Untrusted stays untrusted: a forged stored node (or subtree root) never verifies. */
  @Test
  void forgedPersistedNodeNeverVerifies() throws Exception {
    catalog.create("forgednode", 4096, 4096, "SHA-256", 1);
    byte[] d = random(64 * 4096, 3);
    try (HBaseVolume v = HBaseVolume.open(hbase.connection(), "forgednode")) {
      v.write(0, d, false).join();
    }
    try (Table t = hbase.connection().getTable(VolumeCatalog.dataTable("forgednode"))) {
      // node (5, 0) covers blocks 0..31; block 40's path uses it as its level-5 sibling
      byte[] row = HBaseVolume.nodeRow(5, 0);
      byte[] original = t.get(new Get(row)).getValue(HBaseVolume.FAMILY, HBaseVolume.NODE);
      assertNotNull(original, "interior nodes are persisted");
      t.put(new Put(row, newerNodeVersion(t, row))
          .addColumn(HBaseVolume.FAMILY, HBaseVolume.NODE, random(32, 5)));
      try (HBaseVolume v = HBaseVolume.open(hbase.connection(), "forgednode")) {
        for (int i = 0; i < 2; i++) {
          CompletionException e = assertThrows(CompletionException.class,
              () -> v.read(40, 1).join());
          assertTrue(e.getCause() instanceof BlockCorruptedException, e.toString());
          assertThrows(CompletionException.class,
              () -> v.write(41, random(4096, 8), false).join(),
              "no write is built on a forged node");
        }
        assertTrue(v.metrics().verificationFailures.sum() >= 2);
        // and monitoring sees them: the volume's metrics2 source in JMX (cache refreshed once
        // per metrics period: poll). Under a mini cluster metrics2 gives a reused source name
        // a suffix (this volume was opened before), hence the pattern.
        javax.management.MBeanServer mbs =
            java.lang.management.ManagementFactory.getPlatformMBeanServer();
        // The mini cluster's region servers share this JVM's metrics system, which may re-register
        // its MBeans while we look (seen: the name listed, then InstanceNotFound): look again.
        javax.management.ObjectName pattern =
            new javax.management.ObjectName("Hadoop:name=SalusVolume-forgednode*,*");
        long deadline = System.currentTimeMillis() + 60_000;
        long seen = -1;
        while (seen < 2) {
          assertTrue(System.currentTimeMillis() < deadline,
              "JMX never showed the failures (last seen " + seen + ", sources "
                  + mbs.queryNames(pattern, null) + ")");
          java.util.Set<javax.management.ObjectName> names = mbs.queryNames(pattern, null);
          assertTrue(names.size() <= 1, names.toString());
          if (names.size() == 1) {
            try {
              seen = ((Number) mbs.getAttribute(names.iterator().next(), "VerificationFailures"))
                  .longValue();
            } catch (javax.management.InstanceNotFoundException gone) {
              // re-registered between the query and the read
            }
          }
          if (seen < 2) {
            Thread.sleep(250);
          }
        }
        // block 5's path does not use the forged node as a sibling: it reads fine
        assertArrayEquals(Arrays.copyOfRange(d, 5 * 4096, 6 * 4096), v.read(5, 1).join());
      }
      // a forged subtree root stops the mount
      int h = catalog.require("forgednode").subtreeHeight();
      byte[] rootRow = HBaseVolume.nodeRow(h, 0);
      t.put(new Put(rootRow, newerNodeVersion(t, rootRow))
          .addColumn(HBaseVolume.FAMILY, HBaseVolume.NODE, random(32, 6)));
      assertThrows(VolumeException.RootMismatch.class,
          () -> HBaseVolume.open(hbase.connection(), "forgednode"));
    }
  }

  static void crash(HBaseVolume v, String name) throws Exception {
    // the writer dies: its ZooKeeper session ends, and nothing more is written (a fenced
    // volume's close records no root and stores no node)
    HBaseVolumeTest.expireSession(
        org.apache.hadoop.hbase.zookeeper.ZKConfig.getZKQuorumServersString(hbase.conf()),
        v.lease(),
        VolumeLease.ROOT + "/" + name + "/writer");
    long deadline = System.nanoTime() + 30_000_000_000L;
    while (v.lease().isHeld() && System.nanoTime() < deadline) {
      Thread.sleep(50);
    }
    assertFalse(v.lease().isHeld());
    v.close();
  }

  /**
   * A crash after blocks were stored but before their subtree's nodes were (nodes are stored
   * at FLUSH/close): the stored nodes are behind the leaves. The dirty marker, stored before
   * the first block of the subtree, makes the mount recompute that subtree from its leaves, so
   * the mount sees the writes that landed (and says the root differs from the last flush) instead
   * of trusting the stale nodes and later failing reads of acknowledged writes.
   */
  @Test
  void crashBetweenBlockPutAndNodePutDoesNotBreakTheMount() throws Exception {
    catalog.create("crash", 4096, 4096, "SHA-256", 1);
    byte[] a = random(64 * 4096, 1);
    byte[] b = random(11 * 4096, 2);
    HBaseVolume v = HBaseVolume.open(hbase.connection(), "crash");
    v.write(0, a, false).join();
    v.flush().join(); // nodes stored, root recorded
    v.write(10, b, false).join(); // blocks stored, their nodes not yet
    crash(v, "crash");
    VolumeException.RootMismatch e = assertThrows(VolumeException.RootMismatch.class,
        () -> HBaseVolume.open(hbase.connection(), "crash"),
        "writes after the last flush landed: the mount must see them, not the stale nodes");
    assertTrue(e.getMessage().contains("did not close cleanly"), e.getMessage());
    byte[] expect = a.clone();
    System.arraycopy(b, 0, expect, 10 * 4096, b.length);
    try (HBaseVolume again = HBaseVolume.open(hbase.connection(), "crash", true)) {
      assertArrayEquals(expect, again.read(0, 64).join(), "every acknowledged write reads back");
      again.write(100, random(4096, 3), false).join();
    }
    try (HBaseVolume again = HBaseVolume.open(hbase.connection(), "crash")) {
      assertTrue(again.mountRootMatchesRecorded());
      assertArrayEquals(expect, again.read(0, 64).join());
    }
    // a crash right after a flush: the stored nodes match, the strict mount succeeds
    HBaseVolume w = HBaseVolume.open(hbase.connection(), "crash");
    w.write(2000, random(4096, 4), false).join();
    w.flush().join();
    crash(w, "crash");
    try (HBaseVolume again = HBaseVolume.open(hbase.connection(), "crash")) {
      assertTrue(again.mountRootMatchesRecorded());
      assertArrayEquals(random(4096, 4), again.read(2000, 1).join());
      assertArrayEquals(expect, again.read(0, 64).join());
    }
  }

  /**
   * An old-format volume's scanning mount stores every node row and is interrupted before it
   * marks them complete (modelled by removing the completion row {@code 0x80}: the state such a
   * crash leaves). Then a writer that keeps no nodes (the block driver before nodes were
   * persisted) zeroes blocks 0..31 by deleting their rows. The next mount must not keep the
   * interrupted rebuild's rows for those blocks: before, it rebuilt only the nodes it recomputed,
   * kept the stale node over blocks 0..31, and every read of block 40 (whose path uses it)
   * answered EIO with no repair command. The recorded root still stops a strict mount.
   */
  @Test
  void interruptedNodeRebuildOfAnOldFormatVolumeLeavesNoStaleNodes() throws Exception {
    String name = "interrupted";
    catalog.create(name, 4096, 4096, "SHA-256", 1);
    byte[] d = random(64 * 4096, 21);
    try (HBaseVolume v = HBaseVolume.open(hbase.connection(), name)) {
      v.write(0, d, false).join();
    }
    try (Table t = hbase.connection().getTable(VolumeCatalog.dataTable(name))) {
      byte[] complete = {(byte) 0x80};
      Result r = t.get(new Get(complete));
      assertFalse(r.isEmpty(), "a completed mount/close marks the node rows complete");
      long ts = r.rawCells()[0].getTimestamp();
      t.delete(new org.apache.hadoop.hbase.client.Delete(complete)
          .addFamily(HBaseVolume.FAMILY, ts));
      assertNotNull(t.get(new Get(HBaseVolume.nodeRow(5, 0)))
          .getValue(HBaseVolume.FAMILY, HBaseVolume.NODE), "node (5, 0) over blocks 0..31");
      for (long b = 0; b < 32; b++) { // an old-format writer zeroes blocks 0..31: row deletes
        byte[] row = org.apache.hadoop.hbase.util.Bytes.toBytes(b);
        long bts = t.get(new Get(row)).rawCells()[0].getTimestamp();
        t.delete(new org.apache.hadoop.hbase.client.Delete(row)
            .addFamily(HBaseVolume.FAMILY, bts));
      }
    }
    // the blocks differ from the recorded root: a strict mount still refuses
    assertThrows(VolumeException.RootMismatch.class,
        () -> HBaseVolume.open(hbase.connection(), name));
    byte[] expect = d.clone();
    Arrays.fill(expect, 0, 32 * 4096, (byte) 0);
    try (HBaseVolume v = HBaseVolume.open(hbase.connection(), name, true)) {
      assertArrayEquals(Arrays.copyOfRange(d, 40 * 4096, 41 * 4096), v.read(40, 1).join(),
          "block 40 reads back (its path must not use a stale node of the interrupted rebuild)");
      assertArrayEquals(expect, v.read(0, 64).join());
      assertEquals(0, v.metrics().verificationFailures.sum());
      v.write(10, random(4096, 22), false).join();
      System.arraycopy(random(4096, 22), 0, expect, 10 * 4096, 4096);
    }
    try (HBaseVolume v = HBaseVolume.open(hbase.connection(), name)) {
      assertTrue(v.mountRootMatchesRecorded());
      assertArrayEquals(expect, v.read(0, 64).join());
    }
  }
}
