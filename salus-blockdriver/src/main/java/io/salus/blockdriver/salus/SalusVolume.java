package io.salus.blockdriver.salus;

import io.salus.blockdriver.volume.Volume;
import io.salus.blockdriver.volume.VolumeException;
import io.salus.blockdriver.volume.VolumeLease;
import io.salus.core.cert.Certificate;
import io.salus.core.crypto.NodeId;
import io.salus.core.hbase.SalusTableLayout;
import io.salus.core.hbase.VolumeGeometry;
import io.salus.core.hbase.endpoint.EndpointKeyring;
import io.salus.core.hbase.endpoint.HBaseVolumeClientRunner;
import io.salus.core.hbase.endpoint.VolumeAddressing;
import io.salus.core.protocol.client.BlockWrite;
import io.salus.core.protocol.client.ClientListener;
import io.salus.core.protocol.client.ReplicaMount;
import io.salus.core.protocol.client.VolumeClient;
import java.io.IOException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.AsyncConnection;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link Volume} whose writes and reads run the Salus protocol (issue 13 item 6) against the replica
 * endpoints of a volume laid out by {@link SalusTableLayout} (three tables {@code salus:<vol>_r0/_r1/_r2}).
 *
 * <ul>
 *   <li><b>Writes</b>: a block-aligned write is cut into parts of at most {@link #MAX_BLOCKS_PER_BATCH}
 *       blocks that wait in a FIFO queue; group commit ({@link #drain}) sends the queued parts from the head, in
 *       issue order, as one batch of up to {@link #MAX_BLOCKS_PER_BATCH} distinct blocks (the later of two queued
 *       writes to one block wins). The core's {@link VolumeClient} splits each batch into signed per-region
 *       sub-batches (blocks to regions by the volume geometry), pipelines up to {@link #PIPELINE} batches, and
 *       reports PUT_SUCCESS only after every sub-batch committed in order (the ordered commit across regions,
 *       §3.3.2). A write completes when every batch holding a part of it has PUT_SUCCESS; a batch that fails fails
 *       every write in it. A full pipeline, or a block with a GET in flight, makes the queue wait, never reorder.
 *   <li><b>Reads</b>: one GET per block to one replica, at most {@link #READ_WINDOW_BLOCKS} of a read in flight; the client checks the reply's Merkle proof against
 *       the region root its own volume tree expects and retries another replica on a bad proof or no answer
 *       (counted per replica: {@link #getRetriesByReplica()}).
 *   <li><b>FLUSH / FUA</b>: a write is acknowledged only at PUT_SUCCESS, i.e. once committed on the three
 *       replicas of every region it touches; on the HDFS Salus log its entry and commit mark are then hflushed
 *       (in three DataNodes, surviving a crash of any process, not yet of a DataNode's machine). A FLUSH
 *       ({@link VolumeClient#flush}) asks every replica of every region with a write acknowledged since the
 *       previous FLUSH to hsync what it holds, and completes only once all three replicas of each such region
 *       answered (task tput18); a FUA write completes only after its own FLUSH. With the in-memory replica
 *       storage ({@code ReplicaStorageFactory.InMemory}, tests) nothing is on a disk.
 *   <li><b>Writer lease</b>: taken as for {@code HBaseVolume} ({@link VolumeLease}); once lost, every
 *       operation fails and nothing in flight is acknowledged. <b>Fencing by storage</b>: the lease's epoch
 *       travels in every sub-batch and BatchInfo, and the first thing {@link #open} does after taking the lease
 *       is to fence every replica of every region with it ({@link VolumeClient#fence}); it returns only once all
 *       of them recorded it. From then on the region servers refuse the previous writer's sub-batches, whatever
 *       that writer believes about its lease; its writes fail with the replicas' reason.
 * </ul>
 *
 * <p>Mount: {@link #open} runs the client mount protocol against the replicas ({@link ReplicaMount}): every
 * region's state, signed by its three replicas, rebuilds the volume tree and the sequence numbers, so a volume is
 * mounted again after a clean close or after its previous writer died (once every region is settled). A region
 * whose replicas contradict each other, or whose state does not check, stops the mount with an error naming it.
 *
 * <p>Keys ({@link EndpointKeyring#forClient}): the client's keyring file {@code salus.client.keyring.file} (from
 * {@code salus keys init}: the servers' secret and the client's Ed25519 private key, whose public half the region
 * servers' file holds, so no replica can forge the client's writes, §3.2), or for tests the deterministic keyring
 * {@code salus.endpoint.keyring.test-seed} the region servers share.
 */
public final class SalusVolume implements Volume {
  private static final Logger LOG = LoggerFactory.getLogger(SalusVolume.class);
  /** Batches in flight in the client's pipeline. */
  public static final int PIPELINE = 32;
  /**
   * At most this many blocks per batch (256 KiB). It was 16 while 64-block batches never committed: a retransmission
   * storm between the replicas (copies of unresolved 256 KiB sub-batches queued behind each other and re-validated
   * by every receiver), fixed in ReplicaLink and RegionReplica (docs/salus-on-hbase.md, "64-block batches").
   */
  public static final int MAX_BLOCKS_PER_BATCH = 64;
  /**
   * Group commit: a batch with room for more blocks is submitted only while fewer than this many batches are in
   * flight; otherwise the queued writes wait for a completion and are sent together ({@link #drain}). The system
   * property {@code salus.volume.coalesce-depth} overrides it (benchmarks; {@link #PIPELINE} turns coalescing of
   * non-full batches off: one batch per write as before).
   */
  public static final int COALESCE_DEPTH = 2;
  /** Retransmission / GET-retry period of the client. */
  public static final long RETRANSMIT_MILLIS = 5_000;
  /**
   * How long the writer keeps retransmitting batches that make no progress before it gives up and fails its writes
   * (the volume then needs a remount). A replica region that is moved (a balancer move) or whose region server
   * crashed answers nothing until HBase reassigned it and it ran recovery at open; the writer must carry on across
   * that gap: it used to give up after 4 retransmissions (20 s), so one move mid-write failed every later write
   * (SalusNbdTest's EIO, SalusRegionRecoveryTest). Ten minutes covers a region server's ZooKeeper session timeout,
   * the server crash procedure and the reopen.
   */
  public static final long STALL_MILLIS = 600_000;
  /**
   * How long {@link #open} waits for the mount protocol: for every replica to answer and for every region to be
   * settled (the previous writer's last batches decided).
   */
  public static final long MOUNT_WAIT_MILLIS = 120_000;
  /** How long {@link #open} waits for the replicas of every RRS to be on three distinct servers. */
  public static final long PLACEMENT_WAIT_MILLIS = 120_000;
  /** How long {@link #open} waits for every replica to confirm the writer's fence. */
  public static final long FENCE_WAIT_MILLIS = 120_000;

  /**
   * RRS replacement (paper §3.2, issue 14): milliseconds a batch or FLUSH may stay stuck on replicas that do not answer
   * (while a peer of theirs did) before the volume asks the master to replace them ({@code 0}: never). The writes stay
   * queued and retransmitted meanwhile; the replacement's new incarnation recovers at open and answers them.
   */
  public static final String REPLACE_SILENT_AFTER_KEY = "salus.volume.replace-silent-after.ms";
  public static final long DEFAULT_REPLACE_SILENT_AFTER_MS = 60_000;

  /** The replica endpoints' ZooKeeper root of the volumes' coordination (same key, same default). */
  static final String ZK_ROOT_KEY = "salus.zk.root";
  static final String DEFAULT_ZK_ROOT = "/salus";
  /** Tests only: the next {@link #open} sends at most this many recovery messages (-1: no limit). */
  static volatile int mountRecoverySendsForTest = -1;
  /** Tests only: how long the next {@link #open} waits for its mount (-1: {@link #MOUNT_WAIT_MILLIS}). */
  static volatile long mountWaitMillisForTest = -1;
  /** What this open's mount recovered: the LCP it recorded or found (null: none) and the batches it aborted. */
  private volatile io.salus.core.protocol.recovery.Coordination.Lcp mountLcp;
  private volatile java.util.SortedSet<Long> mountAborts = java.util.Collections.emptySortedSet();

  private final VolumeGeometry geometry;
  private final VolumeLease lease;
  private final AsyncConnection async;
  private final HBaseVolumeClientRunner runner;
  private final ScheduledExecutorService timer;
  // touched only on the runner's loop thread:
  /** Batch id to the writes it holds (all acknowledged, or all failed, with the batch). */
  private final Map<Long, List<CompletableFuture<Void>>> puts = new HashMap<>();
  // written on the loop only, read by counters() from any thread
  private volatile long batchesSubmitted;
  private volatile long writesSubmitted;
  private volatile long blocksSubmitted;
  private final int maxBlocksPerBatch = Integer.getInteger("salus.volume.max-blocks-per-batch", MAX_BLOCKS_PER_BATCH);
  private final int coalesceDepth = Integer.getInteger("salus.volume.coalesce-depth", COALESCE_DEPTH);
  private final Map<Long, CompletableFuture<byte[]>> gets = new HashMap<>();
  /** FLUSHes in flight by id (task tput18); touched only on the loop. */
  private final Map<Long, CompletableFuture<Void>> flushes = new HashMap<>();
  private final ArrayDeque<Pending> waiting = new ArrayDeque<>();
  private volatile String failed;
  private volatile boolean closed;
  /** The volume's replica nodes and their tables and rows (the client's, and the replacement requests'). */
  private final VolumeAddressing addressing;
  /** Sends RRS replacement requests to the master, one at a time, off the client's loop. */
  private final java.util.concurrent.ExecutorService replacer;
  /** Replica node to when it was last replaced or a request for it was sent (no repeat within the silence period). */
  private final Map<NodeId, Long> replacedAt = new java.util.concurrent.ConcurrentHashMap<>();
  private volatile long replaceSilentAfterMs = DEFAULT_REPLACE_SILENT_AFTER_MS;
  private final java.util.concurrent.atomic.AtomicLong replacementsAsked = new java.util.concurrent.atomic.AtomicLong();
  private final java.util.concurrent.atomic.AtomicLong replacementsDone = new java.util.concurrent.atomic.AtomicLong();
  /** Batches acknowledged on their leader region's COMMIT because some region's PUT_SUCCESS never formed. */
  private final java.util.concurrent.atomic.AtomicLong batchesOnLeaderCommit = new java.util.concurrent.atomic.AtomicLong();
  private volatile String lastReplacement;
  /** Test seam: keep sending after the lease is lost, as a writer that missed its lease loss would. */
  private volatile boolean ignoreLeaseLoss;

  private record Pending(List<BlockWrite> writes, CompletableFuture<Void> done) {
  }

  private SalusVolume(VolumeGeometry geometry, VolumeLease lease, AsyncConnection async, EndpointKeyring keys) {
    this.geometry = geometry;
    this.lease = lease;
    this.async = async;
    this.addressing = new VolumeAddressing(geometry);
    this.runner = new HBaseVolumeClientRunner(async, addressing, keys.signer(addressing.client()), keys.verifier(),
        new Listener(), PIPELINE, RETRANSMIT_MILLIS, lease.epoch(), (int) (STALL_MILLIS / RETRANSMIT_MILLIS));
    this.replacer = java.util.concurrent.Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, "salus-rrs-replace-" + geometry.volume());
      t.setDaemon(true);
      return t;
    });
    this.timer = new ScheduledThreadPoolExecutor(1, r -> {
      Thread t = new Thread(r, "salus-volume-" + geometry.volume());
      t.setDaemon(true);
      return t;
    });
    // resubmits queued writes even when no completion arrives (e.g. a GET that blocked them was answered)
    timer.scheduleWithFixedDelay(() -> runner.call(c -> {
      drain(c);
      return null;
    }), 2, 2, TimeUnit.MILLISECONDS);
  }

  /**
   * Opens a Salus volume: reads its geometry from the three replica tables, takes the writer lease, and starts
   * the client. The caller keeps {@code connection}.
   *
   * @throws IOException naming the problem (no such volume, tables that disagree, lease held, no keys)
   */
  public static SalusVolume open(Connection connection, String name) throws IOException {
    VolumeGeometry g;
    try (Admin admin = connection.getAdmin()) {
      g = SalusTableLayout.read(admin, name);
    }
    awaitPlacement(connection, g, PLACEMENT_WAIT_MILLIS);
    EndpointKeyring keys;
    try {
      keys = EndpointKeyring.forClient(connection.getConfiguration(), new VolumeAddressing(g));
    } catch (IllegalArgumentException e) {
      throw new IOException("cannot open Salus volume '" + name + "': " + e.getMessage(), e);
    }
    VolumeLease lease = VolumeLease.acquire(connection.getConfiguration(), name);
    AsyncConnection async = null;
    try {
      async = ConnectionFactory.createAsyncConnection(connection.getConfiguration()).get(60, TimeUnit.SECONDS);
      SalusVolume v = new SalusVolume(g, lease, async, keys);
      try {
        // recovery at mount (identifyLCP, issue 14): recorded in the volume's ZooKeeper coordination, the one the
        // replica endpoints read (salus.zk.root, default /salus; the lease's session)
        io.salus.core.protocol.recovery.Coordination coord = new io.salus.core.zk.CuratorCoordination(
            lease.zookeeper(), io.salus.core.zk.CuratorCoordination.volumePath(
                connection.getConfiguration().get(ZK_ROOT_KEY, DEFAULT_ZK_ROOT), name));
        int budget = mountRecoverySendsForTest;
        long silentMs = connection.getConfiguration().getLong(REPLACE_SILENT_AFTER_KEY, DEFAULT_REPLACE_SILENT_AFTER_MS);
        if (silentMs < 0) {
          throw new IOException(REPLACE_SILENT_AFTER_KEY + " = " + silentMs + " is not valid: use 0 (never replace)"
              + " or a number of milliseconds (default " + DEFAULT_REPLACE_SILENT_AFTER_MS + ")");
        }
        v.replaceSilentAfterMs = silentMs;
        int silentRetransmissions = silentMs == 0 ? 0 : (int) Math.max(1, silentMs / RETRANSMIT_MILLIS);
        v.runner.call(c -> {
          c.suspectSilentAfter(silentRetransmissions);
          c.hostsBy(v::cachedServerOf);
          c.recoverWith(coord);
          if (budget >= 0) {
            c.limitRecoverySendsForTest(budget);
          }
          return null;
        }).get(60, TimeUnit.SECONDS);
        // First the mount: its signed query fences the previous writer by batch id (nothing new is logged from it)
        // while the entries it already logged are still forwarded and decided, so the regions settle and the
        // mount reads one state. Only then the durable epoch fence: it refuses every sub-batch and BatchInfo of
        // the old epoch, including those still needed to decide the old writer's last logged batches, so fencing
        // by epoch first would leave them undecided and the mount waiting (SalusRemountTest's killed writer).
        long wait = mountWaitMillisForTest;
        v.mount(wait >= 0 ? wait : MOUNT_WAIT_MILLIS);
        v.fenceReplicas(FENCE_WAIT_MILLIS); // storage refuses the previous writer's epoch from here on
      } catch (IOException | RuntimeException e) {
        v.close(); // releases the lease and the connection
        throw e;
      }
      return v;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      closeQuietly(async);
      lease.close();
      throw new IOException("interrupted while opening Salus volume '" + name + "'", e);
    } catch (VolumeException e) {
      throw e; // the mount stopped (the volume is closed): the message names the region
    } catch (ExecutionException | TimeoutException | RuntimeException e) {
      closeQuietly(async);
      lease.close();
      throw new IOException("cannot open Salus volume '" + name + "': " + e, e);
    }
  }

  /**
   * The client mount protocol (§3.3.3) against the region servers: asks every replica of every region for its
   * signed state, waits until each region's three replicas report the same settled state, rebuilds the volume tree
   * from the leaf hashes and checks it against the newest root record (the volume root of the last committed PUT),
   * then continues at the next sequence number and a fresh range of batch ids ({@link ReplicaMount}).
   *
   * @throws VolumeException.RootMismatch naming the region whose state does not check (replicas that contradict
   *                                      each other, leaves that do not hash to the signed root, a root that does
   *                                      not rebuild the newest record): nothing is mounted
   * @throws IOException                  when the replicas do not answer or a region does not settle in time
   */
  private void mount(long waitMillis) throws IOException {
    long nonce = new java.security.SecureRandom().nextLong();
    long end = System.currentTimeMillis() + waitMillis;
    try {
      runner.call(c -> {
        c.beginRemount(nonce);
        return null;
      }).get(60, TimeUnit.SECONDS);
      String last = "no answer yet";
      while (true) {
        ReplicaMount.Outcome o = runner.call(VolumeClient::remountOutcome).get(60, TimeUnit.SECONDS);
        if (o instanceof ReplicaMount.Outcome.Mounted m) {
          mountLcp = runner.call(VolumeClient::lastMountLcp).get(60, TimeUnit.SECONDS);
          mountAborts = runner.call(VolumeClient::lastMountAborts).get(60, TimeUnit.SECONDS);
          LOG.info("Salus volume '{}' mounted from its replicas at seq {} (root {}), next batch id {}{}", name(),
              m.seq(), m.root(), m.nextBatchId(), mountAborts.isEmpty() && mountLcp == null ? ""
                  : "; recovery: LCP " + mountLcp + " in coordination, aborted the previous writer's batches "
                  + mountAborts);
          return;
        }
        if (o instanceof ReplicaMount.Outcome.Refused r) {
          throw new VolumeException.RootMismatch("Salus volume '" + name() + "' is not mounted: " + r.why());
        }
        last = ((ReplicaMount.Outcome.Waiting) o).why();
        if (System.currentTimeMillis() > end) {
          throw new IOException("Salus volume '" + name() + "' is not mounted after " + waitMillis / 1000 + " s: "
              + last);
        }
        Thread.sleep(20);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted while mounting Salus volume '" + name() + "'", e);
    } catch (ExecutionException | TimeoutException e) {
      throw new IOException("mounting Salus volume '" + name() + "' failed: " + e, e);
    }
  }

  /**
   * Opens a Salus volume of the catalog ({@code salus volume create --kind salus}): as {@link #open} (which runs
   * the mount protocol against the replicas, so a volume can be mounted again after a clean close or after its
   * previous writer died).
   */
  public static SalusVolume openFromCatalog(Connection connection, String name) throws IOException {
    io.salus.blockdriver.volume.VolumeCatalog catalog = new io.salus.blockdriver.volume.VolumeCatalog(connection);
    io.salus.blockdriver.volume.VolumeInfo info = catalog.require(name);
    if (!io.salus.blockdriver.volume.VolumeCatalog.KIND_SALUS.equals(info.kind())) {
      throw new IllegalArgumentException("volume '" + name + "' is of kind " + info.kind() + ", not "
          + io.salus.blockdriver.volume.VolumeCatalog.KIND_SALUS);
    }
    return open(connection, name);
  }

  /**
   * Waits until region {@code i} of the three replica tables is open on three distinct region servers, for every
   * RRS {@code i} (the master's placement rule moves replicas apart after a create; with the endpoint's
   * in-memory storage a move after the first write would lose that replica's state).
   *
   * @throws IOException naming the RRS that is not placed and what to check
   */
  static void awaitPlacement(Connection connection, VolumeGeometry g, long millis) throws IOException {
    long end = System.currentTimeMillis() + millis;
    String problem;
    while ((problem = placementProblem(connection, g)) != null) {
      if (System.currentTimeMillis() > end) {
        throw new IOException("Salus volume '" + g.volume() + "' is not placed after " + millis / 1000 + " s: "
            + problem + ". A Salus volume needs at least three region servers and the master coprocessor "
            + "io.salus.core.hbase.SalusPlacementObserver (hbase.coprocessor.master.classes); see "
            + "docs/salus-on-hbase.md");
      }
      try {
        Thread.sleep(100);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IOException("interrupted while waiting for the placement of '" + g.volume() + "'", e);
      }
    }
  }

  /**
   * The first action of a writer: raise the writer epoch at every replica of every region to this lease's epoch,
   * and wait until all of them recorded it (durably, before they answer). Until then nothing is written.
   *
   * @throws IOException if a replica holds a newer epoch (another writer took the lease meanwhile) or not every
   *                     replica answered in time (naming them)
   */
  private void fenceReplicas(long millis) throws IOException {
    long end = System.currentTimeMillis() + millis;
    try {
      runner.call(c -> {
        c.fence();
        return null;
      }).get(60, TimeUnit.SECONDS);
      while (true) {
        String fenced = runner.call(VolumeClient::needsRemount).get(60, TimeUnit.SECONDS);
        if (fenced != null) {
          throw new IOException("cannot open Salus volume '" + name() + "' for writing: " + fenced);
        }
        java.util.Set<NodeId> pending = runner.call(VolumeClient::fenceOutstanding).get(60, TimeUnit.SECONDS);
        if (pending.isEmpty()) {
          LOG.info("Salus volume '{}': writer epoch {} fenced at every replica", name(), lease.epoch());
          return;
        }
        if (System.currentTimeMillis() > end) {
          throw new IOException("cannot open Salus volume '" + name() + "': " + pending.size() + " replica(s) did"
              + " not confirm the writer epoch " + lease.epoch() + " within " + millis / 1000 + " s: " + pending
              + " (is every replica region open with its endpoint running? see the region servers' logs)");
        }
        Thread.sleep(20);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted while fencing the replicas of '" + name() + "'", e);
    } catch (ExecutionException | TimeoutException e) {
      throw new IOException("cannot fence the replicas of Salus volume '" + name() + "': " + e, e);
    }
  }

  /** Test seam (package-private): behave as a writer that has not noticed that its lease is gone. */
  void ignoreLeaseLossForTest() {
    ignoreLeaseLoss = true;
  }

  private static String placementProblem(Connection connection, VolumeGeometry g) throws IOException {
    List<Map<Integer, org.apache.hadoop.hbase.ServerName>> where = new ArrayList<>();
    for (int k = 0; k < SalusTableLayout.REPLICAS; k++) {
      Map<Integer, org.apache.hadoop.hbase.ServerName> m = new HashMap<>();
      try (org.apache.hadoop.hbase.client.RegionLocator l =
          connection.getRegionLocator(SalusTableLayout.tableName(g.volume(), k))) {
        for (org.apache.hadoop.hbase.HRegionLocation loc : l.getAllRegionLocations()) {
          byte[] start = loc.getRegion().getStartKey();
          long first = start.length == 0 ? 0 : org.apache.hadoop.hbase.util.Bytes.toLong(start);
          if (loc.getServerName() != null) {
            m.put((int) (first / g.blocksPerRegion()), loc.getServerName());
          }
        }
      }
      where.add(m);
    }
    for (int r = 0; r < g.numRegions(); r++) {
      java.util.Set<org.apache.hadoop.hbase.ServerName> servers = new java.util.HashSet<>();
      for (int k = 0; k < SalusTableLayout.REPLICAS; k++) {
        org.apache.hadoop.hbase.ServerName s = where.get(k).get(r);
        if (s == null) {
          return "region " + r + " of replica table " + k + " is not open";
        }
        servers.add(s);
      }
      if (servers.size() != SalusTableLayout.REPLICAS) {
        return "the replicas of RRS " + r + " share a region server (" + servers + ")";
      }
    }
    return null;
  }

  private static void closeQuietly(AsyncConnection c) {
    if (c != null) {
      try {
        c.close();
      } catch (IOException | RuntimeException e) {
        LOG.debug("closing the async connection", e);
      }
    }
  }

  public VolumeGeometry geometry() {
    return geometry;
  }

  public VolumeLease lease() {
    return lease;
  }

  /** GETs retried at another replica, per replica that failed to give a verified answer. */
  public Map<NodeId, Long> getRetriesByReplica() {
    return runner.getRetriesByReplica();
  }

  /**
   * One line for an operator or a failing test: why the volume refuses work (if it does), the lease, and the
   * client's counters (what a CI log must show when an export answers EIO).
   */
  public String diagnostics() {
    VolumeException why = unusable();
    return "Salus volume '" + name() + "': " + (why == null ? "usable" : "refusing work: " + why.getMessage())
        + "; lease epoch " + lease.epoch() + (lease.isHeld() ? " held" : lease.isLost() ? " lost" : " suspended")
        + "; queued write parts " + waiting.size() + ", batches in flight " + puts.size() + ", gets in flight "
        + gets.size() + "; GET retries " + getRetriesByReplica()
        + (lastReplacement == null ? "" : "; last RRS replacement: " + lastReplacement) + "; counters " + counters();
  }

  /**
   * The client's link counters (tests, metrics), plus group commit's: {@code batches} submitted, {@code batchedWrites}
   * (queued writes, or 64-block parts of larger ones, that went into them), {@code batchedBlocks} (distinct blocks
   * sent), the RRS replacements asked and done, and {@code batchesOnLeaderCommit} (batches acknowledged on their
   * leader region's COMMIT, asked for on a retransmission, because a region's PUT_SUCCESS did not form).
   */
  public Map<String, Long> counters() {
    Map<String, Long> m = new java.util.TreeMap<>(runner.counters());
    m.put("batches", batchesSubmitted);
    m.put("batchedWrites", writesSubmitted);
    m.put("batchedBlocks", blocksSubmitted);
    m.put("replacementsAsked", replacementsAsked.get());
    m.put("replacementsDone", replacementsDone.get());
    m.put("batchesOnLeaderCommit", batchesOnLeaderCommit.get());
    return m;
  }

  @Override
  public String name() {
    return geometry.volume();
  }

  @Override
  public int blockSize() {
    return geometry.blockSize();
  }

  @Override
  public long sizeInBlocks() {
    return geometry.numBlocks();
  }

  /**
   * Asks the master to replace {@code suspects} (replica nodes of this volume), grouped by RRS, on the replacement
   * thread (never on the client's loop): for each, the server hbase:meta says hosts it now is named as the suspect
   * server ({@code io.salus.core.hbase.RrsReplacement}). A replica replaced (or asked for) within the silence period is
   * skipped unless {@code force}: the other stuck batches report the same silence, and a new incarnation needs time to
   * recover and answer.
   */
  private void requestReplacement(java.util.Set<NodeId> suspects, String reason, boolean force) {
    if (closed || (replaceSilentAfterMs == 0 && !force)) {
      return;
    }
    long now = System.currentTimeMillis();
    Map<Integer, java.util.Set<Integer>> byRegion = new java.util.TreeMap<>();
    for (NodeId id : suspects) {
      VolumeAddressing.Node n;
      try {
        n = addressing.parse(id);
      } catch (IllegalArgumentException e) {
        continue; // not a replica of this volume (cannot be: the client names its own replicas)
      }
      Long last = replacedAt.get(id);
      if (n.kind() != 'r' || (!force && last != null && now - last < Math.max(replaceSilentAfterMs,
          RETRANSMIT_MILLIS))) {
        continue;
      }
      replacedAt.put(id, now);
      byRegion.computeIfAbsent(n.region(), k -> new java.util.TreeSet<>()).add(n.k());
    }
    for (Map.Entry<Integer, java.util.Set<Integer>> e : byRegion.entrySet()) {
      int region = e.getKey();
      replacementsAsked.incrementAndGet();
      replacer.execute(() -> {
        Map<Integer, String> named = new java.util.TreeMap<>();
        String outcome;
        try {
          for (int k : e.getValue()) {
            VolumeAddressing.Address a = addressing.address(region, k);
            org.apache.hadoop.hbase.HRegionLocation loc = async.getRegionLocator(a.table())
                .getRegionLocation(a.row(), true).get(60, TimeUnit.SECONDS);
            if (loc != null && loc.getServerName() != null) {
              named.put(k, loc.getServerName().toString());
            }
          }
          LOG.warn("Salus volume '{}': asking the master to replace replicas {} of region {} (servers {}): {}",
              name(), e.getValue(), region, named.values(), reason);
          List<String> done = io.salus.core.hbase.RrsReplacement.request(async, name(), region, named, reason)
              .get(10, TimeUnit.MINUTES);
          replacementsDone.incrementAndGet();
          outcome = "region " + region + ": " + String.join("; ", done);
          LOG.warn("Salus volume '{}': RRS replacement done, {}", name(), outcome);
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
          return;
        } catch (ExecutionException | TimeoutException | RuntimeException ex) {
          Throwable c = ex instanceof ExecutionException && ex.getCause() != null ? ex.getCause() : ex;
          String m = String.valueOf(c.getMessage());
          int cut = m.indexOf('\n');
          m = cut >= 0 ? m.substring(0, cut) : m; // the first line: HBase appends the retries' stack traces
          outcome = "region " + region + " replicas " + e.getValue() + ": " + m;
          LOG.error("Salus volume '{}': RRS replacement failed (writes stay queued and retransmitted): {}", name(),
              outcome);
        }
        lastReplacement = outcome;
        for (int k : e.getValue()) {
          replacedAt.put(addressing.replica(region, k), System.currentTimeMillis()); // the new incarnation's time
        }
      });
    }
  }

  /**
   * The region server hbase:meta last named for replica {@code id}, from the connection's location cache (never
   * blocks the client's loop: null when not cached yet, or not a replica of this volume). The mount sends its query to
   * every replica first, so their locations are cached by the leaf fetch that asks this.
   */
  private Object cachedServerOf(NodeId id) {
    try {
      VolumeAddressing.Node n = addressing.parse(id);
      if (n.kind() != 'r') {
        return null;
      }
      VolumeAddressing.Address a = addressing.address(n.region(), n.k());
      org.apache.hadoop.hbase.HRegionLocation loc = async.getRegionLocator(a.table()).getRegionLocation(a.row())
          .getNow(null);
      return loc == null ? null : loc.getServerName();
    } catch (RuntimeException e) {
      return null; // not a replica id of this volume, or the lookup failed (CompletionException): the id stands
    }
  }

  /** The outcome of the last RRS replacement this volume asked for (null: none yet). */
  public String lastReplacement() {
    return lastReplacement;
  }

  /** Why no operation may run now (closed, failed, fenced), else null. */
  private VolumeException unusable() {
    if (closed) {
      return new VolumeException.Closed("Salus volume '" + name() + "' is closed");
    }
    if (failed != null) {
      return new VolumeException("Salus volume '" + name() + "' needs recovery (" + failed
          + "); writes are refused until it is remounted after recovery");
    }
    return ignoreLeaseLoss ? null : lease.fencedError();
  }

  private <T> CompletableFuture<T> guarded(CompletableFuture<T> f) {
    // fenced while in flight: never acknowledge (the lease may have been taken by another writer)
    return f.thenApply(r -> {
      VolumeException e = unusable();
      if (e != null) {
        throw e;
      }
      return r;
    });
  }

  /**
   * GETs one read has in flight at most: a longer read is sent in windows of this many blocks, one after the other.
   * All of an NBD read's GETs (up to 8192, 32 MiB) used to go out at once to the same replica, past what the
   * client's link queues per destination ({@code ReplicaLink.MAX_QUEUED}, 4096): the rest were dropped and retried
   * only after {@link #RETRANSMIT_MILLIS} at another replica (review rvw21-3, SalusLargeReadTest).
   */
  public static final int READ_WINDOW_BLOCKS = 1024;

  @Override
  public CompletableFuture<byte[]> read(long firstBlock, int count) {
    VolumeException e = Volume.checkRange(this, firstBlock, count);
    if (e == null) {
      e = unusable();
    }
    if (e != null) {
      return CompletableFuture.failedFuture(e);
    }
    return guarded(readWindow(firstBlock, count, 0, new byte[count * blockSize()]));
  }

  /** Reads blocks {@code done ..} of the read (at most {@link #READ_WINDOW_BLOCKS}) into {@code out}, then the rest. */
  private CompletableFuture<byte[]> readWindow(long firstBlock, int count, int done, byte[] out) {
    int n = Math.min(READ_WINDOW_BLOCKS, count - done);
    List<CompletableFuture<byte[]>> parts = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      parts.add(new CompletableFuture<>());
    }
    long from = firstBlock + done;
    runner.call(c -> {
      for (int i = 0; i < n; i++) {
        gets.put(c.get(from + i), parts.get(i));
      }
      return null;
    }).exceptionally(t -> {
      parts.forEach(p -> p.completeExceptionally(wrap(t)));
      return null;
    });
    int bs = blockSize();
    return CompletableFuture.allOf(parts.toArray(CompletableFuture[]::new)).thenCompose(v -> {
      for (int i = 0; i < n; i++) {
        System.arraycopy(parts.get(i).join(), 0, out, (done + i) * bs, bs);
      }
      return done + n >= count ? CompletableFuture.completedFuture(out) : readWindow(firstBlock, count, done + n, out);
    });
  }

  @Override
  public CompletableFuture<Void> write(long firstBlock, byte[] data, boolean fua) {
    int bs = blockSize();
    if (data.length % bs != 0) {
      return CompletableFuture.failedFuture(new IllegalArgumentException(
          "write of " + data.length + " bytes to Salus volume '" + name() + "' is not a multiple of the block size "
              + bs + " (sub-block writes are read-modify-written by the NBD layer)"));
    }
    int count = data.length / bs;
    VolumeException e = Volume.checkRange(this, firstBlock, count);
    if (e == null) {
      e = unusable();
    }
    if (e != null) {
      return CompletableFuture.failedFuture(e);
    }
    List<Pending> batches = new ArrayList<>();
    for (int i = 0; i < count; i += MAX_BLOCKS_PER_BATCH) {
      List<BlockWrite> ws = new ArrayList<>();
      for (int j = i; j < Math.min(count, i + MAX_BLOCKS_PER_BATCH); j++) {
        byte[] b = new byte[bs];
        System.arraycopy(data, j * bs, b, 0, bs);
        ws.add(new BlockWrite(firstBlock + j, b));
      }
      batches.add(new Pending(ws, new CompletableFuture<>()));
    }
    runner.call(c -> {
      waiting.addAll(batches);
      drain(c);
      return null;
    }).exceptionally(t -> {
      batches.forEach(p -> p.done.completeExceptionally(wrap(t)));
      return null;
    });
    CompletableFuture<Void> all = CompletableFuture.allOf(batches.stream().map(Pending::done)
        .toArray(CompletableFuture[]::new));
    // FUA: durable (hsynced on the three replicas of each region) before it is acknowledged: a FLUSH after it
    return guarded(fua ? all.thenCompose(v -> flush()) : all);
  }

  /**
   * On the loop: group commit. Takes the queued writes from the head, in issue order, into one batch of at most
   * {@link #MAX_BLOCKS_PER_BATCH} distinct blocks (two queued writes to one block: the later one's data is sent,
   * both are acknowledged with the batch), and submits it. A batch that is not full is submitted only while fewer
   * than {@link #COALESCE_DEPTH} batches are in flight: otherwise the writes wait for the next completion (or the
   * 2 ms timer) and more writes join them. Pipelined commit decides batch n only after batch n-1's COMMIT
   * certificate, so the pipeline commits about one batch per hsync and message hop whatever its size; single-block
   * batches capped a QD32 stream at that rate (docs/salus-on-hbase.md, "Group commit in SalusVolume"). A full batch
   * goes at once while the pipeline has room ({@link #PIPELINE}). Queued writes are never reordered: a write joins
   * only the batch of the writes queued before it or a later one, and batches commit in submit order.
   */
  private Void drain(VolumeClient c) {
    while (!waiting.isEmpty()) {
      if (failed != null || closed) {
        VolumeException e = unusable();
        while (!waiting.isEmpty()) {
          waiting.poll().done.completeExceptionally(e);
        }
        return null;
      }
      int inFlight = puts.size();
      if (inFlight >= PIPELINE) {
        return null;
      }
      java.util.LinkedHashMap<Long, byte[]> blocks = new java.util.LinkedHashMap<>();
      List<Pending> taken = new ArrayList<>();
      boolean full = false;
      for (Pending p : waiting) {
        int added = 0;
        boolean blocked = false;
        for (BlockWrite w : p.writes) {
          if (!blocks.containsKey(w.block())) {
            added++;
          }
          blocked |= c.blockedByGet(w.block());
        }
        if (blocked) {
          break; // a GET in flight on one of its blocks: it (and everything queued after it) waits for the GET
        }
        if (!taken.isEmpty() && blocks.size() + added > maxBlocksPerBatch) {
          full = true;
          break;
        }
        for (BlockWrite w : p.writes) {
          blocks.put(w.block(), w.data()); // the later write to a block wins (its position: the first one's)
        }
        taken.add(p);
        if (blocks.size() >= maxBlocksPerBatch) {
          full = true;
          break;
        }
      }
      if (taken.isEmpty()) {
        return null; // the head waits for a GET: retried on the next drain
      }
      if (!full && inFlight >= coalesceDepth) {
        return null; // let more writes join while the pipeline is busy: submitted at the next completion
      }
      List<BlockWrite> ws = new ArrayList<>(blocks.size());
      blocks.forEach((b, d) -> ws.add(new BlockWrite(b, d)));
      long id;
      try {
        id = c.submit(ws);
      } catch (RuntimeException ex) {
        for (Pending p : taken) {
          waiting.poll().done.completeExceptionally(wrap(ex));
        }
        continue;
      }
      if (id < 0) {
        return null; // pipeline full: retried on the next drain
      }
      List<CompletableFuture<Void>> dones = new ArrayList<>(taken.size());
      for (int i = 0; i < taken.size(); i++) {
        dones.add(waiting.poll().done);
      }
      puts.put(id, dones);
      batchesSubmitted++;
      writesSubmitted += taken.size();
      blocksSubmitted += ws.size();
    }
    return null;
  }

  private VolumeException wrap(Throwable t) {
    Throwable c = t instanceof java.util.concurrent.CompletionException && t.getCause() != null ? t.getCause() : t;
    return c instanceof VolumeException v ? v
        : new VolumeException("Salus I/O on volume '" + name() + "' failed: " + c, c);
  }

  /**
   * On the loop: every batch and read in flight fails with {@code e}. Reads fail with the writes: a GET waits at the
   * replicas for the seq of the last write to its block, and a write that was refused or gave up never gets there, so
   * the read never completed (review rv15, SalusReviewRv15Test). A read that would still complete is refused by
   * {@link #guarded} anyway.
   */
  private void failInFlight(VolumeException e) {
    puts.values().forEach(fs -> fs.forEach(f -> f.completeExceptionally(e)));
    puts.clear();
    gets.values().forEach(f -> f.completeExceptionally(e));
    gets.clear();
    flushes.values().forEach(f -> f.completeExceptionally(e));
    flushes.clear();
  }

  private final class Listener implements ClientListener {
    @Override
    public void putSucceeded(long batchId, long firstSeq, long lastSeq, List<Certificate> putSuccess) {
      if (putSuccess.stream().anyMatch(c -> c.type() == io.salus.core.cert.CertType.COMMIT)) {
        batchesOnLeaderCommit.incrementAndGet(); // a region's PUT_SUCCESS never came (e.g. a replaced replica)
      }
      List<CompletableFuture<Void>> fs = puts.remove(batchId);
      if (fs != null) {
        fs.forEach(f -> f.complete(null));
      }
      runner.call(c -> drain(c));
    }

    @Override
    public void putFailed(long batchId) {
      List<CompletableFuture<Void>> fs = puts.remove(batchId);
      if (fs != null) {
        VolumeException e = new VolumeException("batch " + batchId + " of Salus volume '" + name()
            + "' failed (PUT_FAILED): its writes are not applied");
        fs.forEach(f -> f.completeExceptionally(e));
      }
    }

    @Override
    public void fenced(String reason) {
      failed = reason;
      VolumeException e = new VolumeException.Closed("Salus volume '" + name() + "': the region servers refuse"
          + " this writer's writes: " + reason + "; nothing of the refused batches is applied. Reopen the volume"
          + " once the other writer is gone");
      failInFlight(e);
      runner.call(c -> drain(c));
    }

    @Override
    public void recoveryNeeded(String reason) {
      LOG.error("Salus volume '{}' needs recovery: {}", name(), reason);
      failed = reason;
      VolumeException e = unusable();
      failInFlight(e);
      runner.call(c -> drain(c));
    }

    @Override
    public void recoveryNeeded(String reason, java.util.Set<NodeId> suspects) {
      recoveryNeeded(reason);
      if (!suspects.isEmpty()) {
        requestReplacement(suspects, reason, true);
      }
    }

    @Override
    public void replicasSilent(java.util.Set<NodeId> silent, String reason) {
      requestReplacement(silent, reason, false);
    }

    @Override
    public void flushed(long flushId) {
      CompletableFuture<Void> f = flushes.remove(flushId);
      if (f != null) {
        f.complete(null);
      }
    }

    @Override
    public void getSucceeded(long requestId, long block, byte[] data) {
      CompletableFuture<byte[]> f = gets.remove(requestId);
      if (f != null) {
        f.complete(data);
      }
    }
  }

  /**
   * Every write acknowledged before this call is committed on the three replicas of each region it touched (PUT_SUCCESS)
   * and hflushed there; the FLUSH makes it hsynced on all of them ({@link VolumeClient#flush}): it completes once every
   * replica of every region written since the previous FLUSH reported its log and commit marks synced.
   */
  @Override
  public CompletableFuture<Void> flush() {
    VolumeException e = unusable();
    if (e != null) {
      return CompletableFuture.failedFuture(e);
    }
    CompletableFuture<Void> f = new CompletableFuture<>();
    runner.call(c -> {
      long id = c.flush();
      if (c.flushPending(id)) {
        flushes.put(id, f);
      } else {
        f.complete(null); // nothing written since the last FLUSH (that one done too)
      }
      return null;
    }).exceptionally(t -> {
      f.completeExceptionally(wrap(t));
      return null;
    });
    return guarded(f);
  }

  @Override
  public CompletableFuture<Void> trim(long firstBlock, long count) {
    return writeZeroes(firstBlock, count, false);
  }

  /**
   * Zeroes are written as zero blocks (the protocol has no TRIM; they do take storage), at most
   * {@link #ZERO_WINDOW_BATCHES} batches at a time: an NBD TRIM or WRITE_ZEROES may cover 4 GiB,
   * and building every zero block of the range up front took twice the range in heap (review
   * rv12, SalusVolumeTest#zeroingARangeDoesNotAllocateTheRangeUpFront; mkfs discards the whole device first).
   */
  @Override
  public CompletableFuture<Void> writeZeroes(long firstBlock, long count, boolean fua) {
    VolumeException e = Volume.checkRange(this, firstBlock, count);
    if (e != null) {
      return CompletableFuture.failedFuture(e);
    }
    if (count == 0) {
      return CompletableFuture.completedFuture(null);
    }
    // read only by write(), which copies it per block: one array serves every batch
    byte[] zeros = new byte[(int) Math.min(count, MAX_BLOCKS_PER_BATCH) * blockSize()];
    return zeroWindow(firstBlock, firstBlock + count, zeros, fua);
  }

  /** Batches of zero blocks in flight per {@link #writeZeroes} call. */
  public static final int ZERO_WINDOW_BATCHES = 8;

  private CompletableFuture<Void> zeroWindow(long from, long end, byte[] zeros, boolean fua) {
    int bs = blockSize();
    long stop = Math.min(end, from + (long) ZERO_WINDOW_BATCHES * MAX_BLOCKS_PER_BATCH);
    List<CompletableFuture<Void>> all = new ArrayList<>();
    for (long b = from; b < stop; b += MAX_BLOCKS_PER_BATCH) {
      int n = (int) Math.min(MAX_BLOCKS_PER_BATCH, stop - b);
      all.add(write(b, n * bs == zeros.length ? zeros : java.util.Arrays.copyOf(zeros, n * bs), fua));
    }
    CompletableFuture<Void> window = CompletableFuture.allOf(all.toArray(CompletableFuture[]::new));
    return stop >= end ? window : window.thenCompose(v -> zeroWindow(stop, end, zeros, fua));
  }

  /** Work this volume holds now: write parts queued for a batch plus batches in flight (tests, diagnostics). */
  public int batchesHeld() {
    try {
      return runner.call(c -> waiting.size() + puts.size()).get(60, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return -1;
    } catch (ExecutionException | TimeoutException e) {
      return -1;
    }
  }

  /**
   * <b>Tests only</b>: the writer dies (a process killed right after its last messages left it): its loop stops at
   * once, so nothing more is submitted, retransmitted or polled and no outstanding write is completed or failed; the
   * lease is released (what the ZooKeeper session's expiry does after a real crash). The messages it had already
   * handed to its link are sent (this waits until the link's queue is empty); the idle connection stays open until
   * {@link #releaseCrashedForTest}. A writer that dies with a batch's sub-batches only partly sent is the case the
   * mount cannot resolve yet (see docs/protocol.md, "Mount by a new writer").
   */
  void crashForTest() throws InterruptedException {
    closed = true;
    timer.shutdownNow();
    replacer.shutdownNow();
    runner.stopClientForTest();
    lease.close();
    while (runner.queuedToSend() > 0) {
      Thread.sleep(5);
    }
  }

  /**
   * What this open's mount recovered (identifyLCP, issue 14): the LCP it recorded in (or found in) the volume's
   * coordination, null when every region was settled and no recovery of this fence ran.
   */
  public io.salus.core.protocol.recovery.Coordination.Lcp mountLcp() {
    return mountLcp;
  }

  /** The previous writer's batches this open's mount asked the leader replicas to abort. */
  public java.util.SortedSet<Long> mountAborts() {
    return mountAborts;
  }

  /**
   * <b>Tests only</b>: the writer dies right after sending one batch of {@code writes} to only some of its regions:
   * on the client's loop, the sub-batches to regions not in {@code reached} are not sent (the BatchInfo goes to the
   * leader region's replicas), the batch is submitted, then nothing more is sent and the writer dies as in
   * {@link #crashForTest}. Returns the batch id. No write of this volume's queue is part of that batch.
   */
  long crashWithPartialBatchForTest(List<BlockWrite> writes, java.util.Set<Integer> reached)
      throws InterruptedException, ExecutionException, TimeoutException {
    long id = runner.call(c -> {
      c.dropSendsForTest((to, m) -> m instanceof io.salus.core.protocol.message.Message.SubBatchMsg s
          && !reached.contains(s.subBatch().region()));
      long b = c.submit(writes);
      c.dropSendsForTest((to, m) -> true); // dead: not one message more
      return b;
    }).get(60, TimeUnit.SECONDS);
    crashForTest();
    return id;
  }

  /** <b>Tests only</b>: closes what {@link #crashForTest} left open. */
  void releaseCrashedForTest() {
    runner.close();
    closeQuietly(async);
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    timer.shutdownNow();
    replacer.shutdownNow();
    try {
      runner.call(c -> {
        VolumeException e = new VolumeException.Closed("Salus volume '" + name() + "' closed with the request in flight");
        failInFlight(e);
        waiting.forEach(p -> p.done.completeExceptionally(e));
        return null;
      }).get(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (ExecutionException | TimeoutException | RuntimeException e) {
      LOG.warn("closing Salus volume '{}': {}", name(), e.toString());
    }
    runner.close();
    closeQuietly(async);
    lease.close();
  }
}
