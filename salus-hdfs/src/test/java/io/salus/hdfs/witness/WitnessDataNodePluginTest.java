package io.salus.hdfs.witness;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;

import javax.management.MBeanServer;
import javax.management.ObjectName;

import io.salus.core.cert.CertType;
import io.salus.core.cert.RegionId;
import io.salus.core.cert.Statement;
import io.salus.core.crypto.SignatureScheme;
import io.salus.hdfs.MiniDfs;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The witness as a DataNode ServicePlugin inside a MiniDFSCluster of two DataNodes. */
class WitnessDataNodePluginTest {
  private static final RegionId R = new RegionId("vol", 1);
  private static final Certs CERTS = new Certs(SignatureScheme.WEAK_CRC32C);
  private static MiniDFSCluster cluster;

  @BeforeAll
  static void start() throws Exception {
    Configuration conf = MiniDfs.conf("plugin");
    Path trust = Files.createTempFile("salus-trust", ".conf");
    Files.writeString(trust, CERTS.weakTrustFile());
    conf.set("dfs.datanode.plugins", WitnessDataNodePlugin.class.getName());
    conf.setInt(WitnessDataNodePlugin.PORT_KEY, 0);
    conf.set(WitnessDataNodePlugin.TRUST_FILE_KEY, trust.toString());
    cluster = new MiniDFSCluster.Builder(conf).numDataNodes(2).build();
    cluster.waitActive();
  }

  @AfterAll
  static void stop() {
    if (cluster != null) {
      cluster.shutdown(true);
    }
  }

  @Test
  void everyDataNodeServesAWitnessThatSurvivesADataNodeRestart() throws Exception {
    DataNode dn0 = cluster.getDataNodes().get(0);
    DataNode dn1 = cluster.getDataNodes().get(1);
    WitnessNode w0 = WitnessDataNodePlugin.running(dn0);
    WitnessNode w1 = WitnessDataNodePlugin.running(dn1);
    assertNotNull(w0, "DataNode 0 runs no witness plugin");
    assertNotNull(w1, "DataNode 1 runs no witness plugin");
    assertNotEquals(w0.address(), w1.address());
    assertNotEquals(w0.store().directory(), w1.store().directory());
    assertEquals(w0.address(), WitnessDataNodePlugin.witnessAddress(dn0.getXferAddress()));

    Statement.LogEntry st = Certs.entry(R, 0, 0);
    try (WitnessClient c = WitnessClient.connect(w0.address())) {
      assertEquals(WitnessClient.OfferResult.PENDING, c.offer(CERTS.tentative(0, st)));
      assertEquals(WitnessClient.OfferResult.PENDING, c.offer(CERTS.tentative(1, st)));
      assertEquals(WitnessClient.OfferResult.STORED, c.offer(CERTS.tentative(2, st)));
      assertEquals(CertType.LOG_ENTRY, c.query(R, 0, 0).type());
      assertEquals("dn-witness@" + dn0.getXferAddress().getAddress().getHostAddress() + ":"
          + dn0.getXferAddress().getPort(), c.identity().id().name());
    }
    try (WitnessClient c = WitnessClient.connect(w1.address())) {
      assertEquals(CertType.NO_NEXT_ENTRY, CERTS.seal(c, R, 0, 0).type(), "stores are independent");
    }

    // Metrics through JMX, registered under the DataNode's metrics system.
    MBeanServer mbs = ManagementFactory.getPlatformMBeanServer();
    ObjectName name = new ObjectName("Hadoop:service=DataNode,name=SalusWitness-"
        + dn0.getXferAddress().getPort());
    // metrics2 refreshes its JMX cache once per period (10 s by default): poll.
    long deadline = System.currentTimeMillis() + 30_000;
    while (((Number) mbs.getAttribute(name, "Records")).longValue() != 1L) {
      if (System.currentTimeMillis() > deadline) {
        throw new AssertionError("JMX Records never showed the stored certificate");
      }
      Thread.sleep(250);
    }
    assertEquals(1L, ((Number) mbs.getAttribute(name, "OffersStored")).longValue());
    assertEquals(2L, ((Number) mbs.getAttribute(name, "OffersPending")).longValue());

    // Restart DataNode 0: the plugin stops with it and reopens the same journal.
    Path dir0 = w0.store().directory();
    assertEquals(true, cluster.restartDataNode(0, true));
    cluster.waitActive();
    DataNode again = cluster.getDataNodes().stream()
        .filter(d -> WitnessDataNodePlugin.running(d) != null
            && WitnessDataNodePlugin.running(d).store().directory().equals(dir0))
        .findFirst().orElseThrow(() -> new AssertionError("restarted DataNode has no witness"));
    InetSocketAddress a = WitnessDataNodePlugin.running(again).address();
    try (WitnessClient c = WitnessClient.connect(a)) {
      assertEquals(st, c.query(R, 0, 0).statement());
    }
  }

