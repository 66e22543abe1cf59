package io.salus.it.salus;

import static org.junit.jupiter.api.Assertions.*;

import io.salus.blockdriver.salus.SalusVolume;
import io.salus.blockdriver.volume.Volume;
import io.salus.core.hbase.VolumeGeometry;
import io.salus.core.hbase.endpoint.ReplicaHost;
import io.salus.core.hbase.endpoint.SalusReplicaEndpoint;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.apache.hadoop.hbase.ServerName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.regionserver.HRegion;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * Region reopen = Salus recovery of that replica (issue 14): a replica region that is moved (a balancer move: close
 * here, open there) or whose region server is killed mid-write is reopened elsewhere, runs recovery (its state
 * checked against the latest CHECKPOINT certificate, the certified log entries after it re-applied, what its own log
 * lacks taken from a peer replica) before it serves, and the writer carries on through its retransmissions and GET
 * retries: every acknowledged write reads back, no write fails, writes after the reassignment commit, without a
 * remount. Real HBase mini cluster with three region servers, the endpoint's default HDFS-backed storage.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@OnSharedSalusCluster
class SalusRegionRecoveryTest {
  static final int BLOCK = 4096;
  static final long PER_REGION = 16;
  static final int REGIONS = 4;
  static SalusMiniCluster cluster;

  @BeforeAll
  static void start() throws Exception {
    cluster = SalusMiniCluster.shared(); // started by the first class of this JVM tagged with it
    // the endpoint's open, replay and catch-up lines
    org.apache.log4j.LogManager.getLogger("io.salus.core.hbase.endpoint.ReplicaHost").setLevel(org.apache.log4j.Level.INFO);
    org.apache.log4j.LogManager.getLogger("io.salus.core.hbase.endpoint.SalusReplicaEndpoint")
        .setLevel(org.apache.log4j.Level.INFO);
  }

  @AfterAll
  static void stop() {
    // the next class on the shared cluster logs at its own levels
    org.apache.log4j.LogManager.getLogger("io.salus.core.hbase.endpoint.ReplicaHost").setLevel(null);
    org.apache.log4j.LogManager.getLogger("io.salus.core.hbase.endpoint.SalusReplicaEndpoint").setLevel(null);
  }

  static <T> T await(CompletableFuture<T> f) throws Exception {
    return f.get(SalusMiniCluster.DEADLINE_MS, TimeUnit.MILLISECONDS);
  }

  static void awaitTrue(String what, BooleanSupplier c) throws Exception {
    awaitTrue(() -> what, c);
  }

  /** As above, with the failure's message built only when the wait times out (e.g. counters read then). */
  static void awaitTrue(java.util.function.Supplier<String> what, BooleanSupplier c) throws Exception {
    long end = System.currentTimeMillis() + SalusMiniCluster.DEADLINE_MS;
    while (!c.getAsBoolean()) {
      assertTrue(System.currentTimeMillis() < end, what);
      Thread.sleep(50);
    }
  }

  /** Write {@code i}: 1..4 blocks; each block says which write it is and which block it is. */
  static long firstBlock(VolumeGeometry g, int i) {
    int count = count(i);
    return (i * 7L) % (g.numBlocks() - count + 1);
  }

  static int count(int i) {
    return 1 + i % 4;
  }

  static byte[] data(VolumeGeometry g, int i) {
    ByteBuffer b = ByteBuffer.allocate(count(i) * BLOCK);
    long first = firstBlock(g, i);
    for (int k = 0; k < count(i); k++) {
      for (int off = 0; off < BLOCK; off += 16) {
        b.putLong(k * BLOCK + off, i + 1); // write number (0: never written)
        b.putLong(k * BLOCK + off + 8, first + k);
      }
    }
    return b.array();
  }

  /** The write whose bytes a block holds (0: none), or -1 if the block is not one written by this workload. */
  static long writeOf(byte[] vol, long block) {
    return writeOf(vol, block, block);
  }

  /** As above for {@code vol}'s block {@code index}, which is volume block {@code block}. */
  static long writeOf(byte[] vol, long index, long block) {
    ByteBuffer b = ByteBuffer.wrap(vol);
    long base = index * BLOCK;
    long w = b.getLong((int) base);
    for (int off = 0; off < BLOCK; off += 16) {
      int p = (int) base + off;
      if (b.getLong(p) != w || (w != 0 && b.getLong(p + 8) != block)) {
        return -1;
      }
    }
    return w;
  }

