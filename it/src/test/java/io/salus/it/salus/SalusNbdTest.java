package io.salus.it.salus;

import static org.junit.jupiter.api.Assertions.*;

import io.salus.blockdriver.cli.NbdCommand;
import io.salus.blockdriver.cli.SalusCli;
import io.salus.blockdriver.salus.SalusVolume;
import io.salus.blockdriver.volume.VolumeCatalog;
import io.salus.it.nbd.Tools;
import java.io.File;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.Random;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * Issue 13 items 6-7 through the CLI and real NBD clients: {@code salus volume create --kind salus} makes a
 * Salus volume (three replica tables, kind recorded in the catalog), {@code salus nbd} exports it as a
 * {@link SalusVolume}, and libnbd clients (nbdcopy, two multi-conn connections) read and write it. One HBase mini
 * cluster with three region servers running the replica endpoint (its default storage: the Salus log on HDFS).
 */
@OnSharedSalusCluster
class SalusNbdTest {
  static SalusMiniCluster cluster;
  static File conf;

  @BeforeAll
  static void start(@TempDir Path tmp) throws Exception {
    cluster = SalusMiniCluster.shared(); // started by the first class of this JVM tagged with it
    conf = tmp.resolve("conf").toFile();
    cluster.writeSiteXml(conf);
  }

  record Run(int code, String out, String err) {
  }

  static Run cli(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine cl = new CommandLine(new SalusCli());
    cl.setOut(new PrintWriter(out));
    cl.setErr(new PrintWriter(err));
    int code = cl.execute(args);
    return new Run(code, out.toString(), err.toString());
  }

  static Run create(String name, String size) {
    return cli("volume", "create", name, "--kind", "salus", "--size", size, "--blocks-per-region", "1024",
        "--hbase-conf", conf.getAbsolutePath());
  }

  static String sha256(byte[] b, int len) throws Exception {
    MessageDigest md = MessageDigest.getInstance("SHA-256");
    md.update(b, 0, len);
    return HexFormat.of().formatHex(md.digest());
  }

  @Test
  void cliCreatesSalusVolumeAndNbdcopyRoundTrips(@TempDir Path tmp) throws Exception {
    Run ok = create("cp", "16M");
    assertEquals(0, ok.code, ok.err);
    assertTrue(ok.out.contains("created salus volume cp"), ok.out);
    assertTrue(ok.out.contains("4 regions of 1024 blocks"), ok.out);
    Run desc = cli("volume", "describe", "cp", "--hbase-conf", conf.getAbsolutePath());
    assertTrue(desc.out.contains("kind:           salus"), desc.out);
    Run clash = create("cp", "16M");
    assertEquals(2, clash.code);
    assertTrue(clash.err.contains("already exists"), clash.err);
    Run dflt = cli("volume", "create", "dflt", "--size", "4M", "--blocks-per-region", "1024", "--hbase-conf",
        conf.getAbsolutePath());
    assertEquals(0, dflt.code, dflt.err);
    assertTrue(dflt.out.contains("created salus volume dflt"), "salus is the default kind: " + dflt.out);
    assertEquals(0, cli("volume", "delete", "dflt", "--hbase-conf", conf.getAbsolutePath()).code);
    Run badKind = cli("volume", "create", "x", "--kind", "ceph", "--size", "1M", "--hbase-conf",
        conf.getAbsolutePath());
    assertEquals(2, badKind.code);
    assertTrue(badKind.err.contains("bad --kind ceph"), badKind.err);

    byte[] data = new byte[16 << 20];
    new Random(16).nextBytes(data);
    Path in = tmp.resolve("in.bin");
    Path out = tmp.resolve("out.bin");
    Files.write(in, data);
    try (NbdCommand.Running r = NbdCommand.serve("cp", "127.0.0.1", 0, conf)) {
      assertEquals(VolumeCatalog.KIND_SALUS, r.kind());
      assertInstanceOf(SalusVolume.class, r.volume, "the export picks the Volume by the catalog's kind");
      String info = Tools.run(60, "nbdinfo", r.server.uri("cp")).requireSuccess("nbdinfo").output();
      assertTrue(info.contains("export-size: 16777216"), info);
      Tools.run(300, "nbdcopy", in.toString(), r.server.uri("cp")).requireSuccess("nbdcopy in");
      Tools.run(300, "nbdcopy", r.server.uri("cp"), out.toString()).requireSuccess("nbdcopy out");
      assertEquals(sha256(data, data.length), sha256(Files.readAllBytes(out), data.length));
      assertEquals(0, r.server.metrics().eioReplies.sum());
    }
    // a second mount runs the mount protocol against the replicas and serves the same data
    try (NbdCommand.Running r = NbdCommand.serve("cp", "127.0.0.1", 0, conf)) {
      Path again = tmp.resolve("again.bin");
      Tools.run(300, "nbdcopy", r.server.uri("cp"), again.toString()).requireSuccess("nbdcopy out after remount");
      assertEquals(sha256(data, data.length), sha256(Files.readAllBytes(again), data.length));
    }
    Run del = cli("volume", "delete", "cp", "--hbase-conf", conf.getAbsolutePath());
    assertEquals(0, del.code, del.err);
    assertTrue(new VolumeCatalog(cluster.connection()).describe("cp").isEmpty());
  }

