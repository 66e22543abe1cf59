package io.salus.it.salus;

import static org.junit.jupiter.api.Assertions.*;

import io.salus.blockdriver.salus.SalusVolume;
import io.salus.blockdriver.salus.SalusVolumeCrash;
import io.salus.blockdriver.volume.VolumeException;
import io.salus.core.hbase.VolumeGeometry;
import io.salus.core.protocol.LatencyTrace;
import io.salus.core.protocol.replica.RegionReplica;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Group commit in {@link SalusVolume} (task grp13): writes that wait while the pipeline is busy go out as one batch,
 * and each is acknowledged only when that batch committed. On the {@link SalusMiniCluster} (three region servers, the
 * Salus log on HDFS). No timing is asserted; the counts of batches are the client's own (LatencyTrace's submits).
 */
@OnSharedSalusCluster
class SalusGroupCommitTest {
  static final int BLOCK = 4096;
  static final long PER_REGION = 64;
  static final int REGIONS = 4;
  static SalusMiniCluster cluster;

  @BeforeAll
  static void start() throws Exception {
    cluster = SalusMiniCluster.shared(); // started by the first class of this JVM tagged with it
  }

  @AfterAll
  static void stop() throws Exception {
    LatencyTrace.enable(false);
  }

  static <T> T await(CompletableFuture<T> f) throws Exception {
    return f.get(SalusMiniCluster.DEADLINE_MS, TimeUnit.MILLISECONDS);
  }

  static VolumeGeometry volume(String name) throws Exception {
    VolumeGeometry g = new VolumeGeometry(name, REGIONS * PER_REGION * BLOCK, BLOCK, PER_REGION);
    cluster.createVolume(g);
    return g;
  }

  static byte[] block(Random rnd) {
    byte[] d = new byte[BLOCK];
    rnd.nextBytes(d);
    return d;
  }

  static byte[] stored(VolumeGeometry g, long b, int k) throws Exception {
    byte[] s = cluster.endpoint(g, (int) (b / PER_REGION), k).host()
        .inspect((RegionReplica rep) -> rep.block(b % PER_REGION)).get(60, TimeUnit.SECONDS);
    return s == null ? new byte[BLOCK] : s;
  }

  /** Batches the client submitted since {@link LatencyTrace#reset} (one "submit" stage per batch id). */
  static long batchesSubmitted() {
    return LatencyTrace.stages().values().stream().filter(m -> m.containsKey("submit")).count();
  }

  /**
   * 128 single-block writes issued at once (what fio at a high queue depth does) are sent as far fewer batches than
   * writes: one batch per write capped a QD32 stream at the pipeline's batch rate (about 15 batches/s). Failed before
   * group commit: 128 batches for 128 writes.
   */
  @Test
  void writesQueuedWhileThePipelineIsBusyGoOutAsFewBatches() throws Exception {
    VolumeGeometry g = volume("gcfew");
    Random rnd = new Random(1);
    byte[] ref = new byte[(int) (g.numBlocks() * BLOCK)];
    try (SalusVolume v = SalusVolume.open(cluster.connection(), "gcfew")) {
      LatencyTrace.reset();
      LatencyTrace.enable(true);
      List<CompletableFuture<Void>> fs = new ArrayList<>();
      int n = 128;
      try {
        for (int i = 0; i < n; i++) {
          long b = (i * 37L) % g.numBlocks();
          byte[] d = block(rnd);
          fs.add(v.write(b, d, false));
          System.arraycopy(d, 0, ref, (int) b * BLOCK, BLOCK);
        }
        await(CompletableFuture.allOf(fs.toArray(CompletableFuture[]::new)));
      } finally {
        LatencyTrace.enable(false);
      }
      long batches = batchesSubmitted();
      System.out.println("group commit: " + n + " writes in " + batches + " batches; counters " + v.counters());
      assertTrue(batches <= n / 4, n + " single-block writes issued at once went out as " + batches + " batches");
      assertArrayEquals(ref, await(v.read(0, (int) g.numBlocks())), "every write reads back");
    }
  }