  /**
   * A writer thread issuing writes 0..n-1 in order (every 10th with FUA), at most {@code window} unacknowledged, on
   * any volume (also the fault table's, {@link SalusFaultTableTest}). {@link #stop} makes the writer die: nothing is
   * issued after it.
   */
  static final class Workload {
    final VolumeGeometry g;
    final Volume v;
    final int n;
    final List<CompletableFuture<Void>> fs = new ArrayList<>();
    final Thread thread;
    volatile Throwable error;
    private volatile boolean stopped;

    Workload(VolumeGeometry g, Volume v, int n, int window) {
      this.g = g;
      this.v = v;
      this.n = n;
      thread = new Thread(() -> {
        try {
          for (int i = 0; i < n && !stopped; i++) {
            if (i >= window) {
              CompletableFuture<Void> f;
              synchronized (fs) {
                f = fs.get(i - window);
              }
              try {
                f.get(SalusMiniCluster.DEADLINE_MS, TimeUnit.MILLISECONDS);
              } catch (InterruptedException e) {
                return; // stopped
              } catch (Exception e) {
                // recorded in its future; keep issuing (a failed volume fails them at once)
              }
            }
            if (stopped) {
              return;
            }
            CompletableFuture<Void> f;
            try {
              f = v.write(firstBlock(g, i), data(g, i), i % 10 == 0);
            } catch (RuntimeException e) {
              f = CompletableFuture.failedFuture(e); // a refusal is that write's failure
            }
            synchronized (fs) {
              fs.add(f);
            }
          }
        } catch (Throwable t) {
          error = t;
        }
      }, "workload-" + g.volume());
      thread.setDaemon(true);
      thread.start();
    }

    long acked() {
      synchronized (fs) {
        return fs.stream().filter(f -> f.isDone() && !f.isCompletedExceptionally()).count();
      }
    }

    /** The writer dies: no write is issued after this returns (those issued stay as they are). */
    void stop() throws InterruptedException {
      stopped = true;
      thread.interrupt();
      thread.join(SalusMiniCluster.DEADLINE_MS);
    }

    /** Waits until every write is issued and done, or {@code millis} pass; true if all are done. */
    boolean await(long millis) throws InterruptedException {
      long end = System.currentTimeMillis() + millis;
      thread.join(millis);
      List<CompletableFuture<Void>> issued;
      synchronized (fs) {
        issued = new ArrayList<>(fs);
      }
      for (CompletableFuture<Void> f : issued) {
        try {
          f.get(Math.max(1, end - System.currentTimeMillis()), TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
          return false;
        } catch (java.util.concurrent.ExecutionException | java.util.concurrent.CancellationException e) {
          // failed: counted by failed()
        }
      }
      return !thread.isAlive();
    }

    /** Which of writes 0..n-1 are acknowledged now. */
    boolean[] ackedFlags() {
      boolean[] a = new boolean[n];
      synchronized (fs) {
        for (int i = 0; i < fs.size(); i++) {
          a[i] = fs.get(i).isDone() && !fs.get(i).isCompletedExceptionally();
        }
      }
      return a;
    }

    int failed() {
      synchronized (fs) {
        return (int) fs.stream().filter(CompletableFuture::isCompletedExceptionally).count();
      }
    }

    int issued() {
      synchronized (fs) {
        return fs.size();
      }
    }

    /** Waits for every write; returns a description of those that failed (empty: none). */
    String finish() throws Exception {
      thread.join(SalusMiniCluster.DEADLINE_MS / 2);
      if (thread.isAlive()) {
        dump(g);
      }
      thread.join(SalusMiniCluster.DEADLINE_MS);
      assertNull(error, () -> "the writer thread failed: " + error);
      StringBuilder failed = new StringBuilder();
      int nFailed = 0;
      for (int i = 0; i < fs.size(); i++) {
        try {
          fs.get(i).get(SalusMiniCluster.DEADLINE_MS, TimeUnit.MILLISECONDS);
        } catch (Exception e) {
          if (nFailed == 0) {
            dump(g);
          }
          if (nFailed++ == 0) {
            failed.append("write ").append(i).append(" (first failed): ").append(e.getCause());
          }
        }
      }
      return nFailed == 0 ? "" : nFailed + " of " + fs.size() + " writes failed; " + failed;
    }

    /** The volume after writes 0..n-1, applied in order. */
    byte[] expected() {
      return SalusRegionRecoveryTest.expected(g, n);
    }
  }

