package io.salus.it.volume;

import static org.junit.jupiter.api.Assertions.*;

import io.salus.blockdriver.cli.SalusCli;
import io.salus.blockdriver.metrics.BlockDriverMetrics;
import io.salus.blockdriver.volume.BlockCorruptedException;
import io.salus.blockdriver.volume.HBaseVolume;
import io.salus.blockdriver.volume.VolumeCatalog;
import io.salus.blockdriver.volume.VolumeException;
import io.salus.blockdriver.volume.VolumeInfo;
import io.salus.blockdriver.volume.VolumeLease;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.hadoop.hbase.zookeeper.ZKConfig;
import org.apache.zookeeper.ZooKeeper;
import java.io.File;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.Random;
import java.util.concurrent.CompletionException;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.RegionInfo;
import org.apache.hadoop.hbase.util.EnvironmentEdge;
import org.apache.hadoop.hbase.util.EnvironmentEdgeManager;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.util.Bytes;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Volume catalog, plain-HBase volume and its end-to-end checks on one HBase mini cluster. */
class HBaseVolumeTest {
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

  @Test
  void catalogValidatesNamesSizesAndClashes() throws Exception {
    VolumeInfo info = catalog.create("cat1", 1000, 4096);
    assertEquals(4096, info.blockSize());
    assertEquals(1000, info.sizeInBlocks());
    assertNotNull(info.created());
    assertEquals("hbase", info.kind());
    IllegalArgumentException clash = assertThrows(IllegalArgumentException.class,
        () -> catalog.create("cat1", 10, 4096));
    assertTrue(clash.getMessage().contains("already exists"), clash.getMessage());
    assertEquals(1000, catalog.require("cat1").sizeInBlocks(), "clash must not overwrite");
    assertThrows(IllegalArgumentException.class, () -> catalog.create("bad name!", 10, 4096));
    assertThrows(IllegalArgumentException.class, () -> catalog.create("", 10, 4096));
    assertThrows(IllegalArgumentException.class, () -> catalog.create("x".repeat(65), 10, 4096));
    assertThrows(IllegalArgumentException.class, () -> catalog.create("okname", 0, 4096));
    assertThrows(IllegalArgumentException.class, () -> catalog.create("okname", 10, 3000));
    assertThrows(IllegalArgumentException.class, () -> catalog.create("okname", 10, 1 << 19));
    assertTrue(catalog.describe("okname").isEmpty());
    VolumeInfo b3 = catalog.create("cat2", 64, 512, "BLAKE3", 4);
    assertEquals(4, b3.regions());
    assertEquals(4, hbase.connection().getAdmin()
        .getRegions(TableName.valueOf(b3.table())).size());
    assertTrue(catalog.list().stream().anyMatch(v -> v.name().equals("cat2")));
    assertTrue(catalog.delete("cat1"));
    assertFalse(catalog.delete("cat1"));
    assertTrue(catalog.describe("cat1").isEmpty());
    assertFalse(hbase.connection().getAdmin().tableExists(VolumeCatalog.dataTable("cat1")));
  }

  @Test
  void readWriteTrimZeroAndRemount() throws Exception {
    catalog.create("rw", 4096, 4096, "SHA-256", 2);
    byte[] root;
    byte[] d = random(64 * 4096, 1);
    try (HBaseVolume v = HBaseVolume.open(hbase.connection(), "rw")) {
      assertArrayEquals(new byte[8 * 4096], v.read(100, 8).join(), "unwritten reads zeros");
      v.write(2040, d, false).join(); // crosses the region boundary at block 2048
      assertArrayEquals(d, v.read(2040, 64).join());
      v.write(10, new byte[4096], true).join();
      v.trim(2050, 4).join();
      v.writeZeroes(2060, 2, false).join();
      byte[] back = v.read(2040, 64).join();
      byte[] want = d.clone();
      Arrays.fill(want, 10 * 4096, 14 * 4096, (byte) 0);
      Arrays.fill(want, 20 * 4096, 22 * 4096, (byte) 0);
      assertArrayEquals(want, back);
      CompletionException e = assertThrows(CompletionException.class,
          () -> v.read(4095, 2).join());
      assertTrue(e.getCause() instanceof VolumeException.OutOfRange);
      v.flush().join();
      root = v.tree().root();
      assertTrue(v.metrics().blocksVerified.sum() > 0);
    }
    // trimmed/zeroed blocks use no storage
    try (Table t = hbase.connection().getTable(VolumeCatalog.dataTable("rw"))) {
      assertTrue(t.get(new Get(Bytes.toBytes(2050L))).isEmpty());
      assertTrue(t.get(new Get(Bytes.toBytes(10L))).isEmpty());
      assertFalse(t.get(new Get(Bytes.toBytes(2040L))).isEmpty());
    }
    VolumeInfo info = catalog.require("rw");
    assertArrayEquals(root, info.rootHash());
    assertTrue(info.cleanClose());
    try (HBaseVolume v = HBaseVolume.open(hbase.connection(), "rw")) {
      assertTrue(v.mountRootMatchesRecorded());
      assertArrayEquals(root, v.tree().root(), "mount rebuilds the same volume tree");
      byte[] back = v.read(2040, 10).join();
      assertArrayEquals(Arrays.copyOf(d, 10 * 4096), back);
    }
  }

