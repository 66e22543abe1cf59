package io.salus.core.hbase.storage;

import io.salus.core.crypto.NodeId;
import io.salus.core.hbase.endpoint.ReplicaStorageFactory;
import io.salus.core.protocol.ProtocolConfig;
import io.salus.core.protocol.recovery.Coordination;
import io.salus.core.protocol.replica.RegionStore;
import io.salus.core.protocol.replica.ReplicaDisk;
import io.salus.core.protocol.witness.CertificateStore;
import io.salus.core.protocol.witness.InMemoryCertificateStore;
import io.salus.core.zk.CuratorCoordination;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hbase.coprocessor.RegionCoprocessorEnvironment;
import org.apache.hadoop.hbase.util.CommonFSUtils;
import org.apache.hadoop.hbase.zookeeper.ZKConfig;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The real storage of a replica region (issue 13 item 1), the endpoint's default {@link ReplicaStorageFactory}:
 * <ul>
 * <li>the Salus log: an {@link HdfsReplicaDisk} under {@value #LOG_ROOT_KEY} (default {@value #DEFAULT_LOG_ROOT})
 * {@code /<table>/<encoded region>} on the cluster's HDFS, replication 1, favouring the DataNode colocated with the
 * region server ({@link SalusFavoredNodes#favoredDataNode}); its own HDFS client, closed with the region;</li>
 * <li>the region state: {@link HRegionStore} over the region's own cells (SKIP_WAL puts);</li>
 * <li>checkpoint certificates: {@link CuratorCoordination} over the cluster's ZooKeeper ({@code hbase.zookeeper.quorum}),
 * under {@value #ZK_ROOT_KEY} (default {@value #DEFAULT_ZK_ROOT}), so a reopened region verifies its base;</li>
 * <li>certificate stores of hosted metadata holders: still in memory (the DataNode witness plugins hold the durable
 * ones; an HDFS-backed store for the interim hosted holders is not built).</li>
 * </ul>
 */
public final class HdfsReplicaStorage implements ReplicaStorageFactory {
    private static final Logger LOG = LoggerFactory.getLogger(HdfsReplicaStorage.class);
    public static final String LOG_ROOT_KEY = "salus.log.root";
    public static final String DEFAULT_LOG_ROOT = "/salus/logs";
    public static final String ZK_ROOT_KEY = "salus.zk.root";
    public static final String DEFAULT_ZK_ROOT = "/salus";
    /**
     * First wait (ms) of the Salus log's HDFS client before it asks the NameNode again whether a closed file's last
     * block is complete (HDFS: {@code dfs.client.block.write.locateFollowingBlock.initial.delay.ms}, default 400,
     * doubling). The replica closes a checkpoint file every few log entries on its event loop, and a close usually
     * races the DataNode's block report, so HDFS's 400 ms stalled every write behind it (ci15's thread dumps).
     */
    public static final String CLOSE_RETRY_DELAY_KEY = "salus.log.close.retry.initial.ms";
    public static final int DEFAULT_CLOSE_RETRY_DELAY_MS = 25;
    /** Retries of that check (HDFS: {@code dfs.client.block.write.locateFollowingBlock.retries}, default 5). */
    public static final String CLOSE_RETRIES_KEY = "salus.log.close.retries";
    public static final int DEFAULT_CLOSE_RETRIES = 10;

    private DistributedFileSystem fs;
    private HdfsReplicaDisk disk;
    private io.salus.core.zk.SharedCuratorClients.Lease zk;

    @Override
    public synchronized ReplicaDisk disk(RegionCoprocessorEnvironment env, NodeId replica) {
        Configuration conf = env.getConfiguration();
        try {
            Path root = CommonFSUtils.getRootDir(conf);
            // the Salus log's own client (newInstance): its close retry schedule is Salus's, HBase's client keeps its own
            Configuration logConf = new Configuration(conf);
            logConf.setInt("dfs.client.block.write.locateFollowingBlock.initial.delay.ms",
                    conf.getInt(CLOSE_RETRY_DELAY_KEY, DEFAULT_CLOSE_RETRY_DELAY_MS));
            logConf.setInt("dfs.client.block.write.locateFollowingBlock.retries",
                    conf.getInt(CLOSE_RETRIES_KEY, DEFAULT_CLOSE_RETRIES));
            FileSystem f = FileSystem.newInstance(root.toUri(), logConf);
            if (!(f instanceof DistributedFileSystem d)) {
                f.close();
                throw new IllegalStateException("hbase.rootdir " + root + " is on " + f.getClass().getSimpleName()
                        + ", not HDFS: the Salus log needs HDFS (hflush/hsync, favored nodes)");
            }
            fs = d;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot open HDFS for the Salus log of " + replica, e);
        }
        InetSocketAddress dn = SalusFavoredNodes.favoredDataNode(conf, env.getServerName().getHostname());
        disk = HdfsReplicaDisk.forRegion(fs, new Path(conf.get(LOG_ROOT_KEY, DEFAULT_LOG_ROOT)),
                env.getRegionInfo().getTable().getNameAsString(), env.getRegionInfo().getEncodedName(), dn);
        LOG.info("Salus log of {} at {} (favored DataNode {})", replica, disk.directory(), dn);
        // a DataNode's disk lost for good: the NameNode knows which of the log's blocks no live DataNode holds, so
        // the log is moved aside before anything reads it (each read of a lost block costs HDFS's read retries,
        // seconds, while the replica's RRS cannot commit); the replica then catches up from a peer
        String lost = lostFile(fs, disk.directory());
        if (lost != null) {
            Path dest = quarantineDest(env);
            boolean moved = disk.quarantine(dest);
            LOG.warn("Salus log of region {} at {} has a block lost for good ({}): {} before it is read (not"
                    + " deleted); the replica catches up from a peer", env.getRegionInfo().getEncodedName(),
                    disk.directory(), lost, moved ? "moved aside to " + dest : "nothing to move");
        }
        return disk;
    }

    @Override
    public CertificateStore certificateStore(RegionCoprocessorEnvironment env, NodeId holder) {
        return new InMemoryCertificateStore();
    }

    /**
     * The region's cells ({@link HRegionStore}). A read of them that is proven damaged
     * ({@link io.salus.core.hbase.SalusStoreQuarantine#damaged}: a store file block that fails its checksum) asks the
     * master, once, to move the region ({@code Admin.move}, to another server): the reopen moves the damaged store
     * files aside ({@link io.salus.core.hbase.SalusStoreQuarantine}) and the replica restores its cells from its
     * certified state. Until then the replica answers no GET of what it cannot read and its applies over it fail.
     */
    @Override
    public RegionStore regionStore(RegionCoprocessorEnvironment env, ProtocolConfig cfg, int regionIndex) {
        HRegionStore store;
        try {
            store = HRegionStore.open(env.getRegion(), cfg, regionIndex);
        } catch (RuntimeException e) {
            // the open reads the region's newest cells: a store file damaged on disk fails it before the hook below
            // exists (the fault table's byte-flip row: the replica stayed "not running" and its RRS unmountable
            // once an open no longer read every store file whole)
            damagedRead(env, e);
            throw e;
        }
        store.onReadFailure(e -> damagedRead(env, e));
        return store;
    }

    /** A read of the region's cells failed: if the file is proven damaged, mark the region and ask for its move. */
    private void damagedRead(RegionCoprocessorEnvironment env, Throwable e) {
        if (!markIfDamaged(env, e)) {
            return;
        }
        askToMove(env, "a read of its cells failed on a damaged or lost store file ("
                + io.salus.core.hbase.SalusStoreQuarantine.oneLine(e) + "); its reopen moves the damaged files"
                + " aside and the replica restores its cells", false);
    }

    /**
     * A log append or commit mark failed while the region is open (e.g. the DataNode holding the log's only copy lost
     * its disk): the replica is stopped for good in this incarnation, so the region is moved (its reopen elsewhere is
     * the replica's recovery: the log's lost blocks are found at open, the log moved aside, and the replica catches up
     * from a peer).
     */
    @Override
    public void diskFailed(RegionCoprocessorEnvironment env, RuntimeException error) {
        markIfDamaged(env, error); // e.g. an apply that read a damaged store file block under the block it overwrote
        askToMove(env, "its Salus log or its store could not be written ("
                + io.salus.core.hbase.SalusStoreQuarantine.oneLine(error)
                + "); it logs nothing more here, its reopen recovers it", true);
    }

    /**
     * If {@code e} proves a file damaged, marks the region so that its reopen reads its store files whole and moves
     * damaged ones aside; returns whether it did prove damage.
     */
    private boolean markIfDamaged(RegionCoprocessorEnvironment env, Throwable e) {
        DistributedFileSystem f;
        synchronized (this) {
            f = fs;
        }
        if (f == null || !io.salus.core.hbase.SalusStoreQuarantine.damaged(f, e)) {
            return false;
        }
        markForCheck(env, f);
        return true;
    }

    private static void markForCheck(RegionCoprocessorEnvironment env, DistributedFileSystem f) {
        try {
            io.salus.core.hbase.SalusStoreQuarantine.markForCheck(f, env.getConfiguration(),
                    env.getRegionInfo().getTable(), env.getRegionInfo().getEncodedName());
        } catch (IOException | RuntimeException e) {
            LOG.warn("Salus region {}: cannot mark it for a store file check at its reopen ({}); the reopen finds"
                    + " the damage only if the NameNode knows it", env.getRegionInfo().getEncodedName(), e.toString());
        }
    }

    /** Whether a move of this region was asked and has not failed (one per region open). */
    private final java.util.concurrent.atomic.AtomicBoolean moveAsked = new java.util.concurrent.atomic.AtomicBoolean();
    /** Moves asked by this JVM's replica regions (tests and metrics). */
    private static final java.util.concurrent.atomic.AtomicLong MOVES_ASKED = new java.util.concurrent.atomic.AtomicLong();

    @Override
    public boolean reopenAsked() {
        return moveAsked.get();
    }

    /** Moves of replica regions this JVM asked the master for after a damaged read or a failed disk write. */
    public static long movesAsked() {
        return MOVES_ASKED.get();
    }

    /**
     * Asks the master, once per region open, to reopen the region: {@code inPlace}, closed and assigned again (HBase
     * assigns a closed region to its last server), else moved to another server ({@code Admin.move}); off the
     * caller's thread, asked again until the region was reopened ({@link RegionReopener}: a fresh connection each
     * attempt, a backoff from {@value #REOPEN_BACKOFF_DEFAULT_MS} ms doubling to {@value #REOPEN_MAX_BACKOFF_DEFAULT_MS}
     * ms, given up after {@link #REOPEN_GIVE_UP_KEY}). In place keeps the replica on its server (and its files on that
     * server's DataNode): a move lands on a server that holds another replica of the same RRS (three servers, three
     * replicas), and the placement observer then moves one of them again, two reopens of a replica for one failure.
     */
    private void askToMove(RegionCoprocessorEnvironment env, String why, boolean inPlace) {
        if (!moveAsked.compareAndSet(false, true)) {
            return;
        }
        String encoded = env.getRegionInfo().getEncodedName();
        LOG.warn("Salus region {}: {}; asking the master to {} it", encoded, why, inPlace ? "reopen" : "move");
        MOVES_ASKED.incrementAndGet();
        Configuration conf = env.getConfiguration();
        org.apache.hadoop.hbase.regionserver.Region mine = env.getRegion();
        RegionReopener reopener = new RegionReopener(encoded, inPlace, () -> new AdminMaster(env),
                mine::isClosed, // not this storage's close: a replica whose start failed closes its storage
                // while its region stays open, and the request must then move it, not assign an open region
                conf.getLong(REOPEN_BACKOFF_KEY, REOPEN_BACKOFF_DEFAULT_MS),
                conf.getLong(REOPEN_MAX_BACKOFF_KEY, REOPEN_MAX_BACKOFF_DEFAULT_MS),
                conf.getLong(REOPEN_GIVE_UP_KEY, REOPEN_GIVE_UP_DEFAULT_MS), System::currentTimeMillis, Thread::sleep);
        Thread t = new Thread(() -> {
            RegionReopener.Outcome o = reopener.run();
            REOPEN_OUTCOMES.computeIfAbsent(o, k -> new java.util.concurrent.atomic.AtomicLong()).incrementAndGet();
            if (o == RegionReopener.Outcome.GAVE_UP) {
                moveAsked.set(false); // the next failure of this incarnation asks again (review rv20)
            }
        }, "salus-reopen-" + encoded);
        t.setDaemon(true);
        t.start();
    }

    /** First wait (ms) between two attempts of a reopen request; doubled after each, up to the next key's value. */
    public static final String REOPEN_BACKOFF_KEY = "salus.reopen.backoff.ms";
    public static final long REOPEN_BACKOFF_DEFAULT_MS = 1_000;
    public static final String REOPEN_MAX_BACKOFF_KEY = "salus.reopen.max-backoff.ms";
    public static final long REOPEN_MAX_BACKOFF_DEFAULT_MS = 30_000;
    /** How long (ms) a reopen request is asked again before it is given up (logged as an error). */
    public static final String REOPEN_GIVE_UP_KEY = "salus.reopen.give-up.ms";
    public static final long REOPEN_GIVE_UP_DEFAULT_MS = 30 * 60_000L;

    private static final java.util.Map<RegionReopener.Outcome, java.util.concurrent.atomic.AtomicLong> REOPEN_OUTCOMES =
            new java.util.concurrent.ConcurrentHashMap<>();

    /** How this JVM's reopen requests ended so far (tests and metrics). */
    public static long reopenOutcomes(RegionReopener.Outcome o) {
        java.util.concurrent.atomic.AtomicLong n = REOPEN_OUTCOMES.get(o);
        return n == null ? 0 : n.get();
    }

    /** The master over a fresh connection, for one attempt of a reopen request (RegionReopener). */
    private static final class AdminMaster implements RegionReopener.Master {
        private final org.apache.hadoop.hbase.client.Connection conn;
        private final org.apache.hadoop.hbase.client.Admin admin;
        private final org.apache.hadoop.hbase.client.RegionInfo ri;
        private final org.apache.hadoop.hbase.regionserver.Region mine;
        private final org.apache.hadoop.hbase.ServerName myServer;
        private final RegionCoprocessorEnvironment env;

        /** The requesting incarnation: {@code env}'s region, on {@code env}'s server. */
        AdminMaster(RegionCoprocessorEnvironment env) throws IOException {
            // not env.getConnection(): the region server's own connection is closed once it aborts, and an old
            // incarnation's request then failed every attempt with "connection is closed"
            this.conn = org.apache.hadoop.hbase.client.ConnectionFactory.createConnection(env.getConfiguration());
            this.admin = conn.getAdmin();
            this.ri = env.getRegionInfo();
            this.mine = env.getRegion();
            this.myServer = env.getServerName();
            this.env = env;
        }

        @Override
        public boolean tableGone() throws IOException {
            return !admin.tableExists(ri.getTable()) || admin.isTableDisabled(ri.getTable());
        }

        @Override
        public void unassign() throws IOException {
            admin.unassign(ri.getRegionName(), true);
        }

        @Override
        public void move() throws IOException {
            admin.move(ri.getEncodedNameAsBytes());
        }

        @Override
        public void assign() throws IOException {
            admin.assign(ri.getRegionName());
        }

        @Override
        public boolean reopened() {
            try {
                org.apache.hadoop.hbase.HRegionLocation loc =
                        org.apache.hadoop.hbase.MetaTableAccessor.getRegionLocation(conn, ri.getRegionName());
                if (loc == null || loc.getServerName() == null) {
                    return false;
                }
                if (loc.getServerName().equals(myServer)) {
                    // on this server: open again only as another (later) region object than the requesting one
                    org.apache.hadoop.hbase.regionserver.Region r = env.getOnlineRegions()
                            .getRegion(ri.getEncodedName());
                    return r != null && r != mine && r.isAvailable();
                }
                for (org.apache.hadoop.hbase.client.RegionInfo o : admin.getRegions(loc.getServerName())) {
                    if (o.getEncodedName().equals(ri.getEncodedName())) {
                        return true;
                    }
                }
                return false;
            } catch (IOException | RuntimeException e) {
                return false; // not known to be open: the attempt assigns it (rejected if it is open)
            }
        }

        @Override
        public boolean notOpen(IOException e) {
            // the master's "Unexpected state for state=CLOSED, ..." (AssignmentManager.preTransitCheck)
            String m = e.getMessage();
            return e instanceof org.apache.hadoop.hbase.client.DoNotRetryRegionException && m != null
                    && m.contains("Unexpected state");
        }

        @Override
        public void close() throws IOException {
            try {
                admin.close();
            } finally {
                conn.close();
            }
        }
    }

    @Override
    public synchronized Coordination coordination(RegionCoprocessorEnvironment env, String volume) {
        Configuration conf = env.getConfiguration();
        String quorum = ZKConfig.getZKQuorumServersString(conf);
        try {
            // one ZooKeeper session per region server JVM, not one per replica region (SharedCuratorClients)
            if (zk != null) {
                zk.close();
                zk = null;
            }
            zk = io.salus.core.zk.SharedCuratorClients.acquire(quorum, 60_000);
        } catch (IllegalStateException e) {
            throw new IllegalStateException(e.getMessage() + " (hbase.zookeeper.quorum) for the Salus checkpoint"
                    + " certificates of volume " + volume, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while connecting to ZooKeeper " + quorum, e);
        }
        return new CuratorCoordination(zk.client(), CuratorCoordination.volumePath(conf.get(ZK_ROOT_KEY, DEFAULT_ZK_ROOT), volume));
    }

    /**
     * If {@code error} proves the disk damaged ({@link io.salus.core.hbase.SalusStoreQuarantine#damaged}), moves the
     * replica's Salus log directory aside to {@code <}{@value io.salus.core.hbase.SalusStoreQuarantine#ROOT_KEY}
     * {@code >/logs/<table>/<encoded region>/<time>} (never deleted); the disk starts over empty.
     */
    @Override
    public synchronized String quarantineDisk(RegionCoprocessorEnvironment env, RuntimeException error) {
        if (disk == null || !provesLogDamaged(fs, error)) {
            return null;
        }
        String why = io.salus.core.hbase.SalusStoreQuarantine.oneLine(error);
        Path dest = quarantineDest(env);
        boolean moved = disk.quarantine(dest);
        LOG.warn("Salus log of region {} at {} cannot be read ({}): {} (not deleted); the replica catches up from a"
                + " peer", env.getRegionInfo().getEncodedName(), disk.directory(), why,
                moved ? "moved aside to " + dest : "nothing to move");
        return moved ? dest.toString() : disk.directory() + " (absent)";
    }

    /**
     * Whether {@code error}, met while a replica read its disk and replayed its log at start, proves the Salus log
     * damaged: a damage ({@link io.salus.core.hbase.SalusStoreQuarantine#damaged}) that is not a failed read of the
     * region's cells ({@link io.salus.core.protocol.replica.RegionStore.ReadFailed}: the store's damage, handled by
     * its reopen, which moves the damaged store files aside; the log stays).
     */
    public static boolean provesLogDamaged(FileSystem fs, Throwable error) {
        return !io.salus.core.protocol.replica.RegionStore.ReadFailed.in(error)
                && io.salus.core.hbase.SalusStoreQuarantine.damaged(fs, error);
    }

    /** Where this region's Salus log directory is moved aside: {@code <quarantine root>/logs/<table>/<region>/<time>}. */
    private static Path quarantineDest(RegionCoprocessorEnvironment env) {
        Configuration conf = env.getConfiguration();
        return new Path(new Path(new Path(new Path(conf.get(io.salus.core.hbase.SalusStoreQuarantine.ROOT_KEY,
                io.salus.core.hbase.SalusStoreQuarantine.DEFAULT_ROOT), "logs"),
                env.getRegionInfo().getTable().getNameAsString().replace(':', '=')),
                env.getRegionInfo().getEncodedName()), io.salus.core.hbase.SalusStoreQuarantine.timestamp());
    }

    /** The first file under {@code dir} with a block lost for good (SalusStoreQuarantine.lost), or null. */
    private static String lostFile(DistributedFileSystem fs, Path dir) {
        java.util.List<Path> files = new java.util.ArrayList<>();
        try {
            if (!fs.exists(dir)) {
                return null;
            }
            var it = fs.listFiles(dir, true);
            while (it.hasNext()) {
                files.add(it.next().getPath());
            }
        } catch (IOException e) {
            return null; // not proven: the reads find out
        }
        return io.salus.core.hbase.SalusStoreQuarantine.firstLost(fs, files);
    }

    /** The log of this region (tests and metrics); null before {@link #disk}. */
    public synchronized HdfsReplicaDisk replicaDisk() {
        return disk;
    }

    @Override
    public synchronized void close() {
        if (disk != null) {
            try {
                disk.close();
            } catch (RuntimeException e) {
                // e.g. the active segment's only DataNode is gone (a lost disk): the rest is closed anyway
                LOG.warn("closing the Salus log {}: {}", disk.directory(), e.toString());
            }
        }
        if (zk != null) {
            zk.close();
        }
        if (fs != null) {
            try {
                fs.close();
            } catch (IOException e) {
                LOG.warn("closing the Salus log's HDFS client: {}", e.toString());
            }
        }
    }
}
