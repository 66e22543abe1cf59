package io.salus.it.nbd;

import static org.junit.jupiter.api.Assertions.*;

import io.salus.blockdriver.nbd.NbdServer;
import io.salus.blockdriver.nbd.HBaseExports;
import io.salus.blockdriver.volume.HBaseVolume;
import io.salus.blockdriver.volume.VolumeCatalog;
import io.salus.it.volume.MiniHBase;
import java.io.File;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.util.Bytes;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Real NBD clients against the plain-HBase volume on one HBase mini cluster: fio with crc32c
 * verification, ext4 through nbdfuse + loop mount surviving a restart of the NBD server (the
 * client volume tree is rebuilt from HBase), and end-to-end detection of a corrupted block.
 */
class NbdHBaseVolumeTest {
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

  static NbdServer serve(String volume) throws Exception {
    return new NbdServer(InetAddress.getLoopbackAddress(), 0,
        HBaseExports.single(hbase.connection(), volume)).start();
  }

  @Test
  void fioRandomWriteAndReadVerifyCrc32c() throws Exception {
    catalog.create("fio", (64L << 20) / 4096, 4096, "SHA-256", 2);
    try (NbdServer s = serve("fio")) {
      Tools.fioVerify(s.uri("fio"), "randwrite", "16M", 16);
      Tools.fioVerify(s.uri("fio"), "randrw", "8M", 8);
      assertEquals(0, s.metrics().eioReplies.sum());
    }
  }

  @Test
  void ext4SurvivesServerRestart(@TempDir Path tmp) throws Exception {
    long size = 128L << 20;
    catalog.create("ext4", size / 4096, 4096);
    File fuse = tmp.resolve("fuse").toFile();
    File mnt = tmp.resolve("mnt").toFile();
    mnt.mkdirs();
    byte[] payload = new byte[5 << 20];
    new Random(11).nextBytes(payload);
    byte[] root;
    try (NbdServer s = serve("ext4")) {
      Process p = Tools.nbdfuse(fuse, s.uri("ext4"), size);
      try {
        String img = new File(fuse, "nbd").getAbsolutePath();
        Tools.run(300, "mkfs.ext4", "-q", "-F", img).requireSuccess("mkfs.ext4");
        Tools.run(60, "mount", "-o", "loop", img, mnt.getAbsolutePath()).requireSuccess("mount");
        try {
          Files.write(mnt.toPath().resolve("payload.bin"), payload);
          Files.createDirectories(mnt.toPath().resolve("a/b"));
          for (int i = 0; i < 50; i++) {
            Files.writeString(mnt.toPath().resolve("a/b/f" + i + ".txt"), "file " + i + "\n");
          }
          Tools.run(60, "sync").requireSuccess("sync");
        } finally {
          Tools.run(120, "umount", mnt.getAbsolutePath()).requireSuccess("umount");
        }
        Tools.run(300, "e2fsck", "-fn", img).requireSuccess("e2fsck -fn after umount");
      } finally {
        Tools.unmountFuse(fuse, p);
      }
    }
    root = catalog.require("ext4").rootHash();
    assertTrue(catalog.require("ext4").cleanClose());
    // restart: a new server and a freshly mounted volume tree, whose root must be the one
    // recorded at the clean close (a mismatch would refuse the mount)
    HBaseExports restarted = HBaseExports.single(hbase.connection(), "ext4");
    HBaseVolume remounted = restarted.volume("ext4");
    assertTrue(remounted.mountRootMatchesRecorded());
    assertArrayEquals(root, remounted.tree().root(), "root rebuilt after the restart");
    try (NbdServer s = new NbdServer(InetAddress.getLoopbackAddress(), 0, restarted).start()) {
      Process p = Tools.nbdfuse(fuse, s.uri("ext4"), size);
      try {
        String img = new File(fuse, "nbd").getAbsolutePath();
        Tools.run(300, "e2fsck", "-fn", img).requireSuccess("e2fsck -fn after restart");
        Tools.run(60, "mount", "-o", "loop,ro", img, mnt.getAbsolutePath())
            .requireSuccess("mount after restart");
        try {
          assertArrayEquals(payload, Files.readAllBytes(mnt.toPath().resolve("payload.bin")));
          for (int i = 0; i < 50; i++) {
            assertEquals("file " + i + "\n",
                Files.readString(mnt.toPath().resolve("a/b/f" + i + ".txt")));
          }
        } finally {
          Tools.run(120, "umount", mnt.getAbsolutePath()).requireSuccess("umount");
        }
      } finally {
        Tools.unmountFuse(fuse, p);
      }
      assertEquals(0, s.metrics().eioReplies.sum());
    }
    // the read-only session changed nothing: same root recorded again
    assertArrayEquals(root, catalog.require("ext4").rootHash());
  }