  /**
   * A delete never hides a later write: zero-then-write on one block in a tight loop (the
   * delete and the put often fall in the same millisecond), then across a region reopen on a
   * region server whose clock is 60 s behind (as after a move to a skewed host; the mini
   * cluster runs in this JVM, so its clock is the injected {@link EnvironmentEdge}), then after
   * a flush and a major compaction, and after a remount.
   */
  @Test
  void aDeleteNeverHidesALaterWrite() throws Exception {
    catalog.create("zw", 1024, 4096);
    TableName tn = VolumeCatalog.dataTable("zw");
    byte[] last7 = null;
    byte[] last8 = null;
    try (HBaseVolume v = HBaseVolume.open(hbase.connection(), "zw")) {
      for (int i = 0; i < 300; i++) {
        last7 = random(4096, i);
        v.writeZeroes(7, 1, false).join();
        v.write(7, last7, false).join();
        assertArrayEquals(last7, v.read(7, 1).join(), "zero-then-write, iteration " + i);
        last8 = random(4096, 1000 + i);
        v.write(8, new byte[4096], false).join(); // an all-zero write is a delete too
        v.write(8, last8, false).join();
        assertArrayEquals(last8, v.read(8, 1).join(), "zero-write-then-write, iteration " + i);
      }
      v.write(9, random(4096, 4999), false).join();
      v.trim(9, 1).join();
      v.write(10, random(4096, 5000), false).join();
      long skew = 60_000;
      EnvironmentEdgeManager.injectEdge(() -> System.currentTimeMillis() - skew);
      try {
        reopenRegions(tn);
        byte[] d9 = random(4096, 5001);
        byte[] d10 = random(4096, 5002);
        v.write(9, d9, false).join();
        v.write(10, d10, false).join();
        assertArrayEquals(d9, v.read(9, 1).join(), "write after a trim, on a skewed clock");
        assertArrayEquals(d10, v.read(10, 1).join(), "overwrite on a skewed clock");
        hbase.util().flush(tn);
        hbase.util().compact(tn, true);
        assertArrayEquals(d9, v.read(9, 1).join(), "after major compaction");
        assertArrayEquals(d10, v.read(10, 1).join(), "after major compaction");
        assertArrayEquals(last7, v.read(7, 1).join());
        assertArrayEquals(last8, v.read(8, 1).join());
      } finally {
        EnvironmentEdgeManager.reset();
      }
    }
    try (HBaseVolume v = HBaseVolume.open(hbase.connection(), "zw")) {
      assertTrue(v.mountRootMatchesRecorded());
      assertArrayEquals(last7, v.read(7, 1).join());
      assertArrayEquals(last8, v.read(8, 1).join());
      assertArrayEquals(random(4096, 5001), v.read(9, 1).join());
      assertArrayEquals(random(4096, 5002), v.read(10, 1).join());
    }
  }

  /** Closes and reopens every region of {@code tn} (a move on a one-server cluster). */
  static void reopenRegions(TableName tn) throws Exception {
    Admin admin = hbase.util().getAdmin();
    for (RegionInfo ri : admin.getRegions(tn)) {
      admin.unassign(ri.getRegionName());
      admin.assign(ri.getRegionName());
    }
    hbase.util().waitUntilAllRegionsAssigned(tn);
    hbase.util().waitTableAvailable(tn);
  }