  /** The volume after writes 0..n-1, applied in order. */
  static byte[] expected(VolumeGeometry g, int n) {
    byte[] ref = new byte[(int) (g.numBlocks() * BLOCK)];
    for (int i = 0; i < n; i++) {
      byte[] d = data(g, i);
      System.arraycopy(d, 0, ref, (int) firstBlock(g, i) * BLOCK, d.length);
    }
    return ref;
  }

  static VolumeGeometry volume(String name) throws Exception {
    VolumeGeometry g = new VolumeGeometry(name, REGIONS * PER_REGION * BLOCK, BLOCK, PER_REGION);
    cluster.createVolume(g);
    return g;
  }

  /** The server of every replica region of {@code g}, keyed "r/k". */
  static Map<String, ServerName> placement(VolumeGeometry g) {
    Map<String, ServerName> m = new HashMap<>();
    for (int r = 0; r < g.numRegions(); r++) {
      for (int k = 0; k < 3; k++) {
        m.put(r + "/" + k, cluster.locate(g, r, k));
      }
    }
    return m;
  }

  /** Compares block by block, naming the first block that differs and which write it holds instead. */
  static void assertVolume(byte[] want, byte[] got, String what) {
    for (long b = 0; b < want.length / BLOCK; b++) {
      long w = writeOf(want, b);
      long h = writeOf(got, b);
      assertEquals(w, h, what + ": block " + b + " holds write " + h + " (-1: not a workload block), expected write "
          + w);
    }
    assertArrayEquals(want, got, what);
  }

  /**
   * The reopened replicas ran recovery before serving: counters of the replica hosts of the regions that moved
   * (a new {@link ReplicaHost}, so its open-time counters are this open's).
   */
  static List<String> assertRecovered(VolumeGeometry g, Map<String, ServerName> before, ReplicaHost[][] hostsBefore) {
    List<String> moved = new ArrayList<>();
    for (int r = 0; r < g.numRegions(); r++) {
      for (int k = 0; k < 3; k++) {
        SalusReplicaEndpoint ep = cluster.endpoint(g, r, k);
        ReplicaHost h = ep.host();
        if (h == hostsBefore[r][k]) {
          continue;
        }
        Map<String, Long> c = h.counters();
        moved.add(r + "/" + k + " " + before.get(r + "/" + k) + " -> " + cluster.locate(g, r, k) + " " + c);
        assertEquals(1L, c.getOrDefault("recoveryRuns", 0L),
            "the reopened replica " + r + "/" + k + " ran recovery before serving: " + c);
        assertTrue(c.getOrDefault("recoveryCheckedIndex", -2L) >= -1,
            "the reopened replica checked its state against the latest checkpoint certificate: " + c);
      }
    }
    assertFalse(moved.isEmpty(), "some replica region was reopened");
    System.out.println("reopened replicas of " + g.volume() + ": " + moved);
    return moved;
  }

  /** Every replica's protocol state (printed when writes do not complete: where a region stopped). */
  static void dump(VolumeGeometry g) {
    dump(cluster, g);
  }

