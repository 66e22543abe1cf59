package io.salus.it.salus;

import static org.junit.jupiter.api.Assertions.*;

import io.salus.blockdriver.salus.SalusVolume;
import io.salus.core.cert.Certificate;
import io.salus.core.crypto.NodeId;
import io.salus.core.hbase.VolumeGeometry;
import io.salus.core.hbase.endpoint.ReplicaHost;
import io.salus.core.hbase.endpoint.ReplicaStorageFactory;
import io.salus.core.hbase.storage.HdfsReplicaStorage;
import io.salus.core.protocol.ProtocolConfig;
import io.salus.core.protocol.recovery.Coordination;
import io.salus.core.protocol.replica.RegionStore;
import io.salus.core.protocol.replica.ForwardingReplicaDisk;
import io.salus.core.protocol.replica.ReplicaDisk;
import io.salus.core.protocol.witness.CertificateStore;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.coprocessor.RegionCoprocessorEnvironment;
import org.apache.hadoop.hbase.regionserver.HRegion;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Liveness of a replica's recovery (issue 14, task inst20): a replica region that reopens ends up serving, or is
 * reopened again until it does. Task disk19's lost-disk run ({@code docs/benchmarks/salus-rebuild-disk19-run3.csv} on
 * that branch) left replica 3/0 closed for good: it had been reopened elsewhere and was installing a peer's metadata
 * when an unassign that its aborted old server had queued at the master closed this new incarnation; the install's
 * log write failed ("cannot append index 124") and the replica asked for its region to be reopened, but that request
 * (unassign, then assign only if its own unassign succeeded) found the region CLOSED six times and gave up, while the
 * old server's request failed every attempt with "connection is closed". Nothing reopened the region again.
 *
 * <p>Here, deterministically, on a real mini cluster with the endpoint's HDFS storage: replica 2/1's log is deleted
 * while its region is closed, so its next open catches up from a peer; its first log write of that install waits
 * until another unassign (the test's, standing in for the stale one) closes the region under it, and then fails (the
 * disk was closed under the install). The replica reports it and asks for a reopen. Before task inst20 the region
 * stayed closed and region 2 committed nothing more; now the request assigns the region it finds closed, the replica
 * catches up again and serves, and every write commits and reads back.
 */
class SalusReopenLivenessTest {
  static final int BLOCK = 4096;
  static final long PER_REGION = 16;
  static final int REGIONS = 4;
  /** Longer than the old request's six attempts 5 s apart, far shorter than the new one's give-up. */
  static final long SERVING_AGAIN_MS = 150_000;
  static SalusMiniCluster cluster;

  /** Encoded name of the region whose next incarnation's first log write (its catch-up install) fails. */
  static volatile String armed;
  /** Counted down when that write starts (the replica is installing a peer's metadata). */
  static final CountDownLatch installing = new CountDownLatch(1);
  /** Log writes failed by {@link FailingInstall}. */
  static final AtomicInteger injected = new AtomicInteger();
  /** Encoded name of the region whose next starts fail ({@link #startsToFail} of them) before the replica runs. */
  static volatile String failStartsOf;
  static final AtomicInteger startsToFail = new AtomicInteger();
  static final AtomicInteger startsFailed = new AtomicInteger();
  /** Encoded name of the region whose first start fails and whose retry blocks until {@link #closeReturned}. */
  static volatile String blockStartsOf;
  static final AtomicInteger blockedAttempts = new AtomicInteger();
  static final CountDownLatch retryBlocked = new CountDownLatch(1);
  static final CountDownLatch closeReturned = new CountDownLatch(1);
  static final AtomicBoolean closeReturnedFirst = new AtomicBoolean();
  static final CountDownLatch blockedStartEnded = new CountDownLatch(1);
  /** The storage of each region incarnation opened, by encoded region name (the latest). */
  static final Map<String, InstallFaults> storages = new java.util.concurrent.ConcurrentHashMap<>();

  /** The endpoint's default storage; the {@link #armed} region's next incarnation gets a {@link FailingInstall}. */
  public static final class InstallFaults implements ReplicaStorageFactory {
    final HdfsReplicaStorage inner = new HdfsReplicaStorage();
    final CountDownLatch closed = new CountDownLatch(1);

