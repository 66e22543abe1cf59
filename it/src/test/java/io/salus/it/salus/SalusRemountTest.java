package io.salus.it.salus;

import static org.junit.jupiter.api.Assertions.*;

import io.salus.blockdriver.salus.SalusVolume;
import io.salus.blockdriver.salus.SalusVolumeCrash;
import io.salus.blockdriver.volume.VolumeException;
import io.salus.core.hbase.VolumeGeometry;
import io.salus.core.hbase.endpoint.VolumeAddressing;
import io.salus.it.hbase.endpoint.GetFaults;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The client mount protocol against the region servers (issue 13 "stopped cleanly, and killed, then reopened";
 * issue 14 item 5), on a real HBase mini cluster with three region servers running the replica endpoint on its
 * default storage (Salus log on HDFS): a new writer mounts an existing Salus volume after a clean close and after
 * the previous writer died with batches in flight, and a replica that lies about its state stops the mount.
 * Before the mount protocol, the second writer's first batch reused batch id 1 (taken by every replica for a
 * retransmission of the old batch 1 and dropped) and its GETs expected the empty tree: nothing read back or
 * committed.
 */
@OnSharedSalusCluster
class SalusRemountTest {
  static final int BLOCK = 4096;
  static final long PER_REGION = 16;
  static final int REGIONS = 4;
  static SalusMiniCluster cluster;

  @BeforeAll
  static void start() throws Exception {
    cluster = SalusMiniCluster.shared(); // started by the first class of this JVM tagged with it
  }

  static <T> T await(CompletableFuture<T> f) throws Exception {
    return f.get(SalusMiniCluster.DEADLINE_MS, TimeUnit.MILLISECONDS);
  }

  static VolumeGeometry volume(String name) throws Exception {
    VolumeGeometry g = new VolumeGeometry(name, REGIONS * PER_REGION * BLOCK, BLOCK, PER_REGION);
    cluster.createVolume(g);
    return g;
  }

  /** Random writes of 1..16 blocks (one batch each), some across region boundaries, applied to {@code ref}. */
  static List<CompletableFuture<Void>> writeRandom(SalusVolume v, Random rnd, int n, byte[] ref, boolean wait)
      throws Exception {
    List<CompletableFuture<Void>> fs = new ArrayList<>();
    long blocks = v.sizeInBlocks();
    for (int i = 0; i < n; i++) {
      int count = 1 + rnd.nextInt(16);
      long first = rnd.nextInt((int) (blocks - count + 1));
      byte[] d = new byte[count * BLOCK];
      rnd.nextBytes(d);
      CompletableFuture<Void> f = v.write(first, d, i % 5 == 0);
      if (wait) {
        await(f);
      }
      fs.add(f);
      System.arraycopy(d, 0, ref, (int) first * BLOCK, d.length);
    }
    return fs;
  }

  @Test
  void cleanCloseThenRemountReadsBackAndKeepsWriting() throws Exception {
    VolumeGeometry g = volume("clean");
    byte[] ref = new byte[(int) (g.numBlocks() * BLOCK)];
    Random rnd = new Random(13);
    try (SalusVolume v = SalusVolume.open(cluster.connection(), "clean")) {
      writeRandom(v, rnd, 40, ref, true);
      await(v.flush());
    }
    for (int mount = 2; mount <= 3; mount++) {
      try (SalusVolume v = SalusVolume.open(cluster.connection(), "clean")) {
        assertArrayEquals(ref, await(v.read(0, (int) g.numBlocks())), "mount " + mount + ": every write reads back");
        writeRandom(v, rnd, 25, ref, true); // new writes commit after the remount
        assertArrayEquals(ref, await(v.read(0, (int) g.numBlocks())), "mount " + mount + ": the new writes read back");
      }
    }
  }