  /** Each replica's state and counters on {@code cluster} (stdout and target/SalusRegionRecoveryTest-dump.txt). */
  static void dump(SalusMiniCluster cluster, VolumeGeometry g) {
    for (int r = 0; r < g.numRegions(); r++) {
      for (int k = 0; k < 3; k++) {
        SalusReplicaEndpoint ep = cluster.endpoint(g, r, k);
        ReplicaHost h = ep == null ? null : ep.host();
        String state;
        try {
          state = h == null ? "no host" : h.inspect(rep -> "applied " + rep.appliedSeq() + " committed index "
              + rep.committedIndex() + " epoch " + rep.writerEpoch() + " " + rep.retainedSizes())
              .get(30, TimeUnit.SECONDS);
        } catch (Exception e) {
          state = e.toString();
        }
        String line = "state " + g.volume() + " " + r + "/" + k + " on " + cluster.locate(g, r, k) + ": " + state
            + " " + (h == null ? "" : h.counters());
        System.out.println(line);
        try { // also straight to a file: the fork's stdout reaches the report late under load
          java.nio.file.Files.writeString(java.nio.file.Path.of("target", "SalusRegionRecoveryTest-dump.txt"),
              java.time.Instant.now() + " " + line + "\n", java.nio.file.StandardOpenOption.CREATE,
              java.nio.file.StandardOpenOption.APPEND);
        } catch (java.io.IOException e) {
          // the line is on stdout
        }
      }
    }
  }

  static ReplicaHost[][] hosts(VolumeGeometry g) {
    ReplicaHost[][] h = new ReplicaHost[g.numRegions()][3];
    for (int r = 0; r < g.numRegions(); r++) {
      for (int k = 0; k < 3; k++) {
        h[r][k] = cluster.endpoint(g, r, k).host();
      }
    }
    return h;
  }

  /**
   * The plain move (what the balancer does, SalusNbdTest's failure): one replica region is moved while the writer
   * has batches in flight; the placement observer may move a replica again (two replicas of one RRS on one server).
   */
  @Test
  @Order(1)
  void aReplicaRegionMovedMidWriteRecoversAndEveryWriteCommits() throws Exception {
    VolumeGeometry g = volume("mv");
    int n = 200;
    try (SalusVolume v = SalusVolume.open(cluster.connection(), "mv")) {
      Workload w = new Workload(g, v, n, 8);
      awaitTrue("30 writes acknowledged before the move", () -> w.acked() >= 30);
      Map<String, ServerName> before = placement(g);
      ReplicaHost[][] hostsBefore = hosts(g);
      HRegion moving = cluster.region(g, 1, 1);
      long ackedAtMove = w.acked();
      try (Admin admin = cluster.connection().getAdmin()) {
        admin.move(moving.getRegionInfo().getEncodedNameAsBytes()); // to a random other server
      }
      CompletableFuture<byte[]> readAcrossTheGap = v.read(PER_REGION, (int) PER_REGION);
      awaitTrue("replica 1/1 reopened", () -> cluster.locate(g, 1, 1) != null
          && cluster.endpoint(g, 1, 1).host() != hostsBefore[1][1]);
      cluster.awaitPlaced(g);
      String failures = w.finish();
      System.out.println("move of 1/1 after " + ackedAtMove + " acknowledged writes; " + w.acked() + " of " + n
          + " acknowledged at the end; " + (failures.isEmpty() ? "none failed" : failures));
      assertEquals("", failures, "no write fails across the move");
      byte[] early = await(readAcrossTheGap);
      for (long b = 0; b < PER_REGION; b++) {
        assertTrue(writeOf(early, b, PER_REGION + b) >= 0,
            "the read across the move returned workload bytes for block " + (PER_REGION + b));
      }
      assertVolume(w.expected(), await(v.read(0, (int) g.numBlocks())), "after the move, every write reads back");
      byte[] more = data(g, n);
      await(v.write(firstBlock(g, n), more, true));
      assertRecovered(g, before, hostsBefore);
    }
    try (SalusVolume v = SalusVolume.open(cluster.connection(), "mv")) {
      assertVolume(expected(g, n + 1), await(v.read(0, (int) g.numBlocks())), "remounted after the move");
    }
  }

