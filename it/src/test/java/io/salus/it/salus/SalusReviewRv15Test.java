package io.salus.it.salus;

import static org.junit.jupiter.api.Assertions.*;

import io.salus.blockdriver.salus.SalusVolume;
import io.salus.blockdriver.volume.VolumeException;
import io.salus.core.hbase.VolumeGeometry;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Review rv15 (adversarial review of the Salus volume on HBase): findings that need the real endpoint, on one
 * mini cluster with three region servers (docs/review-rv15.md).
 */
@OnSharedSalusCluster
class SalusReviewRv15Test {
  static final int BLOCK = 4096;
  static final long PER_REGION = 16;
  static SalusMiniCluster cluster;

  @BeforeAll
  static void start() throws Exception {
    cluster = SalusMiniCluster.shared(); // started by the first class of this JVM tagged with it
  }

  static <T> T await(CompletableFuture<T> f) throws Exception {
    return f.get(SalusMiniCluster.DEADLINE_MS, TimeUnit.MILLISECONDS);
  }

  /**
   * A read issued while a write to the same block is in flight waits for that write's seq (the GET's prevNum). If
   * the write never commits (the writer was fenced by a newer writer, a batch failed, or the writer gave up after
   * STALL_MILLIS), SalusVolume failed the writes in flight but not the reads: the read's GET was retried at the
   * replicas every 5 s for ever and the read never completed (through NBD: a request never answered until the
   * connection closes). Every other operation of the volume fails at once ("needs recovery" / fenced).
   */
  @Test
  void aReadWaitingForAWriteThatIsRefusedFailsInsteadOfHangingForever() throws Exception {
    VolumeGeometry g = new VolumeGeometry("rdhang", 2 * PER_REGION * BLOCK, BLOCK, PER_REGION);
    cluster.createVolume(g);
    Random rnd = new Random(15);
    byte[] a = new byte[BLOCK];
    byte[] late = new byte[BLOCK];
    rnd.nextBytes(a);
    rnd.nextBytes(late);
    SalusVolume old = SalusVolume.open(cluster.connection(), "rdhang");
    try {
      await(old.write(0, a, false));
      assertArrayEquals(a, await(old.read(0, 1)));
      io.salus.blockdriver.salus.SalusVolumeSeams.ignoreLeaseLoss(old);
      cluster.expireLease(old.lease());
      try (SalusVolume fresh = SalusVolume.open(cluster.connection(), "rdhang")) {
        assertTrue(fresh.lease().epoch() > old.lease().epoch());
        // the old writer writes block 1 and reads it back at once (an NBD client with both in flight)
        CompletableFuture<Void> w = old.write(1, late, false);
        CompletableFuture<byte[]> r = old.read(1, 1);
        ExecutionException we = assertThrows(ExecutionException.class, () -> await(w),
            "the fenced writer's write was acknowledged");
        assertInstanceOf(VolumeException.class, we.getCause());
        // the volume refuses every new operation now
        assertThrows(ExecutionException.class, () -> await(old.read(0, 1)), "a new read after the fence");
        // the read in flight: some answer within a few retransmission periods (60 s = 12 periods), not never
        try {
          byte[] got = r.get(60, TimeUnit.SECONDS);
          assertFalse(java.util.Arrays.equals(late, got), "the refused write's data was read back");
        } catch (ExecutionException e) {
          assertInstanceOf(VolumeException.class, e.getCause(), "the read fails with the volume's reason");
        } catch (TimeoutException e) {
          fail("the read of block 1, issued while the refused write to it was in flight, has not completed 60 s"
              + " after the write failed (it waits for the refused write's seq at the replicas, for ever): "
              + old.diagnostics());
        }
        // and the fenced writer stops asking the replicas for replies: its polls take replies from the outboxes of
        // the client id it shares with the new writer (polled every 5-20 ms while anything is awaited)
        long polls = old.counters().get("polls");
        Thread.sleep(3_000);
        long more = old.counters().get("polls") - polls;
        assertTrue(more <= 2, "the fenced writer polled the replicas " + more + " more times in 3 s: "
            + old.diagnostics());
      }
    } finally {
      old.close();
    }
  }