  /**
   * A root mismatch at mount stops the mount with a clear error and keeps the recorded root as
   * evidence; the operator's explicit option accepts the current state; sequence numbers only
   * grow across opens.
   */
  @Test
  void rootMismatchStopsTheMountAndSequenceNumbersOnlyGrow() throws Exception {
    catalog.create("evidence", 1024, 4096);
    try (HBaseVolume v = HBaseVolume.open(hbase.connection(), "evidence")) {
      v.write(0, random(8 * 4096, 3), false).join();
    }
    VolumeInfo closed = catalog.require("evidence");
    assertTrue(closed.rootSeq() >= 8, "seq counts the writes: " + closed.rootSeq());
    try (HBaseVolume v = HBaseVolume.open(hbase.connection(), "evidence")) {
      assertTrue(v.mountRootMatchesRecorded());
      assertTrue(catalog.require("evidence").rootSeq() >= closed.rootSeq(),
          "reopening must not lower the sequence number");
      v.write(8, random(4096, 4), false).join();
      v.flush().join();
    }
    VolumeInfo before = catalog.require("evidence");
    assertTrue(before.rootSeq() > closed.rootSeq());
    // forge block 2 behind the driver's back, consistently: data, hash and the persisted tree
    // nodes above it (a forged leaf alone is caught when the block is read; the mount reads
    // the stored subtree roots)
    try (Table t = hbase.connection().getTable(VolumeCatalog.dataTable("evidence"))) {
      forgeConsistently(t, 2, random(4096, 66), before.subtreeHeight());
    }
    for (int i = 0; i < 2; i++) { // refused every time, and the lease is released each time
      VolumeException.RootMismatch e = assertThrows(VolumeException.RootMismatch.class,
          () -> HBaseVolume.open(hbase.connection(), "evidence"));
      assertTrue(e.getMessage().contains("does not match the root recorded")
          && e.getMessage().contains("--accept-current-state"), e.getMessage());
    }
    VolumeInfo kept = catalog.require("evidence");
    assertArrayEquals(before.rootHash(), kept.rootHash(), "the evidence is kept");
    assertEquals(before.rootSeq(), kept.rootSeq());
    try (HBaseVolume v = HBaseVolume.open(hbase.connection(), "evidence", true)) {
      assertFalse(v.mountRootMatchesRecorded());
      VolumeInfo accepted = catalog.require("evidence");
      assertTrue(accepted.rootSeq() > before.rootSeq(), "accepted state gets a higher sequence");
      assertArrayEquals(random(4096, 66), v.read(2, 1).join());
    }
    try (HBaseVolume v = HBaseVolume.open(hbase.connection(), "evidence")) {
      assertTrue(v.mountRootMatchesRecorded());
    }
    assertTrue(catalog.require("evidence").rootSeq() > before.rootSeq());
  }

  /**
   * What a tamperer with write access to the table and knowledge of the format does: replaces a
   * block (data and leaf hash) and rewrites the persisted nodes of its subtree from the stored
   * leaves, each with a version newer than the stored cells (SHA-256, 4 KiB blocks).
   */
  static void forgeConsistently(Table t, long block, byte[] data, int h) throws Exception {
    long s = block >>> h;
    long first = s << h;
    byte[] rootRow = HBaseVolume.nodeRow(h, s);
    Result root = t.get(new Get(rootRow));
    long version = MiniHBase.newerVersion(t, block);
    if (!root.isEmpty()) {
      version = Math.max(version,
          root.getColumnLatestCell(HBaseVolume.FAMILY, HBaseVolume.NODE).getTimestamp() + 1);
    }
    byte[] leaf = io.salus.blockdriver.tree.TreeHashes.forName("SHA-256", 4096).leaf(data, 0);
    t.put(new Put(Bytes.toBytes(block), version)
        .addColumn(HBaseVolume.FAMILY, HBaseVolume.DATA, data)
        .addColumn(HBaseVolume.FAMILY, HBaseVolume.HASH, leaf));
    io.salus.core.merkle.MerkleTree rt = new io.salus.core.merkle.MerkleTree(
        io.salus.core.merkle.HashAlgorithm.SHA256, 4096, 1L << h);
    try (org.apache.hadoop.hbase.client.ResultScanner sc = t.getScanner(
        new org.apache.hadoop.hbase.client.Scan().withStartRow(Bytes.toBytes(first))
            .withStopRow(Bytes.toBytes(first + (1L << h)))
            .addColumn(HBaseVolume.FAMILY, HBaseVolume.HASH))) {
      for (Result r : sc) {
        rt.setLeaf(Bytes.toLong(r.getRow()) - first,
            io.salus.core.merkle.Hash.of(r.getValue(HBaseVolume.FAMILY, HBaseVolume.HASH)));
      }
    }
    java.util.List<Put> nodes = new java.util.ArrayList<>();
    for (int level = 1; level <= h; level++) {
      for (long i = 0; i < (1L << (h - level)); i++) {
        io.salus.core.merkle.Hash n = rt.store().get(level, i);
        if (n != null) {
          nodes.add(new Put(HBaseVolume.nodeRow(level, (s << (h - level)) | i), version)
              .addColumn(HBaseVolume.FAMILY, HBaseVolume.NODE, n.bytes()));
        }
      }
    }
    t.put(nodes);
  }