  /**
   * The writer dies with up to 32 batches in flight (its loop stops: no retransmission, no acknowledgement; what it
   * had already handed to its link still goes out, see {@code SalusVolume.crashForTest}). The next writer's mount
   * fences it, waits until the replicas have decided what reached them, and mounts the certified state: it contains every acknowledged write and is the result of a
   * prefix of the issued writes (never a later write without an earlier one); new writes then commit.
   */
  @Test
  void writerKilledMidStreamThenRemountKeepsEveryAcknowledgedWriteAsAPrefix() throws Exception {
    VolumeGeometry g = volume("crash");
    int n = 300;
    Random rnd = new Random(17);
    List<long[]> ranges = new ArrayList<>();
    List<byte[]> datas = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      int count = 1 + rnd.nextInt(16);
      long first = rnd.nextInt((int) (g.numBlocks() - count + 1));
      byte[] d = new byte[count * BLOCK];
      rnd.nextBytes(d);
      ranges.add(new long[] {first, count});
      datas.add(d);
    }
    List<CompletableFuture<Void>> fs = new ArrayList<>();
    SalusVolume v = SalusVolume.open(cluster.connection(), "crash");
    for (int i = 0; i < n; i++) {
      fs.add(v.write(ranges.get(i)[0], datas.get(i), false)); // queued in issue order, 32 batches in flight
    }
    long end = System.currentTimeMillis() + SalusMiniCluster.DEADLINE_MS;
    // 40 acknowledgements, or the writer gave up on its own (under heavy load it may ask for recovery after 4
    // retransmissions without progress and fail what is outstanding): either way it stops with batches in flight
    while (fs.stream().filter(f -> f.isDone() && !f.isCompletedExceptionally()).count() < 40
        && fs.stream().noneMatch(CompletableFuture::isCompletedExceptionally)) {
      assertTrue(System.currentTimeMillis() < end, "40 writes acknowledged");
      Thread.sleep(5);
    }
    long failedBefore = fs.stream().filter(CompletableFuture::isCompletedExceptionally).count();
    SalusVolumeCrash.crash(v);
    int acked = -1;
    for (int i = 0; i < n; i++) {
      if (fs.get(i).isDone() && !fs.get(i).isCompletedExceptionally()) {
        acked = i;
      }
    }
    assertTrue(acked < n - 1, "the writer died with writes not acknowledged (the case is real)");

    try (SalusVolume w = SalusVolume.open(cluster.connection(), "crash")) {
      byte[] got = await(w.read(0, (int) g.numBlocks()));
      // the volume is the result of the first k issued writes, for some k covering every acknowledged one
      byte[] state = new byte[got.length];
      int prefix = Arrays.equals(state, got) ? 0 : -1;
      for (int k = 1; k <= n && prefix < 0; k++) {
        long[] r = ranges.get(k - 1);
        System.arraycopy(datas.get(k - 1), 0, state, (int) r[0] * BLOCK, (int) r[1] * BLOCK);
        if (Arrays.equals(state, got)) {
          prefix = k;
        }
      }
      assertTrue(prefix >= 0, "the mounted volume is the result of a prefix of the issued writes");
      assertTrue(prefix >= acked + 1, "every acknowledged write is in it: prefix " + prefix + ", last acked "
          + (acked + 1));
      System.out.println("writer killed: " + (acked + 1) + " writes acknowledged of " + n + " (" + failedBefore
          + " failed by the writer itself before it was killed); mounted prefix " + prefix);
      byte[] ref = got.clone();
      writeRandom(w, new Random(19), 20, ref, true);
      assertArrayEquals(ref, await(w.read(0, (int) g.numBlocks())), "new writes commit after the remount");
    } finally {
      SalusVolumeCrash.release(v);
    }
  }

  /**
   * One replica of region 1 signs a forged region root when asked at mount: its three replicas contradict each
   * other, and the mount stops with an error naming region 1 (nothing is mounted). Without the liar the volume
   * mounts and reads back: nothing was changed.
   */
  @Test
  void aReplicaThatLiesAboutItsStateAtMountStopsTheMountNamingTheRegion() throws Exception {
    VolumeGeometry g = volume("lie");
    byte[] ref = new byte[(int) (g.numBlocks() * BLOCK)];
    try (SalusVolume v = SalusVolume.open(cluster.connection(), "lie")) {
      writeRandom(v, new Random(23), 20, ref, true);
    }
    var liar = new VolumeAddressing(g).replica(1, 2);
    GetFaults.mountLiars.add(liar);
    try {
      VolumeException.RootMismatch e = assertThrows(VolumeException.RootMismatch.class,
          () -> SalusVolume.open(cluster.connection(), "lie").close());
      assertTrue(e.getMessage().contains("region 1:") && e.getMessage().contains(liar.toString()), e.getMessage());
    } finally {
      GetFaults.mountLiars.clear();
    }
    try (SalusVolume v = SalusVolume.open(cluster.connection(), "lie")) {
      assertArrayEquals(ref, await(v.read(0, (int) g.numBlocks())));
    }
  }
}
