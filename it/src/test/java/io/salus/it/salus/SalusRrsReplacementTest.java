package io.salus.it.salus;

import static io.salus.it.salus.SalusRegionRecoveryTest.assertVolume;
import static io.salus.it.salus.SalusRegionRecoveryTest.expected;
import static org.junit.jupiter.api.Assertions.*;

import io.salus.blockdriver.salus.SalusVolume;
import io.salus.core.hbase.RrsReplacement;
import io.salus.core.hbase.VolumeGeometry;
import io.salus.it.hbase.endpoint.GetFaults;
import java.io.IOException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.hbase.ServerName;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * RRS replacement by the master (issue 14; paper §3.2, §3.3.4 step 1) on a real mini cluster: the master endpoint
 * refuses requests that do not name a replica of the RRS on the server that hosts it, refuses (naming the fix) when
 * no server outside the RRS is live, moves a named replica to a spare server without losing an acknowledged write
 * (even when the replica was fine), and a volume whose replicas on one server withhold their replies to writes asks
 * for the replacement itself and completes every write.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class SalusRrsReplacementTest {
  static final int BLOCK = SalusRegionRecoveryTest.BLOCK;
  static final long PER_REGION = 16;
  static final int REGIONS = 2;
  static final long SILENT_AFTER_MS = 10_000;
  static SalusMiniCluster cluster;
  static ServerName spare;

  @BeforeAll
  static void start() throws Exception {
    // SalusMiniCluster's checkpoint interval (4 entries): a checkpoint often covers the stuck batch before the
    // replacement, so the new incarnation cannot answer its retransmission and the batch completes on its leader
    // region's COMMIT (task fix21; it stalled before)
    cluster = new SalusMiniCluster(c -> c.setLong(SalusVolume.REPLACE_SILENT_AFTER_KEY, SILENT_AFTER_MS));
    for (String l : List.of("org.apache.hadoop.hbase.master.assignment", "org.apache.hadoop.hbase.master.HMaster",
        "org.apache.hadoop.hbase.regionserver.handler", "io.salus.core.hbase")) {
      org.apache.log4j.LogManager.getLogger(l).setLevel(org.apache.log4j.Level.INFO);
    }
  }

  @AfterAll
  static void stop() throws Exception {
    GetFaults.withholdWriteReplies.clear();
    if (cluster != null) {
      cluster.close();
    }
  }

  static VolumeGeometry volume(String name) throws Exception {
    VolumeGeometry g = new VolumeGeometry(name, REGIONS * PER_REGION * BLOCK, BLOCK, PER_REGION);
    cluster.createVolume(g);
    return g;
  }

  static Map<String, ServerName> placement(VolumeGeometry g) {
    Map<String, ServerName> m = new HashMap<>();
    for (int r = 0; r < g.numRegions(); r++) {
      for (int k = 0; k < 3; k++) {
        m.put(r + "/" + k, cluster.locate(g, r, k));
      }
    }
    return m;
  }

  static String refusal(String volume, int region, Map<Integer, String> suspects) {
    IOException e = assertThrows(IOException.class, () -> RrsReplacement.request(cluster.connection(), volume, region,
        suspects, "test"), "refused: " + volume + " " + region + " " + suspects);
    return e.getMessage();
  }

  @Test
  @Order(1)
  void requestsNotNamingAReplicaOnItsServerAreRefusedAndWithoutASpareNothingMoves() throws Exception {
    VolumeGeometry a = volume("rpa");
    VolumeGeometry b = volume("rpb");
    Map<String, ServerName> before = placement(a);
    String r0 = before.get("0/0").toString();
    String r1 = before.get("0/1").toString();
    // replica 0 named on the server of replica 1 (a server of the RRS, but not that replica's)
    assertTrue(refusal("rpa", 0, Map.of(0, r1)).contains("not on " + r1), "names the mismatch");
    // a server that is not in the cluster at all
    assertTrue(refusal("rpa", 0, Map.of(0, "localhost:1")).contains("does not host it"));
    // another volume's replica: region 1 of rpb is on some server; naming it for rpa's replica it is not on
    String otherVolumes = cluster.locate(b, 1, 2).toString();
    if (!otherVolumes.equals(r0)) {
      assertTrue(refusal("rpa", 0, Map.of(0, otherVolumes)).contains("not on"));
    }
    assertTrue(refusal("nosuchvolume", 0, Map.of(0, r0)).contains("no complete, enabled Salus volume"));
    assertTrue(refusal("rpa", 7, Map.of(0, r0)).contains("regions 0..1"));
    assertTrue(refusal("rpa", 0, Map.of(5, r0)).contains("replica 5 does not exist"));
    // a valid request, but every live server hosts a replica of the RRS
    String noSpare = refusal("rpa", 0, Map.of(0, r0));
    assertTrue(noSpare.contains("Start another region server"), noSpare);
    assertEquals(before, placement(a), "nothing moved");
  }

  @Test
  @Order(2)
  void replacingAHealthyReplicaLosesNoAcknowledgedWriteAndARepeatIsIdempotent() throws Exception {
    VolumeGeometry g = volume("rph");
    int n = 40;
    try (SalusVolume v = SalusVolume.open(cluster.connection(), "rph")) {
      SalusRegionRecoveryTest.Workload w = new SalusRegionRecoveryTest.Workload(g, v, n, 8);
      assertEquals("", w.finish());
      spare = cluster.startSpare(0);
      ServerName from = cluster.locate(g, 0, 1);
      System.out.println("before the replacement: " + placement(g) + ", spare " + spare);
      List<String> done = RrsReplacement.request(cluster.connection(), "rph", 0, Map.of(1, from.toString()),
          "test: a healthy replica");
      assertEquals(List.of("replica 1: moved from " + from + " to " + spare), done);
      cluster.awaitPlaced(g);
      System.out.println("after the replacement: " + placement(g));
      assertEquals(spare, cluster.locate(g, 0, 1), "replica 0/1 now on the spare");
      List<String> again = RrsReplacement.request(cluster.connection(), "rph", 0, Map.of(1, from.toString()),
          "test: the same request again");
      assertEquals(1, again.size());
      assertTrue(again.get(0).startsWith("replica 1: already replaced"), again.toString());
      assertEquals(spare, cluster.locate(g, 0, 1), "the repeat moved nothing");
      assertVolume(expected(g, n), v.read(0, (int) g.numBlocks()).get(SalusMiniCluster.DEADLINE_MS,
          TimeUnit.MILLISECONDS), "through the same mount after the replacement");
      // the writer goes on across the replacement
      v.write(SalusRegionRecoveryTest.firstBlock(g, n), SalusRegionRecoveryTest.data(g, n), true)
          .get(SalusMiniCluster.DEADLINE_MS, TimeUnit.MILLISECONDS);
    }
    try (SalusVolume v = SalusVolume.open(cluster.connection(), "rph")) {
      assertVolume(expected(g, n + 1), v.read(0, (int) g.numBlocks()).get(SalusMiniCluster.DEADLINE_MS,
          TimeUnit.MILLISECONDS), "remounted after the replacement");
    }
  }

  @Test
  @Order(3)
  void aServerWithholdingItsWriteRepliesIsReplacedAndEveryWriteCommits() throws Exception {
    assertNotNull(spare, "runs after the test that starts the spare");
    VolumeGeometry g = volume("rpw");
    ServerName meta = cluster.util.getMiniHBaseCluster().getServerHoldingMeta();
    int n = 120;
    try (SalusVolume v = SalusVolume.open(cluster.connection(), "rpw")) {
      SalusRegionRecoveryTest.Workload w = new SalusRegionRecoveryTest.Workload(g, v, n, 8);
      SalusRegionRecoveryTest.awaitTrue("20 writes acknowledged", () -> w.acked() >= 20);
      ServerName bad = null;
      for (int k = 0; k < 3 && bad == null; k++) {
        ServerName s = cluster.locate(g, 0, k);
        if (!s.equals(meta)) {
          bad = s;
        }
      }
      GetFaults.withholdWriteReplies.add(bad.toString());
      long ackedAtFault = w.acked();
      try {
        String failures = w.finish();
        System.out.println("withholding " + bad + " after " + ackedAtFault + " acknowledged writes; "
            + v.diagnostics());
        assertEquals("", failures, "no write fails: they wait for the replacement");
        assertTrue(v.counters().get("replacementsDone") >= 1, v.diagnostics());
        for (int r = 0; r < g.numRegions(); r++) {
          for (int k = 0; k < 3; k++) {
            assertNotEquals(bad, cluster.locate(g, r, k), "replica " + r + "/" + k + " still on the faulty server");
          }
        }
        assertVolume(expected(g, n), v.read(0, (int) g.numBlocks()).get(SalusMiniCluster.DEADLINE_MS,
            TimeUnit.MILLISECONDS), "every write reads back");
      } finally {
        GetFaults.withholdWriteReplies.clear();
      }
    }
    try (SalusVolume v = SalusVolume.open(cluster.connection(), "rpw")) {
      assertVolume(expected(g, n), v.read(0, (int) g.numBlocks()).get(SalusMiniCluster.DEADLINE_MS,
          TimeUnit.MILLISECONDS), "remounted");
    }
  }
}