  /**
   * Close waits for the writes in flight before it records the clean root, so the next strict
   * mount matches and every acknowledged write is there.
   */
  @Test
  void closeWaitsForWritesInFlight() throws Exception {
    catalog.create("closing", 4096, 4096, "SHA-256", 2);
    List<CompletableFuture<Void>> writes = new ArrayList<>();
    HBaseVolume v = HBaseVolume.open(hbase.connection(), "closing");
    for (int i = 0; i < 64; i++) {
      writes.add(v.write(i * 37L, random(4 * 4096, 100 + i), false));
    }
    v.close();
    for (CompletableFuture<Void> w : writes) {
      assertTrue(w.isDone() && !w.isCompletedExceptionally(), "write finished before close");
    }
    assertTrue(catalog.require("closing").cleanClose());
    try (HBaseVolume again = HBaseVolume.open(hbase.connection(), "closing")) {
      assertTrue(again.mountRootMatchesRecorded());
      for (int i = 0; i < 64; i++) {
        assertArrayEquals(random(4 * 4096, 100 + i), again.read(i * 37L, 4).join());
      }
    }
  }

  /**
   * A failure while opening releases the writer lease (and the connection): a catalog entry
   * naming an unknown hash fails the open, and the volume is not left "in use".
   */
  @Test
  void failedOpenReleasesTheLease() throws Exception {
    catalog.create("badhash", 64, 4096);
    try (Table t = hbase.connection().getTable(VolumeCatalog.CATALOG_TABLE)) {
      t.put(new Put(Bytes.toBytes("badhash"))
          .addColumn(Bytes.toBytes("m"), Bytes.toBytes("hash"), Bytes.toBytes("MD5")));
    }
    assertThrows(IllegalArgumentException.class,
        () -> HBaseVolume.open(hbase.connection(), "badhash"));
    assertTrue(VolumeLease.holder(hbase.conf(), "badhash").isEmpty(),
        "a failed open must not keep the lease");
    assertTrue(catalog.delete("badhash"));
  }

  /**
   * A data table left without a catalog entry makes create fail with the fix; the claimed
   * catalog row is undone, so the suggested retry (drop the table, create again) works.
   */
  @Test
  void createWithOrphanTableUndoesItsClaimSoTheRetryWorks() throws Exception {
    TableName orphan = VolumeCatalog.dataTable("orphan");
    catalog.ensureCatalog();
    Admin admin = hbase.util().getAdmin();
    admin.createTable(org.apache.hadoop.hbase.client.TableDescriptorBuilder.newBuilder(orphan)
        .setColumnFamily(org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder.of("b"))
        .build());
    IllegalStateException e = assertThrows(IllegalStateException.class,
        () -> catalog.create("orphan", 64, 4096));
    assertTrue(e.getMessage().contains("exists without a catalog entry"), e.getMessage());
    assertTrue(catalog.describe("orphan").isEmpty(), "no claimed row is left behind");
    admin.disableTable(orphan);
    admin.deleteTable(orphan);
    assertEquals(64, catalog.create("orphan", 64, 4096).sizeInBlocks());
  }

  @Test
  void overlappingConcurrentWritesKeepTreeAndStorageInStep() throws Exception {
    catalog.create("overlap", 256, 4096);
    try (HBaseVolume v = HBaseVolume.open(hbase.connection(), "overlap")) {
      java.util.List<java.util.concurrent.CompletableFuture<Void>> fs = new java.util.ArrayList<>();
      java.util.Set<String> candidates = new java.util.HashSet<>();
      candidates.add(java.util.Arrays.toString(new byte[4096]));
      for (int i = 0; i < 60; i++) {
        // single blocks and ranges overlapping on block 7, all in flight at once
        int n = 1 + i % 3;
        long first = i % 3 == 2 ? 6 : 7;
        byte[] d = random(n * 4096, 100 + i);
        candidates.add(java.util.Arrays.toString(
            Arrays.copyOfRange(d, (int) (7 - first) * 4096, (int) (8 - first) * 4096)));
        fs.add(v.write(first, d, false));
        if (i % 10 == 9) {
          fs.add(v.writeZeroes(7, 1, false));
        }
      }
      for (var f : fs) {
        f.join();
      }
      // NBD leaves the outcome of concurrent overlapping writes open, but the block must hold
      // one of them and must verify against the tree (no false corruption)
      byte[] got = v.read(7, 1).join();
      assertTrue(candidates.contains(java.util.Arrays.toString(got)));
      assertEquals(0, v.metrics().verificationFailures.sum());
      // sequential writes after that are exact
      byte[] d = random(3 * 4096, 999);
      v.write(6, d, true).join();
      assertArrayEquals(d, v.read(6, 3).join());
      v.writeZeroes(7, 1, false).join();
      assertArrayEquals(new byte[4096], v.read(7, 1).join());
    }
  }