  /**
   * Two real libnbd connections (the export advertises CAN_MULTI_CONN) write disjoint 512-byte
   * halves of the same 4 KiB blocks at once: read-modify-write is serialized per volume, so
   * every block keeps both halves.
   */
  @Test
  void subBlockWritesFromTwoConnectionsBothSurvive(@TempDir Path tmp) throws Exception {
    catalog.create("halves", 1024, 4096);
    Path script = tmp.resolve("multiconn_halves.py");
    try (java.io.InputStream in =
        NbdHBaseVolumeTest.class.getResourceAsStream("/nbd/multiconn_halves.py")) {
      Files.copy(in, script);
    }
    try (NbdServer s = serve("halves")) {
      Tools.Result r = Tools.run(300, "/usr/bin/python3", script.toString(), s.uri("halves"), "200");
      assertEquals(0, r.exit(), r.output());
      assertTrue(r.output().contains("lost a half: 0 of 200"), r.output());
    }
  }

  @Test
  void corruptedStoredBlockGivesEioOnlyForThatBlock() throws Exception {
    catalog.create("bad", 1024, 4096);
    HBaseExports exports = HBaseExports.single(hbase.connection(), "bad");
    try (NbdServer s = new NbdServer(InetAddress.getLoopbackAddress(), 0, exports).start();
        Table t = hbase.connection().getTable(VolumeCatalog.dataTable("bad"))) {
      String uri = s.uri("bad");
      Tools.run(60, "qemu-io", "-f", "raw", uri, "-c", "write -P 0x42 0 64k")
          .requireSuccess("qemu-io write");
      // flip one byte of block 3 directly in HBase, behind the block driver's back
      Result r = t.get(new Get(Bytes.toBytes(3L)));
      byte[] data = r.getValue(HBaseVolume.FAMILY, HBaseVolume.DATA).clone();
      data[1234] ^= 0x01;
      t.put(new Put(Bytes.toBytes(3L), MiniHBase.newerVersion(t, 3))
          .addColumn(HBaseVolume.FAMILY, HBaseVolume.DATA, data));
      Tools.Result bad = Tools.run(60, "qemu-io", "-f", "raw", uri, "-c", "read -P 0x42 12k 4k");
      assertTrue(bad.output().contains("Input/output error"), bad.output());
      Tools.run(60, "qemu-io", "-f", "raw", uri, "-c", "read -P 0x42 0 12k",
          "-c", "read -P 0x42 16k 48k").requireSuccess("other blocks still read");
      assertTrue(s.metrics().eioReplies.sum() >= 1);
      assertTrue(exports.volume("bad").metrics().verificationFailures.sum() >= 1);
    }
  }

  /**
   * A volume whose mount is slow (its data table's regions are offline, so the mount's reads
   * retry) must not hold up the handshake of another, already open export: before, {@code
   * HBaseExports.resolve} was synchronized, so every handshake waited for the slow open (the
   * client's handshake timed out after 30 s).
   */
  @Test
  void aSlowMountDoesNotHoldUpAnotherExportsHandshake() throws Exception {
    catalog.create("slowa", 256, 4096);
    catalog.create("fastb", 256, 4096);
    HBaseExports exports = new HBaseExports(hbase.connection(), null,
        java.util.List.of("slowa", "fastb"));
    org.apache.hadoop.hbase.client.Admin admin = hbase.connection().getAdmin();
    org.apache.hadoop.hbase.TableName a = VolumeCatalog.dataTable("slowa");
    java.util.List<org.apache.hadoop.hbase.client.RegionInfo> regions = admin.getRegions(a);
    try (NbdServer s = new NbdServer(InetAddress.getLoopbackAddress(), 0, exports).start()) {
      exports.volume("fastb");
      for (org.apache.hadoop.hbase.client.RegionInfo r : regions) {
        admin.unassign(r.getRegionName(), true);
      }
      java.util.concurrent.CompletableFuture<Object> slow = java.util.concurrent.CompletableFuture
          .supplyAsync(() -> {
            try {
              return exports.resolve("slowa");
            } catch (Exception e) {
              return e;
            }
          });
      Thread.sleep(1000); // let the slow open take whatever lock it takes
      assertFalse(slow.isDone(), "the open of 'slowa' with its regions offline did not block: "
          + slow.getNow(null) + " (the test needs a slow open)");
      Tools.Result info = Tools.run(20, "nbdinfo", s.uri("fastb"));
      info.requireSuccess("handshake of 'fastb' while 'slowa' is opening");
      assertFalse(slow.isDone(), "'slowa' finished opening before 'fastb' answered: the test did"
          + " not overlap them");
      for (org.apache.hadoop.hbase.client.RegionInfo r : regions) {
        admin.assign(r.getRegionName());
      }
      Object opened = slow.get(120, java.util.concurrent.TimeUnit.SECONDS);
      if (opened instanceof Exception) {
        // the slow open may give up while the regions are offline; a later open works
        opened = exports.resolve("slowa");
      }
      assertNotNull(opened);
      Tools.run(60, "nbdinfo", s.uri("slowa")).requireSuccess("handshake of 'slowa' once back");
    } finally {
      for (org.apache.hadoop.hbase.client.RegionInfo r : regions) {
        try {
          admin.assign(r.getRegionName());
        } catch (Exception ignored) {
          // assigned already
        }
      }
      exports.close();
      admin.close();
    }
  }
}
