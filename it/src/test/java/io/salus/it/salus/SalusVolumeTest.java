package io.salus.it.salus;

import static org.junit.jupiter.api.Assertions.*;

import io.salus.blockdriver.salus.SalusVolume;
import io.salus.blockdriver.volume.VolumeException;
import io.salus.core.hbase.VolumeGeometry;
import io.salus.core.protocol.replica.RegionReplica;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * SalusVolume (issue 13 item 6) on a real HBase mini cluster with three region servers running the replica
 * endpoint: block writes become signed sub-batches committed on the three replicas of every region they touch,
 * reads are verified GETs, the writer lease keeps a second writer out.
 */
class SalusVolumeTest {
  static final int BLOCK = 4096;
  static final long PER_REGION = 16;
  static final int REGIONS = 4;
  static SalusMiniCluster cluster;
  static final VolumeGeometry G = new VolumeGeometry("sv", REGIONS * PER_REGION * BLOCK, BLOCK, PER_REGION);

  @BeforeAll
  static void start() throws Exception {
    cluster = new SalusMiniCluster();
    cluster.createVolume(G);
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

  /**
   * A replica that answers GETs with a flipped bit (honest proof) is caught by the client's end-to-end check: the
   * read returns the written data from another replica and the liar is counted.
   */
  @Test
  void readFromLyingReplicaIsRetriedElsewhereAndCounted() throws Exception {
    VolumeGeometry g = new VolumeGeometry("liar", 2 * PER_REGION * BLOCK, BLOCK, PER_REGION);
    cluster.createVolume(g);
    byte[] d = new byte[2 * BLOCK];
    new Random(3).nextBytes(d);
    try (SalusVolume v = SalusVolume.open(cluster.connection(), "liar")) {
      await(v.write(PER_REGION + 2, d, true));
      var liar = new io.salus.core.hbase.endpoint.VolumeAddressing(g).replica(1, 0);
      io.salus.it.hbase.endpoint.GetFaults.corrupt.add(liar);
      try {
        assertArrayEquals(d, await(v.read(PER_REGION + 2, 2)), "the corrupted replies were not accepted");
      } finally {
        io.salus.it.hbase.endpoint.GetFaults.corrupt.clear();
      }
      assertTrue(v.getRetriesByReplica().getOrDefault(liar, 0L) >= 1,
          "the lying replica is counted: " + v.getRetriesByReplica());
    }
  }

  /** Many large writes in flight at once (what nbdcopy does: 256 KiB requests, many outstanding). */
  @Test
  void manyLargeWritesInFlightAllCommitAndReadBack() throws Exception {
    VolumeGeometry g = new VolumeGeometry("big", 4096L * BLOCK, BLOCK, 1024);
    cluster.createVolume(g);
    Random rnd = new Random(9);
    byte[] all = new byte[(int) (g.numBlocks() * BLOCK)];
    rnd.nextBytes(all);
    try (SalusVolume v = SalusVolume.open(cluster.connection(), "big")) {
      List<CompletableFuture<Void>> fs = new ArrayList<>();
      for (int off = 0; off < all.length; off += 64 * BLOCK) {
        fs.add(v.write(off / BLOCK, Arrays.copyOfRange(all, off, off + 64 * BLOCK), false));
      }
      await(CompletableFuture.allOf(fs.toArray(CompletableFuture[]::new)));
      assertArrayEquals(all, await(v.read(0, (int) g.numBlocks())));
    }
  }

  @Test
  void writesCommitOnThreeReplicasAndReadBackVerified() throws Exception {
    Random rnd = new Random(5);
    byte[] reference = new byte[(int) (G.numBlocks() * BLOCK)];
    try (SalusVolume v = SalusVolume.open(cluster.connection(), "sv")) {
      assertEquals(G.numBlocks(), v.sizeInBlocks());
      // an unwritten block reads as zeros (verified against the empty tree)
      assertArrayEquals(new byte[BLOCK], await(v.read(3, 1)));
      // many concurrent writes, some spanning region boundaries, some overwriting earlier ones
      List<CompletableFuture<Void>> fs = new ArrayList<>();
      for (int i = 0; i < 80; i++) {
        int n = 1 + rnd.nextInt(20);
        long first = rnd.nextInt((int) (G.numBlocks() - n));
        byte[] d = new byte[n * BLOCK];
        rnd.nextBytes(d);
        // overlapping in-flight writes have no defined order: wait for each before an overlapping one
        await(CompletableFuture.allOf(fs.toArray(CompletableFuture[]::new)));
        fs.clear();
        fs.add(v.write(first, d, i % 7 == 0));
        System.arraycopy(d, 0, reference, (int) first * BLOCK, d.length);
      }
      await(CompletableFuture.allOf(fs.toArray(CompletableFuture[]::new)));
      await(v.flush());
      assertArrayEquals(reference, await(v.read(0, (int) G.numBlocks())), "the whole volume reads back");
      // the write path is Salus: each written block is on all three replicas of its RRS
      for (long b : new long[] {0, PER_REGION + 1, 3 * PER_REGION + 7}) {
        int r = (int) (b / PER_REGION);
        long local = b % PER_REGION;
        byte[] want = Arrays.copyOfRange(reference, (int) b * BLOCK, (int) (b + 1) * BLOCK);
        for (int k = 0; k < 3; k++) {
          byte[] stored = cluster.endpoint(G, r, k).host().inspect((RegionReplica rep) -> rep.block(local))
              .get(60, TimeUnit.SECONDS);
          assertArrayEquals(want, stored == null ? new byte[BLOCK] : stored, "block " + b + " at replica " + k);
        }
      }
      // the writer lease keeps a second writer out
      assertThrows(VolumeException.InUse.class, () -> SalusVolume.open(cluster.connection(), "sv"),
          "second open refused by the writer lease");
      // bad input is refused with a message naming the problem
      ExecutionException bad = assertThrows(ExecutionException.class,
          () -> v.write(G.numBlocks() - 1, new byte[2 * BLOCK], false).get());
      assertInstanceOf(VolumeException.OutOfRange.class, bad.getCause());
    }
  }
}
