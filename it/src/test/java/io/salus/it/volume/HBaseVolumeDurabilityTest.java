package io.salus.it.volume;

import static org.junit.jupiter.api.Assertions.*;

import io.salus.blockdriver.volume.HBaseVolume;
import io.salus.blockdriver.volume.VolumeCatalog;
import java.lang.reflect.Field;
import java.util.Random;
import org.apache.hadoop.hbase.HBaseTestingUtility;
import org.apache.hadoop.hbase.StartMiniClusterOption;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.hdfs.server.datanode.metrics.DataNodeMetrics;
import org.apache.hadoop.metrics2.lib.MutableCounterLong;
import org.apache.log4j.Level;
import org.apache.log4j.LogManager;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * FLUSH and FUA mean non-volatile storage: observed on a real DataNode through its
 * {@code FsyncCount} metric, with HBase on a MiniDFSCluster and HBase 2.6's
 * default write-ahead log (the async FS WAL, {@code AsyncFSWAL}), where {@code FSYNC_WAL} makes
 * the WAL send its packets with the sync flag and the DataNode fsyncs the block file.
 */
class HBaseVolumeDurabilityTest {
  static HBaseTestingUtility util;

  @BeforeAll
  static void start() throws Exception {
    LogManager.getRootLogger().setLevel(Level.WARN);
    util = new HBaseTestingUtility();
    util.getConfiguration().setInt("hbase.master.info.port", -1);
    util.getConfiguration().setInt("hbase.regionserver.info.port", -1);
    util.getConfiguration().setInt("dfs.datanode.http.port", 0);
    util.startMiniCluster(StartMiniClusterOption.builder()
        .numMasters(1).numRegionServers(1).numDataNodes(1).build());
  }

  @AfterAll
  static void stop() throws Exception {
    if (util != null) {
      util.shutdownMiniCluster();
    }
  }

  /**
   * Sum of the DataNodes' {@code FsyncCount} metric (packets they forced to disk). The mini
   * cluster does not publish DataNode metrics over JMX, so the counter is read from the
   * DataNode's metrics object (its field is package-private: read reflectively).
   */
  static long fsyncs() throws Exception {
    long n = 0;
    for (DataNode dn : util.getDFSCluster().getDataNodes()) {
      DataNodeMetrics m = dn.getMetrics();
      Field f = DataNodeMetrics.class.getDeclaredField("fsyncCount");
      f.setAccessible(true);
      n += ((MutableCounterLong) f.get(m)).value();
    }
    return n;
  }

  static byte[] random(int len, int seed) {
    byte[] b = new byte[len];
    new Random(seed).nextBytes(b);
    return b;
  }

  @Test
  void flushAndFuaHsyncTheWal() throws Exception {
    assertEquals("asyncfs", util.getConfiguration().get("hbase.wal.provider", "asyncfs"));
    VolumeCatalog catalog = new VolumeCatalog(util.getConnection());
    catalog.create("durable", 4096, 4096, "SHA-256", 2);
    try (HBaseVolume v = HBaseVolume.open(util.getConnection(), "durable")) {
      for (int i = 0; i < 16; i++) {
        v.write(i * 250L, random(4096, i), false).join();
      }
      long beforeFlush = fsyncs();
      v.flush().join();
      long afterFlush = fsyncs();
      assertTrue(afterFlush > beforeFlush,
          "FLUSH must hsync the WAL: DataNode fsyncs " + beforeFlush + " -> " + afterFlush);
      long beforeFua = fsyncs();
      v.write(4000, random(4096, 99), true).join();
      long afterFua = fsyncs();
      assertTrue(afterFua > beforeFua,
          "a FUA write must hsync: DataNode fsyncs " + beforeFua + " -> " + afterFua);
      long beforeZero = fsyncs();
      v.writeZeroes(0, 1, true).join();
      assertTrue(fsyncs() > beforeZero, "write-zeroes with FUA must hsync");
      for (int i = 1; i < 16; i++) {
        assertArrayEquals(random(4096, i), v.read(i * 250L, 1).join());
      }
      assertArrayEquals(new byte[4096], v.read(0, 1).join());
    }
    try (HBaseVolume v = HBaseVolume.open(util.getConnection(), "durable")) {
      assertTrue(v.mountRootMatchesRecorded(), "sync markers are not blocks");
      assertArrayEquals(random(4096, 99), v.read(4000, 1).join());
    }
  }

  /**
   * review: a non-FUA TRIM deletes a block (in the WAL, not yet hsynced); a later WRITE_ZEROES
   * with FUA of that block finds it already empty in the tree and sends nothing, so it is
   * acknowledged without any hsync: after a power loss the block could read its old data
   * although a FUA zeroing was acknowledged.
   */
  @Test
  void fuaWriteZeroesOfAnAlreadyTrimmedBlockHsyncs() throws Exception {
    VolumeCatalog catalog = new VolumeCatalog(util.getConnection());
    catalog.create("fuazero", 4096, 4096, "SHA-256", 2);
    try (HBaseVolume v = HBaseVolume.open(util.getConnection(), "fuazero")) {
      v.write(7, random(4096, 7), false).join();
      v.flush().join();
      v.trim(7, 1).join(); // hflushed only
      long before = fsyncs();
      v.writeZeroes(7, 1, true).join();
      assertTrue(fsyncs() > before, "write-zeroes with FUA acknowledged without an hsync");
      assertArrayEquals(new byte[4096], v.read(7, 1).join());
    }
  }
}
