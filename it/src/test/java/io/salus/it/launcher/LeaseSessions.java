package io.salus.it.launcher;

import static org.junit.jupiter.api.Assertions.fail;

import io.salus.blockdriver.volume.VolumeLease;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;

/** Test helper shared by the fencing tests (launcher and Salus volume tests): ends a lease holder's ZooKeeper session. */
public final class LeaseSessions {
  private LeaseSessions() {
  }

  /** Ends the lease's session on the server: a second client attaches to it and closes it. */
  public static void expire(String quorum, VolumeLease lease) throws Exception {
    for (int attempt = 0; attempt < 10 && !lease.isLost(); attempt++) {
      CountDownLatch connected = new CountDownLatch(1);
      ZooKeeper dup = new ZooKeeper(quorum, 20_000, event -> {
        if (event.getState() == Watcher.Event.KeeperState.SyncConnected) {
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
    if (!lease.isLost()) {
      fail("could not end the lease holder's ZooKeeper session");
    }
  }
}