    @Override
    public ReplicaDisk disk(RegionCoprocessorEnvironment env, NodeId replica) {
      ReplicaDisk d = inner.disk(env, replica);
      String encoded = env.getRegionInfo().getEncodedName();
      storages.put(encoded, this);
      if (!encoded.equals(armed)) {
        return d;
      }
      armed = null; // this incarnation only
      return new FailingInstall(d, closed);
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
      if (env.getRegionInfo().getEncodedName().equals(blockStartsOf)) {
        if (blockedAttempts.incrementAndGet() == 1) {
          throw new IllegalStateException("injected by SalusReopenLivenessTest: cannot reach ZooKeeper");
        }
        retryBlocked.countDown(); // the retry, on the endpoint's retry thread: ZooKeeper still unreachable
        try {
          closeReturnedFirst.set(closeReturned.await(SalusMiniCluster.DEADLINE_MS, TimeUnit.MILLISECONDS));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        blockedStartEnded.countDown();
        throw new IllegalStateException("injected by SalusReopenLivenessTest: ZooKeeper still unreachable");
      }
      if (env.getRegionInfo().getEncodedName().equals(failStartsOf) && startsToFail.getAndDecrement() > 0) {
        startsFailed.incrementAndGet();
        throw new IllegalStateException("injected by SalusReopenLivenessTest: cannot reach ZooKeeper (a passing"
            + " outage) for the checkpoint certificates");
      }
      return inner.coordination(env, volume);
    }

    @Override
    public boolean reopenAsked() {
      return inner.reopenAsked();
    }

    @Override
    public String quarantineDisk(RegionCoprocessorEnvironment env, RuntimeException error) {
      return inner.quarantineDisk(env, error);
    }

    @Override
    public void diskFailed(RegionCoprocessorEnvironment env, RuntimeException error) {
      inner.diskFailed(env, error); // the real request to the master
    }

    @Override
    public void close() {
      closed.countDown();
      inner.close();
    }
  }

  /**
   * A disk whose first log or decision write waits until the region is being closed (its loop interrupted or its
   * storage closed) and then fails, as the HDFS log closed under the install in run3; everything else is the disk's.
   */
  static final class FailingInstall extends ForwardingReplicaDisk {
    private final CountDownLatch storageClosed;
    private final AtomicBoolean fired = new AtomicBoolean();

    FailingInstall(ReplicaDisk d, CountDownLatch storageClosed) {
      super(d);
      this.storageClosed = storageClosed;
    }

    private void failFirst() {
      if (!fired.compareAndSet(false, true)) {
        return;
      }
      installing.countDown();
      try {
        storageClosed.await(SalusMiniCluster.DEADLINE_MS, TimeUnit.MILLISECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt(); // the host closed its loop: the region is closing
      }
      injected.incrementAndGet();
      throw new UncheckedIOException("injected by SalusReopenLivenessTest: the install's log write failed, the"
          + " region was closed under it", new IOException("stream closed"));
    }

    @Override
    public void append(long generation, long index, byte[] entry) {
      failFirst();
      d.append(generation, index, entry);
    }

    @Override
    public void appendAll(long generation, List<Long> indexes, List<byte[]> entries) {
      failFirst();
      d.appendAll(generation, indexes, entries);
    }

    @Override
    public void recordDecision(long generation, Certificate decision) {
      failFirst();
      d.recordDecision(generation, decision);
    }

    @Override
    public void recordDecisions(long generation, List<Certificate> decisions) {
      failFirst();
      d.recordDecisions(generation, decisions);
    }

    @Override
    public void recordCommitMarks(long generation, List<Certificate> marks) {
      failFirst();
      d.recordCommitMarks(generation, marks);
    }
  }


  @BeforeAll
  static void start() throws Exception {
    cluster = new SalusMiniCluster(c -> c.set(ReplicaStorageFactory.CLASS_KEY, InstallFaults.class.getName()));
    for (String l : List.of("io.salus.core.hbase.endpoint.ReplicaHost", "io.salus.core.hbase.storage")) {
      org.apache.log4j.LogManager.getLogger(l).setLevel(org.apache.log4j.Level.INFO);
    }
  }