  /**
   * Two writes to one block queued behind a busy pipeline land in one batch: the one issued later wins, on every
   * replica, and both are acknowledged. A third write overlapping it across a region boundary too.
   */
  @Test
  void twoWritesToOneBlockInOneBatchTheLaterWins() throws Exception {
    VolumeGeometry g = volume("gcsame");
    Random rnd = new Random(2);
    byte[] ref = new byte[(int) (g.numBlocks() * BLOCK)];
    long x = PER_REGION - 1; // last block of region 0
    try (SalusVolume v = SalusVolume.open(cluster.connection(), "gcsame")) {
      for (int round = 0; round < 3; round++) {
        long blocksBefore = v.counters().get("batchedBlocks");
        List<CompletableFuture<Void>> fs = new ArrayList<>();
        long issued = 0;
        // filler: keeps the pipeline busy so that what follows waits in the queue (blocks other than x, x+1)
        for (int i = 0; i < 40; i++) {
          long b = PER_REGION + 2 + (i + round * 40L) % (g.numBlocks() - PER_REGION - 2); // distinct
          byte[] d = block(rnd);
          fs.add(v.write(b, d, false));
          System.arraycopy(d, 0, ref, (int) b * BLOCK, BLOCK);
          issued++;
        }
        byte[] first = block(rnd);
        byte[] second = block(rnd);
        byte[] span = new byte[2 * BLOCK];
        rnd.nextBytes(span);
        CompletableFuture<Void> f1 = v.write(x, first, false);
        CompletableFuture<Void> f2 = v.write(x, second, false);
        CompletableFuture<Void> f3 = v.write(x, span, round == 1); // x and x+1 (region 1), FUA once
        issued += 4;
        fs.addAll(List.of(f1, f2, f3));
        System.arraycopy(span, 0, ref, (int) x * BLOCK, 2 * BLOCK);
        await(CompletableFuture.allOf(fs.toArray(CompletableFuture[]::new)));
        for (CompletableFuture<Void> f : List.of(f1, f2, f3)) {
          assertTrue(f.isDone() && !f.isCompletedExceptionally(), "every write to the block is acknowledged");
        }
        long sent = v.counters().get("batchedBlocks") - blocksBefore;
        System.out.println("round " + round + ": " + issued + " blocks written, " + sent + " sent; " + v.counters());
        assertTrue(sent < issued, "the writes to block " + x + " shared a batch (" + sent + " blocks sent for "
            + issued + " written)");
        assertArrayEquals(Arrays.copyOfRange(span, 0, BLOCK), await(v.read(x, 1)), "the last write to x wins");
        for (int k = 0; k < 3; k++) {
          assertArrayEquals(Arrays.copyOfRange(span, 0, BLOCK), stored(g, x, k), "block x at replica " + k);
          assertArrayEquals(Arrays.copyOfRange(span, BLOCK, 2 * BLOCK), stored(g, x + 1, k),
              "block x+1 at replica " + k);
        }
        // now the reverse order, with the 2-block write first: the single-block one issued after it wins on x
        byte[] third = block(rnd);
        List<CompletableFuture<Void>> gs = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
          long b = PER_REGION + 2 + (i * 3L) % (g.numBlocks() - PER_REGION - 2);
          byte[] d = block(rnd);
          gs.add(v.write(b, d, false));
          System.arraycopy(d, 0, ref, (int) b * BLOCK, BLOCK);
        }
        byte[] span2 = new byte[2 * BLOCK];
        rnd.nextBytes(span2);
        gs.add(v.write(x, span2, false));
        gs.add(v.write(x, third, false));
        System.arraycopy(span2, 0, ref, (int) x * BLOCK, 2 * BLOCK);
        System.arraycopy(third, 0, ref, (int) x * BLOCK, BLOCK);
        await(CompletableFuture.allOf(gs.toArray(CompletableFuture[]::new)));
        assertArrayEquals(ref, await(v.read(0, (int) g.numBlocks())), "round " + round + ": the volume reads back");
      }
    }
  }

  /**
   * A write issued after another write's acknowledgement is never merged before it: block y gets a, then (after a's
   * ack) b, while other writers keep the pipeline busy; y always ends as b. Many concurrent writers, each on its own
   * blocks with writes of 1..6 blocks waited for one at a time: the volume ends as the reference.
   */
  @Test
  void manyConcurrentWritersAndWritesAfterAnAckAreNeverReordered() throws Exception {
    VolumeGeometry g = volume("gcmany");
    int writers = 8;
    long span = g.numBlocks() / writers; // 32 blocks per writer, some writers' ranges cross a region boundary
    byte[] ref = new byte[(int) (g.numBlocks() * BLOCK)];
    ExecutorService pool = Executors.newFixedThreadPool(writers);
    try (SalusVolume v = SalusVolume.open(cluster.connection(), "gcmany")) {
      long batches0 = v.counters().get("batches");
      long writes0 = v.counters().get("batchedWrites");
      List<Future<?>> jobs = new ArrayList<>();
      for (int t = 0; t < writers; t++) {
        int me = t;
        jobs.add(pool.submit(() -> {
          Random rnd = new Random(100 + me);
          long base = me * span;
          for (int i = 0; i < 25; i++) {
            if (i % 5 == 4) {
              // write-after-ack on one block, with nothing waited in between but that ack
              long y = base + rnd.nextInt((int) span);
              byte[] a = block(rnd);
              byte[] b = block(rnd);
              await(v.write(y, a, false));
              CompletableFuture<Void> fb = v.write(y, b, false);
              await(fb);
              synchronized (ref) {
                System.arraycopy(b, 0, ref, (int) y * BLOCK, BLOCK);
              }
              assertArrayEquals(b, await(v.read(y, 1)), "writer " + me + ": the write issued after a's ack wins");
              continue;
            }
            int count = 1 + rnd.nextInt(6);
            long first = base + rnd.nextInt((int) (span - count + 1));
            byte[] d = new byte[count * BLOCK];
            rnd.nextBytes(d);
            await(v.write(first, d, i % 7 == 0));
            synchronized (ref) {
              System.arraycopy(d, 0, ref, (int) first * BLOCK, d.length);
            }
          }
          return null;
        }));
      }
      for (Future<?> j : jobs) {
        j.get(SalusMiniCluster.DEADLINE_MS, TimeUnit.MILLISECONDS);
      }
      await(v.flush());
      assertArrayEquals(ref, await(v.read(0, (int) g.numBlocks())), "every writer's data reads back");
      for (long b : new long[] {0, PER_REGION - 1, PER_REGION, g.numBlocks() - 1}) {
        for (int k = 0; k < 3; k++) {
          assertArrayEquals(Arrays.copyOfRange(ref, (int) b * BLOCK, (int) (b + 1) * BLOCK), stored(g, b, k),
              "block " + b + " at replica " + k);
        }
      }
      System.out.println("many writers: " + (v.counters().get("batchedWrites") - writes0) + " writes in "
          + (v.counters().get("batches") - batches0) + " batches; " + v.counters());
    } finally {
      pool.shutdownNow();
    }
  }

  /**
   * A FLUSH in the middle of a stream of coalesced writes covers every write acknowledged before it, and the writer
   * then dies with batches sent but not acknowledged: the next writer's mount holds every acknowledged write (those
   * before the FLUSH and after it), and the volume is the result of a prefix of the issued writes (a batch holding
   * several writes commits all of them or none). Never a write acknowledged that is not committed: right after the
   * crash (the writer's loop stopped, so no acknowledgement follows), every acknowledged write is already applied at
   * the three replicas of its region, while the batches the writer sent last are still being decided.
   */
  @Test
  void flushMidStreamThenWriterCrashKeepsEveryAcknowledgedWriteAsAPrefix() throws Exception {
    long perRegion = 256;
    VolumeGeometry g = new VolumeGeometry("gccrash", REGIONS * perRegion * BLOCK, BLOCK, perRegion);
    cluster.createVolume(g);
    int n = 1000;
    Random rnd = new Random(17);
    long[] blocks = new long[n];
    List<byte[]> datas = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      blocks[i] = (i * 7L) % g.numBlocks(); // distinct blocks: what a replica holds names the write
      datas.add(block(rnd));
    }
    List<CompletableFuture<Void>> fs = new ArrayList<>();
    SalusVolume v = SalusVolume.open(cluster.connection(), "gccrash");
    boolean[] ackedAtFlush = new boolean[n];
    try {
      for (int i = 0; i < n; i++) {
        fs.add(v.write(blocks[i], datas.get(i), false));
        if (i == n / 2) {
          // the FLUSH arrives mid-stream: it covers what was acknowledged before it
          long end = System.currentTimeMillis() + SalusMiniCluster.DEADLINE_MS;
          while (fs.stream().filter(f -> f.isDone() && !f.isCompletedExceptionally()).count() < 20) {
            assertTrue(System.currentTimeMillis() < end, "20 writes acknowledged");
            assertTrue(fs.stream().noneMatch(CompletableFuture::isCompletedExceptionally), "no write failed");
            Thread.sleep(2);
          }
          for (int k = 0; k <= i; k++) {
            ackedAtFlush[k] = fs.get(k).isDone() && !fs.get(k).isCompletedExceptionally();
          }
          await(v.flush());
        }
      }
      long end = System.currentTimeMillis() + SalusMiniCluster.DEADLINE_MS;
      while (fs.stream().filter(f -> f.isDone() && !f.isCompletedExceptionally()).count() < n / 2 + 20) {
        assertTrue(System.currentTimeMillis() < end, (n / 2 + 20) + " writes acknowledged");
        assertTrue(fs.stream().noneMatch(CompletableFuture::isCompletedExceptionally), "no write failed");
        Thread.sleep(2);
      }
      SalusVolumeCrash.crash(v);
    } catch (Throwable t) {
      v.close();
      throw t;
    }
    int lastAcked = -1;
    int acked = 0;
    for (int i = 0; i < n; i++) {
      if (fs.get(i).isDone() && !fs.get(i).isCompletedExceptionally()) {
        lastAcked = i;
        acked++;
      }
    }
    for (int i = 0; i < n; i++) {
      if (ackedAtFlush[i]) {
        assertTrue(fs.get(i).isDone() && !fs.get(i).isCompletedExceptionally(), "write " + i);
      }
    }
    assertTrue(lastAcked < n - 1, "the writer died with writes not acknowledged (the case is real)");
    byte[][][][] replicas = new byte[REGIONS][3][][];
    for (int r = 0; r < REGIONS; r++) {
      for (int k = 0; k < 3; k++) {
        replicas[r][k] = cluster.endpoint(g, r, k).host().inspect((RegionReplica rep) -> {
          byte[][] all = new byte[(int) perRegion][];
          for (int l = 0; l < perRegion; l++) {
            all[l] = rep.block(l);
          }
          return all;
        }).get(60, TimeUnit.SECONDS);
      }
    }
    int notYetApplied = 0;
    for (int i = 0; i < n; i++) {
      int r = (int) (blocks[i] / perRegion);
      int l = (int) (blocks[i] % perRegion);
      boolean everywhere = true;
      for (int k = 0; k < 3; k++) {
        everywhere &= Arrays.equals(datas.get(i), replicas[r][k][l]);
      }
      if (fs.get(i).isDone() && !fs.get(i).isCompletedExceptionally()) {
        assertTrue(everywhere, "write " + i + " was acknowledged but is not applied at the three replicas of region "
            + r + " when the writer died");
      } else if (!everywhere) {
        notYetApplied++;
      }
    }
    assertTrue(notYetApplied > 0, "some writes were still on their way when the writer died (the case is real)");
    try (SalusVolume w = SalusVolume.open(cluster.connection(), "gccrash")) {
      byte[] got = await(w.read(0, (int) g.numBlocks()));
      byte[] state = new byte[got.length];
      int prefix = Arrays.equals(state, got) ? 0 : -1;
      for (int k = 1; k <= n && prefix < 0; k++) {
        System.arraycopy(datas.get(k - 1), 0, state, (int) blocks[k - 1] * BLOCK, BLOCK);
        if (Arrays.equals(state, got)) {
          prefix = k;
        }
      }
      System.out.println("writer killed: " + acked + " of " + n + " writes acknowledged (last " + lastAcked
          + "), " + notYetApplied + " not applied everywhere at the crash; mounted prefix " + prefix
          + "; writer's counters " + v.counters());
      assertTrue(prefix >= 0, "the mounted volume is the result of a prefix of the issued writes");
      assertTrue(prefix >= lastAcked + 1, "every acknowledged write is in it: prefix " + prefix + ", last acked "
          + lastAcked);
      byte[] d = block(rnd);
      await(w.write(5, d, false));
      assertArrayEquals(d, await(w.read(5, 1)), "new writes commit after the remount");
    } finally {
      SalusVolumeCrash.release(v);
    }
  }

  /**
   * A batch that fails fails every write in it: a writer whose lease was taken over (and which keeps sending,
   * through the seam) queues many writes behind each other; the region servers refuse its batches, and not one of
   * its writes is acknowledged or stored.
   */
  @Test
  void aRefusedBatchFailsEveryWriteInIt() throws Exception {
    VolumeGeometry g = volume("gcfence");
    Random rnd = new Random(23);
    byte[] a = block(rnd);
    SalusVolume old = SalusVolume.open(cluster.connection(), "gcfence");
    try {
      await(old.write(0, a, false));
      io.salus.blockdriver.salus.SalusVolumeSeams.ignoreLeaseLoss(old);
      cluster.expireLease(old.lease());
      try (SalusVolume fresh = SalusVolume.open(cluster.connection(), "gcfence")) {
        List<CompletableFuture<Void>> late = new ArrayList<>();
        for (int i = 0; i < 50; i++) {
          late.add(old.write(1 + i % 20, block(rnd), false)); // repeats: coalesced and deduplicated
        }
        for (CompletableFuture<Void> f : late) {
          ExecutionException e = assertThrows(ExecutionException.class, () -> await(f),
              "a late write of the fenced writer was acknowledged");
          assertInstanceOf(VolumeException.class, e.getCause());
        }
        System.out.println("fenced writer's counters: " + old.counters());
        old.close();
        for (int k = 0; k < 3; k++) {
          assertArrayEquals(a, stored(g, 0, k), "the first writer's committed block, replica " + k);
          for (long b = 1; b <= 20; b++) {
            assertArrayEquals(new byte[BLOCK], stored(g, b, k), "late write to " + b + " applied at replica " + k);
          }
        }
        assertArrayEquals(new byte[20 * BLOCK], await(fresh.read(1, 20)));
      }
    } finally {
      old.close();
    }
  }

}
