package io.salus.it.salus;

import static io.salus.it.salus.SalusRegionRecoveryTest.BLOCK;
import static org.junit.jupiter.api.Assertions.*;

import io.salus.blockdriver.salus.SalusVolume;
import io.salus.core.hbase.SalusStoreQuarantine;
import io.salus.core.hbase.SalusTableLayout;
import io.salus.core.hbase.VolumeGeometry;
import java.util.Map;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.RegionInfo;
import org.apache.hadoop.hbase.regionserver.HRegion;
import org.apache.hadoop.hbase.regionserver.HStore;
import org.apache.hadoop.hbase.regionserver.HStoreFile;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * What a Salus replica region's open reads of its store files (issue 27: at 8 GiB written, reading every store file
 * whole at every open was the largest part of a restart). An open asks the NameNode about the files' blocks; it reads
 * them whole only when the region is marked ({@link SalusStoreQuarantine#markForCheck}: a damaged read, or an open
 * that did not finish), and clears the mark when it finishes. Damage the NameNode knows (a client's read reported it)
 * is moved aside without a read.
 */
@OnSharedSalusCluster
class SalusStoreCheckMarkTest {
  static SalusMiniCluster cluster;

  @BeforeAll
  static void start() throws Exception {
    cluster = SalusMiniCluster.shared();
  }

  @Test
  void anOpenReadsItsStoreFilesWholeOnlyWhenMarkedAndDamageTheNameNodeKnowsIsMovedAsideUnread() throws Exception {
    VolumeGeometry g = new VolumeGeometry("ckmark", SalusRegionRecoveryTest.REGIONS * SalusRegionRecoveryTest.PER_REGION
        * BLOCK, BLOCK, SalusRegionRecoveryTest.PER_REGION);
    cluster.createVolume(g);
    int n = 40;
    byte[] want;
    try (SalusVolume v = SalusVolume.open(cluster.connection(), g.volume())) {
      SalusRegionRecoveryTest.Workload w = new SalusRegionRecoveryTest.Workload(g, v, n, 8);
      assertEquals("", w.finish());
      want = w.expected();
    }
    DistributedFileSystem fs = cluster.util.getDFSCluster().getFileSystem();
    var conf = cluster.util.getConfiguration();
    try (Admin admin = cluster.connection().getAdmin()) {
      admin.flush(SalusTableLayout.tableName(g.volume(), 2));
    }
    HRegion region = cluster.region(g, 1, 2);
    RegionInfo ri = region.getRegionInfo();
    Path mark = SalusStoreQuarantine.checkMark(conf, ri.getTable(), ri.getEncodedName());
    Path opening = SalusStoreQuarantine.openingMark(conf, ri.getTable(), ri.getEncodedName());
    assertFalse(fs.exists(mark) || fs.exists(opening), "no mark after the region's open finished: " + opening);
    long storeBytes = storeFileBytes(region);
    assertTrue(storeBytes > 0, "replica 1/2 has store files");

    // unmarked: the reopen asks the NameNode only
    Map<String, Long> before = SalusStoreQuarantine.counters();
    reopen(g, 1, 2);
    Map<String, Long> after = SalusStoreQuarantine.counters();
    assertEquals(before.get("checkedBytes"), after.get("checkedBytes"), "an unmarked open read no store file: "
        + before + " -> " + after);
    assertEquals(before.get("opensRead"), after.get("opensRead"), after.toString());
    assertTrue(after.get("opensNotRead") > before.get("opensNotRead"), after.toString());
    assertFalse(fs.exists(mark) || fs.exists(opening), "the finished open cleared its marks");

    // marked (as a damaged read marks it): the reopen reads every store file whole, then clears the mark
    region = cluster.region(g, 1, 2);
    storeBytes = storeFileBytes(region);
    SalusStoreQuarantine.markForCheck(fs, conf, ri.getTable(), ri.getEncodedName());
    before = SalusStoreQuarantine.counters();
    reopen(g, 1, 2);
    after = SalusStoreQuarantine.counters();
    assertTrue(after.get("opensRead") > before.get("opensRead"), "the marked open read its files: " + after);
    assertTrue(after.get("checkedBytes") - before.get("checkedBytes") >= storeBytes,
        "read at least the region's " + storeBytes + " store file bytes: " + before + " -> " + after);
    assertEquals(before.get("quarantinedRegions"), after.get("quarantinedRegions"), "nothing damaged, nothing moved");
    assertFalse(fs.exists(mark) || fs.exists(opening), "the finished open cleared its marks");

    // an open that did not finish (a server killed mid-open) leaves its opening mark: the next open reads every file
    assertTrue(fs.mkdirs(opening));
    before = SalusStoreQuarantine.counters();
    reopen(g, 1, 2);
    after = SalusStoreQuarantine.counters();
    assertTrue(after.get("opensRead") > before.get("opensRead"), "an unfinished open's mark: files read " + after);
    assertFalse(fs.exists(mark) || fs.exists(opening), "the finished open cleared its marks");

    // damage the NameNode knows (a reader reported its checksum failure): moved aside at the next open, unread
    region = cluster.region(g, 1, 2);
    Path victim = null;
    int dn = cluster.dataNodeOf(cluster.locate(g, 1, 2));
    for (HStore store : region.getStores()) {
      for (HStoreFile sf : store.getStorefiles()) {
        if (victim == null) {
          victim = sf.getPath();
        }
      }
    }
    assertNotNull(victim, "a store file of replica 1/2");
    for (LocatedBlock lb : fs.getClient().getLocatedBlocks(victim.toUri().getPath(), 0, Long.MAX_VALUE)
        .getLocatedBlocks()) {
      cluster.util.getDFSCluster().corruptReplica(dn, lb.getBlock());
    }
    try (FSDataInputStream in = fs.open(victim)) {
      byte[] buf = new byte[1 << 16];
      Path v = victim;
      assertThrows(java.io.IOException.class, () -> {
        while (in.read(buf) > 0) {
          // reads to the damage
        }
      }, "the damaged copy of " + v + " fails its checksum");
    }
    final Path damaged = victim;
    SalusRegionRecoveryTest.awaitTrue(() -> "the NameNode lists a block of " + damaged + " as corrupt", () -> {
      try {
        return fs.getClient().getLocatedBlocks(damaged.toUri().getPath(), 0, Long.MAX_VALUE).getLocatedBlocks()
            .stream().anyMatch(LocatedBlock::isCorrupt);
      } catch (java.io.IOException e) {
        return false;
      }
    });
    before = SalusStoreQuarantine.counters();
    reopen(g, 1, 2);
    after = SalusStoreQuarantine.counters();
    assertEquals(before.get("opensRead"), after.get("opensRead"), "unmarked: no file read " + after);
    assertEquals(before.get("quarantinedRegions") + 1, after.get("quarantinedRegions"),
        "the NameNode's corrupt block moved the region's files aside: " + after);
    assertFalse(fs.exists(damaged), damaged + " moved aside");
    cluster.awaitPlaced(g);
    try (SalusVolume v = SalusVolume.open(cluster.connection(), g.volume())) {
      SalusRegionRecoveryTest.assertVolume(want, v.read(0, (int) g.numBlocks())
          .get(SalusMiniCluster.DEADLINE_MS, java.util.concurrent.TimeUnit.MILLISECONDS), "after the reopens");
    }
  }

  private static long storeFileBytes(HRegion region) {
    long b = 0;
    for (HStore store : region.getStores()) {
      for (HStoreFile sf : store.getStorefiles()) {
        b += sf.getReader().length();
      }
    }
    return b;
  }

  /** Closes and assigns replica region {@code r}/{@code k} and waits until its replica serves again. */
  private static void reopen(VolumeGeometry g, int r, int k) throws Exception {
    HRegion region = cluster.region(g, r, k);
    try (Admin admin = cluster.connection().getAdmin()) {
      admin.unassign(region.getRegionInfo().getRegionName(), true);
      admin.assign(region.getRegionInfo().getRegionName());
    }
    SalusRegionRecoveryTest.awaitTrue(() -> "replica " + r + "/" + k + " serving after its reopen",
        () -> cluster.region(g, r, k) != region && cluster.locate(g, r, k) != null);
  }
}