  @Test
  void corruptedBlockIsNeverReturned() throws Exception {
    catalog.create("corrupt", 512, 4096);
    TableName table = VolumeCatalog.dataTable("corrupt");
    long before = BlockDriverMetrics.GLOBAL.verificationFailures.sum();
    try (HBaseVolume v = HBaseVolume.open(hbase.connection(), "corrupt");
        Table t = hbase.connection().getTable(table)) {
      byte[] d = random(16 * 4096, 2);
      v.write(0, d, true).join();
      // flip one byte of block 5 behind the driver's back
      Result r = t.get(new Get(Bytes.toBytes(5L)));
      byte[] data = r.getValue(HBaseVolume.FAMILY, HBaseVolume.DATA).clone();
      data[100] ^= 0x40;
      long v5 = MiniHBase.newerVersion(t, 5);
      t.put(new Put(Bytes.toBytes(5L), v5).addColumn(HBaseVolume.FAMILY, HBaseVolume.DATA, data));
      CompletionException e = assertThrows(CompletionException.class, () -> v.read(5, 1).join());
      assertTrue(e.getCause() instanceof BlockCorruptedException, e.toString());
      assertThrows(CompletionException.class, () -> v.read(0, 16).join());
      assertArrayEquals(Arrays.copyOfRange(d, 6 * 4096, 16 * 4096), v.read(6, 10).join());
      assertArrayEquals(Arrays.copyOfRange(d, 0, 5 * 4096), v.read(0, 5).join());
      // consistent forgery (data and stored hash both replaced) is caught by the tree too
      byte[] forged = random(4096, 77);
      t.put(new Put(Bytes.toBytes(7L), v5)
          .addColumn(HBaseVolume.FAMILY, HBaseVolume.DATA, forged)
          .addColumn(HBaseVolume.FAMILY, HBaseVolume.HASH, v.tree().leafHash(forged, 0)));
      assertThrows(CompletionException.class, () -> v.read(7, 1).join());
      // a block that should be empty but appears in storage
      t.put(new Put(Bytes.toBytes(300L), v5)
          .addColumn(HBaseVolume.FAMILY, HBaseVolume.DATA, forged));
      assertThrows(CompletionException.class, () -> v.read(300, 1).join());
      assertEquals(4, v.metrics().verificationFailures.sum(), "each failed block is counted");
      // rewriting the block repairs it
      v.write(5, Arrays.copyOfRange(d, 5 * 4096, 6 * 4096), false).join();
      assertArrayEquals(Arrays.copyOfRange(d, 5 * 4096, 6 * 4096), v.read(5, 1).join());
    }
    assertTrue(BlockDriverMetrics.GLOBAL.verificationFailures.sum() - before >= 4);
  }