  @Test
  void aCorruptJournalIsReportedThroughMetricsAndProblemNotOnlyAWarning() throws Exception {
    RegionId r = new RegionId("vol", 7);
    DataNode dn = cluster.getDataNodes().get(1);
    WitnessNode w = WitnessDataNodePlugin.running(dn);
    Path dir = w.store().directory();
    long first = w.store().writePosition();
    for (long i = 0; i < 3; i++) {
      w.store().putIfAbsent(r, 0, i, CERTS.logEntry(Certs.entry(r, 0, i)));
    }
    int port = dn.getXferAddress().getPort();
    MiniDFSCluster.DataNodeProperties props = cluster.stopDataNode(1);
    Path seg;
    try (var files = Files.list(dir)) {
      seg = files.filter(p -> p.getFileName().toString().startsWith("journal-")).sorted()
          .reduce((a, b) -> b).orElseThrow();
    }
    long victim = first + JournalRecord.HEADER + 20; // inside a record that others follow
    DurableCertificateStoreTest.flip(seg, victim);
    assertTrue(cluster.restartDataNode(props, true));
    cluster.waitActive();
    DataNode broken = cluster.getDataNodes().stream()
        .filter(d -> d.getXferAddress().getPort() == port).findFirst().orElseThrow();
    assertNull(WitnessDataNodePlugin.running(broken), "a corrupt journal must not be served");
    String problem = WitnessDataNodePlugin.problem(broken).orElseThrow(
        () -> new AssertionError("the failed witness is not reported"));
    assertTrue(problem.contains("corrupt") && problem.contains("--repair"), problem);

    MBeanServer mbs = ManagementFactory.getPlatformMBeanServer();
    ObjectName name = new ObjectName("Hadoop:service=DataNode,name=SalusWitness-" + port);
    long deadline = System.currentTimeMillis() + 30_000;
    while (!mbs.isRegistered(name)
        || ((Number) mbs.getAttribute(name, "JournalCorrupt")).intValue() != 1) {
      if (System.currentTimeMillis() > deadline) {
        throw new AssertionError("JMX never showed JournalCorrupt=1 for " + name);
      }
      Thread.sleep(250);
    }
    assertEquals(0, ((Number) mbs.getAttribute(name, "Healthy")).intValue());
    assertTrue(String.valueOf(mbs.getAttribute(name, "tag.Problem")).contains("--repair"));

    // Restored journal (here: the byte flipped back): the same DataNode serves again.
    props = cluster.stopDataNode(cluster.getDataNodes().indexOf(broken));
    DurableCertificateStoreTest.flip(seg, victim);
    assertTrue(cluster.restartDataNode(props, true));
    cluster.waitActive();
    DataNode healed = cluster.getDataNodes().stream()
        .filter(d -> d.getXferAddress().getPort() == port).findFirst().orElseThrow();
    assertTrue(WitnessDataNodePlugin.problem(healed).isEmpty());
    assertEquals(3, WitnessDataNodePlugin.running(healed).store().indexes(r, 0).size());
  }
}