  @AfterAll
  static void stop() throws Exception {
    installing.countDown();
    if (cluster != null) {
      cluster.close();
    }
  }

  static void awaitTrue(String what, long millis, BooleanSupplier c) throws Exception {
    long end = System.currentTimeMillis() + millis;
    while (!c.getAsBoolean()) {
      assertTrue(System.currentTimeMillis() < end, what);
      Thread.sleep(50);
    }
  }

  /**
   * Review rv38: a replica whose start failed for a reason that passes (here its ZooKeeper session cannot be made,
   * twice) left its region open without a replica for good: nothing started it again, and its RRS ran on two
   * replicas (a new volume's placement never completed). Now the endpoint starts it again on the open region, after a
   * backoff, without a reopen.
   */
  @Test
  void aReplicaWhoseStartFailsForAPassingReasonIsStartedAgainOnItsOpenRegion() throws Exception {
    VolumeGeometry g = new VolumeGeometry("livst", REGIONS * PER_REGION * BLOCK, BLOCK, PER_REGION);
    cluster.createVolume(g);
    HRegion victim = cluster.region(g, 1, 2);
    byte[] name = victim.getRegionInfo().getRegionName();
    long retriesBefore = io.salus.core.hbase.endpoint.SalusReplicaEndpoint.startRetries();
    long movesBefore = HdfsReplicaStorage.movesAsked();
    startsToFail.set(2);
    failStartsOf = victim.getRegionInfo().getEncodedName();
    try (Admin admin = cluster.connection().getAdmin()) {
      admin.unassign(name, true);
      admin.assign(name);
    }
    awaitTrue("replica 1/2 serving after its failed starts", SalusMiniCluster.DEADLINE_MS,
        () -> cluster.locate(g, 1, 2) != null);
    failStartsOf = null;
    assertEquals(2, startsFailed.get(), "the fault acted: two starts of replica 1/2 failed");
    assertTrue(io.salus.core.hbase.endpoint.SalusReplicaEndpoint.startRetries() - retriesBefore >= 2,
        "started again by the endpoint");
    assertEquals(movesBefore, HdfsReplicaStorage.movesAsked(), "no reopen was asked: the open region's replica"
        + " started again in place");
    writeAndReadBack(g, "every write reads back");
  }

  /**
   * Review of the start retry: HBase closes a region holding its write lock and calls the endpoint's stop() inside
   * that; a stop() that waited for a retried start still blocked (on ZooKeeper, a lease recovery) held the close as
   * long, and a start that flushed at a checkpoint could deadlock it. The retry here blocks until the close returned
   * (or the test's deadline): the close must return first, and the region must open and serve again afterwards.
   */
  @Test
  void closingARegionWhoseStartIsBeingRetriedDoesNotWaitForTheStart() throws Exception {
    VolumeGeometry g = new VolumeGeometry("livcl", REGIONS * PER_REGION * BLOCK, BLOCK, PER_REGION);
    cluster.createVolume(g);
    HRegion victim = cluster.region(g, 1, 2);
    byte[] name = victim.getRegionInfo().getRegionName();
    blockStartsOf = victim.getRegionInfo().getEncodedName();
    try (Admin admin = cluster.connection().getAdmin()) {
      admin.unassign(name, true);
      admin.assign(name); // the start fails; the endpoint starts it again after its backoff, and that start blocks
      assertTrue(retryBlocked.await(SalusMiniCluster.DEADLINE_MS, TimeUnit.MILLISECONDS),
          "the endpoint started replica 1/2 again and that start blocks on ZooKeeper");
      admin.unassign(name, true);
      closeReturned.countDown();
      blockStartsOf = null;
      assertTrue(blockedStartEnded.await(SalusMiniCluster.DEADLINE_MS, TimeUnit.MILLISECONDS), "the blocked start ended");
      assertTrue(closeReturnedFirst.get(), "the region's close returned while its replica's start was blocked"
          + " (it waited for the start)");
      admin.assign(name);
    }
    writeAndReadBack(g, "every write reads back after the region opened again");
  }