  @Test
  void cliCreatesListsDescribesDeletes(@TempDir Path tmp) throws Exception {
    File conf = tmp.resolve("conf").toFile();
    hbase.writeSiteXml(conf);
    String c = conf.getAbsolutePath();
    // salus is the default kind: on this plain cluster (no placement observer) create says so and creates nothing
    Run dflt = cli("volume", "create", "clivol", "--size", "64M", "--hbase-conf", c);
    assertEquals(2, dflt.code, dflt.out + dflt.err);
    assertTrue(dflt.err.contains("cannot create salus volume clivol") && dflt.err.contains("SalusPlacementObserver")
        && dflt.err.contains("--kind hbase") && dflt.err.contains("Nothing was created"), dflt.err);
    assertFalse(cli("volume", "list", "--hbase-conf", c).out.contains("clivol"), "nothing in the catalog");
    Run ok = cli("volume", "create", "clivol", "--kind", "hbase", "--size", "64M", "--hbase-conf", c);
    assertEquals(0, ok.code, ok.err);
    assertTrue(ok.out.contains("created volume clivol"), ok.out);
    Run clash = cli("volume", "create", "clivol", "--kind", "hbase", "--size", "64M", "--hbase-conf", c);
    assertEquals(2, clash.code);
    assertTrue(clash.err.contains("already exists"), clash.err);
    Run badName = cli("volume", "create", "no/slash", "--size", "1M", "--hbase-conf", c);
    assertEquals(2, badName.code);
    assertTrue(badName.err.contains("bad volume name"), badName.err);
    Run badSize = cli("volume", "create", "x1", "--size", "1000", "--hbase-conf", c);
    assertEquals(2, badSize.code);
    assertTrue(badSize.err.contains("not a multiple of the block size"), badSize.err);
    Run badBs = cli("volume", "create", "x1", "--size", "1M", "--block-size", "1000",
        "--hbase-conf", c);
    assertEquals(2, badBs.code);
    assertTrue(badBs.err.contains("bad block size"), badBs.err);
    Run list = cli("volume", "list", "--hbase-conf", c);
    assertEquals(0, list.code, list.err);
    assertTrue(list.out.contains("clivol"), list.out);
    Run desc = cli("volume", "describe", "clivol", "--hbase-conf", c);
    assertEquals(0, desc.code, desc.err);
    assertTrue(desc.out.contains("67108864 bytes (16384 blocks)"), desc.out);
    Run missing = cli("volume", "describe", "nothere", "--hbase-conf", c);
    assertEquals(2, missing.code);
    assertTrue(missing.err.contains("no volume named 'nothere'"), missing.err);
    Run nbdMissing = cli("nbd", "--volume", "nothere", "--port", "0", "--hbase-conf", c);
    assertEquals(2, nbdMissing.code);
    assertTrue(nbdMissing.err.contains("no volume named 'nothere'"), nbdMissing.err);
    Run nbdPort = cli("nbd", "--volume", "clivol", "--port", "70000", "--hbase-conf", c);
    assertEquals(2, nbdPort.code);
    assertTrue(nbdPort.err.contains("bad port"), nbdPort.err);
    // the server behind 'salus nbd' (the command itself blocks until Ctrl-C)
    try (io.salus.blockdriver.cli.NbdCommand.Running r =
        io.salus.blockdriver.cli.NbdCommand.serve("clivol", "127.0.0.1", 0, conf)) {
      String info = io.salus.it.nbd.Tools.run(60, "nbdinfo", r.server.uri("clivol"))
          .requireSuccess("nbdinfo").output();
      assertTrue(info.contains("export-size: 67108864"), info);
    }
    Run noConf = cli("volume", "list", "--hbase-conf", tmp.resolve("nowhere").toString());
    assertEquals(2, noConf.code);
    assertTrue(noConf.err.contains("hbase-site.xml"), noConf.err);
    Run del = cli("volume", "delete", "clivol", "--hbase-conf", c);
    assertEquals(0, del.code, del.err);
    assertTrue(catalog.describe("clivol").isEmpty());
  }

  record Run(int code, String out, String err) {}

  /**
   * Ends the lease holder's ZooKeeper session on the server, the way HBase's own tests expire a
   * session: a second client attaches to the same session and closes it. The holder's client can
   * take the session back before the close is sent, so this repeats until a separate client sees
   * the ephemeral lease znode gone.
   */
  static void expireSession(String quorum, VolumeLease lease, String leasePath) throws Exception {
    try (CuratorFramework observer = CuratorFrameworkFactory.newClient(quorum,
        new ExponentialBackoffRetry(200, 3))) {
      observer.start();
      for (int attempt = 0; attempt < 10; attempt++) {
        java.util.concurrent.CountDownLatch connected = new java.util.concurrent.CountDownLatch(1);
        ZooKeeper dup = new ZooKeeper(quorum, 20_000, event -> {
          if (event.getState() == org.apache.zookeeper.Watcher.Event.KeeperState.SyncConnected) {
            connected.countDown();
          }
        }, lease.sessionId(), lease.sessionPassword());
        connected.await(10, TimeUnit.SECONDS);
        dup.close();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
        while (System.nanoTime() < deadline) {
          if (observer.checkExists().forPath(leasePath) == null) {
            return;
          }
          Thread.sleep(50);
        }
      }
      fail("could not expire the lease holder's ZooKeeper session");
    }
  }

  static Run cli(String... args) {
    java.io.StringWriter out = new java.io.StringWriter();
    java.io.StringWriter err = new java.io.StringWriter();
    picocli.CommandLine cl = new picocli.CommandLine(new SalusCli());
    cl.setOut(new java.io.PrintWriter(out));
    cl.setErr(new java.io.PrintWriter(err));
    int code = cl.execute(args);
    return new Run(code, out.toString(), err.toString());
  }

