package io.salus.it.nbd;

import static org.junit.jupiter.api.Assertions.*;

import io.salus.blockdriver.nbd.NbdExports;
import io.salus.blockdriver.nbd.NbdServer;
import io.salus.blockdriver.volume.MemoryVolume;
import java.io.File;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Real NBD clients (libnbd's nbdinfo/nbdcopy, qemu-io, fio, nbdfuse + ext4 loop mount) against
 * the NBD server exporting a {@link MemoryVolume}.
 */
class NbdRealClientsTest {
  static MemoryVolume vol;
  static MemoryVolume small;
  static NbdServer server;

  @BeforeAll
  static void start() throws Exception {
    vol = new MemoryVolume("mem", (128L << 20) / 4096, 4096);
    small = new MemoryVolume("small512", (8L << 20) / 512, 512);
    server = new NbdServer(InetAddress.getLoopbackAddress(), 0, NbdExports.of(vol, small)).start();
  }

  @AfterAll
  static void stop() {
    server.close();
    vol.close();
    small.close();
  }

  @Test
  void nbdinfoShowsExportAndBlockSizes() throws Exception {
    String out = Tools.run(60, "nbdinfo", server.uri("mem")).requireSuccess("nbdinfo").output();
    assertTrue(out.contains("export-size: " + (128L << 20)), out);
    assertTrue(out.contains("block_size_minimum: 512"), out);
    assertTrue(out.contains("block_size_preferred: 4096"), out);
    assertTrue(out.contains("block_size_maximum: 33554432"), out);
    assertTrue(out.contains("can_fua: true") && out.contains("can_trim: true")
        && out.contains("can_zero: true") && out.contains("can_flush: true"), out);
    String list = Tools.run(60, "nbdinfo", "--list", "nbd://127.0.0.1:" + server.port())
        .requireSuccess("nbdinfo --list").output();
    assertTrue(list.contains("export=\"mem\"") && list.contains("export=\"small512\""), list);
    String s = Tools.run(60, "nbdinfo", server.uri("small512")).requireSuccess("nbdinfo").output();
    assertTrue(s.contains("block_size_preferred: 512"), s);
  }

  @Test
  void nbdcopyRoundTrips64MiB(@TempDir Path tmp) throws Exception {
    byte[] data = new byte[64 << 20];
    new Random(64).nextBytes(data);
    Path in = tmp.resolve("in.bin");
    Path out = tmp.resolve("out.bin");
    Files.write(in, data);
    Tools.run(120, "nbdcopy", in.toString(), server.uri("mem")).requireSuccess("nbdcopy in");
    Tools.run(120, "nbdcopy", server.uri("mem"), out.toString()).requireSuccess("nbdcopy out");
    byte[] back = Files.readAllBytes(out);
    assertEquals(128L << 20, back.length);
    assertEquals(sha256(data, data.length), sha256(back, data.length));
  }

  @Test
  void qemuIoPatternsWithFuaZeroesDiscardFlush() throws Exception {
    String uri = server.uri("mem");
    String out = Tools.run(120, "qemu-io", "-f", "raw", uri,
        "-c", "write -P 0x5a 0 1M",
        "-c", "write -f -P 0xa5 1M 64k",          // FUA
        "-c", "write -P 0x11 3000 5000",           // unaligned
        "-c", "write -z 2M 256k",                  // write zeroes
        "-c", "write -P 0x77 4M 128k",
        "-c", "discard 4M 64k",
        "-c", "flush",
        "-c", "read -P 0x5a 0 3000",
        "-c", "read -P 0x11 3000 5000",
        "-c", "read -P 0x5a 8000 1040576",
        "-c", "read -P 0xa5 1M 64k",
        "-c", "read -P 0 2M 256k",
        "-c", "read -P 0 4M 64k",
        "-c", "read -P 0x77 4160k 64k").requireSuccess("qemu-io").output();
    assertFalse(out.contains("Pattern verification failed"), out);
    assertFalse(out.toLowerCase().contains("error"), out);
    assertEquals(7, count(out, "read "), out);
  }

  @Test
  void fioRandomWriteAndReadVerifyCrc32c() throws Exception {
    Tools.fioVerify(server.uri("mem"), "randwrite", "32M", 32);
    Tools.fioVerify(server.uri("mem"), "randrw", "16M", 16);
  }

  @Test
  void ext4OnNbdfuseLoopMountIsClean(@TempDir Path tmp) throws Exception {
    File fuse = tmp.resolve("fuse").toFile();
    File mnt = tmp.resolve("mnt").toFile();
    mnt.mkdirs();
    Process p = Tools.nbdfuse(fuse, server.uri("mem"), 128L << 20);
    try {
      String img = new File(fuse, "nbd").getAbsolutePath();
      Tools.run(120, "mkfs.ext4", "-q", "-F", img).requireSuccess("mkfs.ext4");
      Tools.run(60, "mount", "-o", "loop", img, mnt.getAbsolutePath()).requireSuccess("mount");
      byte[] payload = new byte[3 << 20];
      new Random(3).nextBytes(payload);
      try {
        Files.write(mnt.toPath().resolve("payload.bin"), payload);
        Files.createDirectories(mnt.toPath().resolve("dir/sub"));
        Files.writeString(mnt.toPath().resolve("dir/sub/hello.txt"), "hello salus\n");
        Tools.run(60, "sync").requireSuccess("sync");
      } finally {
        Tools.run(60, "umount", mnt.getAbsolutePath()).requireSuccess("umount");
      }
      String fsck = Tools.run(120, "e2fsck", "-fn", img).requireSuccess("e2fsck -fn").output();
      assertTrue(fsck.contains("Pass 5"), fsck);
      Tools.run(60, "mount", "-o", "loop,ro", img, mnt.getAbsolutePath()).requireSuccess("mount");
      try {
        assertArrayEquals(payload, Files.readAllBytes(mnt.toPath().resolve("payload.bin")));
        assertEquals("hello salus\n",
            Files.readString(mnt.toPath().resolve("dir/sub/hello.txt")));
      } finally {
        Tools.run(60, "umount", mnt.getAbsolutePath()).requireSuccess("umount");
      }
    } finally {
      Tools.unmountFuse(fuse, p);
    }
  }

  static int count(String s, String sub) {
    int n = 0;
    for (int i = s.indexOf(sub); i >= 0; i = s.indexOf(sub, i + 1)) {
      n++;
    }
    return n;
  }

  static String sha256(byte[] b, int len) throws Exception {
    MessageDigest md = MessageDigest.getInstance("SHA-256");
    md.update(b, 0, len);
    return HexFormat.of().formatHex(md.digest());
  }
}
