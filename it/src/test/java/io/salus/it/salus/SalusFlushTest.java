package io.salus.it.salus;

import static org.junit.jupiter.api.Assertions.*;

import io.salus.blockdriver.salus.SalusVolume;
import io.salus.core.crypto.NodeId;
import io.salus.core.hbase.VolumeGeometry;
import io.salus.core.hbase.endpoint.ReplicaStorageFactory;
import io.salus.core.hbase.endpoint.SalusReplicaEndpoint;
import io.salus.core.hbase.storage.HdfsReplicaDisk;
import io.salus.core.hbase.storage.HdfsReplicaStorage;
import io.salus.core.protocol.ProtocolConfig;
import io.salus.core.protocol.recovery.Coordination;
import io.salus.core.protocol.replica.RegionStore;
import io.salus.core.protocol.replica.ReplicaDisk;
import io.salus.core.protocol.witness.CertificateStore;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.hbase.coprocessor.RegionCoprocessorEnvironment;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Task tput18 (issue 13 item 3, "hflush per group of entries, hsync for FLUSH/FUA"), on a real mini cluster with the
 * Salus log on HDFS: a SalusVolume write is acknowledged with its replicas' log entries and commit marks hflushed, not
 * hsynced (no hsync of any replica's log on a write's path); an NBD FLUSH ({@link SalusVolume#flush}) completes only
 * after each of the three replicas of every region written since the previous FLUSH hsynced its log (the HDFS disks'
 * own counters), and a FUA write only after the same for its region. The replicas checkpoint every 64 entries (the
 * default) here, so no checkpoint's log GC (which rolls, so hsyncs, a segment) falls into the write.
 */
class SalusFlushTest {
  static final int BLOCK = 4096;
  static final long PER_REGION = 64;
  static SalusMiniCluster cluster;
  /** The HDFS disk of each replica node (by name), as the endpoint opened it. */
  static final Map<String, HdfsReplicaDisk> disks = new ConcurrentHashMap<>();

  /** The endpoint's default storage, remembering each replica's HDFS disk. */
  public static final class CountedDisks implements ReplicaStorageFactory {
    private final HdfsReplicaStorage inner = new HdfsReplicaStorage();

    @Override
    public ReplicaDisk disk(RegionCoprocessorEnvironment env, NodeId replica) {
      ReplicaDisk d = inner.disk(env, replica);
      disks.put(replica.name(), (HdfsReplicaDisk) d);
      return d;
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
    public String quarantineDisk(RegionCoprocessorEnvironment env, RuntimeException error) {
      return inner.quarantineDisk(env, error);
    }

    @Override
    public void close() {
      inner.close();
    }
  }

  @BeforeAll
  static void start() throws Exception {
    cluster = new SalusMiniCluster(c -> {
      c.set(ReplicaStorageFactory.CLASS_KEY, CountedDisks.class.getName());
      c.setInt(SalusReplicaEndpoint.CHECKPOINT_EVERY_KEY, ProtocolConfig.DEFAULT_CHECKPOINT_EVERY);
    });
  }

  @AfterAll
  static void stop() throws Exception {
    if (cluster != null) {
      cluster.close();
    }
  }

  static <T> T await(CompletableFuture<T> f) throws Exception {
    return f.get(SalusMiniCluster.DEADLINE_MS, TimeUnit.MILLISECONDS);
  }

  static HdfsReplicaDisk disk(VolumeGeometry g, int region, int k) {
    HdfsReplicaDisk d = disks.get(g.volume() + "/" + region + "/r" + k);
    assertNotNull(d, "replica " + k + " of region " + region + " has no HDFS disk: " + disks.keySet());
    return d;
  }

  /** Per replica (region, k): {log hsyncs, syncs, hflushes}. */
  static long[][] counters(VolumeGeometry g) {
    long[][] c = new long[2 * 3][];
    for (int r = 0; r < 2; r++) {
      for (int k = 0; k < 3; k++) {
        HdfsReplicaDisk d = disk(g, r, k);
        c[r * 3 + k] = new long[] {d.logHsyncs(), d.syncs(), d.hflushes()};
      }
    }
    return c;
  }

  @Test
  void writesAreHflushedAndAFlushOrFuaWriteHsyncsEveryReplicaOfTheWrittenRegions() throws Exception {
    VolumeGeometry g = new VolumeGeometry("flush", 2 * PER_REGION * BLOCK, BLOCK, PER_REGION);
    cluster.createVolume(g);
    Random rnd = new Random(18);
    byte[] ref = new byte[(int) (g.numBlocks() * BLOCK)];
    try (SalusVolume v = SalusVolume.open(cluster.connection(), g.volume())) {
      await(v.flush()); // a new writer's first FLUSH syncs every region (whatever a predecessor left)
      long[][] before = counters(g);
      List<CompletableFuture<Void>> fs = new ArrayList<>();
      for (int i = 0; i < 16; i++) { // region 0 only, no FUA
        byte[] d = new byte[BLOCK];
        rnd.nextBytes(d);
        fs.add(v.write(i, d, false));
        System.arraycopy(d, 0, ref, i * BLOCK, BLOCK);
      }
      await(CompletableFuture.allOf(fs.toArray(CompletableFuture[]::new)));
      long[][] written = counters(g);
      for (int i = 0; i < 6; i++) {
        assertEquals(before[i][0], written[i][0], "replica " + i + ": a log hsync on the write path");
        assertEquals(before[i][1], written[i][1], "replica " + i + ": a sync on the write path");
      }
      for (int k = 0; k < 3; k++) {
        assertTrue(written[k][2] > before[k][2], "region 0 replica " + k + ": its entries were hflushed");
      }

      await(v.flush());
      long[][] flushed = counters(g);
      for (int k = 0; k < 3; k++) {
        assertEquals(written[k][1] + 1, flushed[k][1], "region 0 replica " + k + " synced once for the FLUSH");
        assertTrue(flushed[k][0] > written[k][0], "region 0 replica " + k + " hsynced its log for the FLUSH");
        assertEquals(written[3 + k][1], flushed[3 + k][1], "region 1 (not written) was not asked");
      }

      byte[] d = new byte[BLOCK];
      rnd.nextBytes(d);
      long b = PER_REGION + 5; // region 1
      await(v.write(b, d, true)); // FUA
      System.arraycopy(d, 0, ref, (int) b * BLOCK, BLOCK);
      long[][] fua = counters(g);
      for (int k = 0; k < 3; k++) {
        assertEquals(flushed[3 + k][1] + 1, fua[3 + k][1], "region 1 replica " + k + " synced for the FUA write");
        assertTrue(fua[3 + k][0] > flushed[3 + k][0], "region 1 replica " + k + " hsynced its log for the FUA write");
      }
      System.out.println("per replica {log hsyncs, syncs, hflushes}: before " + java.util.Arrays.deepToString(before)
          + ", after the writes " + java.util.Arrays.deepToString(written) + ", after FLUSH "
          + java.util.Arrays.deepToString(flushed) + ", after the FUA write " + java.util.Arrays.deepToString(fua)
          + "; counters " + v.counters());
      assertArrayEquals(ref, await(v.read(0, (int) g.numBlocks())), "every write reads back");
    }
  }
}
