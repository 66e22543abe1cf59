package io.salus.it.launcher;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.salus.blockdriver.volume.VolumeCatalog;
import io.salus.core.hbase.SalusTableLayout;
import io.salus.it.nbd.Tools;
import java.io.File;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.BlockLocation;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.HConstants;
import org.apache.hadoop.hbase.HRegionLocation;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.RegionLocator;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code salus up} with no --kind exports a Salus volume (issue 13 item 7), and real NBD clients work against it:
 * fio write + crc32c verify, nbdcopy round trip, two libnbd connections writing halves of one block, ext4 through
 * nbdfuse + loop mount + e2fsck. One {@code salus up} child process (as the README runs it) for the class.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class SalusUpSalusExportTest {
  private static final long SIZE = 64L << 20;
  @TempDir static Path tmp; // static: injected before @BeforeAll
  private Path data;
  private LauncherProcess up;
  private String ready;
  private String nbd;

  @BeforeAll
  void startSalusUp() throws Exception {
    data = tmp.resolve("salus-data");
    up = LauncherProcess.start("3g", "up", "--data", data.toString(),
        "--zk-port", Integer.toString(LauncherProcess.freePort()),
        "--namenode-port", Integer.toString(LauncherProcess.freePort()),
        "--nbd-port", Integer.toString(LauncherProcess.freePort()), "--size", "64M");
    ready = up.awaitLine(LauncherProcess.READY, 420, TimeUnit.SECONDS);
    nbd = LauncherProcess.field(ready, "nbd");
  }

  @AfterAll
  void stop() throws Exception {
    if (up != null) {
      try {
        assertEquals(0, up.terminate(240, TimeUnit.SECONDS), up.output());
      } finally {
        up.close();
      }
    }
  }

  /**
   * Issue 27 item 5: 'salus up' names the state of every Salus replica after its readiness line (a replica whose open
   * failed leaves its region open and is named with its reason, instead of failing the region server), and
   * 'salus status' reports it from the file 'salus up' keeps current.
   */
  @Test
  void reportsEverySalusReplicaRunningAfterReadyAndInStatus() throws Exception {
    String line = up.awaitLine("replicas:", 60, TimeUnit.SECONDS);
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("replicas: (\\d+) Salus replicas running").matcher(line);
    assertTrue(m.find(), line);
    int running = Integer.parseInt(m.group(1));
    assertTrue(running >= 3 && running % 3 == 0, "three replicas per region of the volume: " + line);
    assertFalse(line.contains("NOT running"), line);
    try (LauncherProcess status = LauncherProcess.start("512m", "status", "--data", data.toString())) {
      assertEquals(0, status.waitForExit(120, TimeUnit.SECONDS), status.output());
      assertTrue(status.output().matches("(?s).*replicas\\s+HEALTHY\\s+" + running + " Salus replicas running.*"),
          status.output());
    }
  }

  /**
   * The readiness line says salus; the catalog holds a salus volume with its three replica tables; the trust file
   * names the Master's recovery key; after a write, every replica region's Salus log is on HDFS, each on the
   * DataNode paired with the region server hosting that region, three distinct DataNodes per RRS.
   */
  @Test
  void exportsASalusVolumeWhoseLogsSitOnEachRegionServersOwnDataNode() throws Exception {
    assertEquals("salus", LauncherProcess.field(ready, "kind"), ready);
    // 1 MiB at 40 MiB: no other test of the class writes there except ext4 (which runs mkfs on its own)
    String written = qemuIo(nbd, "write -P 0x3c 40M 1M", "flush");
    assertTrue(written.contains("wrote 1048576/1048576"), written);
    assertTrue(Files.readString(data.resolve("witness-trust.conf")).contains("\nrecoverer master "),
        Files.readString(data.resolve("witness-trust.conf")));
    Properties endpoints = new Properties();
    try (var in = Files.newInputStream(data.resolve("endpoints.properties"))) {
      endpoints.load(in);
    }
    assertEquals("salus", endpoints.getProperty("volume.kind"));
    // region server port -> its paired DataNode's transfer address
    Map<Integer, String> paired = new HashMap<>();
    for (String pair : endpoints.getProperty("regionserver.datanodes").split(",")) {
      String[] kv = pair.split("=");
      paired.put(Integer.parseInt(kv[0].substring(kv[0].lastIndexOf(':') + 1)), kv[1]);
    }
    assertEquals(3, new HashSet<>(paired.values()).size(), "three region servers on three DataNodes: " + paired);

    String zk = LauncherProcess.field(ready, "zookeeper");
    try (Connection conn = ConnectionFactory.createConnection(hbase(zk)); Admin admin = conn.getAdmin();
        FileSystem fs = hdfs(LauncherProcess.field(ready, "namenode"))) {
      assertEquals(VolumeCatalog.KIND_SALUS, new VolumeCatalog(conn).describe("demo").orElseThrow().kind());
      Map<String, Set<String>> dataNodesByRrs = new HashMap<>();
      for (int k = 0; k < 3; k++) {
        var table = SalusTableLayout.tableName("demo", k);
        assertTrue(admin.tableExists(table), table + " exists");
        try (RegionLocator l = conn.getRegionLocator(table)) {
          for (HRegionLocation loc : l.getAllRegionLocations()) {
            String dn = paired.get(loc.getServerName().getPort());
            org.apache.hadoop.fs.Path dir = new org.apache.hadoop.fs.Path("/salus/logs/"
                + table.getNameAsString().replace(':', '=') + "/" + loc.getRegion().getEncodedName() + "/log");
            assertTrue(fs.exists(dir), "Salus log of " + loc.getRegion().getRegionNameAsString() + " at " + dir);
            int blocks = 0;
            RemoteIterator<LocatedFileStatus> it = fs.listFiles(dir, true);
            while (it.hasNext()) {
              LocatedFileStatus st = it.next();
              assertEquals(1, st.getReplication(), st.getPath() + " has replication 1");
              for (BlockLocation b : fs.getFileBlockLocations(st.getPath(), 0, Math.max(1, st.getLen()))) {
                assertEquals(List.of(dn), List.of(b.getNames()), st.getPath() + " of a region on "
                    + loc.getServerName() + " is on its paired DataNode " + dn);
                blocks++;
              }
            }
            assertTrue(blocks > 0, "the Salus log under " + dir + " holds the write");
            dataNodesByRrs.computeIfAbsent(org.apache.hadoop.hbase.util.Bytes.toStringBinary(
                loc.getRegion().getStartKey()), x -> new HashSet<>()).add(dn);
          }
        }
      }
      dataNodesByRrs.forEach((rrs, dns) -> assertEquals(3, dns.size(), "RRS at " + rrs + " logs on " + dns));
    }
    String read = qemuIo(nbd, "read -P 0x3c 40M 1M");
    assertFalse(read.contains("Pattern verification failed"), read);
  }

  /**
   * The five metadata holders of the volume's RRS are the cluster's real witness stores (issue 13 item 3): after a
   * write and a FLUSH, each of the five witnesses {@code salus up} runs (the plugin of the three DataNodes and the two
   * standalone daemons, endpoints.properties {@code witnesses}) holds a LOG_ENTRY certificate for the first entry of
   * the volume's region 0. (Before, {@code salus up} left the endpoints on their interim in-region holders and the
   * witnesses never saw an offer.)
   */
  @Test
  void everyWitnessStoreHoldsTheVolumesLogEntries() throws Exception {
    String written = qemuIo(nbd, "write -P 0x5a 44M 64k", "flush");
    assertTrue(written.contains("wrote 65536/65536"), written);
    Properties endpoints = new Properties();
    try (var in = Files.newInputStream(data.resolve("endpoints.properties"))) {
      endpoints.load(in);
    }
    String[] witnesses = endpoints.getProperty("witnesses").split(",");
    assertEquals(5, witnesses.length, endpoints.getProperty("witnesses"));
    assertTrue(Files.readString(data.resolve("witness-trust.conf")).contains("\nendpoint-volume * keyring "),
        Files.readString(data.resolve("witness-trust.conf")));
    for (String w : witnesses) {
      String hostPort = w.trim();
      int colon = hostPort.lastIndexOf(':');
      java.net.InetSocketAddress a = new java.net.InetSocketAddress(hostPort.substring(0, colon),
          Integer.parseInt(hostPort.substring(colon + 1)));
      try (io.salus.hdfs.witness.WitnessClient c = io.salus.hdfs.witness.WitnessClient.connect(a)) {
        // issue 14 item 1: entries a CHECKPOINT certificate covers are truncated (nothing stored there any more);
        // the witness holds the entries after the prefix it truncated, which ends at a checkpoint index
        io.salus.core.cert.Certificate got = null;
        long first = 0;
        for (; first < 4096 && got == null; first++) {
          got = c.query(new io.salus.core.cert.RegionId("demo", 0), 0, first);
        }
        first--;
        assertTrue(got != null && got.type() == io.salus.core.cert.CertType.LOG_ENTRY,
            "witness " + hostPort + " holds a LOG_ENTRY certificate of demo region 0: " + got);
        assertEquals(0, first % io.salus.core.protocol.ProtocolConfig.DEFAULT_CHECKPOINT_EVERY,
            "witness " + hostPort + " lacks demo region 0's entries before " + first + " (not a checkpoint index)");
      }
    }
  }

  @Test
  void fioWritesThenVerifiesCrc32c() throws Exception {
    Tools.fioVerify(nbd, "randwrite", "2M", 16); // small: the suite shares 2 cores (8M timed out at load 54)
  }

  @Test
  void nbdcopyRoundTrip() throws Exception {
    Path src = tmp.resolve("src.img");
    Path back = tmp.resolve("back.img");
    byte[] payload = new byte[2 << 20];
    new Random(13).nextBytes(payload);
    Files.write(src, payload);
    // the 2 MiB at offset 16 MiB, through nbdkit's offset filter in front of the export (nbdcopy copies whole images)
    // (no -s: nbdcopy's [ … ] starts nbdkit by socket activation, which -s refuses)
    List<String> window = List.of("[", "nbdkit", "--exit-with-parent", "--filter=offset", "nbd",
        "uri=" + nbd, "offset=" + (16 << 20), "range=" + payload.length, "]");
    java.util.ArrayList<String> in = new java.util.ArrayList<>(List.of("nbdcopy", src.toString(), "--"));
    in.addAll(window);
    Tools.run(300, in).requireSuccess("nbdcopy into the volume");
    java.util.ArrayList<String> out = new java.util.ArrayList<>(List.of("nbdcopy", "--"));
    out.addAll(window);
    out.add(back.toString());
    Tools.run(300, out).requireSuccess("nbdcopy out of the volume");
    assertArrayEquals(payload, Files.readAllBytes(back));
  }

  @Test
  void twoConnectionsWritingHalvesOfOneBlockBothSurvive() throws Exception {
    Path script = tmp.resolve("multiconn_halves.py");
    try (java.io.InputStream in = SalusUpSalusExportTest.class.getResourceAsStream("/nbd/multiconn_halves.py")) {
      Files.copy(in, script);
    }
    Tools.Result res = Tools.run(300, "/usr/bin/python3", script.toString(), nbd, "64");
    assertEquals(0, res.exit(), res.output());
    assertTrue(res.output().contains("blocks that lost a half: 0 of 64"), res.output());
  }

  @Test
  void ext4OnNbdfuseLoopMountIsClean() throws Exception {
    File fuse = tmp.resolve("fuse").toFile();
    File mnt = tmp.resolve("mnt").toFile();
    mnt.mkdirs();
    Process p = Tools.nbdfuse(fuse, nbd, SIZE);
    try {
      String img = new File(fuse, "nbd").getAbsolutePath();
      // nodiscard: the protocol has no trim, a discard of the whole device would be written as zero blocks
      Tools.run(300, "mkfs.ext4", "-q", "-F", "-E", "nodiscard", img).requireSuccess("mkfs.ext4");
      Tools.run(60, "mount", "-o", "loop", img, mnt.getAbsolutePath()).requireSuccess("mount");
      byte[] payload = new byte[1 << 20];
      new Random(3).nextBytes(payload);
      try {
        Files.write(mnt.toPath().resolve("payload.bin"), payload);
        Files.createDirectories(mnt.toPath().resolve("dir/sub"));
        Files.writeString(mnt.toPath().resolve("dir/sub/hello.txt"), "hello salus\n");
        Tools.run(120, "sync").requireSuccess("sync");
      } finally {
        Tools.run(120, "umount", mnt.getAbsolutePath()).requireSuccess("umount");
      }
      String fsck = Tools.run(300, "e2fsck", "-fn", img).requireSuccess("e2fsck -fn").output();
      assertTrue(fsck.contains("Pass 5"), fsck);
      Tools.run(60, "mount", "-o", "loop,ro", img, mnt.getAbsolutePath()).requireSuccess("mount");
      try {
        assertArrayEquals(payload, Files.readAllBytes(mnt.toPath().resolve("payload.bin")));
        assertEquals("hello salus\n", Files.readString(mnt.toPath().resolve("dir/sub/hello.txt")));
      } finally {
        Tools.run(60, "umount", mnt.getAbsolutePath()).requireSuccess("umount");
      }
    } finally {
      Tools.unmountFuse(fuse, p);
    }
  }

  static String qemuIo(String uri, String... commands) throws Exception {
    java.util.List<String> cmd = new java.util.ArrayList<>(List.of("qemu-io", "-f", "raw"));
    for (String c : commands) {
      cmd.add("-c");
      cmd.add(c);
    }
    cmd.add(uri);
    return Tools.run(300, cmd).requireSuccess("qemu-io " + cmd).output();
  }

  static FileSystem hdfs(String nameNode) throws Exception {
    Configuration c = new Configuration();
    c.setBoolean("fs.hdfs.impl.disable.cache", true);
    return FileSystem.get(URI.create(nameNode), c);
  }

  static Configuration hbase(String quorum) {
    Configuration c = HBaseConfiguration.create();
    int colon = quorum.lastIndexOf(':');
    c.set(HConstants.ZOOKEEPER_QUORUM, quorum.substring(0, colon));
    c.set(HConstants.ZOOKEEPER_CLIENT_PORT, quorum.substring(colon + 1));
    return c;
  }
}