  /**
   * A replica's Salus log is lost (its DataNode disk; here deleted while its region is closed) while its region has
   * no CHECKPOINT certificate yet (fewer than 4 log entries: every region of a young volume). The region open
   * ({@code RegionReplica.verifiedBase}) then starts it from the empty generation-0 state instead of catching it up
   * from a peer (the catch-up needs a certificate to check against). It waits for predecessors of the next
   * sub-batch that nobody sends again and never votes: every later write of the region stalls (the writer
   * retransmits for STALL_MILLIS, 10 min, then gives up). Salus-core twin:
   * {@code CatchUpFromAFaultyPeerTest#aReplicaWhoseLogIsLostBeforeTheFirstCheckpointDoesNotStallItsRegion}.
   * Fixed (rv17): with no certificate the reopened replica serves and asks its peers for their log at open
   * ({@code RegionReplica.catchUpFromPeersAtOpen}), taking the entries that continue its own log, each client-signed
   * and decided; the test also checks it took both entries and that the volume mounts again (the mount needs its
   * three replicas to agree) with every write read back.
   */
  @Test
  void aReplicaWhoseLogIsLostBeforeItsRegionsFirstCheckpointDoesNotStallTheRegion() throws Exception {
    VolumeGeometry g = new VolumeGeometry("young", 2 * PER_REGION * BLOCK, BLOCK, PER_REGION);
    cluster.createVolume(g);
    Random rnd = new Random(16);
    byte[] d = new byte[BLOCK];
    byte[][] written = new byte[3][];
    try (SalusVolume v = SalusVolume.open(cluster.connection(), "young")) {
      for (int i = 0; i < 2; i++) { // two entries in region 1: no certificate yet
        rnd.nextBytes(d);
        written[i] = d.clone();
        await(v.write(PER_REGION + i, d.clone(), true));
      }
      org.apache.hadoop.hbase.regionserver.HRegion victim = cluster.region(g, 1, 1);
      org.apache.hadoop.fs.Path dir = ((io.salus.core.hbase.storage.HdfsReplicaStorage) cluster.endpoint(g, 1, 1)
          .storage()).replicaDisk().directory();
      byte[] name = victim.getRegionInfo().getRegionName();
      try (org.apache.hadoop.hbase.client.Admin admin = cluster.connection().getAdmin()) {
        admin.unassign(name, true);
        assertTrue(cluster.util.getDFSCluster().getFileSystem().delete(dir, true), "deleted " + dir);
        admin.assign(name);
      }
      long end = System.currentTimeMillis() + SalusMiniCluster.DEADLINE_MS;
      while (cluster.locate(g, 1, 1) == null) {
        assertTrue(System.currentTimeMillis() < end, "replica 1/1 reopened");
        Thread.sleep(50);
      }
      cluster.awaitPlaced(g);
      rnd.nextBytes(d);
      CompletableFuture<Void> after = v.write(PER_REGION + 5, d.clone(), true);
      try {
        after.get(120, TimeUnit.SECONDS);
      } catch (TimeoutException e) {
        fail("a write to region 1 after its replica 1/1 reopened without its log has not committed in 120 s: "
            + "reopened replica " + cluster.endpoint(g, 1, 1).host().counters() + "; " + v.diagnostics());
      }
      assertArrayEquals(d, await(v.read(PER_REGION + 5, 1)));
      written[2] = d.clone();
      Map<String, Long> c = cluster.endpoint(g, 1, 1).host().counters();
      assertEquals(2L, c.get("peerLogEntries"), "the reopened replica took its peers' two entries: " + c);
    }
    // a new writer's mount needs the region's three replicas to agree: the reopened one holds every write
    try (SalusVolume v = SalusVolume.open(cluster.connection(), "young")) {
      assertArrayEquals(written[0], await(v.read(PER_REGION, 1)), "remounted: block " + PER_REGION);
      assertArrayEquals(written[1], await(v.read(PER_REGION + 1, 1)), "remounted: block " + (PER_REGION + 1));
      assertArrayEquals(written[2], await(v.read(PER_REGION + 5, 1)), "remounted: block " + (PER_REGION + 5));
    }
  }
}
