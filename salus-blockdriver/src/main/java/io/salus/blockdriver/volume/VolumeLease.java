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
 *   <li>A second writer is refused with an error naming the holder and its ZooKeeper session.
 *   <li>A lease is identified by its znode's {@code ephemeralOwner} (the holder's session) and
 *       version, never by the host name and pid in its data (pids repeat, and containers share
 *       host names): a lease znode that no session owns (not ephemeral) is stale and is removed
 *       with a version-checked delete; one owned by a live session is never removed by another
 *       writer, it goes away when that session ends or expires (session timeout,
 *       {@value #SESSION_TIMEOUT_MS} ms). If its data names a process of this host that no longer
 *       runs, the refusal says so and when to retry.
 *   <li>Fencing: {@link #isHeld()} turns false as soon as the connection to ZooKeeper is
 *       <em>suspended</em> (Curator {@code SUSPENDED}), not only when the session is declared
 *       {@code LOST}, because from the moment the client stops hearing from ZooKeeper the server
 *       may expire the session and give the lease to another writer. On {@code RECONNECTED} the
 *       lease counts as held again only if the znode still exists and is owned by this session;
 *       otherwise, and on {@code LOST}, it is gone for good and {@link #onLost} callbacks run.
 *   <li>Epoch: {@link #epoch()} is the lease znode's creation zxid ({@code czxid}). ZooKeeper orders every
 *       transaction, and a new lease znode can only be created after the previous one was deleted (its
 *       session ended), so a later lease always has a higher epoch. Salus region servers refuse writes that
 *       carry a lower epoch than the highest they have been fenced with (fencing enforced by storage).
 * </ul>
 */
public final class VolumeLease implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(VolumeLease.class);
  public static final String ROOT = "/salus/volumes";
  static final int SESSION_TIMEOUT_MS = 20_000;

  private final CuratorFramework zk;
  private final String path;
  private final String volume;
  private final long epoch;
  /** False for good once the lease is lost (session lost, znode gone) or closed. */
  private volatile boolean held = true;
  /** True while the ZooKeeper connection is suspended: writes are fenced until it reconnects. */
  private volatile boolean suspended;
  private final java.util.List<Runnable> lostCallbacks = new java.util.concurrent.CopyOnWriteArrayList<>();

  private VolumeLease(CuratorFramework zk, String path, String volume, long epoch) {
    this.zk = zk;
    this.path = path;
    this.volume = volume;
    this.epoch = epoch;
  }

  /**
   * This lease's epoch: the creation zxid of its znode, higher than that of every earlier lease of the volume
   * (and positive).
   */
  public long epoch() {
    return epoch;
  }

  /**
   * The ZooKeeper client this lease holds its znode with (the cluster's {@code hbase.zookeeper.quorum}): the writer's
   * other coordination (recovery at mount, identifyLCP) uses the same session. Closed with the lease.
   */
  public CuratorFramework zookeeper() {
    return zk;
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
          org.apache.zookeeper.data.Stat stat = new org.apache.zookeeper.data.Stat();
          Optional<String> holder = read(zk, path, stat);
          if (holder.isEmpty()) {
            continue; // released meanwhile
          }
          long mySession = zk.getZookeeperClient().getZooKeeper().getSessionId();
          if (stat.getEphemeralOwner() == mySession) {
            break; // created by this session (a retried create after a connection loss)
          }
          if (stat.getEphemeralOwner() == 0 && attempt < 3) {
            // Not a lease of any session (a leftover persistent znode): stale by construction.
            // The version-checked delete removes exactly the znode inspected, not a new lease
            // another writer created meanwhile.
            LOG.warn("volume '{}': removing a writer lease znode that no ZooKeeper session owns"
                + " ({})", volume, holder.get());
            try {
              zk.delete().withVersion(stat.getVersion()).forPath(path);
            } catch (KeeperException.NoNodeException | KeeperException.BadVersionException gone) {
              // changed meanwhile: look again
            }
            continue;
          }
          String session = "0x" + Long.toHexString(stat.getEphemeralOwner());
          String dead = heldByDeadLocalProcess(holder.get())
              ? " That process no longer runs on this host: its lease goes away when its"
                + " ZooKeeper session " + session + " expires (within about "
                + SESSION_TIMEOUT_MS / 1000 + " s); retry then."
              : " If it crashed, its lease goes away when its ZooKeeper session " + session
                + " expires (about " + SESSION_TIMEOUT_MS / 1000 + " s).";
          throw new VolumeException.InUse("volume '" + volume + "' is already open for writing"
              + " by " + holder.get() + " (ZooKeeper session " + session + "); a volume has one"
              + " writer at a time (the writer owns its Merkle volume tree). Stop that"
              + " 'salus nbd' / 'salus up' first." + dead);
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
    long epoch;
    try {
      org.apache.zookeeper.data.Stat st = zk.checkExists().forPath(path);
      if (st == null
          || st.getEphemeralOwner() != zk.getZookeeperClient().getZooKeeper().getSessionId()) {
        zk.close();
        throw new IOException("the writer lease of volume '" + volume + "' (" + path + ") vanished"
            + " right after it was taken (ZooKeeper session expired?); retry the open");
      }
      epoch = st.getCzxid();
    } catch (IOException e) {
      throw e;
    } catch (Exception e) {
      zk.close();
      throw new IOException("cannot read the writer lease " + path + " of volume '" + volume + "'", e);
    }
    VolumeLease lease = new VolumeLease(zk, path, volume, epoch);
    zk.getConnectionStateListenable().addListener((client, state) -> lease.onState(state));
    return lease;
  }

  private void onState(ConnectionState state) {
    if (!held) {
      return;
    }
    switch (state) {
      case SUSPENDED -> {
        suspended = true;
        LOG.warn("volume '{}': ZooKeeper connection suspended; writes are fenced until it"
            + " reconnects with the lease still held", volume);
      }
      case RECONNECTED -> {
        if (ownedBySession()) {
          suspended = false;
          LOG.info("volume '{}': ZooKeeper reconnected, writer lease still held", volume);
        } else {
          lost("the writer lease znode is gone or owned by another session after reconnecting");
        }
      }
      case LOST -> lost("ZooKeeper session lost");
      default -> {
        // CONNECTED (first connection) and READ_ONLY: nothing to do
      }
    }
  }

  private boolean ownedBySession() {
    try {
      org.apache.zookeeper.data.Stat st = zk.checkExists().forPath(path);
      return st != null
          && st.getEphemeralOwner() == zk.getZookeeperClient().getZooKeeper().getSessionId();
    } catch (Exception e) {
      LOG.warn("volume '{}': cannot check the writer lease after reconnecting", volume, e);
      return false;
    }
  }

  private void lost(String why) {
    if (!held) {
      return;
    }
    held = false;
    LOG.error("volume '{}': {}, the writer lease is gone; refusing further writes (another writer"
        + " may take the volume now)", volume, why);
    for (Runnable r : lostCallbacks) {
      try {
        r.run();
      } catch (RuntimeException e) {
        LOG.warn("lease-lost callback failed", e);
      }
    }
  }

  /**
   * Runs {@code r} once when the lease is lost for good (not on close), e.g. to stop an export
   * that can no longer acknowledge writes. Runs at once if it is already lost.
   */
  public void onLost(Runnable r) {
    lostCallbacks.add(r);
    if (!held && !closing) {
      r.run();
    }
  }

  /** Who holds the writer lease of {@code volume}, if anyone. */
  public static Optional<String> holder(Configuration conf, String volume) throws IOException {
    try (CuratorFramework zk = connect(conf)) {
      return read(zk, path(volume));
    }
  }

  private static Optional<String> read(CuratorFramework zk, String path) throws IOException {
    return read(zk, path, new org.apache.zookeeper.data.Stat());
  }

  private static Optional<String> read(CuratorFramework zk, String path,
      org.apache.zookeeper.data.Stat stat) throws IOException {
    try {
      return Optional.of(new String(zk.getData().storingStatIn(stat).forPath(path),
          StandardCharsets.UTF_8));
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

  /**
   * A holder whose data names this host and a pid that does not run here (only a hint for the
   * refusal message: pids repeat and containers share host names, so it never removes a lease).
   */
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

  /**
   * Whether writes may be acknowledged now: false while the ZooKeeper connection is suspended,
   * and for good once the lease is lost or closed.
   */
  public boolean isHeld() {
    return held && !suspended;
  }

  /** True once the lease is lost for good (session lost or znode gone), false while held or
   *  only suspended. */
  public boolean isLost() {
    return !held && !closing;
  }

  /** Null while the lease is held, else the error to fail an operation with (fencing). */
  public VolumeException fencedError() {
    if (held && !suspended) {
      return null;
    }
    return new VolumeException.Closed("volume '" + volume + "' is fenced: "
        + (closing ? "it was closed" : held
            ? "its ZooKeeper connection is suspended (no write is acknowledged until it"
              + " reconnects with the lease still held)"
            : "it lost its single-writer lease (ZooKeeper session expired); reopen the volume"
              + " to continue"));
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

  private volatile boolean closing;

  @Override
  public void close() {
    boolean wasHeld = held;
    closing = true;
    held = false;
    try {
      if (wasHeld) {
        // Only our own znode (closing the session would remove it too): after a suspension the
        // session may have expired and another writer may hold a new lease at the same path.
        org.apache.zookeeper.data.Stat st = zk.checkExists().forPath(path);
        if (st != null
            && st.getEphemeralOwner() == zk.getZookeeperClient().getZooKeeper().getSessionId()) {
          zk.delete().withVersion(st.getVersion()).forPath(path);
        }
      }
    } catch (KeeperException.NoNodeException | KeeperException.BadVersionException e) {
      // already gone
    } catch (Exception e) {
      LOG.warn("volume '{}': could not release the writer lease {} (it expires with the"
          + " session)", volume, path, e);
    } finally {
      zk.close();
    }
  }
}
