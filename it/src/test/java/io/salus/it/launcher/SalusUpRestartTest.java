package io.salus.it.launcher;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.HConstants;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.util.Bytes;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.junit.jupiter.api.Test;
import io.salus.core.cert.CertType;
import io.salus.core.cert.Certificate;
import io.salus.core.cert.RegionId;
import io.salus.core.cert.Statement;
import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.NodeKeys;
import io.salus.core.crypto.SignatureScheme;
import io.salus.core.merkle.Hash;
import io.salus.hdfs.witness.WitnessClient;
import java.net.InetSocketAddress;
import org.junit.jupiter.api.io.TempDir;

/**
 * The README's run command end to end: {@code salus up} as a child process, real clients of
 * ZooKeeper, HDFS, HBase and NBD (qemu-io) against it, SIGTERM, a second {@code salus up} on the
 * same data directory, and the state written before the restart read back after it. The exported volume is the
 * plain-HBase baseline ({@code --kind hbase}; the reopen keeps the recorded kind): a Salus volume cannot be mounted
 * a second time until the client mount protocol exists (see {@link SalusUpReopenTest}).
 */
class SalusUpRestartTest {
  private static final byte[] CF = Bytes.toBytes("f");
  private static final TableName TABLE = TableName.valueOf("launcher_it");

  @TempDir Path tmp;

