package io.salus.core.hbase.endpoint;

import io.salus.core.cert.CertType;
import io.salus.core.cert.Certificate;
import io.salus.core.cert.Statement;
import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.Signer;
import io.salus.core.hbase.endpoint.generated.SalusReplicaProtos.Envelope;
import io.salus.core.merkle.Hash;
import io.salus.core.protocol.ProtocolConfig;
import io.salus.core.protocol.RrsConfig;
import io.salus.core.protocol.Transport;
import io.salus.core.protocol.message.Message;
import io.salus.core.protocol.recovery.Coordination;
import io.salus.core.protocol.recovery.RecoveryException;
import io.salus.core.protocol.replica.RegionReplica;
import io.salus.core.protocol.replica.ReplicaCatchUp;
import io.salus.core.protocol.replica.RegionSnapshot;
import io.salus.core.protocol.replica.RegionStore;
import io.salus.core.protocol.replica.ReplicaDisk;
import io.salus.core.protocol.witness.CertificateStore;
import io.salus.core.protocol.witness.WitnessLog;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The protocol nodes one replica region hosts (its {@link RegionReplica}, its colocated metadata store, maybe an
 * interim standalone witness), run by <b>one single-threaded event loop</b>: {@link #enqueue} only queues, so
 * the RPC handler that calls it returns at once. The loop ticks the replica every {@link #TICK_MILLIS}.
 * Outbound messages: to a node of this region, back into the loop; to the client, into its outbox (collected by
 * {@code poll} and {@code deliver} responses); to any other node, to the {@link ReplicaLink} (async client).
 */
public final class ReplicaHost {
    private static final Logger LOG = LoggerFactory.getLogger(ReplicaHost.class);
    /** Period of {@link RegionReplica#tick} (it retransmits every {@link RegionReplica#RETRANSMIT_TICKS}). */
    public static final long TICK_MILLIS = 50;
    /** Replies kept per client; beyond it the oldest are dropped (the client retransmits and gets them again). */
    public static final int MAX_OUTBOX = 8192;
    /**
     * Bytes of replies kept per client, beside {@link #MAX_OUTBOX}: a mount's leaf ranges are ~650 KB each, and 8,192
     * of them were 5 GB of heap (review rv37); beyond it the oldest are dropped as above.
     */
    public static final long MAX_OUTBOX_BYTES = 32L << 20;
    /** Bytes of replies handed out by one {@link #takeReplies} at most (plus the one message that crosses it). */
    public static final long MAX_REPLY_BYTES = 8L << 20;

    private final VolumeAddressing addressing;
    private final NodeId client;
    private final int region;
    private final int replicaIndex;
    private final ScheduledExecutorService loop;
    /** Writes the replica's checkpoints (HDFS file + region flush, hundreds of ms) off the event loop, in order. */
    private final java.util.concurrent.ExecutorService checkpointWriter;
    /**
     * Makes the replica's log appends and commit marks durable off the event loop (task tput17): one thread that takes
     * every record queued so far and covers them with one hsync per file (group commit), then runs their
     * continuations on the loop, in order ({@link io.salus.core.protocol.replica.DurableWriter}).
     */
    private final java.util.concurrent.ExecutorService diskWriter;
    private final ConcurrentLinkedQueue<DiskRecord> diskRecords = new ConcurrentLinkedQueue<>();
    /** A record could not be written: no later one is written (their continuations never run). */
    private volatile RuntimeException diskFailure;
    /** Told once, off the loop, when {@link #diskFailure} is set (the endpoint has the region reopened). */
    private volatile java.util.function.Consumer<RuntimeException> onDiskFailure = e -> { };
    private final AtomicLong diskGroups = new AtomicLong();
    private final AtomicLong diskGroupRecords = new AtomicLong();

    /** hsyncs the disk writer made for a client's FLUSH ({@link io.salus.core.protocol.replica.DurableWriter#sync}). */
    private final AtomicLong diskSyncs = new AtomicLong();

    /**
     * hsyncs the disk writer made for a leader replica's own decisions
     * ({@link io.salus.core.protocol.replica.DurableWriter#recordLeaderDecision}, task tput19).
     */
    private final AtomicLong diskDecisionSyncs = new AtomicLong();

    /**
     * A log entry ({@code decision == null}), a commit mark, or ({@code sync}) a sync of everything before it for the
     * {@link #diskWriter}; a decision with {@code sync} is a leader replica's own decision, written with the
     * BatchInfo of a COMMIT ({@code info}, review rv20-1) and synced (hsync) with its group.
     */
    private record DiskRecord(long generation, long index, byte[] entry, Certificate decision, boolean sync,
                              Runnable then, io.salus.core.protocol.message.BatchInfo info) {
        DiskRecord(long generation, long index, byte[] entry, Certificate decision, boolean sync, Runnable then) {
            this(generation, index, entry, decision, sync, then, null);
        }
    }

    /** Set by {@link #close}: checkpoint writes queued behind the one in progress are not started. */
    private volatile boolean closed;
    private final ReplicaLink link;
    private final ReplicaFaultInjector faults;
    /** Null while the replica catches up from a peer (it serves nothing until then); set on the loop thread. */
    private volatile RegionReplica replica;
    /** This region's replica node (known before {@link #replica} exists: its restart replay already sends). */
    private final NodeId me;
    /** Released once the constructor has built the replica: the loop runs nothing for it before. */
    private final java.util.concurrent.CountDownLatch built = new java.util.concurrent.CountDownLatch(1);
    private final Map<NodeId, WitnessLog> witnesses = new LinkedHashMap<>();
    private final Map<NodeId, Signer> holderSigners = new LinkedHashMap<>();
    private final ClientOutbox outbox = new ClientOutbox(MAX_OUTBOX, MAX_OUTBOX_BYTES);
    private final AtomicLong received = new AtomicLong();
    /**
     * Messages an RPC handed the event loop and it has not run yet, at most this many (issue 27 item 4): a loop that
     * falls behind (a slow HBase flush or apply) refuses more instead of growing the region server's heap; the senders
     * retransmit. ~30× what a full client pipeline (32 batches, each a few messages per replica) puts in flight.
     */
    public static final int MAX_QUEUED_MESSAGES = 4096;
    /** ...and at most this many of their encoded bytes (64 whole 256 KiB sub-batches). */
    public static final long MAX_QUEUED_BYTES = 16L << 20;
    private volatile InboundBound inbound = new InboundBound(MAX_QUEUED_MESSAGES, MAX_QUEUED_BYTES);
    /** What the endpoint's RPCs carried for this region, per direction and message type ({@link #traffic()}). */
    private final io.salus.core.protocol.message.TrafficCounters traffic =
            new io.salus.core.protocol.message.TrafficCounters();
    private final AtomicLong toClient = new AtomicLong();
    /** CHECKPOINT certificates the interim holders hosted here verified and truncated their stores with. */
    private final AtomicLong witnessTruncations = new AtomicLong();
    private final CallAuth.Checker auth;
    private volatile long replayedFrom;
    private volatile long replayedLogEnd;
    private volatile long replayedSeqs;
    private volatile long replayResetBlocks;
    /** Why the region's cells were refused at open (issue 27: they do not hold the certified checkpoint), or null. */
    private volatile String storeRefused;
    private final WitnessHolders remoteHolders;
    /** The peers' transfers while catching up at open (null once the replica is built; on the loop). */
    private io.salus.core.protocol.replica.PeerTransfers openTransfers;
    // what building the replica needs (again, after a catch-up from a peer)
    private final ProtocolConfig cfg;
    private final RrsConfig rrs;
    private final EndpointKeyring keys;
    private final ReplicaDisk disk;
    private final Coordination coordination;
    private final RegionStore store;
    /** Recovery at open (issue 14): the certified index checked, what a peer catch-up installed. */
    private volatile long recoveryCheckedIndex = -1;
    private volatile long recoveryFromPeer;
    private volatile long recoveryPeerBlocks;
    private volatile long recoveryPeerEntries;
    private final AtomicLong recoveryRefused = new AtomicLong();
    private final AtomicLong droppedWhileRecovering = new AtomicLong();
    private volatile long recoveryMillis;
    /** Where this open moved the replica's unreadable disk (null: it did not). */
    private volatile String diskQuarantined;
    private final long openedAt = System.currentTimeMillis();
    private final RebuildSettings rebuildSettings;
    /** 1: this open caught up metadata first and fetched the blocks while serving. */
    private volatile long recoveryMetadataFirst;
    private volatile boolean rebuildLogged;
    /** How often a catching-up replica asks its peers for their state again. */
    public static final long CATCH_UP_RETRY_MILLIS = 1_000;

    /**
     * @param disks  the Salus log of the replica
     * @param stores the certificate store of each hosted metadata holder
     */
    public ReplicaHost(VolumeAddressing addressing, int region, int replicaIndex, EndpointKeyring keys,
                       ReplicaLink link, ReplicaDisk disk, Function<NodeId, CertificateStore> stores,
                       Coordination coordination, ReplicaFaultInjector faults) {
        this(addressing, region, replicaIndex, keys, link, disk, stores, coordination, faults, null);
    }

    /**
     * @param store the replica's region state (e.g. the HBase region's own cells); null: in memory, rebuilt from
     *              the disk's checkpoint. Either way the replica starts from its verified base
     *              ({@link RegionReplica#verifiedBase}) and re-applies the certified log entries after it (the
     *              restart replay) inside this constructor, i.e. before it serves anything.
     * @throws IllegalStateException if the base cannot be verified (the replica must be replaced through recovery)
     */
    public ReplicaHost(VolumeAddressing addressing, int region, int replicaIndex, EndpointKeyring keys,
                       ReplicaLink link, ReplicaDisk disk, Function<NodeId, CertificateStore> stores,
                       Coordination coordination, ReplicaFaultInjector faults, RegionStore store) {
        this(addressing, region, replicaIndex, keys, link, disk, stores, coordination, faults, store, null, null);
    }

    /**
     * @param remote       the real witness stores serving the five metadata holders (null: the interim holders
     *                     hosted in this region, signed with the region server's test keys)
     * @param regionServer with {@code remote}: resolves replica k's region server (host:port), to find the
     *                     witness of its paired DataNode
     */
    public ReplicaHost(VolumeAddressing addressing, int region, int replicaIndex, EndpointKeyring keys,
                       ReplicaLink link, ReplicaDisk disk, Function<NodeId, CertificateStore> stores,
                       Coordination coordination, ReplicaFaultInjector faults, RegionStore store,
                       WitnessHolders.Settings remote, Function<Integer, CompletableFuture<String>> regionServer) {
        this(addressing, region, replicaIndex, keys, link, disk, stores, coordination, faults, store, remote,
                regionServer, null);
    }

    /**
     * @param quarantineDisk given the error reading {@code disk}: if it proves the disk damaged (an HDFS checksum
     *                       error, a corrupt block, a damaged frame), moves the disk aside and returns where it went,
     *                       the disk starting over empty, and the replica catches up from a peer (if a certificate
     *                       of its generation exists). Null, or a null answer: the error makes the replica refuse to
     *                       start, as before
     */
    public ReplicaHost(VolumeAddressing addressing, int region, int replicaIndex, EndpointKeyring keys,
                       ReplicaLink link, ReplicaDisk disk, Function<NodeId, CertificateStore> stores,
                       Coordination coordination, ReplicaFaultInjector faults, RegionStore store,
                       WitnessHolders.Settings remote, Function<Integer, CompletableFuture<String>> regionServer,
                       Function<RuntimeException, String> quarantineDisk) {
        this(addressing, region, replicaIndex, keys, link, disk, stores, coordination, faults, store, remote,
                regionServer, quarantineDisk, RebuildSettings.DEFAULT);
    }

    /**
     * How a replica that catches up from a peer at open is rebuilt (issue 14 item 3). {@code background}: in two
     * phases, the certified state's metadata first (leaf hashes, log entries and decisions after the checkpoint: it
     * serves as soon as they are installed), then its blocks in the background at {@code blocksPerSecond}; false: one
     * transfer of the whole state, nothing served until it is installed.
     */
    public record RebuildSettings(boolean background, int blocksPerSecond) {
        public static final String BACKGROUND_KEY = "salus.rebuild.background";
        public static final String RATE_KEY = "salus.rebuild.blocks.per.second";
        public static final RebuildSettings DEFAULT = new RebuildSettings(true,
                RegionReplica.DEFAULT_REBUILD_BLOCKS_PER_SECOND);
    }

    /** As above, with the rebuild's settings. */
    public ReplicaHost(VolumeAddressing addressing, int region, int replicaIndex, EndpointKeyring keys,
                       ReplicaLink link, ReplicaDisk disk, Function<NodeId, CertificateStore> stores,
                       Coordination coordination, ReplicaFaultInjector faults, RegionStore store,
                       WitnessHolders.Settings remote, Function<Integer, CompletableFuture<String>> regionServer,
                       Function<RuntimeException, String> quarantineDisk, RebuildSettings rebuildSettings) {
        this.rebuildSettings = rebuildSettings;
        this.addressing = addressing;
        this.client = addressing.client();
        this.region = region;
        this.replicaIndex = replicaIndex;
        this.link = link;
        this.faults = faults;
        this.auth = new CallAuth.Checker(addressing, region, replicaIndex, keys.verifier());
        ProtocolConfig cfg = addressing.protocolConfig();
        RrsConfig rrs = addressing.membership().current(region);
        this.cfg = cfg;
        this.rrs = rrs;
        this.keys = keys;
        this.disk = new ReportingDisk(disk, this::reportDiskFailure);
        this.coordination = coordination;
        this.store = store;
        NodeId me = rrs.replicas().get(replicaIndex);
        this.me = me;
        ScheduledThreadPoolExecutor ex = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, "salus-replica-" + me.name());
            t.setDaemon(true);
            return t;
        });
        ex.setRemoveOnCancelPolicy(true);
        ex.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
        this.loop = ex;
        this.checkpointWriter = java.util.concurrent.Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "salus-checkpoint-" + me.name());
            t.setDaemon(true);
            return t;
        });
        this.diskWriter = java.util.concurrent.Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "salus-log-" + me.name());
            t.setDaemon(true);
            return t;
        });
        this.remoteHolders = remote == null ? null : new WitnessHolders(remote, rrs.metadataHolders(), regionServer,
                keys, (h, ack) -> loop.execute(() -> dispatch(h, me, ack)));
        // Recovery of this replica at open (issue 14): its state must reach the latest CHECKPOINT certificate of its
        // generation. Its own disk does (verifiedBase): start from it and replay the certified log entries after it.
        // It does not (log or checkpoint files lost or behind) but a certificate of its generation exists: catch up
        // from a peer replica (ReplicaCatchUp), serving nothing until then. Anything else: refuse to start.
        RegionSnapshot base = null;
        try {
            try {
                base = RegionReplica.verifiedBase(cfg, rrs, keys.verifier(), addressing.membership(), disk,
                        coordination);
            } catch (RecoveryException e) {
                if (ReplicaCatchUp.certified(rrs, keys.verifier(), addressing.membership(), coordination) == null) {
                    throw new IllegalStateException(e.getMessage(), e);
                }
                LOG.warn("{} cannot start from its own disk ({}): catching up from a peer replica; it serves nothing"
                        + " until then", me, e.getMessage());
            } catch (RuntimeException e) {
                quarantineOrThrow(e, quarantineDisk);
            }
            if (base != null) {
                try {
                    build(base); // reads the log and decisions after the base: a damaged disk fails here too
                } catch (io.salus.core.protocol.replica.RegionStore.StoreStateException e) {
                    // issue 27: the disk's stored checkpoint is fine but the region's cells do not hold its state
                    // (HFiles lost or damaged): rebuilt from the peers (metadata first), the disk kept
                    if (ReplicaCatchUp.certified(rrs, keys.verifier(), addressing.membership(), coordination) == null) {
                        throw e;
                    }
                    storeRefused = e.getMessage();
                    LOG.warn("{}: its region's cells do not hold its certified checkpoint ({}): rebuilding from the"
                            + " peer replicas, serving nothing until the metadata is here", me, e.getMessage());
                    base = null;
                } catch (RuntimeException e) {
                    quarantineOrThrow(e, quarantineDisk);
                    base = null;
                }
            }
        } catch (RuntimeException e) {
            ex.shutdownNow();
            checkpointWriter.shutdownNow();
            diskWriter.shutdownNow();
            built.countDown();
            if (remoteHolders != null) {
                remoteHolders.close();
            }
            throw e;
        }
        for (NodeId h : addressing.hostedBy(region, replicaIndex)) {
            if (!h.equals(me) && remoteHolders == null) {
                witnesses.put(h, new WitnessLog(keys.signer(h), keys.verifier(), stores.apply(h),
                        (r, g) -> {
                            RrsConfig c = addressing.membership().config(r, g);
                            return c == null ? null : c.replicaSet();
                        }));
                holderSigners.put(h, keys.signer(h));
            }
        }
        built.countDown();
        loop.scheduleWithFixedDelay(this::tick, TICK_MILLIS, TICK_MILLIS, TimeUnit.MILLISECONDS);
        if (base == null) {
            loop.execute(this::requestState);
        } else if (base.throughIndex() < 0) {
            // no CHECKPOINT certificate of its generation yet: a fresh region or one whose log this replica lost
            // (review rv15 finding 2); it serves and asks its peers for their log (RegionReplica.catchUpFromPeersAtOpen)
            loop.execute(() -> {
                RegionReplica r = replica;
                try {
                    if (r != null) {
                        r.catchUpFromPeersAtOpen();
                    }
                } catch (RuntimeException e) {
                    LOG.warn("{}: asking the peers for their log failed: {}", me, e.toString());
                }
            });
        }
    }

    /**
     * A disk that the storage finds damaged ({@code quarantineDisk} moves it aside and says where) makes the replica
     * catch up from a peer, if a CHECKPOINT certificate of its generation exists to catch up to; anything else is
     * rethrown.
     */
    private void quarantineOrThrow(RuntimeException e, Function<RuntimeException, String> quarantineDisk) {
        if (quarantineDisk == null) {
            throw e;
        }
        if (ReplicaCatchUp.certified(rrs, keys.verifier(), addressing.membership(), coordination) == null) {
            throw e; // nothing to catch up to: the replica refuses to start, the disk stays in place
        }
        String where = quarantineDisk.apply(e);
        if (where == null) {
            throw e;
        }
        diskQuarantined = where;
        LOG.warn("{}: its Salus disk cannot be read ({}); moved aside to {}: catching up from a peer replica, serving"
                + " nothing until then", me, e.getMessage(), where);
    }

    /** Builds the replica from a verified base: the restart replay of the certified entries runs here. */
    private void build(RegionSnapshot base) {
        build(base, store, null);
    }

    /** {@code leaves} non-null: the replica is rebuilt while serving over {@code st}, which holds them (see above). */
    private void build(RegionSnapshot base, RegionStore st, java.util.Map<Long, io.salus.core.merkle.Hash> leaves) {
        long logEnd = disk.lastIndex(rrs.generation());
        RegionReplica r = st == null
                ? new RegionReplica(cfg, rrs, me, client, keys.signer(me), keys.replicaVerifier(), addressing.membership(),
                        transport(me), disk, coordination, faults.hooks(me), base)
                : new RegionReplica(cfg, rrs, me, client, keys.signer(me), keys.replicaVerifier(), addressing.membership(),
                        transport(me), disk, coordination, faults.hooks(me), base, st, leaves);
        r.rebuildRate(rebuildSettings.blocksPerSecond());
        r.logEntryReader(this::readLogEntry);
        openTransfers = null;
        // checkpoints are written off the loop (lat13), in order, and not started any more once the host is closed
        r.writeCheckpointsOn(task -> {
            try {
                checkpointWriter.execute(() -> {
                    if (!closed) {
                        task.run();
                    }
                });
            } catch (java.util.concurrent.RejectedExecutionException e) {
                // closed: the checkpoint is not written, so never signed (as if the server stopped before it)
            }
        });
        // log appends and commit marks are made durable off the loop too (tput17), in order, with group commit
        r.writeDiskOn(new io.salus.core.protocol.replica.DurableWriter() {
            @Override
            public void append(long generation, long index, byte[] entry, Runnable then) {
                queueDiskRecord(new DiskRecord(generation, index, entry, null, false, then));
            }

            @Override
            public void recordDecision(long generation, Certificate decision, Runnable then) {
                queueDiskRecord(new DiskRecord(generation, -1, null, decision, false, then));
            }

            @Override
            public void recordLeaderDecision(long generation, Certificate decision,
                                             io.salus.core.protocol.message.BatchInfo info, Runnable then) {
                queueDiskRecord(new DiskRecord(generation, -1, null, decision, true, then, info));
            }

            @Override
            public void sync(long generation, Runnable then) {
                queueDiskRecord(new DiskRecord(generation, -1, null, null, true, then));
            }
        });
        this.recoveryCheckedIndex = base.throughIndex();
        this.replayedFrom = base.throughIndex();
        this.replayedLogEnd = logEnd;
        this.replayedSeqs = r.appliedSeq() - base.lastSeq();
        this.replayResetBlocks = r.resetAtOpen();
        this.recoveryMillis = System.currentTimeMillis() - openedAt;
        if (logEnd > base.throughIndex()) {
            LOG.info("{} replayed its Salus log: base checkpoint through index {} (seq {}), {} block(s) of its cells set"
                    + " back to it, log ends at {}, applied through seq {} before serving", me, base.throughIndex(),
                    base.lastSeq(), r.resetAtOpen(), logEnd, r.appliedSeq());
        }
        this.replica = r;
    }

    /** While catching up: asks both peers for their state through the latest certified checkpoint, again and again. */
    private void requestState() {
        if (replica != null) {
            return;
        }
        try {
            Statement.Checkpoint cp = ReplicaCatchUp.certified(rrs, keys.verifier(), addressing.membership(),
                    coordination);
            if (cp != null) {
                for (NodeId peer : rrs.replicas()) {
                    if (!peer.equals(me)) {
                        // rebuilt while serving: the metadata first (a RebuildRequest without blocks); else the whole
                        // a versioned store (issue 27): always metadata first, the blocks then come in chunks;
                        // a stored checkpoint is never sent whole
                        link.send(me, peer, rebuildSettings.background() || store != null && store.versioned()
                                ? new Message.RebuildRequest(region, rrs.generation(), cp.throughIndex(), List.of())
                                : new Message.StateRequest(region, rrs.generation(), cp.throughIndex()));
                    }
                }
            }
        } catch (RuntimeException e) {
            LOG.warn("{}: asking the peers for their state failed: {}", me, e.toString());
        }
        loop.schedule(this::requestState, CATCH_UP_RETRY_MILLIS, TimeUnit.MILLISECONDS);
    }

    /**
     * What the metadata holders store at a log slot, read without sealing it (review rvw22 finding 2b): from the real
     * witness stores (their unsigned read-only QUERY, blocking up to their timeout each), else from the interim
     * holders this server hosts (tests; the others' stores are not readable from here). The first answer
     * {@code proves} accepts, or null.
     */
    private Certificate readLogEntry(io.salus.core.cert.RegionId region, long generation, long index,
                                     java.util.function.Predicate<Certificate> proves) {
        if (remoteHolders != null) {
            return remoteHolders.read(region, generation, index, proves);
        }
        for (WitnessLog w : witnesses.values()) {
            Certificate c = w.store().get(region, generation, index).orElse(null);
            if (c != null && proves.test(c)) {
                return c;
            }
        }
        return null;
    }

    /** The corroboration of {@code from}'s transfer {@code x} while catching up at open (remembered first). */
    private ReplicaCatchUp.Corroboration heardAtOpen(NodeId from, Message.StateTransfer x) {
        if (openTransfers == null) {
            openTransfers = new io.salus.core.protocol.replica.PeerTransfers(ReplicaCatchUp.certifiedBy(cfg, rrs,
                    keys.replicaVerifier(), this::readLogEntry));
        }
        openTransfers.heard(from, x);
        return openTransfers.corroboration(from);
    }

    /** A peer's state: installed if it checks (ReplicaCatchUp), then the replica starts from the disk as on a restart. */
    private void onStateTransfer(NodeId from, Message.StateTransfer x) {
        if (from.equals(me) || !rrs.replicas().contains(from)) {
            return;
        }
        if (x.metadataOnly()) {
            onMetadataTransfer(from, x);
            return;
        }
        try {
            ReplicaCatchUp.Installed in = ReplicaCatchUp.install(cfg, rrs, client, keys.verifier(),
                    keys.replicaVerifier(), addressing.membership(), coordination, disk, store, heardAtOpen(from, x), x);
            build(RegionReplica.verifiedBase(cfg, rrs, keys.verifier(), addressing.membership(), disk, coordination));
            askPeersAfterCatchUp();
            recoveryFromPeer = 1;
            recoveryPeerBlocks = in.blocks();
            recoveryPeerEntries = in.entries();
            LOG.warn("{} caught up from peer {}: state through certified index {} ({} blocks), {} of {} log entries"
                    + " (the rest not corroborated yet), {} decisions; serving again after {} ms", me, from,
                    in.throughIndex(), in.blocks(), in.entries(), x.entries().size(), in.decisions(), recoveryMillis);
        } catch (RecoveryException | RuntimeException e) {
            recoveryRefused.incrementAndGet();
            LOG.warn("{} refused the state transfer from {}: {}", me, from, e.getMessage());
        }
    }

    /**
     * The first phase of a rebuild while serving: the certified state's leaf hashes and the log after it, checked
     * and installed ({@link ReplicaCatchUp#installMetadata}); the replica serves from now on and fetches the blocks
     * in the background ({@link RegionReplica}'s rebuild, throttled to {@link RebuildSettings#blocksPerSecond}).
     */
    private void onMetadataTransfer(NodeId from, Message.StateTransfer x) {
        try {
            RegionStore st = store != null ? store
                    : new io.salus.core.protocol.replica.InMemoryRegionStore(cfg, java.util.Map.of());
            ReplicaCatchUp.MetadataInstalled in = ReplicaCatchUp.installMetadata(cfg, rrs, client, keys.verifier(),
                    keys.replicaVerifier(), addressing.membership(), coordination, disk, st, heardAtOpen(from, x), x);
            RegionSnapshot base = new RegionSnapshot(rrs.generation(), in.throughIndex(), in.lastSeq(),
                    java.util.Map.of(), in.rootRecord());
            build(base, st, in.leaves());
            askPeersAfterCatchUp();
            recoveryFromPeer = 1;
            recoveryMetadataFirst = 1;
            recoveryPeerBlocks = in.leaves().size();
            recoveryPeerEntries = in.entries();
            LOG.warn("{} rebuilt from peer {}, metadata first: leaf hashes of {} blocks through certified index {}, {}"
                    + " of {} log entries (the rest not corroborated yet), {} decisions; serving again after {} ms;"
                    + " fetching the blocks in the background at {} blocks/s", me, from, in.leaves().size(),
                    in.throughIndex(), in.entries(), x.entries().size(), in.decisions(), recoveryMillis,
                    rebuildSettings.blocksPerSecond());
        } catch (RecoveryException | RuntimeException e) {
            recoveryRefused.incrementAndGet();
            LOG.warn("{} refused the metadata transfer from {}: {}", me, from, e.getMessage());
        }
    }

    /**
     * After a catch-up at open the replica took the peer's log only up to its first entry that is undecided (review
     * rvw22) or not corroborated yet (no holder's LOG_ENTRY read, the other peer's transfer not here: task cu23); an
     * entry undecided at the peer when it answered is resolved there a moment later and never sent again, so the
     * replica asks its peers for their log until their answers hold nothing after its own (review rvw23-4,
     * {@link RegionReplica#catchUpFromPeersAtOpen}). On the loop, like the install.
     */
    private void askPeersAfterCatchUp() {
        RegionReplica r = replica;
        if (r != null) {
            try {
                r.catchUpFromPeersAtOpen();
            } catch (RuntimeException e) {
                LOG.warn("{}: asking the peers for their log after the catch-up failed: {}", me, e.toString());
            }
        }
    }

    private void queueDiskRecord(DiskRecord d) {
        diskRecords.add(d);
        try {
            diskWriter.execute(this::writeDiskRecords);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            // closed: not written, so its continuation never runs (as if the server stopped before it)
        }
    }

    /**
     * On the disk writer: every record queued so far, the log entries with one {@link ReplicaDisk#appendAll} and the
     * commit marks with one {@link ReplicaDisk#recordCommitMarks} (one hflush each on HDFS), then, if a FLUSH asked for
     * it, one {@link ReplicaDisk#sync} (hsync of each file); a leader replica's own decisions (task tput19) with one
     * {@link ReplicaDisk#recordLeaderDecisions} after the marks (hsync of the decision records, as
     * {@link ReplicaDisk#recordDecision} on the loop before), then their continuations on the loop in queue
     * order. Each queued record schedules this once; a run that finds the queue empty (an earlier
     * run took its record) does nothing.
     */
    private void writeDiskRecords() {
        List<DiskRecord> group = new ArrayList<>();
        DiskRecord d;
        while ((d = diskRecords.poll()) != null) {
            group.add(d);
        }
        if (group.isEmpty() || closed || diskFailure != null) {
            return;
        }
        long t0 = io.salus.core.protocol.LatencyTrace.now();
        try {
            // one generation per replica; grouped per generation anyway, in order
            Map<Long, List<Long>> indexes = new LinkedHashMap<>();
            Map<Long, List<byte[]>> entries = new LinkedHashMap<>();
            Map<Long, List<Certificate>> marks = new LinkedHashMap<>();
            java.util.Set<Long> syncs = new java.util.LinkedHashSet<>();
            Map<Long, List<Certificate>> leaderDecisions = new LinkedHashMap<>();
            Map<Long, List<io.salus.core.protocol.message.BatchInfo>> leaderInfos = new LinkedHashMap<>();
            for (DiskRecord r : group) {
                if (r.sync() && r.decision() != null) {
                    // a leader replica's own decision (task tput19): after the group's marks, one hsync for all; a
                    // COMMIT with its BatchInfo (review rv20-1)
                    leaderDecisions.computeIfAbsent(r.generation(), g -> new ArrayList<>()).add(r.decision());
                    leaderInfos.computeIfAbsent(r.generation(), g -> new ArrayList<>()).add(r.info());
                } else if (r.sync()) {
                    syncs.add(r.generation());
                } else if (r.decision() == null) {
                    indexes.computeIfAbsent(r.generation(), g -> new ArrayList<>()).add(r.index());
                    entries.computeIfAbsent(r.generation(), g -> new ArrayList<>()).add(r.entry());
                } else {
                    marks.computeIfAbsent(r.generation(), g -> new ArrayList<>()).add(r.decision());
                }
            }
            for (Map.Entry<Long, List<Long>> e : indexes.entrySet()) {
                disk.appendAll(e.getKey(), e.getValue(), entries.get(e.getKey()));
            }
            for (Map.Entry<Long, List<Certificate>> e : marks.entrySet()) {
                disk.recordCommitMarks(e.getKey(), e.getValue());
            }
            // a leader replica's decisions: durable against a machine crash before any of them is sent, as
            // ReplicaDisk.recordDecision made them on the loop before (one hsync of the decision records for the
            // group's decisions, covering the marks hflushed before them; the log itself is not hsynced)
            for (Map.Entry<Long, List<Certificate>> e : leaderDecisions.entrySet()) {
                disk.recordLeaderDecisions(e.getKey(), e.getValue(), leaderInfos.get(e.getKey()));
                diskDecisionSyncs.incrementAndGet();
            }
            // a client's FLUSH: everything written so far (this group's records too) made durable against a machine
            // crash before its continuation answers the client (task tput18)
            for (long g : syncs) {
                disk.sync(g);
                diskSyncs.incrementAndGet();
            }
        } catch (RuntimeException e) {
            diskFailure = e;
            LOG.warn("{}: writing {} log record(s) failed; this replica logs and commits nothing more until its region"
                    + " reopens: {}", me, group.size(), e.toString());
            reportDiskFailure(e); // (the reporting disk has already, once)
            try {
                loop.execute(() -> {
                    RegionReplica r = replica;
                    if (r != null) {
                        try {
                            r.diskWriteFailed(e);
                        } catch (RuntimeException thrown) {
                            // logged above
                        }
                    }
                });
            } catch (java.util.concurrent.RejectedExecutionException closedLoop) {
                // the host is closed
            }
            return;
        }
        io.salus.core.protocol.LatencyTrace.took("diskGroupWrite", t0);
        io.salus.core.protocol.LatencyTrace.add("diskGroupRecords", group.size());
        diskGroups.incrementAndGet();
        diskGroupRecords.addAndGet(group.size());
        try {
            loop.execute(() -> {
                long l0 = io.salus.core.protocol.LatencyTrace.now();
                for (DiskRecord r : group) {
                    try {
                        r.then().run();
                    } catch (RegionReplica.StoreWriteFailed e) {
                        storeWriteFailed(e);
                    } catch (RuntimeException e) {
                        LOG.warn("{}: acting on a durable log record failed: {}", me, e.toString());
                    }
                }
                io.salus.core.protocol.LatencyTrace.took("loop:durable", l0);
            });
        } catch (java.util.concurrent.RejectedExecutionException closedLoop) {
            // the host is closed: nothing more is sent
        }
    }

    /**
     * Called once, on the disk writer's thread, when a log append or commit mark of this replica fails (the replica
     * logs and commits nothing more until its region reopens): the endpoint asks for the region to be reopened.
     */
    public void onDiskFailure(java.util.function.Consumer<RuntimeException> action) {
        this.onDiskFailure = action;
        RuntimeException already = logWriteFailure.get();
        if (already != null) {
            action.accept(already);
        }
    }

    /** The first log or decision write of this replica that failed, or null. */
    public RuntimeException diskFailure() {
        return logWriteFailure.get();
    }

    private final java.util.concurrent.atomic.AtomicReference<RuntimeException> logWriteFailure =
            new java.util.concurrent.atomic.AtomicReference<>();

    /**
     * The replica's store could not take a committed entry (wherever the loop applied it: a message, a tick, a durable
     * record's follow-up): reported like a failed log write, so the region is reopened and its recovery replays the
     * log over the verified base; unless the region is closing (a close someone asked for is not undone).
     */
    private void storeWriteFailed(RegionReplica.StoreWriteFailed e) {
        if (e.regionClosing()) {
            LOG.info("{}: the region is closing; this replica stops here (its next incarnation replays the log)",
                    e.getMessage());
            return;
        }
        LOG.warn("{}", e.getMessage(), e.getCause());
        reportDiskFailure(e);
    }

    /**
     * A log append, commit mark or decision record failed (on the disk writer, or on the loop: a batch-leader replica
     * records its TENTATIVE decision there before it sends it): reported once. Before, a leader replica whose decision
     * record failed only logged each retransmitted vote it dropped, decided nothing more, and every batch it led
     * stalled (the fault table's lost-disk row: region 1 stopped at committed index 4).
     */
    private void reportDiskFailure(RuntimeException e) {
        if (!logWriteFailure.compareAndSet(null, e)) {
            return;
        }
        try {
            onDiskFailure.accept(e);
        } catch (RuntimeException failed) {
            LOG.warn("{}: reporting the disk failure failed: {}", me, failed.toString());
        }
    }

    /** The replica's disk, reporting a failed log or decision write ({@link #reportDiskFailure}). */
    private static final class ReportingDisk extends io.salus.core.protocol.replica.ForwardingReplicaDisk {
        private final java.util.function.Consumer<RuntimeException> failed;

        ReportingDisk(ReplicaDisk d, java.util.function.Consumer<RuntimeException> failed) {
            super(d);
            this.failed = failed;
        }

        /** Runs a log or decision write, reporting its failure before it propagates. */
        private void reporting(Runnable write) {
            try {
                write.run();
            } catch (RuntimeException e) {
                failed.accept(e);
                throw e;
            }
        }

        @Override
        public void append(long generation, long index, byte[] entry) {
            reporting(() -> d.append(generation, index, entry));
        }

        @Override
        public void appendAll(long generation, List<Long> indexes, List<byte[]> entries) {
            reporting(() -> d.appendAll(generation, indexes, entries));
        }

        @Override
        public void recordDecision(long generation, Certificate decision) {
            reporting(() -> d.recordDecision(generation, decision));
        }

        @Override
        public void recordDecisions(long generation, List<Certificate> decisions) {
            reporting(() -> d.recordDecisions(generation, decisions));
        }

        @Override
        public void recordCommitMarks(long generation, List<Certificate> marks) {
            reporting(() -> d.recordCommitMarks(generation, marks));
        }

        @Override
        public void recordLeaderDecisions(long generation, List<Certificate> decisions,
                                          List<io.salus.core.protocol.message.BatchInfo> infos) {
            reporting(() -> d.recordLeaderDecisions(generation, decisions, infos));
        }

        @Override
        public void recordLeaderDecision(long generation, Certificate decision,
                                         io.salus.core.protocol.message.BatchInfo info) {
            reporting(() -> d.recordLeaderDecision(generation, decision, info));
        }

        @Override
        public void sync(long generation) {
            reporting(() -> d.sync(generation));
        }

        // reads, snapshots, checkpoints (retried by the next one) and GC are forwarded unreported
    }

    public NodeId replicaId() {
        return me;
    }

    /** False while the replica catches up from a peer (it serves nothing then). */
    public boolean serving() {
        return replica != null;
    }

    /** True if {@code id} is a node of this region. */
    public boolean hosts(NodeId id) {
        return id.equals(me) || witnesses.containsKey(id);
    }

    /** Queues a decoded message for the event loop, whatever the loop holds already; returns at once. */
    public void enqueue(NodeId from, NodeId to, Message m) {
        schedule(from, to, m, () -> { });
    }

    /** Hands {@code m} to the event loop, which runs {@code after} once it dispatched it (or failed to). */
    private void schedule(NodeId from, NodeId to, Message m, Runnable after) {
        received.incrementAndGet();
        long queued = io.salus.core.protocol.LatencyTrace.now();
        loop.execute(() -> {
            try {
                io.salus.core.protocol.LatencyTrace.took("loopQueueWait", queued);
                dispatch(from, to, m);
            } finally {
                after.run();
            }
        });
    }

    /**
     * Decodes and queues a message of {@code bytes} encoded bytes for the event loop unless the loop holds
     * {@link #MAX_QUEUED_MESSAGES} messages or {@link #MAX_QUEUED_BYTES} bytes not yet run, or {@code caller} (the node
     * the RPC authenticated) a quarter of either ({@link InboundBound}): false then, and the endpoint answers "busy"
     * (the sender retransmits). Returns at once.
     */
    public boolean offer(NodeId caller, NodeId from, NodeId to, java.util.function.Supplier<Message> decode,
                         int bytes) {
        InboundBound inbound = this.inbound; // released where admitted, if limitInbound replaces it meanwhile
        Object share = inboundShare(addressing, client, region, caller);
        if (!inbound.tryAdmit(share, bytes)) {
            return false; // not decoded: a sender retransmitting into a full queue costs little
        }
        Message m;
        try {
            m = decode.get();
        } catch (RuntimeException bad) {
            inbound.release(share, bytes);
            throw bad;
        }
        try {
            schedule(from, to, m, () -> inbound.release(share, bytes));
        } catch (java.util.concurrent.RejectedExecutionException closed) {
            inbound.release(share, bytes);
            throw closed;
        }
        return true;
    }

    /**
     * Whose share of the inbound bound a call of {@code caller} takes: the client's and each replica of this region's
     * own; every other caller (a replica of another region: a batch leader, a peer's witness traffic) one share
     * together. Per caller identity, one region server (which hosts a replica of every region, each its own identity)
     * could take every share (review rv37); now a faulty server holds at most its replica's share here and the common
     * one, and the client and the other peer keep theirs.
     */
    static Object inboundShare(VolumeAddressing addressing, NodeId client, int region, NodeId caller) {
        if (caller.equals(client)) {
            return caller;
        }
        try {
            if (addressing.parse(caller).region() == region) {
                return caller;
            }
        } catch (IllegalArgumentException notAReplica) {
            // falls through: not a node of this volume's address space
        }
        return OTHER_REGIONS;
    }

    /** The one inbound share of every caller that is neither the client nor a replica of this region. */
    private static final Object OTHER_REGIONS = "other regions";

    /**
     * Bounds the event loop's inbound queue at {@code maxMessages} messages and {@code maxBytes} bytes from now on
     * (the endpoint's {@code salus.replica.inbound.max-messages} / {@code -bytes}; tests lower it). Messages admitted
     * before are counted against the bound they were admitted by.
     */
    public void limitInbound(int maxMessages, long maxBytes) {
        this.inbound = new InboundBound(maxMessages, maxBytes);
    }

    /** What the event loop was handed by RPCs and has not run yet, and what it refused ({@link #offer}). */
    public InboundBound inbound() {
        return inbound;
    }

    private void dispatch(NodeId from, NodeId to, Message m) {
        long t0 = io.salus.core.protocol.LatencyTrace.now();
        try {
            dispatchTimed(from, to, m);
        } finally {
            if (t0 != 0) { // LatencyTrace on: the loop's time per message type, summed over the replicas
                io.salus.core.protocol.LatencyTrace.took("loop:" + m.getClass().getSimpleName(), t0);
            }
        }
    }

    private void dispatchTimed(NodeId from, NodeId to, Message m) {
        awaitBuilt();
        try {
            if (to.equals(me)) {
                RegionReplica r = replica;
                if (r == null) { // catching up: nothing is served; the senders retransmit
                    if (m instanceof Message.StateTransfer x) {
                        onStateTransfer(from, x);
                    } else {
                        droppedWhileRecovering.incrementAndGet();
                    }
                    return;
                }
                r.receive(from, m);
            } else if (m instanceof Message.LogCertMsg l) {
                onLogCert(to, l.tentative());
            } else if (m instanceof Message.CheckpointCert c) {
                WitnessLog w = witnesses.get(to);
                if (w != null && w.truncate(c.checkpoint())) { // verified first: a forged one drops nothing
                    witnessTruncations.incrementAndGet();
                }
            }
        } catch (RegionReplica.CheckpointWriteFailed e) {
            LOG.warn("{}", e.getMessage(), e.getCause()); // the message itself was handled
        } catch (RegionReplica.StoreWriteFailed e) {
            storeWriteFailed(e);
        } catch (RuntimeException e) {
            // one bad message (e.g. a malformed certificate) must not stop the loop: log and drop it
            LOG.warn("{} dropped a {} from {}: {}", to, m.getClass().getSimpleName(), from, e.toString());
        }
    }

    private void onLogCert(NodeId holder, Certificate t) {
        WitnessLog w = witnesses.get(holder);
        if (w == null || w.offer(t) != WitnessLog.Offer.STORED) {
            return;
        }
        Statement.LogEntry st = t.statement(Statement.LogEntry.class);
        Certificate stored = w.query(st.region(), st.generation(), st.index());
        if (stored.type() != CertType.LOG_ENTRY) {
            return;
        }
        Hash digest = stored.statement(Statement.LogEntry.class).digest();
        byte[] sig = holderSigners.get(holder).sign(
                Message.StoreAck.signedBytes(st.region().index(), st.generation(), st.index(), digest));
        Message ack = new Message.StoreAck(st.region().index(), st.generation(), st.index(), digest, sig);
        for (NodeId r : addressing.membership().current(region).replicas()) {
            send(holder, r, ack);
        }
    }

    /**
     * The replica's restart replay runs inside the constructor and may already send to a node of this region (a
     * primary crossing a checkpoint proposes it to itself): such messages wait here until the replica exists.
     */
    private void awaitBuilt() {
        try {
            built.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void tick() {
        if (io.salus.core.protocol.LatencyTrace.enabled()) {
            io.salus.core.protocol.LatencyTrace.count("replicaTick");
        }
        RegionReplica r = replica;
        if (r == null) {
            return;
        }
        long t0 = io.salus.core.protocol.LatencyTrace.now();
        try {
            r.tick();
            io.salus.core.protocol.LatencyTrace.took("loop:tick", t0);
            if (recoveryMetadataFirst == 1 && !rebuildLogged && !r.rebuilding()) {
                rebuildLogged = true;
                LOG.warn("{} rebuilt: every block of its certified state fetched from its peers and its checkpoint"
                        + " written ({})", me, r.rebuildCounters());
            }
        } catch (RegionReplica.StoreWriteFailed e) {
            storeWriteFailed(e);
        } catch (RuntimeException e) {
            LOG.warn("{} tick failed: {}", replica.id(), e.toString());
        }
    }

    private Transport transport(NodeId from) {
        return (to, m) -> send(from, to, m);
    }

    private void send(NodeId from, NodeId to, Message m) {
        if (faults != ReplicaFaultInjector.NONE && !to.equals(client)) {
            for (Message out : faults.toPeer(from, to, m)) { // tests only: a faulty server may reorder them
                sendNow(from, to, out);
            }
            return;
        }
        sendNow(from, to, m);
    }

    private void sendNow(NodeId from, NodeId to, Message m) {
        io.salus.core.protocol.LatencyTrace.sent(m.getClass().getSimpleName());
        if (to.equals(client)) {
            if (faults.dropToClient(from, m)) {
                return;
            }
            toClient.incrementAndGet();
            outbox.add(ReplicaLink.envelope(from, to, m));
        } else if (remoteHolders != null && remoteHolders.holds(to)) {
            if (m instanceof Message.LogCertMsg l) {
                remoteHolders.offer(to, l.tentative());
            } else if (m instanceof Message.CheckpointCert c) {
                remoteHolders.truncate(to, c.checkpoint()); // the witness verifies it before it drops anything
            }
        } else if (hosts(to)) {
            loop.execute(() -> dispatch(from, to, m));
        } else {
            link.send(from, to, m);
        }
    }

    /** The caller authentication of this region's endpoint ({@link CallAuth}). */
    public CallAuth.Checker auth() {
        return auth;
    }

    /**
     * Takes the replies waiting for {@code clientName} (never waits). The endpoint calls it only for a call the
     * client signed ({@link CallAuth}).
     */
    public List<Envelope> takeReplies(String clientName) {
        if (!client.name().equals(clientName)) {
            return new ArrayList<>();
        }
        return outbox.take(4 * ReplicaLink.MAX_PER_CALL, MAX_REPLY_BYTES);
    }

    /** Runs {@code f} on the event loop (inspection by tests and metrics); completes with its result. */
    public <T> CompletableFuture<T> inspect(Function<RegionReplica, T> f) {
        return CompletableFuture.supplyAsync(() -> {
            RegionReplica r = replica;
            if (r == null) {
                throw new IllegalStateException(me + " is catching up from a peer replica");
            }
            return f.apply(r);
        }, loop);
    }

    /** The last GET this replica could not read from its cells (block and error), or null. */
    public String lastUnreadableGet() {
        RegionReplica rr = replica;
        return rr == null ? null : rr.lastUnreadableGet();
    }

    /**
     * Counters: messages received by RPC, replies dropped on a full outbox; the open-time replay: the verified
     * base's checkpoint index, the last log index found on the disk, and the sequence numbers re-applied from the
     * log before serving ({@code replayedSeqs > 0}: this replica replayed entries); messages queued for the client
     * ({@code toClient}); the caller authentication's refusals ({@code auth*}, {@link CallAuth.Checker#counters}).
     */
    public Map<String, Long> counters() {
        Map<String, Long> m = new java.util.TreeMap<>(Map.of("received", received.get(), "inboundRefused",
                inbound.refused(), "inboundPeak", inbound.peakMessages(), "outboxDropped",
                outbox.dropped(), "replayBaseIndex", replayedFrom, "replayLogEnd", replayedLogEnd, "replayedSeqs",
                replayedSeqs, "toClient", toClient.get()));
        m.putAll(auth.counters());
        // recovery at open: every open runs it (recoveryRuns); the certified checkpoint index its state was checked
        // against (-1: none yet); whether it caught up from a peer and what it took; time from open to serving
        m.put("recoveryRuns", 1L);
        m.put("recoveryCheckedIndex", recoveryCheckedIndex);
        m.put("recovering", replica == null ? 1L : 0L);
        m.put("recoveryFromPeer", recoveryFromPeer);
        m.put("recoveryPeerBlocks", recoveryPeerBlocks);
        m.put("recoveryPeerEntries", recoveryPeerEntries);
        m.put("recoveryRefused", recoveryRefused.get());
        m.put("recoveryDropped", droppedWhileRecovering.get());
        m.put("recoveryMillis", recoveryMillis);
        // the log caught up from peers while serving (a replica whose log ended before entries its peers resolved,
        // e.g. lost before its region's first certificate): entries appended, transfers that gave some, requests
        RegionReplica r = replica;
        m.put("peerLogEntries", r == null ? 0L : r.peerLogEntries());
        m.put("peerLogTransfers", r == null ? 0L : r.peerLogTransfers());
        m.put("peerLogRequests", r == null ? 0L : r.peerLogRequests());
        m.put("checkpointWriteFailures", r == null ? 0L : r.checkpointWriteFailures());
        // copies of sub-batches this replica had logged already (retransmissions that arrived), and their bytes
        m.put("subBatchCopies", r == null ? 0L : r.subBatchCopies());
        m.put("subBatchCopyBytes", r == null ? 0L : r.subBatchCopyBytes());
        // rebuild while serving (issue 14 item 3): 1 if this open took the metadata first; then the blocks fetched
        // in the background, those still missing, whether it still fetches, GETs of missing blocks not answered, and
        // the time from serving to its checkpoint written
        m.put("recoveryMetadataFirst", recoveryMetadataFirst);
        if (r != null) {
            m.putAll(r.rebuildCounters());
        } else {
            m.put("rebuilding", 0L);
        }
        // 1: its own disk could not be read at this open and was moved aside (diskQuarantined() says where)
        m.put("recoveryDiskQuarantined", diskQuarantined == null ? 0L : 1L);
        // 1: the region's cells did not hold the certified stored checkpoint at this open (storeRefused() says why):
        // rebuilt from the peers (issue 27)
        m.put("recoveryStoreRefused", storeRefused == null ? 0L : 1L);
        // 1: checkpoints are metadata only, the blocks live once in the region's cells (tables since issue 27)
        m.put("storedCheckpoints", store != null && store.versioned() ? 1L : 0L);
        // GETs not answered because the region's cells could not be read (a damaged store file block)
        RegionReplica rr = replica;
        m.put("unreadableGets", rr == null ? 0L : rr.unreadableGets());
        // blocks of the region's cells that held another state than the verified base (HBase flushed later entries'
        // blocks at the close) and were set back to it before the replay
        m.put("replayResetBlocks", replayResetBlocks);
        // log appends and commit marks written off the loop: groups written (one hsync per file each) and records
        m.put("diskGroups", diskGroups.get());
        // 1: a log append or commit mark failed (e.g. its DataNode's disk lost): it logs nothing more in this open
        m.put("diskFailed", logWriteFailure.get() == null ? 0L : 1L);
        m.put("diskGroupRecords", diskGroupRecords.get());
        // syncs (hsync of the log and decision records) a client's FLUSH or FUA write asked for (task tput18)
        m.put("diskSyncs", diskSyncs.get());
        // hsyncs for leader replicas' own decisions written off the loop, each shared by a group's decisions (tput19)
        m.put("diskDecisionSyncs", diskDecisionSyncs.get());
        m.put("witnessTruncations", witnessTruncations.get());
        if (remoteHolders != null) {
            m.putAll(remoteHolders.counters());
        }
        return m;
    }

    /**
     * Messages and bytes the endpoint's RPCs carried for this region ({@code SalusReplicaEndpoint} counts them):
     * {@code in:client:<TYPE>} / {@code in:peer:<TYPE>} the envelopes of deliver calls from the client / from region
     * servers (message bytes), {@code in:*:deliverCall} and {@code in:client:pollCall} the whole requests,
     * {@code out:client:<TYPE>} the replies returned to the client, {@code out:*:deliverResponse} and
     * {@code out:client:pollResponse} the whole responses.
     */
    public io.salus.core.protocol.message.TrafficCounters traffic() {
        return traffic;
    }

    /** The region's cells as the replica's store. */
    public RegionStore store() {
        return store;
    }

    /** Why this open refused the region's cells (they did not hold the certified stored checkpoint), or null. */
    public String storeRefused() {
        return storeRefused;
    }

    /** Where this open moved the replica's unreadable Salus disk, or null. */
    public String diskQuarantined() {
        return diskQuarantined;
    }

    public int region() {
        return region;
    }

    public int replicaIndex() {
        return replicaIndex;
    }

    public void close() {
        closed = true;
        loop.shutdownNow();
        // The checkpoint writes queued behind the one in progress are not started (as if the server stopped before
        // them: nothing unwritten is signed). The one in progress is not interrupted: an interrupted HBase region
        // flush is a dropped memstore snapshot, for which HBase aborts the whole region server ("Replay of WAL
        // required"); it ends on its own (the closing region refuses the flush, and its checkpoint is never signed).
        checkpointWriter.shutdown();
        // a group being written finishes (not interrupted: an interrupted hsync breaks the HDFS stream); its
        // continuations are not run (the loop is shut down), and nothing queued after it is written
        diskWriter.shutdown();
        try {
            diskWriter.awaitTermination(10, TimeUnit.SECONDS); // before the endpoint closes the disk under it
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (remoteHolders != null) {
            remoteHolders.close();
        }
    }

}
