package io.salus.blockdriver.volume;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.File;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HConstants;
import org.apache.hadoop.hbase.zookeeper.MiniZooKeeperCluster;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.Stat;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The writer lease against a real ZooKeeper server (MiniZooKeeperCluster): fencing while the
 * connection is suspended, no lease removed by host name and pid, stale znodes removed only when no
 * session owns them. Deadlines below only bound a hung test; nothing asserts a duration.
 */
class VolumeLeaseTest {
  @TempDir
  Path tmp;
  private MiniZooKeeperCluster zk;
  private File zkDir;
  private int port;
  private Configuration conf;

  @BeforeEach
  void start() throws Exception {
    zkDir = tmp.resolve("zk").toFile();
    zk = new MiniZooKeeperCluster(new Configuration(false));
    port = zk.startup(zkDir);
    conf = new Configuration(false);
    conf.set(HConstants.ZOOKEEPER_QUORUM, "127.0.0.1");
    conf.setInt(HConstants.ZOOKEEPER_CLIENT_PORT, port);
  }

  @AfterEach
  void stop() throws Exception {
    if (zk != null) {
      zk.shutdown();
    }
  }

  private CuratorFramework client() {
    CuratorFramework c = CuratorFrameworkFactory.newClient("127.0.0.1:" + port,
        new ExponentialBackoffRetry(200, 3));
    c.start();
    return c;
  }

  private static void await(BooleanSupplier cond, String what) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
    while (!cond.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        fail("timed out waiting until " + what);
      }
      Thread.sleep(50);
    }
  }

  @Test
  void suspendedConnectionFencesAtOnceAndAReconnectWithTheLeaseUnfences() throws Exception {
    try (VolumeLease lease = VolumeLease.acquire(conf, "vol")) {
      assertTrue(lease.isHeld());
      zk.shutdown(); // ZooKeeper unreachable: the client suspends long before the session expires
      zk = null;
      await(() -> !lease.isHeld(), "the suspended lease fences writes");
      assertNotNull(lease.fencedError());
      assertTrue(lease.fencedError().getMessage().contains("suspended"),
          lease.fencedError().getMessage());
      assertFalse(lease.isLost(), "a suspension alone is not a loss");

      zk = new MiniZooKeeperCluster(new Configuration(false));
      zk.setDefaultClientPort(port);
      zk.startup(zkDir); // same data: the session and its ephemeral lease are still there
      await(lease::isHeld, "the reconnected session still owns the lease");
      assertNull(lease.fencedError());
    }
  }

  @Test
  void aLiveLeaseIsNeverRemovedBecauseItsDataNamesADeadLocalPid() throws Exception {
    Process gone = new ProcessBuilder("true").start();
    gone.waitFor();
    String path = VolumeLease.path("vol");
    try (CuratorFramework other = client()) {
      // A writer in another container with the same host name: its pid means nothing here.
      other.create().creatingParentContainersIfNeeded().withMode(CreateMode.EPHEMERAL)
          .forPath(path, (InetAddress.getLocalHost().getHostName() + " pid=" + gone.pid()
              + " since=then").getBytes(StandardCharsets.UTF_8));
      Stat before = other.checkExists().forPath(path);
      VolumeException.InUse e = assertThrows(VolumeException.InUse.class,
          () -> VolumeLease.acquire(conf, "vol"));
      assertTrue(e.getMessage().contains("0x" + Long.toHexString(before.getEphemeralOwner()))
          && e.getMessage().contains("retry"), e.getMessage());
      Stat after = other.checkExists().forPath(path);
      assertNotNull(after, "the live writer's lease was deleted");
      assertEquals(before.getEphemeralOwner(), after.getEphemeralOwner());
    }
    // Once that writer's session ends, the lease is free.
    try (VolumeLease lease = VolumeLease.acquire(conf, "vol")) {
      assertTrue(lease.isHeld());
    }
  }

  @Test
  void aLeaseZnodeNoSessionOwnsIsStaleAndRemoved() throws Exception {
    try (CuratorFramework other = client()) {
      other.create().creatingParentContainersIfNeeded().withMode(CreateMode.PERSISTENT)
          .forPath(VolumeLease.path("vol"), "somewhere pid=1 since=then".getBytes(
              StandardCharsets.UTF_8));
    }
    try (VolumeLease lease = VolumeLease.acquire(conf, "vol")) {
      assertTrue(lease.isHeld());
    }
  }

  /**
   * The lease epoch (the lease znode's creation zxid) that Salus region servers fence with: a lease taken after
   * another one ended, even one taken over after the holder's session expired, has a higher epoch.
   */
  @Test
  void aLaterLeaseHasAHigherEpoch() throws Exception {
    long first;
    try (VolumeLease lease = VolumeLease.acquire(conf, "vol")) {
      first = lease.epoch();
      assertTrue(first > 0, "epoch " + first);
    }
    VolumeLease second = VolumeLease.acquire(conf, "vol");
    assertTrue(second.epoch() > first, second.epoch() + " > " + first);
    expire(second);
    try (VolumeLease third = VolumeLease.acquire(conf, "vol")) {
      assertTrue(third.epoch() > second.epoch(), third.epoch() + " > " + second.epoch());
    } finally {
      second.close();
    }
  }

  @Test
  void aLostLeaseStopsTheExportWithAnError() throws Exception {
    VolumeLease lease = VolumeLease.acquire(conf, "vol");
    CountDownLatch stop = new CountDownLatch(1);
    java.io.StringWriter err = new java.io.StringWriter();
    int[] code = {-1};
    CountDownLatch closed = new CountDownLatch(1);
    Thread t = new Thread(() -> {
      try {
        code[0] = io.salus.blockdriver.cli.NbdCommandAccess.awaitEnd("vol", lease, stop,
            closed::countDown, new java.io.PrintWriter(err, true));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    });
    t.start();
    expire(lease);
    t.join(TimeUnit.SECONDS.toMillis(90));
    assertFalse(t.isAlive(), "a fenced export must stop, not answer errors forever");
    assertEquals(3, code[0], err.toString());
    assertEquals(0, closed.getCount(), "the export is closed");
    assertTrue(err.toString().contains("fenced"), err.toString());
    assertTrue(lease.isLost());
    lease.close();
  }

  /** Ends the lease's session on the server: a second client attaches to it and closes it. */
  private void expire(VolumeLease lease) throws Exception {
    for (int attempt = 0; attempt < 10 && !lease.isLost(); attempt++) {
      CountDownLatch connected = new CountDownLatch(1);
      ZooKeeper dup = new ZooKeeper("127.0.0.1:" + port, 20_000, event -> {
        if (event.getState() == org.apache.zookeeper.Watcher.Event.KeeperState.SyncConnected) {
          connected.countDown();
        }
      }, lease.sessionId(), lease.sessionPassword());
      connected.await(10, TimeUnit.SECONDS);
      dup.close();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
      while (!lease.isLost() && System.nanoTime() < deadline) {
        Thread.sleep(50);
      }
    }
  }
}