  @Test
  void stateSurvivesSigtermAndRestart() throws Exception {
    Path data = tmp.resolve("salus-data");
    int zkPort = LauncherProcess.freePort();
    int nnPort = LauncherProcess.freePort();
    int nbdPort = LauncherProcess.freePort();
    byte[] hdfsPayload = ("written before restart " + System.nanoTime()).getBytes(StandardCharsets.UTF_8);

    String ready;
    try (LauncherProcess up = LauncherProcess.start("3g", "up", "--data", data.toString(),
        "--zk-port", Integer.toString(zkPort), "--namenode-port", Integer.toString(nnPort),
        "--nbd-port", Integer.toString(nbdPort), "--kind", "hbase")) {
      ready = up.awaitLine(LauncherProcess.READY, 240, TimeUnit.SECONDS);
      String zk = LauncherProcess.field(ready, "zookeeper");
      String nn = LauncherProcess.field(ready, "namenode");
      assertEquals("127.0.0.1:" + zkPort, zk);
      assertEquals("hdfs://127.0.0.1:" + nnPort, nn);

      // ZooKeeper answers and keeps a persistent znode.
      try (ZooKeeper client = connect(zk)) {
        client.create("/launcher-it", "zk-state".getBytes(StandardCharsets.UTF_8),
            ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
      }
      // HDFS answers and stores a file with 3 replicas.
      try (FileSystem fs = hdfs(nn)) {
        try (FSDataOutputStream out = fs.create(new org.apache.hadoop.fs.Path("/launcher-it/file"))) {
          out.write(hdfsPayload);
          out.hsync();
        }
        assertEquals(3, fs.getFileStatus(new org.apache.hadoop.fs.Path("/launcher-it/file")).getReplication());
      }
      // HBase answers: a table with a row.
      try (Connection conn = ConnectionFactory.createConnection(hbase(zk)); Admin admin = conn.getAdmin()) {
        assertTrue(admin.getClusterMetrics().getLiveServerMetrics().size() >= 3,
            "at least 3 region servers");
        admin.createTable(TableDescriptorBuilder.newBuilder(TABLE)
            .setColumnFamily(ColumnFamilyDescriptorBuilder.of(CF)).build());
        try (Table t = conn.getTable(TABLE)) {
          t.put(new Put(Bytes.toBytes("row")).addColumn(CF, Bytes.toBytes("q"), Bytes.toBytes("hbase-state")));
        }
      }
      // The demo volume is exported over NBD: write a pattern with qemu-io (a real NBD client).
      String nbd = LauncherProcess.field(ready, "nbd");
      assertEquals("nbd://127.0.0.1:" + nbdPort + "/demo", nbd);
      assertEquals("hbase", LauncherProcess.field(ready, "kind"), ready);
      String written = qemuIo(nbd, "write -P 0x5a 1M 1M", "write -P 0xa5 100M 64k", "flush");
      assertTrue(written.contains("wrote 1048576/1048576") && written.contains("wrote 65536/65536"), written);
      // Five witnesses: one per DataNode plus two standalone ones.
      assertEquals(5, LauncherProcess.field(ready, "witnesses").split(",").length, ready);
      // Each witness trusts the cluster's replicas (the trust file 'salus up' writes): an entry
      // offered by all three replicas is stored, and an outsider's offer is rejected. The replicas are
      // the replica endpoints of the volume's region (`endpoint-volume * keyring DATA/keys/server.keyring`:
      // members demo/0/r0..r2, keys derived from that production keyring), whose tentatives the
      // witnesses store since 'salus up' wires them in.
      io.salus.core.crypto.KeyringFile keyring = io.salus.core.crypto.KeyringFile.load(
          data.resolve("keys/server.keyring"));
      assertFalse(keyring.holdsClientSecrets(), "the servers' keyring holds no client private key");
      Statement.LogEntry st = new Statement.LogEntry(new RegionId("demo", 0), 0, 7,
          Hash.of(new byte[32]), 4096);
      for (String w : LauncherProcess.field(ready, "witnesses").split(",")) {
        int colon = w.lastIndexOf(':');
        InetSocketAddress a = new InetSocketAddress(w.substring(0, colon),
            Integer.parseInt(w.substring(colon + 1)));
        try (WitnessClient c = WitnessClient.connect(a)) {
          WitnessClient.OfferResult last = null;
          for (int k = 0; k < 3; k++) {
            last = c.offer(Certificate.sign(CertType.TENTATIVE_LOG_ENTRY, st, keyring.serverKeys(
                SignatureScheme.DEFAULT_SERVER, NodeId.of("demo/0/r" + k)).signer()));
          }
          assertEquals(WitnessClient.OfferResult.STORED, last, "witness " + w);
          assertEquals(CertType.LOG_ENTRY, c.query(st.region(), 0, 7).type(), "witness " + w);
          // an outsider: another keyring's key for the same replica
          NodeKeys outsider = io.salus.core.crypto.KeyringFile.generate("*", new java.security.SecureRandom())
              .servers().serverKeys(SignatureScheme.DEFAULT_SERVER, NodeId.of("demo/0/r1"));
          WitnessClient.WitnessException e = org.junit.jupiter.api.Assertions.assertThrows(
              WitnessClient.WitnessException.class, () -> c.offer(Certificate.sign(
                  CertType.TENTATIVE_LOG_ENTRY, new Statement.LogEntry(st.region(), 0, 8, st.digest(), 4096), outsider.signer())));
          assertTrue(e.rejected(), e.getMessage());
        }
      }

      // The readiness line's salus command works as printed: the client configuration that
      // 'salus up' wrote reaches the cluster and lists the demo volume, on the client class path
      // alone (the HBase client, no launcher artifact), as ./salus runs 'salus volume'.
      assertTrue(ready.contains("./salus volume list --hbase-conf " + data + "/conf"), ready);
      try (LauncherProcess list = LauncherProcess.startClient("512m", "volume", "list", "--hbase-conf",
          data.resolve("conf").toString())) {
        assertEquals(0, list.waitForExit(120, TimeUnit.SECONDS), list.output());
        assertTrue(list.output().contains("demo"), list.output());
      }
      // 'salus nbd' on the client class path reaches the volume through HBase and ZooKeeper (the
      // lease): the launcher's export holds it, so a second writer is refused (exit 2, naming it).
      try (LauncherProcess clientNbd = LauncherProcess.startClient("512m", "nbd", "--volume", "demo",
          "--port", "0", "--hbase-conf", data.resolve("conf").toString())) {
        assertEquals(2, clientNbd.waitForExit(120, TimeUnit.SECONDS), clientNbd.output());
        assertTrue(clientNbd.output().contains("already open for writing"), clientNbd.output());
      }

      // 'salus status' reports every component healthy.
      try (LauncherProcess status = LauncherProcess.start("512m", "status", "--data", data.toString())) {
        assertEquals(0, status.waitForExit(120, TimeUnit.SECONDS), status.output());
        assertTrue(status.output().contains("overall: HEALTHY"), status.output());
      }

      assertEquals(0, up.terminate(180, TimeUnit.SECONDS), up.output());
      assertTrue(up.output().contains("salus: stopped"), up.output());
    }

    // 'salus status' now says nothing runs, and exits non-zero.
    try (LauncherProcess status = LauncherProcess.start("512m", "status", "--data", data.toString())) {
      assertEquals(1, status.waitForExit(120, TimeUnit.SECONDS), status.output());
    }

    // Second start on the same directory, without port options: recorded ports are reused.
    try (LauncherProcess up = LauncherProcess.start("3g", "up", "--data", data.toString(),
        "--nbd-port", Integer.toString(nbdPort))) {
      String again = up.awaitLine(LauncherProcess.READY, 240, TimeUnit.SECONDS);
      assertTrue(up.output().contains("reopening data directory"), up.output());
      String zk = LauncherProcess.field(again, "zookeeper");
      String nn = LauncherProcess.field(again, "namenode");
      assertEquals(LauncherProcess.field(ready, "zookeeper"), zk);
      assertEquals(LauncherProcess.field(ready, "namenode"), nn);

      try (ZooKeeper client = connect(zk)) {
        assertArrayEquals("zk-state".getBytes(StandardCharsets.UTF_8), client.getData("/launcher-it", false, null));
      }
      try (FileSystem fs = hdfs(nn);
          FSDataInputStream in = fs.open(new org.apache.hadoop.fs.Path("/launcher-it/file"))) {
        byte[] back = in.readAllBytes();
        assertArrayEquals(hdfsPayload, back);
      }
      try (Connection conn = ConnectionFactory.createConnection(hbase(zk)); Table t = conn.getTable(TABLE)) {
        Result r = t.get(new Get(Bytes.toBytes("row")));
        assertEquals("hbase-state", Bytes.toString(r.getValue(CF, Bytes.toBytes("q"))));
      }
      // The volume contents written through NBD before the restart read back (qemu-io -P
      // verifies every byte), and blocks never written read as zeros.
      String read = qemuIo(LauncherProcess.field(again, "nbd"),
          "read -P 0x5a 1M 1M", "read -P 0xa5 100M 64k", "read -P 0 0 1M");
      assertTrue(read.contains("read 1048576/1048576 bytes at offset 1048576")
          && read.contains("read 65536/65536 bytes at offset 104857600")
          && read.contains("read 1048576/1048576 bytes at offset 0")
          && !read.contains("Pattern verification failed"), read);
      assertEquals(0, up.terminate(180, TimeUnit.SECONDS), up.output());
    }
  }

  /** Runs qemu-io's commands against an NBD URI and returns its output; fails on non-zero exit. */
  private static String qemuIo(String uri, String... commands) throws Exception {
    java.util.List<String> cmd = new java.util.ArrayList<>(java.util.List.of("qemu-io", "-f", "raw"));
    for (String c : commands) {
      cmd.add("-c");
      cmd.add(c);
    }
    cmd.add(uri);
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(120, TimeUnit.SECONDS), "qemu-io finished");
    assertEquals(0, p.exitValue(), "qemu-io " + cmd + ":\n" + out);
    return out;
  }

  private static ZooKeeper connect(String quorum) throws Exception {
    CountDownLatch connected = new CountDownLatch(1);
    ZooKeeper zk = new ZooKeeper(quorum, 30000, e -> {
      if (e.getState() == Watcher.Event.KeeperState.SyncConnected) {
        connected.countDown();
      }
    });
    assertTrue(connected.await(30, TimeUnit.SECONDS), "ZooKeeper at " + quorum + " answers");
    return zk;
  }

  private static FileSystem hdfs(String nameNode) throws Exception {
    Configuration c = new Configuration();
    c.setBoolean("fs.hdfs.impl.disable.cache", true);
    return FileSystem.get(URI.create(nameNode), c);
  }

  private static Configuration hbase(String quorum) {
    Configuration c = HBaseConfiguration.create();
    int colon = quorum.lastIndexOf(':');
    c.set(HConstants.ZOOKEEPER_QUORUM, quorum.substring(0, colon));
    c.set(HConstants.ZOOKEEPER_CLIENT_PORT, quorum.substring(colon + 1));
    return c;
  }
}