  /**
   * One writer per volume: a second open and a delete are refused naming the holder; when the
   * holder's ZooKeeper session expires (injected by closing a duplicate of the session) the
   * volume is fenced and another writer can take it; a stale lease of a dead local process is
   * removed at open.
   */
  @Test
  void singleWriterLeaseRefusesSecondWriterAndFencesOnSessionLoss() throws Exception {
    catalog.create("leased", 256, 4096, "SHA-256", 1);
    String quorum = ZKConfig.getZKQuorumServersString(hbase.conf());
    try (HBaseVolume first = HBaseVolume.open(hbase.connection(), "leased")) {
      first.write(0, random(4096, 11), false).join();
      first.flush().join(); // recorded: the next writer's mount must match it
      VolumeException.InUse second = assertThrows(VolumeException.InUse.class,
          () -> HBaseVolume.open(hbase.connection(), "leased"));
      assertTrue(second.getMessage().contains("pid=" + ProcessHandle.current().pid()),
          second.getMessage());
      assertThrows(VolumeException.InUse.class, () -> catalog.delete("leased"));
      assertTrue(catalog.describe("leased").isPresent(), "refused delete must not delete");

      expireSession(quorum, first.lease(), VolumeLease.ROOT + "/leased/writer");
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      while (first.lease().isHeld() && System.nanoTime() < deadline) {
        Thread.sleep(100);
      }
      assertFalse(first.lease().isHeld(), "session loss must be noticed");
      CompletionException fenced = assertThrows(CompletionException.class,
          () -> first.write(1, random(4096, 12), false).join());
      assertTrue(fenced.getCause() instanceof VolumeException.Closed, fenced.toString());
      assertThrows(CompletionException.class, () -> first.read(0, 1).join());

      try (HBaseVolume next = HBaseVolume.open(hbase.connection(), "leased")) {
        assertArrayEquals(random(4096, 11), next.read(0, 1).join());
        next.write(1, random(4096, 13), false).join();
      }
    }
    // a lease left behind by a process of this host that no longer runs is taken over
    Process gone = new ProcessBuilder("true").start();
    gone.waitFor();
    try (CuratorFramework zk = CuratorFrameworkFactory.newClient(quorum,
        new ExponentialBackoffRetry(200, 3))) {
      zk.start();
      zk.create().creatingParentContainersIfNeeded().forPath(
          VolumeLease.ROOT + "/leased/writer",
          (InetAddress.getLocalHost().getHostName() + " pid=" + gone.pid() + " since=then")
              .getBytes(StandardCharsets.UTF_8));
    }
    try (HBaseVolume again = HBaseVolume.open(hbase.connection(), "leased")) {
      assertArrayEquals(random(4096, 13), again.read(1, 1).join());
    }
    assertTrue(catalog.delete("leased"), "delete works once no writer holds the lease");
  }
  /**
   * review: a writer that has lost its lease but has not yet seen the loss (a process paused
   * between admitting a FLUSH and recording its root, e.g. by a GC pause longer than the
   * session timeout) must not record its root over the next writer's. The catalog accepted any
   * record with a higher sequence number, so the stale writer's root replaced the new writer's:
   * the new writer's FLUSH then failed ("below the recorded sequence") and its next mount was
   * refused with a root mismatch. The not-yet-noticed loss is modelled by setting the stale
   * lease's flags back to held (the state a paused process still has in memory).
   */
  @Test
  void writerThatHasNotSeenItsLeaseLossCannotRecordItsRoot() throws Exception {
    catalog.create("stale", 256, 4096, "SHA-256", 1);
    String quorum = ZKConfig.getZKQuorumServersString(hbase.conf());
    HBaseVolume first = HBaseVolume.open(hbase.connection(), "stale");
    try {
      for (int i = 0; i < 30; i++) {
        first.write(i, random(4096, 100 + i), false).join();
      }
      expireSession(quorum, first.lease(), VolumeLease.ROOT + "/stale/writer");
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      while (first.lease().isHeld() && System.nanoTime() < deadline) {
        Thread.sleep(100);
      }
      try (HBaseVolume next = HBaseVolume.open(hbase.connection(), "stale",
          true /* the first writer's unflushed writes landed */)) {
        next.write(40, random(4096, 40), false).join();
        next.flush().join();
        // the first writer resumes, still believing it holds the lease
        java.lang.reflect.Field held = VolumeLease.class.getDeclaredField("held");
        held.setAccessible(true);
        held.setBoolean(first.lease(), true);
        java.lang.reflect.Field suspended = VolumeLease.class.getDeclaredField("suspended");
        suspended.setAccessible(true);
        suspended.setBoolean(first.lease(), false);
        assertThrows(CompletionException.class, () -> first.flush().join(),
            "a writer whose lease was taken over recorded its root");
        held.setBoolean(first.lease(), false);
        next.write(41, random(4096, 41), false).join();
        next.flush().join();
      }
      try (HBaseVolume again = HBaseVolume.open(hbase.connection(), "stale")) {
        assertTrue(again.mountRootMatchesRecorded());
        assertArrayEquals(random(4096, 41), again.read(41, 1).join());
      }
    } finally {
      first.close();
    }
  }
  /**
   * review: a write spanning two regions fails because one region is offline, after the rows of
   * the other region were stored. The tree keeps the old leaves (both contents stay readable),
   * and the clean close records that old root although storage holds the new blocks: the next
   * mount, after a clean close and with nothing changed outside the driver, is refused with a
   * root mismatch.
   */
  @Test
  void partlyAppliedFailedWriteDoesNotBreakTheNextMount() throws Exception {
    catalog.create("partial", 256, 4096, "SHA-256", 2);
    TableName tn = TableName.valueOf(catalog.require("partial").table());
    org.apache.hadoop.conf.Configuration c = new org.apache.hadoop.conf.Configuration(hbase.conf());
    c.setInt("hbase.client.retries.number", 1);
    c.setLong("hbase.client.pause", 50);
    c.setInt("hbase.client.operation.timeout", 4000);
    try (org.apache.hadoop.hbase.client.Connection conn =
        org.apache.hadoop.hbase.client.ConnectionFactory.createConnection(c)) {
      try (HBaseVolume v = HBaseVolume.open(conn, "partial")) {
        v.write(0, random(256 * 4096, 1), false).join();
        Admin admin = hbase.util().getAdmin();
        RegionInfo second = null;
        for (RegionInfo ri : admin.getRegions(tn)) {
          if (ri.getStartKey().length > 0) {
            second = ri;
          }
        }
        admin.unassign(second.getRegionName());
        assertThrows(CompletionException.class,
            () -> v.write(0, random(256 * 4096, 2), false).join());
        admin.assign(second.getRegionName());
        hbase.util().waitUntilAllRegionsAssigned(tn);
        hbase.util().waitTableAvailable(tn);
      }
    }
    try (HBaseVolume again = HBaseVolume.open(hbase.connection(), "partial")) {
      assertTrue(again.mountRootMatchesRecorded());
    }
  }
  /**
   * review: a writer that lost its lease but has not noticed yet (paused past the session
   * timeout) still acknowledges data writes: the fence is only the client's own view of the
   * lease, and a put carries no writer epoch the store could check. The acknowledged write is
   * then unknown to the next writer's tree (a read of it fails verification) and is lost. Not
   * fixed: it needs a server-side epoch check on every batch (e.g. a conditional mutation or a
   * region observer comparing the writer epoch).
   */
  @org.junit.jupiter.api.Disabled("review finding: a writer that has not noticed its lease loss"
      + " still acknowledges writes")
  @Test
  void writerThatHasNotSeenItsLeaseLossDoesNotAcknowledgeWrites() throws Exception {
    catalog.create("stale2", 256, 4096, "SHA-256", 1);
    String quorum = ZKConfig.getZKQuorumServersString(hbase.conf());
    HBaseVolume first = HBaseVolume.open(hbase.connection(), "stale2");
    try {
      first.write(0, random(4096, 1), false).join();
      first.flush().join();
      expireSession(quorum, first.lease(), VolumeLease.ROOT + "/stale2/writer");
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      while (first.lease().isHeld() && System.nanoTime() < deadline) {
        Thread.sleep(100);
      }
      try (HBaseVolume next = HBaseVolume.open(hbase.connection(), "stale2")) {
        java.lang.reflect.Field held = VolumeLease.class.getDeclaredField("held");
        held.setAccessible(true);
        held.setBoolean(first.lease(), true);
        java.lang.reflect.Field suspended = VolumeLease.class.getDeclaredField("suspended");
        suspended.setAccessible(true);
        suspended.setBoolean(first.lease(), false);
        assertThrows(CompletionException.class,
            () -> first.write(5, random(4096, 5), false).join(),
            "a writer whose lease was taken over acknowledged a write");
        held.setBoolean(first.lease(), false);
      }
    } finally {
      first.close();
    }
  }
}