  /**
   * What HBase's balancer did in a 1 GiB fill of `salus up` (2026-12-02): it moved a replica region next to a peer of
   * its RRS, the placement observer moved one of the two away again, and after the second such pair of moves region 2
   * stopped answering (no PUT_SUCCESS after 72 retransmissions, every replica idle, nothing logged). Here: four times,
   * one replica of region 1 is moved onto the server of a peer (the next replica each time) while the writer has
   * batches in flight, and the observer separates them; every write must still commit and read back.
   */
  @Test
  @Order(4)
  void replicasMovedOntoTheirPeersAgainAndAgainMidWriteKeepEveryWriteCommitting() throws Exception {
    VolumeGeometry g = volume("storm");
    int n = 400;
    int region = 1;
    List<String> moves = new ArrayList<>();
    try (SalusVolume v = SalusVolume.open(cluster.connection(), "storm")) {
      Workload w = new Workload(g, v, n, 8);
      for (int m = 0; m < 4; m++) {
        long target = 30L + 80L * m;
        awaitTrue(target + " writes acknowledged before move " + m, () -> w.acked() >= target || w.failed() > 0);
        int k = m % 3;
        int peer = (k + 1) % 3;
        ReplicaHost before = cluster.endpoint(g, region, k).host();
        ServerName onto = cluster.locate(g, region, peer);
        HRegion moving = cluster.region(g, region, k);
        try (Admin admin = cluster.connection().getAdmin()) {
          admin.move(moving.getRegionInfo().getEncodedNameAsBytes(), onto);
        }
        awaitTrue("replica " + region + "/" + k + " reopened after move " + m, () -> {
          SalusReplicaEndpoint ep = cluster.endpoint(g, region, k);
          return ep != null && ep.host() != null && ep.host() != before;
        });
        moves.add("move " + m + ": " + region + "/" + k + " onto " + onto + " (server of " + region + "/" + peer
            + ") after " + w.acked() + " acknowledged");
        cluster.awaitPlaced(g); // the placement observer separates the two again
      }
      String failures = w.finish();
      System.out.println("moves: " + moves + "; " + w.acked() + " of " + n + " acknowledged at the end; "
          + (failures.isEmpty() ? "none failed" : failures));
      assertEquals(4, moves.size(), "every move acted: " + moves);
      assertEquals("", failures, "no write fails across the moves");
      assertEquals(n, w.acked(), "every write is acknowledged");
      assertVolume(w.expected(), await(v.read(0, (int) g.numBlocks())), "after the moves, every write reads back");
    }
  }

  /**
   * A region server hosting replicas (not hbase:meta's) is killed while the writer has batches in flight; a new one
   * takes its place; its replica regions are reassigned and recover; the writer keeps writing throughout.
   */
  @Test
  @Order(2)
  void aRegionServerKilledMidWriteLosesNothingAndTheVolumeKeepsServing() throws Exception {
    VolumeGeometry g = volume("kill");
    int n = 300;
    try (SalusVolume v = SalusVolume.open(cluster.connection(), "kill")) {
      Workload w = new Workload(g, v, n, 8);
      awaitTrue("40 writes acknowledged before the kill", () -> w.acked() >= 40);
      Map<String, ServerName> before = placement(g);
      ReplicaHost[][] hostsBefore = hosts(g);
      ServerName meta = cluster.util.getMiniHBaseCluster().getServerHoldingMeta();
      ServerName victim = null;
      for (ServerName s : before.values()) {
        if (!s.equals(meta)) {
          victim = s;
        }
      }
      assertNotNull(victim);
      long ackedAtKill = w.acked();
      ServerName fresh = cluster.killAndReplace(victim);
      CompletableFuture<byte[]> readAcrossTheGap = v.read(0, (int) g.numBlocks());
      System.out.println("killed " + victim + " after " + ackedAtKill + " acknowledged writes; started " + fresh);
      cluster.awaitPlaced(g);
      String failures = w.finish();
      System.out.println("kill: " + w.acked() + " of " + n + " acknowledged at the end; "
          + (failures.isEmpty() ? "none failed" : failures));
      assertEquals("", failures, "no write fails across the region server's crash");
      byte[] early = await(readAcrossTheGap);
      for (long b = 0; b < g.numBlocks(); b++) {
        assertTrue(writeOf(early, b) >= 0, "the read across the crash returned workload bytes for block " + b);
      }
      assertVolume(w.expected(), await(v.read(0, (int) g.numBlocks())), "after the crash, every write reads back");
      await(v.write(firstBlock(g, n), data(g, n), true));
      List<String> moved = assertRecovered(g, before, hostsBefore);
      assertTrue(moved.size() >= REGIONS, "every replica region of the killed server reopened: " + moved);
    }
  }