  /**
   * Two real libnbd connections (CAN_MULTI_CONN) write disjoint 512-byte halves of the same 4 KiB blocks at once:
   * the NBD layer's read-modify-write runs under the one per-volume lock, so every block keeps both halves.
   */
  @Test
  void subBlockWritesFromTwoConnectionsBothSurvive(@TempDir Path tmp) throws Exception {
    Run ok = create("halves", "4M");
    assertEquals(0, ok.code, ok.err);
    Path script = tmp.resolve("multiconn_halves.py");
    try (java.io.InputStream in = SalusNbdTest.class.getResourceAsStream("/nbd/multiconn_halves.py")) {
      Files.copy(in, script);
    }
    try (NbdCommand.Running r = NbdCommand.serve("halves", "127.0.0.1", 0, conf)) {
      Tools.Result res = Tools.run(300, "/usr/bin/python3", script.toString(), r.server.uri("halves"), "200");
      assertEquals(0, res.exit(), () -> ((SalusVolume) r.volume).diagnostics() + "\n" + res.output());
      assertTrue(res.output().contains("lost a half: 0 of 200"), res.output());
    }
  }

  /**
   * qemu-io random writes (unaligned offsets and lengths, some FUA) against a Salus export, checked byte for byte
   * against a local reference image that receives the same writes.
   */
  @Test
  void qemuIoRandomWritesMatchLocalReference(@TempDir Path tmp) throws Exception {
    Run ok = create("qio", "8M");
    assertEquals(0, ok.code, ok.err);
    int size = 8 << 20;
    byte[] reference = new byte[size];
    Random rnd = new Random(77);
    java.util.List<String> cmd = new java.util.ArrayList<>();
    try (NbdCommand.Running r = NbdCommand.serve("qio", "127.0.0.1", 0, conf)) {
      cmd.add("qemu-io");
      cmd.add("-f");
      cmd.add("raw");
      cmd.add(r.server.uri("qio"));
      for (int i = 0; i < 60; i++) {
        int len = 1 + rnd.nextInt(40_000);
        int off = rnd.nextInt(size - len);
        int pattern = 1 + rnd.nextInt(255);
        cmd.add("-c");
        cmd.add("write " + (i % 5 == 0 ? "-f " : "") + "-P " + pattern + " " + off + " " + len);
        java.util.Arrays.fill(reference, off, off + len, (byte) pattern);
      }
      cmd.add("-c");
      cmd.add("flush");
      Tools.Result res = Tools.run(300, cmd);
      // on failure the message carries the export's own account (refusal reason, lease, client counters)
      assertEquals(0, res.exit(), () -> "qemu-io failed: " + ((SalusVolume) r.volume).diagnostics() + "\n"
          + res.output());
      String out = res.output();
      assertFalse(out.toLowerCase().contains("error"), out);
      Path back = tmp.resolve("back.bin");
      Tools.run(300, "nbdcopy", r.server.uri("qio"), back.toString()).requireSuccess("nbdcopy out");
      byte[] got = Files.readAllBytes(back);
      for (int i = 0; i < size; i++) {
        if (got[i] != reference[i]) {
          fail("byte " + i + " is " + got[i] + ", the reference has " + reference[i]);
        }
      }
    }
  }
}
