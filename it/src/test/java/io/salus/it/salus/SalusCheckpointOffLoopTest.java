package io.salus.it.salus;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.salus.blockdriver.salus.SalusVolume;
import io.salus.core.crypto.NodeId;
import io.salus.core.hbase.VolumeGeometry;
import io.salus.core.hbase.endpoint.ReplicaStorageFactory;
import io.salus.core.hbase.storage.HdfsReplicaStorage;
import io.salus.core.merkle.VolumeRootRecord;
import io.salus.core.protocol.ProtocolConfig;
import io.salus.core.protocol.recovery.Coordination;
import io.salus.core.protocol.replica.RegionSnapshot;
import io.salus.core.protocol.replica.RegionStore;
import io.salus.core.protocol.replica.ForwardingReplicaDisk;
import io.salus.core.protocol.replica.ReplicaDisk;
import io.salus.core.protocol.witness.CertificateStore;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.hbase.coprocessor.RegionCoprocessorEnvironment;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * Issue 13 (task lat13): a replica's checkpoint (flush: a file on HDFS written, hsynced and renamed, and the HBase
 * region flushed, hundreds of ms each time, every {@code CHECKPOINT_EVERY} entries) ran on the replica's event loop,
 * before the PutReply of the entry that triggered it was sent, and every message to the replica waited behind it.
 * Here the endpoint's real storage (HDFS log, region cells) has its checkpoint writes held at a gate: writes must
 * still commit and be acknowledged while a checkpoint write is held, and once the gate opens the held checkpoints
 * complete and the volume reads back.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class SalusCheckpointOffLoopTest {
  static final int BLOCK = 4096;
  static final long PER_REGION = 16;
  static SalusMiniCluster cluster;
  /** Closed (non-null, count 1): every checkpoint write waits here until it opens. */
  static volatile CountDownLatch gate;
  static final AtomicInteger held = new AtomicInteger();
  static final AtomicInteger written = new AtomicInteger();
  /** Held checkpoints written after the gate opened (later checkpoints are written without being held). */
  static final AtomicInteger heldWritten = new AtomicInteger();
  /**
   * Raised when the test stops replicas: a held checkpoint write of a disk opened before it never completes once the
   * gate opens (as if its server stopped during the write).
   */
  static volatile int stopEpoch;
  /**
   * The latest opened disk (unwrapped) of each replica node; the coordination of each region opened (volume|region,
   * closed with the region); each volume's protocol config.
   */
  static final Map<String, ReplicaDisk> disks = new java.util.concurrent.ConcurrentHashMap<>();
  static final Map<String, Coordination> coordinations = new java.util.concurrent.ConcurrentHashMap<>();
  static final Map<String, ProtocolConfig> configs = new java.util.concurrent.ConcurrentHashMap<>();

  /** The endpoint's default storage, with its checkpoint writes going through {@link #gate}. */
  public static final class GatedCheckpoints implements ReplicaStorageFactory {
    private final HdfsReplicaStorage inner = new HdfsReplicaStorage();

    @Override
    public ReplicaDisk disk(RegionCoprocessorEnvironment env, NodeId replica) {
      ReplicaDisk d = inner.disk(env, replica);
      disks.put(replica.name(), d);
      int epoch = stopEpoch;
      // only the checkpoint write is gated; every other call is the disk's own (appendAll, commit marks and leader
      // decisions in groups as in production: the wrapper used to fall back to the interface's per-record defaults)
      return new ForwardingReplicaDisk(d) {
        @Override
        public void writeCheckpoint(long generation, long throughIndex, long lastSeq, Map<Long, byte[]> changed,
                                    VolumeRootRecord rootRecord) {
          CountDownLatch g = gate;
          if (g != null) {
            held.incrementAndGet();
            try {
              g.await();
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
              throw new IllegalStateException("interrupted at the checkpoint gate", e);
            }
            if (epoch < stopEpoch) {
              throw new IllegalStateException("the replica was stopped while this checkpoint write was held");
            }
          }
          d.writeCheckpoint(generation, throughIndex, lastSeq, changed, rootRecord);
          written.incrementAndGet();
          if (g != null) {
            heldWritten.incrementAndGet();
          }
        }
      };
    }

    @Override
    public CertificateStore certificateStore(RegionCoprocessorEnvironment env, NodeId holder) {
      return inner.certificateStore(env, holder);
    }

    @Override
    public RegionStore regionStore(RegionCoprocessorEnvironment env, ProtocolConfig cfg, int regionIndex) {
      configs.put(cfg.volume(), cfg);
      return inner.regionStore(env, cfg, regionIndex);
    }

    @Override
    public Coordination coordination(RegionCoprocessorEnvironment env, String volume) {
      Coordination c = inner.coordination(env, volume);
      coordinations.put(volume + "|" + env.getRegion().getRegionInfo().getEncodedName(), c);
      return c;
    }

    @Override
    public void close() {
      inner.close();
    }
  }

  @BeforeAll
  static void start() throws Exception {
    cluster = new SalusMiniCluster(c -> c.set(ReplicaStorageFactory.CLASS_KEY, GatedCheckpoints.class.getName()));
  }

  @AfterAll
  static void stop() throws Exception {
    CountDownLatch g = gate;
    gate = null;
    if (g != null) {
      g.countDown();
    }
    if (cluster != null) {
      cluster.close();
    }
  }

  @Test
  @Order(1)
  void writesCommitWhileACheckpointWriteIsHeld() throws Exception {
    VolumeGeometry g = new VolumeGeometry("ckpt", 2 * PER_REGION * BLOCK, BLOCK, PER_REGION);
    cluster.createVolume(g);
    Random rnd = new Random(31);
    byte[] reference = new byte[(int) (g.numBlocks() * BLOCK)];
    try (SalusVolume v = SalusVolume.open(cluster.connection(), "ckpt")) {
      gate = new CountDownLatch(1);
      // 3 * CHECKPOINT_EVERY sequential writes to region 0: its replicas reach checkpoint indexes while the first
      // checkpoint write is still held
      for (int i = 0; i < 12; i++) {
        byte[] d = new byte[BLOCK];
        rnd.nextBytes(d);
        try {
          v.write(i, d, false).get(60, TimeUnit.SECONDS);
        } catch (TimeoutException e) {
          fail("write " + i + " was not acknowledged within 60 s while " + held.get() + " checkpoint write(s) were"
              + " held: a checkpoint still holds the replica's event loop (the PutReply waits for the flush)");
        }
        System.arraycopy(d, 0, reference, i * BLOCK, BLOCK);
      }
      assertTrue(held.get() >= 3, "the replicas of region 0 reached a checkpoint and its write was held: " + held.get());
      assertEquals(0, written.get(), "no checkpoint was written while the gate was closed");
      // open the gate: the held checkpoints complete (in order), the replicas sign them, the volume reads back
      CountDownLatch open = gate;
      gate = null;
      open.countDown();
      long end = System.currentTimeMillis() + SalusMiniCluster.DEADLINE_MS;
      while (heldWritten.get() < held.get() && System.currentTimeMillis() < end) {
        Thread.sleep(100);
      }
      // (compared with the held ones only: checkpoints reached after the gate opened are written without waiting, so
      // all written ones can outnumber the held ones: 4 written for 3 held in a merged run)
      assertEquals(held.get(), heldWritten.get(), "every held checkpoint was written once the gate opened");
      assertArrayEquals(reference, v.read(0, (int) g.numBlocks()).get(SalusMiniCluster.DEADLINE_MS,
          TimeUnit.MILLISECONDS), "the volume reads back");
    }
  }

  /**
   * rec15: the three replicas of a region are stopped while their checkpoint write through index 11 is held (so the
   * latest certificate is through 7) after entries through 13 applied, and reopened: HBase flushed the regions'
   * memstores at the close, so their cells hold the state at 13, their disks the state at 7 plus the log. Their
   * replay crosses index 11 and they sign it: the certificate must vouch for the state their disks compose, so each
   * replica's disk checks against it and a replica reopened once more starts from its own disk. Before the fix the
   * three signed the region root of their cells (blocks of entries 12 and 13 mixed in): the reopened replica could
   * not start from its disk and refused both peers' state ("region tree root ... differs from the certified"),
   * SalusUpReopenTest's failure after SIGTERM with the off-loop writer.
   */
  @Test
  @Order(2)
  void replicasReopenedOverCellsAheadOfTheirCertifiedCheckpointStartFromTheirOwnDisks() throws Exception {
    String vol = "reopen";
    VolumeGeometry g = new VolumeGeometry(vol, 2 * PER_REGION * BLOCK, BLOCK, PER_REGION);
    cluster.createVolume(g);
    cluster.awaitPlaced(g);
    io.salus.core.cert.RegionId region0 = new io.salus.core.cert.RegionId(vol, 0);
    Random rnd = new Random(15);
    byte[] reference = new byte[(int) (g.numBlocks() * BLOCK)];
    try (SalusVolume v = SalusVolume.open(cluster.connection(), vol)) {
      int certifiedWrites = 8; // 2 * CHECKPOINT_EVERY: entries 0..7 of region 0, certified through 7
      for (int i = 0; i < certifiedWrites + 6; i++) {
        if (i == certifiedWrites) {
          awaitCertified(vol, region0, certifiedWrites - 1);
          held.set(0);
          gate = new CountDownLatch(1); // the checkpoint through 11 stays in flight
        }
        byte[] d = new byte[BLOCK];
        rnd.nextBytes(d);
        int block = i % 6; // entries 12 and 13 rewrite blocks 0 and 1: the cells at 13 differ from the state at 11
        v.write(block, d, false).get(SalusMiniCluster.DEADLINE_MS, TimeUnit.MILLISECONDS);
        System.arraycopy(d, 0, reference, block * BLOCK, BLOCK);
      }
      long end = System.currentTimeMillis() + SalusMiniCluster.DEADLINE_MS;
      while (held.get() < 3 && System.currentTimeMillis() < end) {
        Thread.sleep(50);
      }
      assertEquals(3, held.get(), "each replica's checkpoint write through 11 is held");
      assertEquals(certifiedWrites - 1, certifiedIndex(vol, region0), "nothing newer is certified");

      // stop the three replicas of region 0 (HBase flushes their cells at the close), their held writes never
      // complete; reopen them
      CountDownLatch stopped = gate;
      List<byte[]> names = new java.util.ArrayList<>();
      for (int k = 0; k < 3; k++) {
        names.add(cluster.region(g, 0, k).getRegionInfo().getRegionName());
      }
      stopEpoch++;
      try (org.apache.hadoop.hbase.client.Admin admin = cluster.connection().getAdmin()) {
        for (byte[] n : names) {
          admin.unassign(n, true);
        }
        gate = null;
        stopped.countDown();
        for (byte[] n : names) {
          admin.assign(n);
        }
      }
      cluster.awaitPlaced(g);
      long crossed = certifiedWrites - 1 + 4;
      awaitCertified(vol, region0, crossed);
      ProtocolConfig cfg = configs.get(vol);
      io.salus.core.cert.Statement.Checkpoint cp = latest(vol, region0);
      for (int k = 0; k < 3; k++) {
        io.salus.core.hbase.endpoint.ReplicaHost h = cluster.endpoint(g, 0, k).host();
        assertTrue(h.counters().get("replayLogEnd") >= crossed && h.counters().get("replayBaseIndex") < crossed,
            "replica " + k + " replayed across " + crossed + ": " + h.counters());
        assertTrue(h.counters().get("replayResetBlocks") > 0, "replica " + k + "'s cells were ahead of its base (HBase"
            + " flushed them at the close) and were set back to it: " + h.counters());
        assertEquals(0L, h.counters().get("recoveryFromPeer"), "replica " + k + " started from its disk");
        RegionSnapshot s = disks.get(h.replicaId().name()).readSnapshot(0, crossed);
        assertEquals(null, s.mismatch(cp, cfg.hash(), cfg.blockSize(), cfg.layout()),
            "replica " + k + "'s checkpoint files compose the certified state through " + crossed);
      }

      // replica 1 reopened once more: it starts from its own disk (before: it could not, and refused its peers)
      byte[] n1 = cluster.region(g, 0, 1).getRegionInfo().getRegionName();
      try (org.apache.hadoop.hbase.client.Admin admin = cluster.connection().getAdmin()) {
        admin.unassign(n1, true);
        admin.assign(n1);
      }
      end = System.currentTimeMillis() + SalusMiniCluster.DEADLINE_MS;
      Map<String, Long> c = null;
      while (System.currentTimeMillis() < end) {
        var ep = cluster.endpoint(g, 0, 1);
        c = ep == null || ep.host() == null ? null : ep.host().counters();
        if (c != null && (c.get("recovering") == 0 || c.get("recoveryRefused") > 0)) {
          break;
        }
        Thread.sleep(100);
      }
      assertTrue(c != null && c.get("recovering") == 0 && c.get("recoveryFromPeer") == 0
          && c.get("recoveryRefused") == 0 && c.get("recoveryCheckedIndex") >= crossed,
          "replica 0/1 reopened again starts from its own disk through " + crossed + ": " + c);
      cluster.awaitPlaced(g);
      byte[] d = new byte[BLOCK];
      rnd.nextBytes(d);
      v.write(7, d, true).get(SalusMiniCluster.DEADLINE_MS, TimeUnit.MILLISECONDS);
      System.arraycopy(d, 0, reference, 7 * BLOCK, BLOCK);
      assertArrayEquals(reference, v.read(0, (int) g.numBlocks()).get(SalusMiniCluster.DEADLINE_MS,
          TimeUnit.MILLISECONDS), "the volume reads back");
    }
  }

  /** The latest CHECKPOINT certificate of {@code region}, read through any open region's coordination. */
  static io.salus.core.cert.Statement.Checkpoint latest(String vol, io.salus.core.cert.RegionId region) {
    io.salus.core.cert.Statement.Checkpoint best = null;
    for (Map.Entry<String, Coordination> e : coordinations.entrySet()) {
      if (!e.getKey().startsWith(vol + "|")) {
        continue;
      }
      try {
        io.salus.core.cert.Statement.Checkpoint cp = e.getValue().latestCheckpoint(region, x -> true)
            .map(x -> x.statement(io.salus.core.cert.Statement.Checkpoint.class)).orElse(null);
        if (cp != null && (best == null || cp.throughIndex() > best.throughIndex())) {
          best = cp;
        }
      } catch (RuntimeException closed) {
        coordinations.remove(e.getKey()); // its region was closed (its ZooKeeper client with it)
      }
    }
    return best;
  }

  static long certifiedIndex(String vol, io.salus.core.cert.RegionId region) {
    io.salus.core.cert.Statement.Checkpoint cp = latest(vol, region);
    return cp == null ? -1 : cp.throughIndex();
  }

  static void awaitCertified(String vol, io.salus.core.cert.RegionId region, long index) throws Exception {
    long end = System.currentTimeMillis() + SalusMiniCluster.DEADLINE_MS;
    while (certifiedIndex(vol, region) < index) {
      assertTrue(System.currentTimeMillis() < end, "a CHECKPOINT certificate of " + region + " through " + index
          + " within " + SalusMiniCluster.DEADLINE_MS + " ms; latest: " + certifiedIndex(vol, region));
      Thread.sleep(100);
    }
  }
}
