package io.salus.blockdriver.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** The {@code salus} command tree: every documented sub-command is reachable. */
class SalusCliTest {

  /**
   * The client distribution carries the HBase client only: the embedded cluster and the server
   * tools ({@code up}, {@code status}, {@code witness}, {@code digests}) come with the launcher
   * artifact, and asking for one here says so instead of "Unmatched argument".
   */
  @Test
  void launcherCommandsAreNotInTheClientAndSayWhereTheyAre() {
    CommandLine cli = SalusCli.commandLine();
    Set<String> names = cli.getSubcommands().keySet();
    for (String n : List.of("volume", "nbd", "keys", "help")) {
      assertTrue(names.contains(n), "salus " + n + " is a client command: " + names);
    }
    for (String n : SalusCli.LAUNCHER_COMMANDS) {
      assertTrue(!names.contains(n), "salus " + n + " must not be on the client class path: " + names);
      Run r = run(n, "--help");
      assertEquals(2, r.code(), r.err());
      assertTrue(r.err().contains("launcher artifact") && r.err().contains("./salus " + n), r.err());
    }
    Run help = run("--help");
    assertTrue(help.out().replaceAll("\\s+", " ").contains("in the launcher artifact"), help.out());
  }

  /**
   * Task key22: {@code salus keys init} writes the servers' and the client's keyring files (owner-only, the client's
   * private key only in the client's), prints the keys to set, and never replaces an existing keyring.
   */
  @Test
  void keysInitWritesTwoOwnerOnlyFilesAndNeverReplacesThem(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
      throws Exception {
    Run r = run("keys", "init", "--dir", dir.toString());
    assertEquals(0, r.code(), r.err());
    java.nio.file.Path servers = dir.resolve(KeysCommand.SERVER_FILE);
    java.nio.file.Path client = dir.resolve(KeysCommand.CLIENT_FILE);
    assertTrue(r.out().contains("salus.endpoint.keyring.file=" + servers.toAbsolutePath())
        && r.out().contains("salus.client.keyring.file=" + client.toAbsolutePath())
        && r.out().contains("endpoint-volume * keyring " + servers.toAbsolutePath()), r.out());
    assertEquals("rw-------", java.nio.file.attribute.PosixFilePermissions.toString(
        java.nio.file.Files.getPosixFilePermissions(servers)));
    io.salus.core.crypto.KeyringFile s = io.salus.core.crypto.KeyringFile.load(servers);
    io.salus.core.crypto.KeyringFile c = io.salus.core.crypto.KeyringFile.load(client);
    assertTrue(!s.holdsClientSecrets() && c.holdsClientSecrets());
    org.junit.jupiter.api.Assertions.assertArrayEquals(s.clientPublicKey("any"), c.clientPublicKey("any"),
        "one client key pair, split between the files");
    String before = java.nio.file.Files.readString(servers);
    Run again = run("keys", "init", "--dir", dir.toString());
    assertEquals(2, again.code(), again.out());
    assertTrue(again.err().contains("exists"), again.err());
    assertEquals(before, java.nio.file.Files.readString(servers), "the existing keyring is untouched");
  }

  private record Run(int code, String out, String err) {
  }

  private static Run run(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine cli = SalusCli.commandLine();
    cli.setOut(new PrintWriter(out));
    cli.setErr(new PrintWriter(err));
    int code = SalusCli.execute(cli, args);
    return new Run(code, out.toString(), err.toString());
  }

  /**
   * A Salus region larger than the volume is refused before anything is created, naming the largest size that fits
   * (it was accepted, and every region server that opened such a region failed: "region level 16 must be in
   * [0,15] for 32768 blocks").
   */
  @Test
  void aSalusRegionLargerThanTheVolumeIsRefusedNamingTheFix() {
    Run create = run("volume", "create", "small", "--kind", "salus", "--size", "128M", "--blocks-per-region",
        "65536");
    assertEquals(2, create.code(), create.err());
    assertTrue(create.err().contains("blocks per region 65536 is larger than volume small (32768 blocks): use at"
        + " most 32768"), create.err());
  }

  @Test
  void aBadSizeNamesTheFormat() {
    Run create = run("volume", "create", "v1", "--size", "12Q");
    assertEquals(2, create.code(), create.err());
    assertTrue(create.err().contains("bad size '12Q': give a positive byte count, optionally with"
        + " K, M, G or T (e.g. 64M, 10G)"), create.err());
  }

  @Test
  void regionsHelpStatesTheRangeTheCatalogChecks() {
    Run help = run("volume", "create", "--help");
    assertTrue(help.out().contains("1..4096") && help.out().contains("at most 64"), help.out());
  }

  @Test
  void withTheClusterDownVolumeListAndNbdSayWhereTheyLooked() throws Exception {
    int port;
    try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
      port = s.getLocalPort(); // closed again: nothing listens there
    }
    java.nio.file.Path conf = java.nio.file.Files.createTempDirectory("salus-conf");
    java.nio.file.Files.writeString(conf.resolve("hbase-site.xml"), "<configuration>"
        + "<property><name>hbase.zookeeper.quorum</name><value>127.0.0.1</value></property>"
        + "<property><name>hbase.zookeeper.property.clientPort</name><value>" + port
        + "</value></property></configuration>");
    // The preemptive bound only guards against a hang (the old code took minutes); the check
    // itself is the message.
    Run list = org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(
        java.time.Duration.ofSeconds(120),
        () -> run("volume", "list", "--hbase-conf", conf.toString()));
    assertEquals(1, list.code(), list.err());
    assertTrue(list.err().contains("cannot reach the cluster at ZooKeeper 127.0.0.1:" + port)
        && list.err().contains("salus up"), list.err());
    assertTrue(!list.err().contains("\tat "), "no stack trace: " + list.err());
    Run nbd = org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(
        java.time.Duration.ofSeconds(120),
        () -> run("nbd", "--volume", "demo", "--port", "0", "--hbase-conf", conf.toString()));
    assertEquals(1, nbd.code(), nbd.err());
    assertTrue(nbd.err().contains("cannot reach the cluster at ZooKeeper 127.0.0.1:" + port),
        nbd.err());
  }

  @Test
  void withZooKeeperUpButNoHBaseTheMessageSaysWhichPartIsMissing() throws Exception {
    java.nio.file.Path dir = java.nio.file.Files.createTempDirectory("salus-zk");
    org.apache.hadoop.hbase.zookeeper.MiniZooKeeperCluster zk =
        new org.apache.hadoop.hbase.zookeeper.MiniZooKeeperCluster(
            new org.apache.hadoop.conf.Configuration(false));
    int port = zk.startup(dir.toFile());
    try {
      java.nio.file.Path conf = java.nio.file.Files.createTempDirectory("salus-conf");
      java.nio.file.Files.writeString(conf.resolve("hbase-site.xml"), "<configuration>"
          + "<property><name>hbase.zookeeper.quorum</name><value>127.0.0.1</value></property>"
          + "<property><name>hbase.zookeeper.property.clientPort</name><value>" + port
          + "</value></property></configuration>");
      Run list = org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(
          java.time.Duration.ofSeconds(120),
          () -> run("volume", "list", "--hbase-conf", conf.toString()));
      assertEquals(1, list.code(), list.err());
      assertTrue(list.err().contains("cannot reach the cluster")
          && list.err().contains("HBase master does not"), list.err());
    } finally {
      zk.shutdown();
    }
  }
}
