package io.salus.it.salus;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.salus.blockdriver.salus.SalusVolume;
import io.salus.core.cert.Certificate;
import io.salus.core.crypto.NodeId;
import io.salus.core.hbase.VolumeGeometry;
import io.salus.core.hbase.endpoint.ReplicaStorageFactory;
import io.salus.core.hbase.storage.HdfsReplicaStorage;
import io.salus.core.merkle.VolumeRootRecord;
import io.salus.core.protocol.ProtocolConfig;
import io.salus.core.protocol.recovery.Coordination;
import io.salus.core.protocol.replica.RegionSnapshot;
import io.salus.core.protocol.replica.RegionStore;
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
import org.junit.jupiter.api.Test;

/**
 * Issue 13 (task lat13): a replica's checkpoint (flush: a file on HDFS written, hsynced and renamed, and the HBase
 * region flushed, hundreds of ms each time, every {@code CHECKPOINT_EVERY} entries) ran on the replica's event loop,
 * before the PutReply of the entry that triggered it was sent, and every message to the replica waited behind it.
 * Here the endpoint's real storage (HDFS log, region cells) has its checkpoint writes held at a gate: writes must
 * still commit and be acknowledged while a checkpoint write is held, and once the gate opens the held checkpoints
 * complete and the volume reads back.
 */
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

  /** The endpoint's default storage, with its checkpoint writes going through {@link #gate}. */
  public static final class GatedCheckpoints implements ReplicaStorageFactory {
    private final HdfsReplicaStorage inner = new HdfsReplicaStorage();

    @Override
    public ReplicaDisk disk(RegionCoprocessorEnvironment env, NodeId replica) {
      ReplicaDisk d = inner.disk(env, replica);
      return new ReplicaDisk() {
        @Override
        public void append(long generation, long index, byte[] entry) {
          d.append(generation, index, entry);
        }

        @Override
        public byte[] read(long generation, long index) {
          return d.read(generation, index);
        }

        @Override
        public long lastIndex(long generation) {
          return d.lastIndex(generation);
        }

        @Override
        public void writeSnapshot(RegionSnapshot s) {
          d.writeSnapshot(s);
        }

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
          }
          d.writeCheckpoint(generation, throughIndex, lastSeq, changed, rootRecord);
          written.incrementAndGet();
          if (g != null) {
            heldWritten.incrementAndGet();
          }
        }

        @Override
        public RegionSnapshot readSnapshot(long generation, long throughIndex) {
          return d.readSnapshot(generation, throughIndex);
        }

        @Override
        public void recordDecision(long generation, Certificate decision) {
          d.recordDecision(generation, decision);
        }

        @Override
        public List<Certificate> decisions(long generation) {
          return d.decisions(generation);
        }

        @Override
        public void truncateLogPrefix(long generation, long throughIndex) {
          d.truncateLogPrefix(generation, throughIndex);
        }
      };
    }

    @Override
    public CertificateStore certificateStore(RegionCoprocessorEnvironment env, NodeId holder) {
      return inner.certificateStore(env, holder);
    }

    @Override
    public RegionStore regionStore(RegionCoprocessorEnvironment env, ProtocolConfig cfg, int regionIndex) {
      return inner.regionStore(env, cfg, regionIndex);
    }

    @Override
    public Coordination coordination(RegionCoprocessorEnvironment env, String volume) {
      return inner.coordination(env, volume);
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
}