  /** Once the volume is placed: 40 writes commit on a new mount and read back. */
  private static void writeAndReadBack(VolumeGeometry g, String what) throws Exception {
    cluster.awaitPlaced(g);
    try (SalusVolume v = SalusVolume.open(cluster.connection(), g.volume())) {
      SalusRegionRecoveryTest.Workload w = new SalusRegionRecoveryTest.Workload(g, v, 40, 8);
      assertEquals("", w.finish());
      SalusRegionRecoveryTest.assertVolume(w.expected(),
          v.read(0, (int) g.numBlocks()).get(SalusMiniCluster.DEADLINE_MS, TimeUnit.MILLISECONDS), what);
    }
  }

  @Test
  void aReplicaWhoseCatchUpLogWriteFailsWhileItsRegionIsClosedUnderItIsReopenedAndServesAgain() throws Exception {
    VolumeGeometry g = new VolumeGeometry("liv", REGIONS * PER_REGION * BLOCK, BLOCK, PER_REGION);
    cluster.createVolume(g);
    int n = 200;
    try (SalusVolume v = SalusVolume.open(cluster.connection(), "liv")) {
      SalusRegionRecoveryTest.Workload w = new SalusRegionRecoveryTest.Workload(g, v, n, 8);
      awaitTrue("40 writes acknowledged before the log is lost", SalusMiniCluster.DEADLINE_MS, () -> w.acked() >= 40);
      HRegion victim = cluster.region(g, 2, 1);
      String encoded = victim.getRegionInfo().getEncodedName();
      byte[] name = victim.getRegionInfo().getRegionName();
      ReplicaHost before = cluster.endpoint(g, 2, 1).host();
      org.apache.hadoop.fs.Path dir = storages.get(encoded).inner.replicaDisk().directory();
      long movesBefore = HdfsReplicaStorage.movesAsked();
      armed = encoded;
      try (Admin admin = cluster.connection().getAdmin()) {
        admin.unassign(name, true);
        assertTrue(cluster.util.getDFSCluster().getFileSystem().delete(dir, true), "deleted " + dir);
        admin.assign(name); // the next incarnation cannot start from its disk: it catches up from a peer
        assertTrue(installing.await(SalusMiniCluster.DEADLINE_MS, TimeUnit.MILLISECONDS),
            "replica 2/1 started writing a peer's state to its log");
        // another unassign closes the region under the install (in run3: the aborted old server's, queued at the
        // master); the install's log write then fails and the replica asks for its region to be reopened
        admin.unassign(name, true);
      }
      assertEquals(1, injected.get(), "the install's log write failed once");
      awaitTrue("replica 2/1 serving again within " + SERVING_AGAIN_MS + " ms (its reopen request must assign the"
          + " region it finds closed; before task inst20 it stayed closed)", SERVING_AGAIN_MS, () -> {
            if (cluster.locate(g, 2, 1) != null) {
              return true;
            }
            return false;
          });
      assertTrue(HdfsReplicaStorage.movesAsked() > movesBefore, "the failed write asked the master for a reopen");
      ReplicaHost after = cluster.endpoint(g, 2, 1).host();
      assertNotSame(before, after);
      assertEquals(1L, after.counters().get("recoveryFromPeer"), "it caught up from a peer: " + after.counters());
      cluster.awaitPlaced(g);
      boolean drained = w.await(SalusMiniCluster.DEADLINE_MS);
      if (!drained || w.failed() > 0) {
        SalusRegionRecoveryTest.dump(cluster, g);
      }
      assertTrue(drained, "every write done: " + w.acked() + " of " + n + " acknowledged");
      assertEquals(0, w.failed(), "no write failed");
      SalusRegionRecoveryTest.assertVolume(w.expected(),
          v.read(0, (int) g.numBlocks()).get(SalusMiniCluster.DEADLINE_MS, TimeUnit.MILLISECONDS),
          "every write reads back");
    }
  }
}