  /**
   * The reopened replica's own Salus log and checkpoint files are gone (a lost DataNode disk; here deleted while its
   * region was closed): its disk no longer reaches the latest CHECKPOINT certificate, so it cannot start from it. It
   * catches up from a peer replica (the certified state and the log after it, checked against the certificate and
   * the client's signatures), serving nothing until then, and the writer carries on. Before the catch-up existed
   * the replica never started ("the on-disk checkpoint is refused") and no write of the volume committed again.
   */
  @Test
  @Order(3)
  void aReopenedReplicaWhoseLogIsLostCatchesUpFromAPeer() throws Exception {
    VolumeGeometry g = volume("lost");
    int n = 200;
    try (SalusVolume v = SalusVolume.open(cluster.connection(), "lost")) {
      Workload w = new Workload(g, v, n, 8);
      awaitTrue("40 writes acknowledged before the log is lost", () -> w.acked() >= 40);
      Map<String, ServerName> before = placement(g);
      ReplicaHost[][] hostsBefore = hosts(g);
      HRegion victim = cluster.region(g, 2, 1);
      org.apache.hadoop.fs.Path dir = ((io.salus.core.hbase.storage.HdfsReplicaStorage) cluster.endpoint(g, 2, 1)
          .storage()).replicaDisk().directory();
      byte[] name = victim.getRegionInfo().getRegionName();
      long ackedAtLoss = w.acked();
      try (Admin admin = cluster.connection().getAdmin()) {
        admin.unassign(name, true);
        assertTrue(cluster.util.getDFSCluster().getFileSystem().delete(dir, true), "deleted " + dir);
        admin.assign(name);
      }
      // every replica host 2/1 has from now on: the placement rule may move the reopened replica once more (the
      // master assigned it next to another replica of region 2), and the host that caught up from the peer is then
      // the first of them, not the one serving at the end (which replays the caught-up disk)
      java.util.Set<ReplicaHost> reopened = java.util.concurrent.ConcurrentHashMap.newKeySet();
      java.util.concurrent.atomic.AtomicBoolean sampling = new java.util.concurrent.atomic.AtomicBoolean(true);
      Thread sampler = new Thread(() -> {
        while (sampling.get()) {
          SalusReplicaEndpoint ep = cluster.endpoint(g, 2, 1);
          if (ep != null && ep.host() != null && ep.host() != hostsBefore[2][1]) {
            reopened.add(ep.host());
          }
          try {
            Thread.sleep(10);
          } catch (InterruptedException e) {
            return;
          }
        }
      }, "sample-2/1");
      sampler.setDaemon(true);
      sampler.start();
      awaitTrue("replica 2/1 reopened and serving", () -> cluster.locate(g, 2, 1) != null);
      cluster.awaitPlaced(g);
      String failures = w.finish();
      System.out.println("log of 2/1 lost after " + ackedAtLoss + " acknowledged writes; " + w.acked() + " of " + n
          + " acknowledged at the end; " + (failures.isEmpty() ? "none failed" : failures));
      assertEquals("", failures, "no write fails while the replica catches up");
      assertVolume(w.expected(), await(v.read(0, (int) g.numBlocks())), "after the catch-up, every write reads back");
      await(v.write(firstBlock(g, n), data(g, n), true));
      assertRecovered(g, before, hostsBefore);
      sampling.set(false);
      sampler.join();
      reopened.add(cluster.endpoint(g, 2, 1).host());
      List<Map<String, Long>> caughtUp = new ArrayList<>();
      for (ReplicaHost h : reopened) {
        if (h.counters().get("recoveryFromPeer") == 1L) {
          caughtUp.add(h.counters());
        }
      }
      assertFalse(caughtUp.isEmpty(), "a host of 2/1 caught up from a peer (" + reopened.size() + " seen)");
      assertTrue(caughtUp.get(0).get("recoveryPeerBlocks") > 0, "it took the certified state from the peer: "
          + caughtUp.get(0));
      // its state is the others' (the mount compares all three replicas' signed states)
    }
    try (SalusVolume v = SalusVolume.open(cluster.connection(), "lost")) {
      assertVolume(expected(g, n + 1), await(v.read(0, (int) g.numBlocks())), "remounted after the catch-up");
    }
  }
}
