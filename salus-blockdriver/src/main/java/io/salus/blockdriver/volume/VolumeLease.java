package io.salus.blockdriver.volume;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.zookeeper.ZKConfig;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The single-writer lease of a volume (dissertation §3.1: a volume is mounted by one client at a
 * time, and that client owns the volume tree). It is an ephemeral znode
 * {@code /salus/volumes/<name>/writer} in the HBase cluster's ZooKeeper whose data names the
 * holder ({@code host pid=N since=T}).
 *
 * <ul>
 *   <li>A second writer is refused with an error naming the holder.
 *   <li>A lease left by a process that died on <em>this</em> host (its pid no longer exists) is
 *       removed at once; one left by another host goes away when that holder's ZooKeeper session
 *       expires (session timeout, {@value #SESSION_TIMEOUT_MS} ms).
 *   <li>When this holder's session is lost, {@link #isHeld()} turns false for good: the volume
 *       must stop acknowledging writes (fencing), because another writer may now take the
 *       lease.
 * </ul>
 */
public final class VolumeLease implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(VolumeLease.class);
  public static final String ROOT = "/salus/volumes";
  static final int SESSION_TIMEOUT_MS = 20_000;

  private final CuratorFramework zk;
  private final String path;
  private final String volume;
  private volatile boolean held = true;

  private VolumeLease(CuratorFramework zk, String path, String volume) {
    this.zk = zk;
    this.path = path;
    this.volume = volume;
  }

  static String path(String volume) {
    return ROOT + "/" + volume + "/writer";
  }

  /** A client of the cluster's ZooKeeper ({@code hbase.zookeeper.quorum}). */
  static CuratorFramework connect(Configuration conf) throws IOException {
    CuratorFramework zk = CuratorFrameworkFactory.builder()
        .connectString(ZKConfig.getZKQuorumServersString(conf))
        .sessionTimeoutMs(SESSION_TIMEOUT_MS)
        .connectionTimeoutMs(15_000)
        .retryPolicy(new ExponentialBackoffRetry(200, 5))
        .build();
    zk.start();
    try {
      if (!zk.blockUntilConnected(30, TimeUnit.SECONDS)) {
        zk.close();
        throw new IOException("cannot reach ZooKeeper at " + ZKConfig.getZKQuorumServersString(conf)
            + " within 30 s to take the volume's writer lease; check hbase.zookeeper.quorum");
      }
    } catch (InterruptedException e) {
      zk.close();
      Thread.currentThread().interrupt();
      throw new IOException("interrupted while connecting to ZooKeeper", e);
    }
    return zk;
  }

  /** Takes the writer lease of {@code volume} or fails with {@link VolumeException.InUse}. */
  public static VolumeLease acquire(Configuration conf, String volume) throws IOException {
    CuratorFramework zk = connect(conf);
    String path = path(volume);
    byte[] me = describeSelf().getBytes(StandardCharsets.UTF_8);
    try {
      for (int attempt = 0; ; attempt++) {
        try {
          zk.create().creatingParentContainersIfNeeded().withMode(CreateMode.EPHEMERAL)
              .forPath(path, me);
          break;
        } catch (KeeperException.NodeExistsException e) {
          Optional<String> holder = read(zk, path);
          if (holder.isEmpty()) {
            continue; // released meanwhile
          }
          if (attempt == 0 && heldByDeadLocalProcess(holder.get())) {
            LOG.warn("volume '{}': removing the writer lease of a process that no longer runs"
                + " on this host ({})", volume, holder.get());
            try {
              zk.delete().forPath(path);
            } catch (KeeperException.NoNodeException gone) {
              // expired meanwhile
            }
            continue;
          }
          throw new VolumeException.InUse("volume '" + volume + "' is already open for writing"
              + " by " + holder.get() + "; a volume has one writer at a time (the writer owns"
              + " its Merkle volume tree). Stop that 'salus nbd' / 'salus up' first; if it"
              + " crashed on another host, its lease goes away when its ZooKeeper session"
              + " expires (about " + SESSION_TIMEOUT_MS / 1000 + " s)");
        }
      }
    } catch (VolumeException | IOException e) {
      zk.close();
      throw e;
    } catch (Exception e) {
      zk.close();
      throw new IOException("cannot take the writer lease of volume '" + volume + "' in"
          + " ZooKeeper (" + path + ")", e);
    }
    VolumeLease lease = new VolumeLease(zk, path, volume);
    zk.getConnectionStateListenable().addListener((client, state) -> {
      if (state == ConnectionState.LOST && lease.held) {
        lease.held = false;
        LOG.error("volume '{}': ZooKeeper session lost, the writer lease is gone; refusing"
            + " further writes (another writer may take the volume now)", volume);
      }
    });
    return lease;
  }

  /** Who holds the writer lease of {@code volume}, if anyone. */
  public static Optional<String> holder(Configuration conf, String volume) throws IOException {
    try (CuratorFramework zk = connect(conf)) {
      return read(zk, path(volume));
    }
  }

  private static Optional<String> read(CuratorFramework zk, String path) throws IOException {
    try {
      return Optional.of(new String(zk.getData().forPath(path), StandardCharsets.UTF_8));
    } catch (KeeperException.NoNodeException e) {
      return Optional.empty();
    } catch (Exception e) {
      throw new IOException("cannot read the writer lease " + path + " in ZooKeeper", e);
    }
  }

  static String describeSelf() {
    return hostName() + " pid=" + ProcessHandle.current().pid() + " since=" + Instant.now();
  }

  private static String hostName() {
    try {
      return InetAddress.getLocalHost().getHostName();
    } catch (IOException e) {
      return "localhost";
    }
  }

  /** A holder on this host whose pid does not run any more (it cannot write). */
  static boolean heldByDeadLocalProcess(String holder) {
    String[] parts = holder.split(" ");
    if (parts.length < 2 || !parts[0].equals(hostName()) || !parts[1].startsWith("pid=")) {
      return false;
    }
    try {
      long pid = Long.parseLong(parts[1].substring(4));
      return pid != ProcessHandle.current().pid() && ProcessHandle.of(pid).isEmpty();
    } catch (NumberFormatException e) {
      return false;
    }
  }

  /** False once the ZooKeeper session that holds the lease was lost (or after close). */
  public boolean isHeld() {
    return held;
  }

  /** The ZooKeeper session holding the lease (for fault-injection tests that expire it). */
  public long sessionId() throws Exception {
    return zk.getZookeeperClient().getZooKeeper().getSessionId();
  }

  /** The password of {@link #sessionId()} (for fault-injection tests). */
  public byte[] sessionPassword() throws Exception {
    return zk.getZookeeperClient().getZooKeeper().getSessionPasswd();
  }

  /** How long a crashed remote holder keeps the lease at most. */
  public static Duration sessionTimeout() {
    return Duration.ofMillis(SESSION_TIMEOUT_MS);
  }

  @Override
  public void close() {
    boolean wasHeld = held;
    held = false;
    try {
      if (wasHeld) {
        zk.delete().forPath(path); // closing the session would remove it too
      }
    } catch (KeeperException.NoNodeException e) {
      // already gone
    } catch (Exception e) {
      LOG.warn("volume '{}': could not release the writer lease {} (it expires with the"
          + " session)", volume, path, e);
    } finally {
      zk.close();
    }
  }
}
