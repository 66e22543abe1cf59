package io.salus.it.salus;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.salus.blockdriver.salus.SalusVolume;
import io.salus.core.hbase.VolumeGeometry;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Review rvw21-3: the NBD export accepts reads of up to 32 MiB (8192 blocks of 4 KiB). SalusVolume sent one GET per
 * block, all at once and all to the same replica of the region (the first try goes to replica 0), and the client's
 * link queues at most {@code ReplicaLink.MAX_QUEUED} (4096) envelopes per destination: the rest were dropped, and
 * each dropped GET was retried only after the retransmission period (5 s) at another replica. No assertion on time:
 * the test counts the dropped envelopes and the GET retries.
 */
@OnSharedSalusCluster
class SalusLargeReadTest {
  static final int BLOCK = 4096;
  static final long PER_REGION = 8192;
  static SalusMiniCluster cluster;

  @BeforeAll
  static void start() throws Exception {
    cluster = SalusMiniCluster.shared(); // started by the first class of this JVM tagged with it
  }

  @Test
  void aThirtyTwoMebibyteReadSendsNoGetThatIsDroppedAndRetried() throws Exception {
    VolumeGeometry g = new VolumeGeometry("bigread", 2 * PER_REGION * BLOCK, BLOCK, PER_REGION);
    cluster.createVolume(g);
    Random rnd = new Random(3);
    byte[] d = new byte[64 * BLOCK];
    rnd.nextBytes(d);
    try (SalusVolume v = SalusVolume.open(cluster.connection(), "bigread")) {
      v.write(100, d, false).get(SalusMiniCluster.DEADLINE_MS, TimeUnit.MILLISECONDS);
      Map<String, Long> before = v.counters();
      byte[] all = v.read(0, (int) PER_REGION).get(SalusMiniCluster.DEADLINE_MS, TimeUnit.MILLISECONDS);
      Map<String, Long> after = v.counters();
      byte[] part = new byte[d.length];
      System.arraycopy(all, 100 * BLOCK, part, 0, d.length);
      assertArrayEquals(d, part, "the written blocks read back");
      assertEquals(before.get("dropped"), after.get("dropped"), "GETs the client's link dropped (full queue) while"
          + " one 8192-block read was sent: " + after);
      assertTrue(v.getRetriesByReplica().isEmpty(), "GETs retried at another replica after the retransmission"
          + " period: " + v.getRetriesByReplica());
    }
  }
}
