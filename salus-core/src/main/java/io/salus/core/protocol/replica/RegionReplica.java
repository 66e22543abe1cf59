package io.salus.core.protocol.replica;

import io.salus.core.cert.CertType;
import io.salus.core.cert.Certificate;
import io.salus.core.cert.RegionId;
import io.salus.core.cert.Statement;
import io.salus.core.cert.Wire;
import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.Signer;
import io.salus.core.crypto.Verifier;
import io.salus.core.merkle.Hash;
import io.salus.core.merkle.MerkleProof;
import io.salus.core.merkle.VolumeRootRecord;
import io.salus.core.protocol.LatencyTrace;
import io.salus.core.protocol.Membership;
import io.salus.core.protocol.Mutation;
import io.salus.core.protocol.ProtocolConfig;
import io.salus.core.protocol.ReplicaId;
import io.salus.core.protocol.RrsConfig;
import io.salus.core.protocol.Tentatives;
import io.salus.core.protocol.Transport;
import io.salus.core.protocol.message.BatchInfo;
import io.salus.core.protocol.message.Message;
import io.salus.core.protocol.message.Put;
import io.salus.core.protocol.message.SubBatch;
import io.salus.core.protocol.recovery.Coordination;
import io.salus.core.protocol.recovery.RecoveryException;
import io.salus.core.protocol.recovery.RegionLogRecovery;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;

/**
 * One region-server replica of an RRS (active storage, §3.3.2) and, for batches it leads, one
 * replica of the replicated batch leader (pipelined commit, §3.3.1).
 *
 * <p>PUT path: validate the client signature, every data checksum and prevNum (out-of-order
 * sub-batches wait for their predecessor); append to the own log on the colocated DataNode; forward
 * down the chain; send TENTATIVE_LOG_ENTRY to the 3 DataNode stores and 2 witnesses; after 5 acks vote
 * YES to the leader's replicas. Leader replicas decide COMMIT only with YES from all 3 replicas of
 * every participant and the previous batch's COMMIT certificate; participants commit in log order
 * on a COMMIT certificate (3 leader signatures) and send TENTATIVE_PUT_SUCCESS to the client.
 *
 * <p>Event-driven and single-threaded: the caller serialises {@link #receive} and {@link #tick}.
 * All I/O goes through {@link Transport}, {@link ReplicaDisk} and {@link Coordination}.
 */
public final class RegionReplica {
    /**
     * Batches whose BatchInfo has not arrived for which early votes and decision requests are kept;
     * beyond it they are dropped (their honest senders retransmit), so a faulty machine naming
     * batches that never come cannot make the replica's memory grow.
     */
    public static final int MAX_UNKNOWN_BATCHES = 64;
    /** The decision records are compacted at every this many CHECKPOINT certificates (GC, {@link #collectGarbage}). */
    public static final int DECISION_GC_EVERY = 4;
    /**
     * A TENTATIVE_COMMIT/ABORT this replica signed as a batch-leader replica stays on its disk until batches this
     * many ids later exist (besides the other conditions of {@link #leaderDecisionCollectable}): the next batch's
     * leader may ask for it as its previous batch's decision while that batch is open, and a client keeps fewer
     * batches outstanding than this (SalusVolume: {@code PIPELINE} = 32), so the batch after it is decided by then.
     */
    public static final long LEADER_DECISIONS_KEPT = 128;
    /** Retransmit unresolved work every this many ticks (an entry's first retransmission). */
    public static final int RETRANSMIT_TICKS = 4;
    /**
     * An unresolved entry's retransmissions back off, doubling from {@link #RETRANSMIT_TICKS} up to this many ticks:
     * an entry that waits for the decisions of the batches before it (pipelined commit) is not resent to the leader
     * every 200 ms (a 32-batch pipeline made every replica resend and re-verify hundreds of votes and decision
     * requests a second, on a machine already short of CPU), while a lost message is still resent within a second.
     */
    public static final int MAX_RETRANSMIT_TICKS = 16;
    /** A voted entry still unresolved after this many retransmission rounds is offered to every holder again. */
    public static final int STALLED_ROUNDS = 5;
    /**
     * An unresolved entry that every metadata holder acknowledged ({@link #chainLogged}) is sent to the chain
     * successor again only every this many retransmission rounds (about 15 s at the back-off cap), for a successor
     * that lost it without asking its peers for their log (a successor that restarts without it asks, and gets it
     * at the next round: {@link #onStateRequest}). Before task net18 every round resent it: about ten copies of each
     * 64-block sub-batch crossed the network in a pipelined fill.
     */
    public static final int PAYLOAD_RESEND_ROUNDS = 4 * STALLED_ROUNDS;
    private long ticks;
    /** Blocks of the region store set back to the verified base when this replica was built ({@link #resetStoreTo}). */
    private final int resetAtOpen;

    private final ProtocolConfig cfg;
    private final RrsConfig rrs;
    private final RegionId regionId;
    private final NodeId me;
    private final NodeId clientId;
    private final Signer signer;
    private final Verifier verifier;
    private final Membership membership;
    private final Transport net;
    private final ReplicaDisk disk;
    private final Coordination coordination;
    private final ReplicaHooks hooks;
    /** This replica's place in the chain (0: primary), for {@link LatencyTrace} stage names. */
    private final int pos;

    // region state (what is applied) and the GETs waiting for it
    private final RegionStore store;
    private long appliedSeq;
    private VolumeRootRecord rootRecord;
    private final TreeMap<Long, Hash> rootHistory = new TreeMap<>();
    private final List<PendingGet> pendingGets = new ArrayList<>();
    /**
     * GETs waiting for their prevNum to apply, at most (the oldest is dropped beyond it; the client retries a GET
     * that gets no answer). Only the client's GETs wait (the endpoint authenticates it, {@code CallAuth}); the
     * bound keeps even a runaway client from growing the list that every apply scans without limit.
     */
    public static final int MAX_PENDING_GETS = 4096;
    /** The tick at which each peer's last state request was answered (catch-up of a reopened peer). */
    private final Map<NodeId, Long> stateAnswered = new java.util.HashMap<>();
    /**
     * Catch-up of the log while serving (review rv15 finding 2): the peers asked for their log after this replica's
     * latest certified checkpoint whose answer has not come ({@link Message.StateTransfer}s from anyone else are
     * dropped unread).
     */
    private final Set<NodeId> logAsked = new HashSet<>();
    /** Peers that answered since {@link #catchUpFromPeersAtOpen}; asked again at each round until both have. */
    private final Set<NodeId> answeredAtOpen = new HashSet<>();
    private boolean askingAtOpen;
    /**
     * The peers' latest transfers while catching up: an entry is taken once corroborated (ReplicaCatchUp), by the
     * other peer's transfer or its LOG_ENTRY certificate ({@link #logEntryReader}).
     */
    private PeerTransfers peerTransfers = new PeerTransfers(ReplicaCatchUp.Corroboration.NONE);
    /**
     * Peers whose answer to a request of {@link #catchUpFromPeersAtOpen} held entries this replica could not take (not
     * decided at the peer yet), with the last index they held: asked again, backing off, while this replica's log
     * still ends at or before it (review rvw23-4). Such an entry is resolved at the peer a moment later and is never
     * sent again (a resolved entry is not retransmitted), so a replica caught up at open while its peer's last entry
     * was undecided stayed behind and, once the writer had stopped, the next mount waited for ever.
     */
    private final Map<NodeId, Long> aheadAtOpen = new java.util.HashMap<>();
    /** Peers asked by a request of {@link #catchUpFromPeersAtOpen} whose answer has not come yet. */
    private final Set<NodeId> askedAtOpen = new HashSet<>();
    /** Rounds since the last request to a peer of {@link #aheadAtOpen}, and the rounds between them. */
    private int aheadRounds;
    private int aheadAskRounds = 2 * STALLED_ROUNDS;
    /** Retransmission rounds a sub-batch has waited for a predecessor with the log not growing (at seq {@link #gapSeq}). */
    private int gapRounds;
    private long gapSeq = -1;
    /** Rounds until the next request while the gap lasts (doubles from {@link #STALLED_ROUNDS}). */
    private int gapAskRounds = STALLED_ROUNDS;
    /** What the catch-up took: peer log entries appended, transfers that gave entries, requests sent. */
    private volatile long peerLogEntries;
    private volatile long peerLogTransfers;
    private volatile long peerLogRequests;
    /** Highest batch id this replica has logged or learned a decision for (reported at mount). */
    private long lastBatchId;
    /** A mount fenced the previous writer: no sub-batch from the client below this batch id is logged any more. */
    private long fenceBelow;

    // garbage collection after CHECKPOINT certificates (issue 14 item 1, collectGarbage)
    /** Certificates formed since the decision records were last compacted. */
    private int certsSinceDecisionGc;
    /** Highest batch id of an entry at or below the latest CHECKPOINT certificate's index (-1: none yet). */
    private long batchThroughCertified = -1;
    /** Highest batch id this replica decided as a batch-leader replica. */
    private long maxLedBatch = -1;
    /** The participants of the batches this replica decided as a leader replica, while that decision is on disk. */
    private final Map<Long, List<Integer>> ledParticipants = new java.util.HashMap<>();
    /**
     * The highest index whose CHECKPOINT certificate this replica stored in coordination and truncated its log to
     * (written on the checkpoint writer, or inline): checkpoint files and cell versions are collected only up to it.
     */
    private volatile long persistedThrough = -1;
    /** GC steps that failed (the files stay; the next certificate tries again). */
    private final java.util.concurrent.atomic.AtomicLong gcFailures = new java.util.concurrent.atomic.AtomicLong();
    /** Decision records dropped by compaction since this replica started. */
    private long decisionsCollected;

    // writer fencing: the highest writer epoch this replica has recorded (a client-signed WRITER_EPOCH certificate,
    // recorded on the disk before it is acknowledged, reloaded on restart); sub-batches and BatchInfos of any other
    // epoch are refused. 0: no writer has fenced (simulations without leases)
    private long writerEpoch;

    // the three roles' state (Kafka raft's LeaderState/FollowerState split): the replica's log and
    // commit state, the batch-leader state of the batches its region leads, the checkpoint state
    private final ReplicaLog log;
    private final BatchLeaderState batchLeader = new BatchLeaderState(MAX_UNKNOWN_BATCHES);
    private final CheckpointState checkpoints;

    private record PendingGet(NodeId from, Message.GetRequest req) {
    }

    /**
     * Where checkpoints (flushes) are written: the disk's checkpoint file and the store's durability
     * ({@link RegionStore#markDurable(Map)}). Default: inline, on the caller's thread. An adapter passes a
     * single-threaded executor ({@link #writeCheckpointsOn}) so a flush (hundreds of ms on HDFS/HBase) does not
     * stop the event loop; the replica signs its TENTATIVE_CHECKPOINT only once the write completed.
     */
    private Executor checkpointWriter = Runnable::run;
    /** {@link #writeCheckpointsOn} was called: a CHECKPOINT certificate is also stored and the log GCed there. */
    private boolean checkpointsOffLoop;
    /** Flushes written (durable) and not yet taken by the event loop; filled by {@link #checkpointWriter}. */
    private final ConcurrentLinkedQueue<WrittenCheckpoint> checkpointsWritten = new ConcurrentLinkedQueue<>();
    /**
     * Checkpoint writes that failed, each thrown once on the loop (the adapter logs it). A failed write is not signed
     * and not retried as such: the next checkpoint index writes every block not yet durable (the store forgets a
     * block from its dirty set only once a write of it completed), so one transient disk error costs one checkpoint,
     * not every later one (rec15: a replica whose write failed once never signed a checkpoint again, so no further
     * CHECKPOINT certificate formed and its region's logs were never collected).
     */
    private final ConcurrentLinkedQueue<CheckpointWriteFailed> checkpointFailures = new ConcurrentLinkedQueue<>();
    private volatile long checkpointWriteFailures;

    private record WrittenCheckpoint(long index, Hash root, VolumeRootRecord record) {
    }

    /**
     * A checkpoint write failed (thrown once by the {@link #receive} or {@link #tick} after it, once that call's own
     * work is done: nothing of it is lost).
     */
    public static final class CheckpointWriteFailed extends IllegalStateException {
        CheckpointWriteFailed(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /**
     * Applying a committed entry to the region's store failed (its cells could not be written or read, e.g. a store
     * file block that fails its checksum under a block being overwritten, a region that refuses puts): the entry may be
     * half applied, so this replica logs and commits nothing more in this incarnation (as after a failed log write) and
     * the adapter reopens the region, whose recovery replays the log over the verified base. Before (review rv37) the
     * loop logged and dropped the exception and the replica went on with a store that no longer held what its log
     * said: its root differed from its peers', no checkpoint certified, and a mount saw three different states.
     */
    public static final class StoreWriteFailed extends IllegalStateException {
        StoreWriteFailed(String message, Throwable cause) {
            super(message, cause);
        }

        /**
         * The store refused the write because its region is closing ({@link RegionStore.Closing}): the replica stops
         * as after any failed store write, but this is no disk failure and asks for no reopen. Before, a close under
         * a running write (an operator's unassign) was reported as one and the region was opened again at once.
         */
        public boolean regionClosing() {
            return getCause() instanceof RegionStore.Closing;
        }
    }

    /**
     * Where log appends and commit marks are made durable: null, on the event loop ({@link ReplicaDisk#append},
     * {@link ReplicaDisk#recordDecision}, as the simulator and unit tests run); else off the loop
     * ({@link #writeDiskOn}).
     */
    private DurableWriter diskWriter;
    /** Records handed to {@link #diskWriter} whose {@code then} has not run yet. */
    private int diskWritesPending;
    /** A {@link #diskWriter} write failed: nothing more is logged or committed here (the region must reopen). */
    private boolean diskBroken;

    public RegionReplica(ProtocolConfig cfg, RrsConfig rrs, NodeId me, NodeId clientId, Signer signer,
                         Verifier verifier, Membership membership, Transport net, ReplicaDisk disk,
                         Coordination coordination, ReplicaHooks hooks, RegionSnapshot base) {
        this(cfg, rrs, me, clientId, signer, verifier, membership, net, disk, coordination, hooks, base,
                new InMemoryRegionStore(cfg, base.blocks()));
    }

    /**
     * As above, over a given {@link RegionStore} (an adapter's, e.g. the HBase region's own cells) instead of an
     * in-memory store filled from {@code base.blocks()}. The store may hold any state (an HBase region closed or
     * flushed after later entries applied holds more than {@code base}): every block whose leaf differs from
     * {@code base} is set back to its {@code base} content first ({@link #resetStoreTo}), then the entries after
     * {@code base.throughIndex()} are re-applied from the disk, so every state the replay passes (and signs at a
     * flush index) is the state at that index.
     */
    public RegionReplica(ProtocolConfig cfg, RrsConfig rrs, NodeId me, NodeId clientId, Signer signer,
                         Verifier verifier, Membership membership, Transport net, ReplicaDisk disk,
                         Coordination coordination, ReplicaHooks hooks, RegionSnapshot base, RegionStore store) {
        this(cfg, rrs, me, clientId, signer, verifier, membership, net, disk, coordination, hooks, base, store, null);
    }

    /**
     * A replica <b>rebuilt while serving</b> (issue 14 item 3), built after the first phase of its rebuild
     * ({@link ReplicaCatchUp#installMetadata}): {@code store} holds the certified state's region tree
     * ({@code rebuildLeaves}, the leaf hash of every block of {@code base}, whose {@code blocks} are empty) without the
     * blocks, and {@code disk} the log entries and decisions after {@code base.throughIndex()} but no checkpoint
     * through it. It serves at once (logs, votes, applies and acknowledges writes: a write replaces whole blocks and
     * the tree is complete), except that a GET of a block still missing is not answered (its client asks another
     * replica) and it signs no checkpoint; meanwhile it fetches the blocks from its peers a few at a time at
     * {@link #rebuildRate} blocks per second, each taken only if its leaf hash is the certified one, puts those not
     * overwritten since into the store, and once it has all of them writes the checkpoint through
     * {@code base.throughIndex()} to its disk and signs checkpoints again.
     */
    public RegionReplica(ProtocolConfig cfg, RrsConfig rrs, NodeId me, NodeId clientId, Signer signer,
                         Verifier verifier, Membership membership, Transport net, ReplicaDisk disk,
                         Coordination coordination, ReplicaHooks hooks, RegionSnapshot base, RegionStore store,
                         Map<Long, Hash> rebuildLeaves) {
        if (!rrs.replicas().contains(me)) {
            throw new IllegalArgumentException(me + " is not a replica of " + rrs);
        }
        this.cfg = cfg;
        this.rrs = rrs;
        this.regionId = rrs.region();
        this.me = me;
        this.clientId = clientId;
        this.signer = signer;
        this.verifier = verifier;
        this.membership = membership;
        this.net = net;
        this.disk = disk;
        this.coordination = coordination;
        this.hooks = hooks;
        this.pos = rrs.replicas().indexOf(me);
        this.store = store;
        if (rebuildLeaves != null) {
            if (!base.blocks().isEmpty()) {
                throw new IllegalArgumentException("a replica rebuilt while serving starts from the leaves, not blocks");
            }
            this.rebuild = new Rebuild(base, rebuildLeaves);
            this.rebuilding = true;
            this.rebuildMissing = rebuild.missing.size();
            if (!store.versioned()) {
                rebuild.heldChecked = null; // fetches everything (its checkpoint file carries the blocks)
            }
            this.resetAtOpen = 0; // the store holds exactly the certified tree (installMetadata set it)
        } else if (base.isStored() && !store.versioned()) {
            throw new RegionStore.StoreStateException(me + ": its checkpoint through " + base.throughIndex()
                    + " is stored in the region's cell versions, and the region keeps one version of its cells now"
                    + " (VERSIONS set back to 1?): set the family back to VERSIONS => 2147483647, or the replica is"
                    + " rebuilt from its peers");
        } else if (base.isStored()) {
            // issue 27: the checkpoint is metadata only; the store holds the blocks as of the recorded version and
            // sets back what was applied after it (checked against the certified root: StoreStateException if not)
            this.resetAtOpen = store.resetTo(base.stored().storeVersion(), base.stored().regionRoot());
            store.retainFrom(base.stored().storeVersion()); // the certified base: nothing older is read again
        } else {
            this.resetAtOpen = resetStoreTo(cfg, base, store);
        }
        this.appliedSeq = base.lastSeq();
        this.rootRecord = base.rootRecord();
        this.log = new ReplicaLog(base.throughIndex(), base.lastSeq());
        this.checkpoints = new CheckpointState(base.throughIndex(), store.root(), base.rootRecord());
        rootHistory.put(appliedSeq, store.root());
        // restart: entries on disk after the base are prepared; decisions are re-learned from leaders
        for (long i = log.nextIndex; i <= disk.lastIndex(rrs.generation()); i++) {
            byte[] b = disk.read(rrs.generation(), i);
            if (b == null) {
                break;
            }
            SubBatch sb;
            try {
                sb = SubBatch.decode(b);
            } catch (IllegalArgumentException e) {
                break; // corrupted local tail: stop; recovery repairs it from peers if needed
            }
            log.add(i, sb, cfg.hash().hash(b));
            writerEpoch = Math.max(writerEpoch, sb.epoch()); // logged only at the replica's epoch then
            lastBatchId = Math.max(lastBatchId, sb.batchId());
        }
        // restart: the decisions this replica signed as a leader replica, and the decision
        // certificates it resolved entries with, were made durable before they were sent
        for (Certificate d : disk.decisions(rrs.generation())) {
            if (d.type() == CertType.WRITER_EPOCH) {
                // the fence survives the restart: a restarted replica never accepts the fenced writer again
                Statement.WriterEpoch we = d.statement(Statement.WriterEpoch.class);
                if (we.volume().equals(cfg.volume()) && d.verify(verifier, Set.of(clientId))) {
                    writerEpoch = Math.max(writerEpoch, we.epoch());
                }
                continue;
            }
            if (d.statement() instanceof Statement.Decision ds && ds.volume().equals(cfg.volume())) {
                lastBatchId = Math.max(lastBatchId, ds.batchId());
            }
            if ((d.type() == CertType.TENTATIVE_COMMIT || d.type() == CertType.TENTATIVE_ABORT)
                    && d.signers().equals(Set.of(me)) && d.verify(verifier, Set.of(me))) {
                batchLeader.reload(d.statement(Statement.Decision.class).batchId(), d);
            } else if (d.type() == CertType.COMMIT || d.type() == CertType.ABORT) {
                Statement.Decision st = d.statement(Statement.Decision.class);
                int leader = st.leader().index();
                if (st.volume().equals(cfg.volume()) && leader >= 0 && leader < cfg.regionCount()
                        && st.generation() == membership.current(leader).generation()
                        && d.verify(verifier, membership.current(leader).replicaSet())) {
                    log.learnDecision(st.batchId(), d);
                }
            }
        }
        reloadCommittedBatchInfos();
        tryCommit(); // re-apply the entries whose decision marks survived the restart
    }

    /** BatchInfos recorded with this replica's COMMITs taken back at its restart, and refused (review rv20-1). */
    private volatile long batchInfosReloaded;
    private volatile long batchInfosRefusedAtReload;
    private volatile String lastReloadedBatchInfoRefusal;

    public long batchInfosReloaded() {
        return batchInfosReloaded;
    }

    public long batchInfosRefusedAtReload() {
        return batchInfosRefusedAtReload;
    }

    public String lastReloadedBatchInfoRefusal() {
        return lastReloadedBatchInfoRefusal;
    }

    /**
     * Review rv20-1: at a restart, the client-signed BatchInfos recorded with this replica's TENTATIVE_COMMITs come back
     * with them, so the reloaded COMMIT proves itself to a mount with its BatchInfo (item 6 of "Recovery at mount") and
     * the mount can re-send it to a leader replica that lost its decision (item 5). Before, the BatchInfo lived only
     * in memory: after rv19-2's lost queued COMMIT and a restart of the other two leader replicas nobody held it, the
     * third leader could never decide, no ABORT could form, and every mount waited for ever. A record is the disk's
     * word only: it is taken only if the client signed it and it is exactly the BatchInfo of a TENTATIVE_COMMIT this
     * replica signed and reloaded (same volume, batch and seqs, this region among its participants); else it is
     * refused (counted, the COMMIT loads without it, as one recorded before rv20-1).
     */
    private void reloadCommittedBatchInfos() {
        for (BatchInfo info : disk.decisionBatchInfos(rrs.generation())) {
            String why = reloadedBatchInfoProblem(info);
            if (why == null) {
                batchLeader.rememberCommittedInfo(info.batchId(), info);
                batchInfosReloaded++;
            } else {
                batchInfosRefusedAtReload++;
                lastReloadedBatchInfoRefusal = "batch " + info.batchId() + ": " + why;
            }
        }
    }

    private String reloadedBatchInfoProblem(BatchInfo info) {
        if (!info.volume().equals(cfg.volume())) {
            return "of volume " + info.volume();
        }
        if (info.clientSig() == null || !verifier.verify(clientId, info.signedBytes(), info.clientSig())) {
            return "not signed by the client";
        }
        Certificate mine = batchLeader.decision(info.batchId());
        if (mine == null || mine.type() != CertType.TENTATIVE_COMMIT) {
            return "no COMMIT of this replica for it on the disk";
        }
        Statement.Decision d = mine.statement(Statement.Decision.class);
        if (d.firstSeq() != info.firstSeq() || d.lastSeq() != info.lastSeq() || !d.leader().equals(regionId)
                || !info.participants().contains(regionId.index())) {
            return "not the BatchInfo of its COMMIT (seqs " + d.firstSeq() + ".." + d.lastSeq() + ", BatchInfo "
                    + info.firstSeq() + ".." + info.lastSeq() + " over regions " + info.participants() + ")";
        }
        return null;
    }

    /**
     * Makes {@code store} hold exactly {@code base}'s cells: each block whose leaf hash differs from its content in
     * {@code base} (all zeros if {@code base} does not hold it) is applied again with that content, so it is also in
     * the store's dirty set (the next checkpoint writes it). A region store outlives the replica's memory: HBase
     * flushes the region's memstore when it closes it (and under memory pressure), so a reopened store can hold
     * blocks of entries after the certified checkpoint, while the restart re-applies only from that checkpoint on.
     * Replayed over such a store, the root at a flush index mixed the later entries' blocks in: the three replicas
     * signed it (all three reopened over the same cells) and the CHECKPOINT certificate vouched for a state their
     * checkpoint files do not compose, so none of them could start from its own disk or accept a peer's transfer
     * again (rec15; seen as SalusUpReopenTest's "region tree root ... differs from the certified" after SIGTERM).
     *
     * @return the blocks set back
     */
    static int resetStoreTo(ProtocolConfig cfg, RegionSnapshot base, RegionStore store) {
        Map<Long, Hash> have = store.leafHashes();
        Set<Long> blocks = new java.util.TreeSet<>(have.keySet());
        blocks.addAll(base.blocks().keySet());
        byte[] zeros = new byte[cfg.blockSize()];
        Hash emptyLeaf = cfg.hash().leafHash(zeros);
        int reset = 0;
        for (long k : blocks) {
            byte[] want = base.blocks().getOrDefault(k, zeros);
            Hash wantLeaf = want == zeros ? emptyLeaf : cfg.hash().leafHash(want);
            if (!wantLeaf.equals(have.getOrDefault(k, emptyLeaf))) {
                store.apply(k, want.clone());
                reset++;
            }
        }
        return reset;
    }

    /**
     * The state a restarting replica of {@code rrs} may serve from: its on-disk checkpoint through the
     * latest CHECKPOINT certificate of its generation that {@code coordination} holds (signed by the
     * generation's three replicas), verified against that certificate (generation, index, last seq,
     * volume-root record and region tree root) before anything is served. Generation 0 with no
     * certificate yet starts empty (from its own log: it cannot tell a fresh region from one whose log it lost, so
     * its opener then asks the peers for theirs, {@link #catchUpFromPeersAtOpen}). A disk whose checkpoint does not match (corrupted, lost, or a
     * different state) is refused: the replica must be replaced through recovery, never serve it.
     *
     * @throws RecoveryException naming the region, the certificate and what differs
     */
    public static RegionSnapshot verifiedBase(ProtocolConfig cfg, RrsConfig rrs, Verifier verifier,
                                              Membership membership, ReplicaDisk disk, Coordination coordination)
            throws RecoveryException {
        Optional<Certificate> latest = coordination.latestCheckpoint(rrs.region(),
                Coordination.signedByItsGeneration(verifier, membership));
        Statement.Checkpoint cp = latest.map(c -> c.statement(Statement.Checkpoint.class)).orElse(null);
        if (cp != null && cp.generation() > rrs.generation()) {
            throw new RecoveryException(rrs.region() + " generation " + rrs.generation() + " was replaced by generation "
                    + cp.generation() + ": this replica must not restart in it");
        }
        if (cp == null || cp.generation() < rrs.generation()) {
            if (rrs.generation() == 0) {
                return RegionSnapshot.empty(0, RegionLogRecovery.emptyVolumeRoot(cfg));
            }
            throw new RecoveryException(rrs.region() + " generation " + rrs.generation() + " has no CHECKPOINT"
                    + " certificate of its own generation in coordination: its starting state cannot be verified;"
                    + " run recovery for the region");
        }
        RegionSnapshot s = disk.readSnapshot(rrs.generation(), cp.throughIndex());
        String why = s == null ? "the disk has no checkpoint through index " + cp.throughIndex()
                : s.mismatch(cp, cfg.hash(), cfg.blockSize(), cfg.layout());
        if (why != null) {
            throw new RecoveryException(rrs.region() + ": the on-disk checkpoint is refused, " + why + " (certificate " + cp + "); replace this replica through recovery");
        }
        return s;
    }

    // ------------------------------------------------------------------ accessors (tests, adapters)

    public NodeId id() {
        return me;
    }

    public RrsConfig config() {
        return rrs;
    }

    /** Blocks of the region store that held another state than the verified base at open and were set back. */
    public int resetAtOpen() {
        return resetAtOpen;
    }

    public long appliedSeq() {
        return appliedSeq;
    }

    public Hash regionRoot() {
        return store.root();
    }

    /** Region root after the sub-batch ending at {@code seq} was applied, or null if unknown. */
    public Hash regionRootAt(long seq) {
        return rootHistory.get(seq);
    }

    public VolumeRootRecord rootRecord() {
        return rootRecord;
    }

    /** The last log index committed (or aborted) and acted on here: its mark durable, a COMMIT applied. */
    public long committedIndex() {
        return log.resolvedIndex;
    }

    /** The highest writer epoch this replica has recorded (0: never fenced). */
    public long writerEpoch() {
        return writerEpoch;
    }

    public byte[] block(long localIndex) {
        return store.read(localIndex);
    }

    /** Leaf hashes of written blocks (for a client fetching the region subtree at mount). */
    public Map<Long, Hash> leafHashes() {
        return store.leafHashes();
    }

    /** The commit certificate this replica holds for a batch, or null. */
    public Certificate decisionCertificate(long batchId) {
        return log.decision(batchId);
    }

    public Map<Long, Certificate> decisionCertificates() {
        return log.decisions();
    }

    /**
     * Sizes of the per-batch and per-entry state the replica keeps in memory (tests and metrics):
     * bounded by the work not yet covered by a checkpoint certificate, not by the length of the run.
     */
    public Map<String, Integer> retainedSizes() {
        Map<String, Integer> m = new TreeMap<>();
        log.sizes(m);
        batchLeader.sizes(m);
        checkpoints.sizes(m);
        m.put("rootHistory", rootHistory.size());
        m.put("pendingGets", pendingGets.size());
        // bounded like the leader decisions on the disk (LEADER_DECISIONS_KEPT batch ids), not by the checkpoint interval
        m.put("ledParticipants", ledParticipants.size());
        return m;
    }

    // ------------------------------------------------------------------ events

    /**
     * Runs checkpoint writes on {@code writer} (single-threaded: the writes of one replica must complete in
     * order) instead of the event loop. Call before the replica receives or ticks. The loop takes completed
     * writes at its next {@link #receive} or {@link #tick}.
     */
    public void writeCheckpointsOn(Executor writer) {
        this.checkpointWriter = writer;
        this.checkpointsOffLoop = true;
    }

    /**
     * Makes log appends and commit marks durable through {@code writer} instead of on the event loop (task tput17):
     * the loop goes on with other messages while HDFS syncs, and the writer may share one hsync among the records
     * queued meanwhile. Call before the replica receives or ticks.
     */
    public void writeDiskOn(DurableWriter writer) {
        this.diskWriter = writer;
    }

    /**
     * On the loop: the {@link #writeDiskOn writer} could not make a record durable. Nothing more is logged or
     * committed by this replica (its later records were not written either); thrown once for the adapter to log. The
     * region must be reopened (recovery at open) for this replica to take part again.
     */
    public void diskWriteFailed(RuntimeException e) {
        diskBroken = true;
        throw e;
    }

    /** Whether the next log append or commit mark goes through the writer (once one is pending, always: order). */
    private boolean writeOffLoop() {
        return diskWriter != null && (diskWritesPending > 0 || !LatencyTrace.legacy() && !LatencyTrace.inlineDisk());
    }

    public void receive(NodeId from, Message m) {
        signWrittenCheckpoints();
        receiveInner(from, m);
        throwCheckpointFailure(); // after the message is handled: it is not lost to the report
    }

    private void receiveInner(NodeId from, Message m) {
        if (m instanceof Message.SubBatchMsg s) {
            onSubBatch(from, s.subBatch());
        } else if (m instanceof Message.StoreAck a) {
            onStoreAck(from, a);
        } else if (m instanceof Message.ChainAck a) {
            onChainAck(from, a);
        } else if (m instanceof Message.BatchInfoMsg b) {
            onBatchInfo(from, b.info());
        } else if (m instanceof Message.Vote v) {
            onVote(from, v);
        } else if (m instanceof Message.DecisionRequest r) {
            if (r.leaderRegion() == regionId.index()) { // addressed to this region's leader replica
                onDecisionRequest(from, r.batchId());
            }
        } else if (m instanceof Message.DecisionMsg d) {
            onDecision(d.tentative());
        } else if (m instanceof Message.GetRequest g) {
            onGet(from, g);
        } else if (m instanceof Message.CheckpointPropose p) {
            onCheckpointPropose(from, p);
        } else if (m instanceof Message.CheckpointVote v) {
            onCheckpointVote(v.tentative());
        } else if (m instanceof Message.WriterFence f) {
            onWriterFence(from, f.writerEpoch());
        } else if (m instanceof Message.FlushRequest f) {
            onFlushRequest(from, f.flushId());
        } else if (m instanceof Message.MountQuery q) {
            onMountQuery(from, q);
        } else if (m instanceof Message.LeafQuery q) {
            onLeafQuery(from, q);
        } else if (m instanceof Message.StateRequest r) {
            onStateRequest(from, r);
        } else if (m instanceof Message.StateTransfer x) {
            onStateTransfer(from, x);
        } else if (m instanceof Message.RecoveryAbort a) {
            onRecoveryAbort(from, a);
        } else if (m instanceof Message.RecoveryBatchInfo r) {
            onRecoveryBatchInfo(from, r);
        } else if (m instanceof Message.RebuildRequest r) {
            onRebuildRequest(from, r);
        } else if (m instanceof Message.RebuildBlocks b) {
            onRebuildBlocks(from, b);
        }
    }

    // ------------------------------------------------------------------ rebuild while serving (issue 14 item 3)

    /** Default {@link #rebuildRate}: blocks per second a rebuilding replica fetches from its peers. */
    public static final int DEFAULT_REBUILD_BLOCKS_PER_SECOND = 64;
    /** Blocks asked for in one {@link Message.RebuildRequest} at most. */
    public static final int REBUILD_CHUNK = 16;
    /** An unanswered block request is asked again, of the other peer, after this long. */
    public static final long REBUILD_ANSWER_MILLIS = 2_000;

    /** The second phase of a rebuild while serving: what is still to fetch. Loop thread only. */
    private final class Rebuild {
        final long through;
        final long lastSeq;
        final VolumeRootRecord record;
        final Map<Long, Hash> leaves;
        /**
         * The fetched blocks, for the checkpoint file written once all are here; null over a versioned store, which
         * holds them itself (issue 27: no copy of the region in memory).
         */
        final TreeMap<Long, byte[]> fetched = store.versioned() ? null : new TreeMap<>();
        final java.util.TreeSet<Long> missing;
        final long startedAt = System.currentTimeMillis();
        double tokens;
        long tokensAt = startedAt;
        List<Long> asked;
        NodeId askedPeer;
        long askedAt;
        int peer;

        Rebuild(RegionSnapshot base, Map<Long, Hash> leaves) {
            this.through = base.throughIndex();
            this.lastSeq = base.lastSeq();
            this.record = base.rootRecord();
            this.leaves = new TreeMap<>(leaves);
            this.missing = new java.util.TreeSet<>(leaves.keySet());
        }

        /**
         * Over a versioned store only (issue 27's Merkle diff): takes out of {@link #missing} the next blocks (at
         * most {@link #HOLD_CHECKS_PER_TICK} per call, so that the reads spread over ticks) that the store already
         * holds with their certified leaf; they are not fetched. A store without versions writes the fetched blocks
         * as its checkpoint ({@link #fetched}): it fetches every block (review rvw27-1: a held block left out of it
         * made a checkpoint that is not the certified state).
         */
        void dropHeld() {
            if (fetched != null || heldChecked == null) {
                return;
            }
            int checked = 0;
            Long k = heldChecked == Long.MIN_VALUE ? (missing.isEmpty() ? null : missing.first())
                    : missing.higher(heldChecked);
            while (k != null && checked++ < HOLD_CHECKS_PER_TICK) {
                Long next = missing.higher(k);
                if (store.holds(k, leaves.get(k))) {
                    missing.remove(k);
                    rebuildHeld++;
                }
                heldChecked = k;
                k = next;
            }
            if (k == null) {
                heldChecked = null; // every block checked once
            }
        }

        /** The last block {@link #dropHeld} checked (MIN_VALUE: none yet; null: all checked). */
        Long heldChecked = Long.MIN_VALUE;
    }

    /** Blocks a rebuild over a versioned store checks per tick for being held already (one GET each). */
    static final int HOLD_CHECKS_PER_TICK = 512;
    /** Blocks a rebuild did not fetch because the store held them with the certified leaf (the Merkle diff). */
    private volatile long rebuildHeld;

    private Rebuild rebuild;
    private volatile int rebuildRate = DEFAULT_REBUILD_BLOCKS_PER_SECOND;
    private volatile long rebuildBlocks;
    private volatile long rebuildMissing;
    private volatile long rebuildMillis = -1;
    private volatile long rebuildRequests;
    private volatile long rebuildDroppedGets;
    private volatile boolean rebuilding;
    /** The tick at which each peer's last rebuild request was answered. */
    private final Map<NodeId, Long> rebuildAnswered = new java.util.HashMap<>();

    /**
     * Blocks per second this replica fetches from its peers while it is rebuilt (the throttle that keeps the rebuild
     * from taking the client's throughput; at least 1). Call before the replica ticks, or any time.
     */
    public void rebuildRate(int blocksPerSecond) {
        this.rebuildRate = Math.max(1, blocksPerSecond);
    }

    /** Whether this replica is still fetching the blocks of its rebuild (it serves meanwhile). */
    public boolean rebuilding() {
        return rebuilding;
    }

    /**
     * The rebuild's counters: blocks fetched and still missing, requests sent, GETs not answered because their block
     * was missing, and the time from the replica's start to the checkpoint written (-1: not rebuilt, or not done).
     */
    public Map<String, Long> rebuildCounters() {
        return Map.of("rebuildBlocks", rebuildBlocks, "rebuildMissing", rebuildMissing, "rebuildRequests",
                rebuildRequests, "rebuildDroppedGets", rebuildDroppedGets, "rebuildMillis", rebuildMillis,
                "rebuilding", rebuilding() ? 1L : 0L, "rebuildHeld", rebuildHeld);
    }

    /** A peer rebuilt while serving asks for the metadata of the certified state, or for some of its blocks. */
    private void onRebuildRequest(NodeId from, Message.RebuildRequest r) {
        if (from.equals(me) || !rrs.replicas().contains(from) || r.region() != regionId.index()
                || r.generation() != rrs.generation() || r.blocks().size() > REBUILD_CHUNK) {
            return;
        }
        Long last = rebuildAnswered.get(from);
        if (last != null && (last == ticks || (r.blocks().isEmpty() && ticks - last < RETRANSMIT_TICKS))) {
            // one answer per peer per tick, and the metadata (a scan of the region's leaves and a read of its log
            // after the checkpoint) once per retransmission period: a peer cannot make this replica read its disk
            // in a loop (review rv37: 20 whole-region scans a second)
            return;
        }
        rebuildAnswered.put(from, ticks);
        Message m = r.blocks().isEmpty() ? ReplicaCatchUp.answerMetadata(cfg, rrs, disk, store, r.throughIndex())
                : ReplicaCatchUp.answerBlocks(rrs, disk, store, r.throughIndex(), r.blocks());
        if (m != null) {
            net.send(from, m);
        }
    }

    /** Blocks of the certified state for this rebuilding replica: each taken only if its leaf is the certified one. */
    private void onRebuildBlocks(NodeId from, Message.RebuildBlocks x) {
        Rebuild b = rebuild;
        if (b == null || !from.equals(b.askedPeer) || x.region() != regionId.index()
                || x.generation() != rrs.generation() || x.throughIndex() != b.through) {
            return;
        }
        int took = 0;
        for (Message.StateBlock sb : x.blocks()) {
            Hash want = b.leaves.get(sb.localBlock());
            if (want == null || !b.missing.contains(sb.localBlock()) || sb.data().length != cfg.blockSize()
                    || !cfg.hash().leafHash(sb.data()).equals(want)) {
                continue; // not asked, already there, or not the certified content: a faulty peer's
            }
            if (store.leaf(sb.localBlock()).equals(want)) {
                try {
                    store.apply(sb.localBlock(), sb.data()); // not overwritten since: the store gets its content
                } catch (RuntimeException failed) {
                    // review rv38: the block was taken out of the missing set first, so a refused put (a busy or
                    // closing region) ended the rebuild with the certified leaf in the tree and no content in the
                    // cells; now it stays missing and the replica stops (its region reopens and rebuilds again)
                    diskBroken = true;
                    throw new StoreWriteFailed(me + ": writing rebuilt block " + sb.localBlock() + " to the region's"
                            + " store failed; this replica commits nothing more until its region reopens", failed);
                }
            }
            if (b.fetched != null) {
                b.fetched.put(sb.localBlock(), sb.data());
            }
            b.missing.remove(sb.localBlock());
            took++;
        }
        rebuildBlocks += took;
        rebuildMissing = b.missing.size();
        if (took == 0) {
            b.peer++; // nothing usable: the other peer next
        }
        b.asked = null;
        if (b.missing.isEmpty()) {
            finishRebuild();
        }
    }

    /** On every tick while rebuilding: asks for the next missing blocks when the throttle allows. */
    private void rebuildStep() {
        Rebuild b = rebuild;
        if (b == null) {
            return;
        }
        b.dropHeld();
        rebuildMissing = b.missing.size();
        if (b.missing.isEmpty()) {
            finishRebuild(); // a write of the checkpoint that failed is tried again
            return;
        }
        long now = System.currentTimeMillis();
        int rate = rebuildRate;
        int chunk = Math.min(REBUILD_CHUNK, rate);
        b.tokens = Math.min(chunk, b.tokens + (now - b.tokensAt) * rate / 1000.0);
        b.tokensAt = now;
        if (b.asked != null) {
            if (now - b.askedAt < REBUILD_ANSWER_MILLIS) {
                return;
            }
            b.peer++; // no answer: the other peer
            b.asked = null;
        }
        int n = Math.min(chunk, b.missing.size());
        if (b.tokens < n) {
            return;
        }
        b.tokens -= n;
        List<Long> ask = new ArrayList<>(n);
        for (Long k : b.missing) {
            if (ask.size() == n) {
                break;
            }
            ask.add(k);
        }
        List<NodeId> peers = new ArrayList<>(rrs.replicas());
        peers.remove(me);
        NodeId p = peers.get(b.peer % peers.size());
        b.asked = ask;
        b.askedPeer = p;
        b.askedAt = now;
        rebuildRequests++;
        net.send(p, new Message.RebuildRequest(regionId.index(), rrs.generation(), b.through, ask));
    }

    /**
     * Every block of the certified state is here: writes it as the checkpoint through the certified index (the disk
     * now verifies at a reopen; later checkpoints compose on it), then signs the checkpoints proposed meanwhile.
     */
    private void finishRebuild() {
        Rebuild b = rebuild;
        if (b.fetched != null) {
            RegionSnapshot s = new RegionSnapshot(rrs.generation(), b.through, b.lastSeq, b.fetched, b.record);
            disk.writeSnapshot(s); // throws on a disk error: the next tick tries again
        }
        // a versioned store: the state through the certified index never existed in it as one version (the tree was
        // set first, blocks came in between later writes), so nothing is written; the next checkpoint index records a
        // version holding every block, and checkpoints are signed from there on
        rebuild = null;
        rebuilding = false;
        rebuildMissing = 0;
        rebuildMillis = System.currentTimeMillis() - b.startedAt;
        for (Long k : checkpoints.proposals()) {
            if (checkpoints.hasSnapshot(k)) {
                signCheckpoint(k);
            }
        }
    }

    /** A GET of a block this rebuilding replica does not hold yet (the certified content not fetched, nor overwritten). */
    private boolean missingForRebuild(long local) {
        Rebuild b = rebuild;
        if (b == null || !b.missing.contains(local)) {
            return false;
        }
        return store.leaf(local).equals(b.leaves.get(local));
    }

    /**
     * A peer replica of this RRS recovers at its region open and asks for the state through a certified checkpoint
     * and the log after it ({@link ReplicaCatchUp}). Answered from the disk, at most once per
     * {@link #RETRANSMIT_TICKS} ticks per peer (it asks again until it installed an answer); nobody else is answered.
     */
    private void onStateRequest(NodeId from, Message.StateRequest r) {
        if (from.equals(me) || !rrs.replicas().contains(from) || r.region() != regionId.index()
                || r.generation() != rrs.generation()) {
            return;
        }
        if (from.equals(rrs.next(me))) {
            // the chain successor asks for the log: it reopened (maybe without its log) or waits for a predecessor.
            // An undecided entry is not in any transfer it may take while serving (ReplicaCatchUp#continuation), so
            // this replica's unresolved entries go to it again at their next round, even those its holders vouch for
            for (ReplicaLog.Entry e : log.entries()) {
                if (!e.resolved && r.throughIndex() < e.index) {
                    e.successorAsked = true;
                    e.successorLogged = false; // its acknowledgement may predate a lost log: it acknowledges again
                }
            }
        }
        Long last = stateAnswered.get(from);
        if (last != null && ticks - last < RETRANSMIT_TICKS) {
            return;
        }
        stateAnswered.put(from, ticks);
        Message.StateTransfer x = ReplicaCatchUp.answer(cfg, rrs, disk, r.throughIndex());
        if (x != null) {
            net.send(from, x);
        }
    }

    /**
     * Mount (§3.3.3): a new writer asks for this region's state; the replica answers with it signed (bound to the
     * query's nonce). The leaf hashes come apart, a range at a time ({@link #onLeafQuery}). Only the volume's client
     * is answered.
     */
    private void onMountQuery(NodeId from, Message.MountQuery q) {
        if (!from.equals(clientId)) {
            return;
        }
        if (q.fenceBelow() > 0) {
            if (q.signature() == null || !verifier.verify(clientId,
                    Message.MountQuery.signedBytes(cfg.volume(), q.nonce(), q.fenceBelow()), q.signature())) {
                return; // only the client fences its predecessor
            }
            if (q.fenceBelow() > fenceBelow) {
                fenceBelow = q.fenceBelow();
                // a sub-batch parked for its predecessor is logged only once that one is: after the fence the client's
                // missing predecessor is never logged here, so the parked one never is either. Dropped now, so that
                // what this replica reports below (no entry of a batch) stays true (recovery's proof that a batch
                // never commits). One parked from the chain predecessor comes again with its retransmission.
                log.dropWaitingBelow(fenceBelow);
            }
        }
        Message.MountState honest = new Message.MountState(q.nonce(), cfg.volume(), regionId.index(), rrs.generation(),
                fenceBelow, lastBatchId, log.lastAcceptedSeq, log.nextIndex - 1, log.resolvedIndex, appliedSeq, store.root(),
                rootRecord.root(), rootRecord.seq(), null);
        Message.MountState s = hooks.mountReport(honest);
        net.send(clientId, s.withSignature(signer.sign(s.signedBytes())));
        if (q.fenceBelow() > 0) {
            net.send(clientId, recoveryState(q.nonce()));
        }
    }

    /**
     * Mount: the leaf hashes of this region's written blocks in the asked range, with the region root they build,
     * signed (the client checks them against the root the three replicas signed). A range wider than
     * {@link Message.LeafQuery#MAX_BLOCKS} is not answered (the client never asks one): an answer stays bounded.
     */
    private void onLeafQuery(NodeId from, Message.LeafQuery q) {
        if (!from.equals(clientId) || q.region() != regionId.index() || q.fromBlock() < 0 || q.toBlock() <= q.fromBlock()
                || q.toBlock() - q.fromBlock() > Message.LeafQuery.MAX_BLOCKS) {
            return;
        }
        if (leafPeriod != ticks / RETRANSMIT_TICKS) {
            leafPeriod = ticks / RETRANSMIT_TICKS;
            leafAnswers = 0;
        }
        if (++leafAnswers > MAX_LEAF_ANSWERS) {
            return; // the client asks again after its retransmission period (review rv37: a scan per query)
        }
        Message.LeafChunk honest = new Message.LeafChunk(q.nonce(), cfg.volume(), regionId.index(), rrs.generation(),
                store.root(), q.fromBlock(), q.toBlock(), store.leafHashes(q.fromBlock(), q.toBlock()), null);
        Message.LeafChunk c = hooks.leafReport(honest);
        net.send(clientId, c.withSignature(signer.sign(c.signedBytes())));
    }

    /**
     * Leaf ranges answered per {@link #RETRANSMIT_TICKS} ticks at most: an honest client has at most 4 of a region in
     * flight (MountLeafFetch.REGION_WINDOW), each asked again after seconds; one that floods queries gets no more
     * range scans than that.
     */
    public static final int MAX_LEAF_ANSWERS = 8;
    private long leafPeriod = -1;
    private int leafAnswers;

    /**
     * What recovery at mount needs of this replica (identifyLCP, issue 14 item 4), signed: the fence it holds, its
     * unresolved entries in log order, and the undecided batches it leads whose BatchInfo it holds.
     */
    private Message.RecoveryState recoveryState(long nonce) {
        List<Message.PendingEntry> pending = new ArrayList<>();
        for (ReplicaLog.Entry e : log.entries()) {
            if (!e.resolved) {
                pending.add(new Message.PendingEntry(e.sb.batchId(), e.sb.leaderRegion(),
                        e.sb.puts().stream().map(Put::seq).toList()));
            }
        }
        List<BatchInfo> infos = new ArrayList<>();
        for (BatchLeaderState.LeaderBatch lb : batchLeader.batches()) {
            if (lb.info != null && !batchLeader.decided(lb.info.batchId())) {
                infos.add(lb.info);
            }
        }
        infos.sort(java.util.Comparator.comparingLong(BatchInfo::batchId));
        // the batches it signed COMMIT for (still in memory) too: a decided batch reports no BatchInfo, yet its COMMIT
        // may still be on its way to a participant whose entry of it is unresolved (review rv18r)
        // each with its proof where this replica has one (its TENTATIVE_COMMIT and the client-signed BatchInfo): a
        // mount counts only a proven claim (review rv19-3)
        Message.RecoveryState st = new Message.RecoveryState(nonce, cfg.volume(), regionId.index(), rrs.generation(),
                me, fenceBelow, pending, infos, batchLeader.committedInMemory(), batchLeader.commitProofs(), null);
        return st.withSignature(signer.sign(st.signedBytes()));
    }

    // ------------------------------------------------------------------ recovery at mount: abort after the LCP

    /** Recovery aborts this replica signed, and refused (the last refusal's reason: tests, counters). */
    private volatile long recoveryAbortsSigned;
    private volatile long recoveryAbortsRefused;
    private volatile String lastRecoveryAbortRefusal;

    public long recoveryAbortsSigned() {
        return recoveryAbortsSigned;
    }

    public long recoveryAbortsRefused() {
        return recoveryAbortsRefused;
    }

    public String lastRecoveryAbortRefusal() {
        return lastRecoveryAbortRefusal;
    }

    private void refuseRecoveryAbort(Message.RecoveryAbort a, String why) {
        recoveryAbortsRefused++;
        lastRecoveryAbortRefusal = "batch " + a.batchId() + " (fence " + a.fence() + "): " + why;
    }

    /**
     * Why a mount's recovery request (an abort, a re-sent BatchInfo) under {@code fence} for batch {@code b} is not
     * for now, or null: it must carry the fence this replica holds (a mount's signed query set it) and name a batch
     * below it (a request of an earlier mount is stale; the current writer's batches come the ordinary way).
     */
    private String recoveryFenceProblem(long fence, long b) {
        return fenceBelow <= 0 || fence != fenceBelow || b >= fenceBelow ? "this replica holds fence " + fenceBelow
                + " (a stale request, or a batch of the current writer)" : null;
    }

    /**
     * The mounting client asks this leader replica to abort batch {@code a.batchId()} of the previous writer, after
     * the LCP of recovery epoch {@code a.fence()} (§3.3.4, issue 14 item 4). Signed TENTATIVE_ABORT only if all of
     * these hold, each checked here against this replica's own state and the coordination service, never on the
     * client's word:
     * <ul>
     *   <li>the request is signed by the client, for this volume, to this leader region;</li>
     *   <li>this replica has not decided the batch (a decision is never changed: a COMMIT it signed stays, so no
     *       ABORT certificate of a committed batch can form — it needs all three leader replicas);</li>
     *   <li>the request's fence is the one this replica holds (a mount's signed query set it) and the batch is
     *       below it: a request of an earlier mount (stale) is refused;</li>
     *   <li>the LCP of that recovery epoch is recorded in coordination and ends before the batch's first seq (the
     *       batch is after the agreed prefix);</li>
     *   <li>the batch can never commit: this replica holds no BatchInfo of it (it never signs a COMMIT without one,
     *       and with the fence and this decision it never will), or it does and {@code proof} holds the signed
     *       recovery states of the three current replicas of one of its participant regions, fenced above the batch,
     *       none listing an entry of it (that region never votes YES);</li>
     *   <li>with a BatchInfo, the requested seq range is the batch's.</li>
     * </ul>
     * The ABORT (recorded on the disk before it is sent) goes to every replica of every region; participants accept
     * it only with the three leader signatures, as any decision.
     */
    private void onRecoveryAbort(NodeId from, Message.RecoveryAbort a) {
        if (!from.equals(clientId) || !a.volume().equals(cfg.volume()) || a.leaderRegion() != regionId.index()) {
            return; // not for this leader replica
        }
        if (a.signature() == null || !verifier.verify(clientId, a.signedBytes(), a.signature())) {
            refuseRecoveryAbort(a, "not signed by the client");
            return;
        }
        long b = a.batchId();
        Certificate mine = batchLeader.decision(b);
        if (mine != null) {
            sendDecision(mine, null); // decided already (a retransmitted request): the same decision again
            return;
        }
        if (batchLeader.recording(b)) {
            // decided, its record not durable yet: sent to every replica once it is; a retransmitted request then
            // gets it above
            refuseRecoveryAbort(a, "its decision here is being recorded");
            return;
        }
        if (batchLeader.decided(b)) {
            refuseRecoveryAbort(a, "decided here long ago (its decision is only on the disk)");
            return;
        }
        String fenceProblem = recoveryFenceProblem(a.fence(), b);
        if (fenceProblem != null) {
            refuseRecoveryAbort(a, fenceProblem);
            return;
        }
        if (a.firstSeq() < 1 || a.lastSeq() < a.firstSeq()) {
            refuseRecoveryAbort(a, "seq range " + a.firstSeq() + ".." + a.lastSeq());
            return;
        }
        BatchInfo info = batchLeader.info(b);
        if (info != null && (info.firstSeq() != a.firstSeq() || info.lastSeq() != a.lastSeq())) {
            refuseRecoveryAbort(a, "the batch's BatchInfo says seqs " + info.firstSeq() + ".." + info.lastSeq()
                    + ", not " + a.firstSeq() + ".." + a.lastSeq());
            return;
        }
        Optional<Coordination.Lcp> lcp;
        try {
            // only an LCP the client signed counts: the store checks nothing (review rvw23-3)
            lcp = coordination.lcp(a.fence()).filter(l -> l.signedBy(verifier, clientId, cfg.volume()));
        } catch (RuntimeException e) {
            refuseRecoveryAbort(a, "cannot read the LCP of recovery epoch " + a.fence() + ": " + e.getMessage());
            return;
        }
        if (lcp.isEmpty()) {
            refuseRecoveryAbort(a, "no LCP of recovery epoch " + a.fence() + " signed by the client in coordination");
            return;
        }
        if (lcp.get().seq() >= a.firstSeq()) {
            refuseRecoveryAbort(a, "the LCP of recovery epoch " + a.fence() + " (seq " + lcp.get().seq()
                    + ") covers its first seq " + a.firstSeq());
            return;
        }
        if (info != null && !neverVotedYes(info, a.proof())) {
            refuseRecoveryAbort(a, "it holds the batch's BatchInfo and no participant region's three replicas prove"
                    + " they never log it");
            return;
        }
        Statement.Decision st = new Statement.Decision(false, cfg.volume(), b, a.firstSeq(), a.lastSeq(), regionId,
                rrs.generation());
        Certificate t = Certificate.sign(CertType.TENTATIVE_ABORT, st, signer);
        disk.recordDecision(rrs.generation(), t); // durable before it is sent: never flipped to COMMIT
        batchLeader.decide(b, t);
        List<Integer> all = new ArrayList<>();
        for (int r = 0; r < cfg.regionCount(); r++) {
            all.add(r);
        }
        ledParticipants.put(b, info != null ? info.participants() : all);
        maxLedBatch = Math.max(maxLedBatch, b);
        recoveryAbortsSigned++;
        sendDecision(t, batchLeader.takeWaiters(b));
    }

    /** Re-sent BatchInfos this leader replica took, and refused (the last refusal's reason: tests, counters). */
    private volatile long recoveryBatchInfosTaken;
    private volatile long recoveryBatchInfosRefused;
    private volatile String lastRecoveryBatchInfoRefusal;

    public long recoveryBatchInfosTaken() {
        return recoveryBatchInfosTaken;
    }

    public long recoveryBatchInfosRefused() {
        return recoveryBatchInfosRefused;
    }

    public String lastRecoveryBatchInfoRefusal() {
        return lastRecoveryBatchInfoRefusal;
    }

    private void refuseRecoveryBatchInfo(Message.RecoveryBatchInfo r, String why) {
        recoveryBatchInfosRefused++;
        lastRecoveryBatchInfoRefusal = "batch " + r.info().batchId() + " (fence " + r.fence() + "): " + why;
    }

    /**
     * Review rv19-2: the mounting client re-sends the previous writer's BatchInfo of a batch another leader replica of
     * this region reported committed with its proof. This replica lost its own decision (it was queued for its disk
     * writer, signed and sent to nobody, when the process died) and, with the writer gone and its late BatchInfo
     * refused under the fence, would never decide the batch: the mount waited for ever. It takes the BatchInfo, and
     * then decides exactly as on the original one (all participants' YES votes, the previous batch's decision), only
     * if all of these hold:
     * <ul>
     *   <li>the message is signed by the client over the fence and the whole BatchInfo, and the BatchInfo carries
     *       the client's own signature (nothing in it can be changed);</li>
     *   <li>the fence is the one this replica holds and the batch is below it (a re-send of an earlier mount is stale;
     *       the current writer's batches come the ordinary way);</li>
     *   <li>this replica logged the batch's sub-batch, client-signed, naming this region as its leader, with seqs
     *       inside the BatchInfo's range (a leader region always takes part in its batch);</li>
     *   <li>it has not decided the batch (a decision is never changed; if it has, the decision is sent again);</li>
     *   <li>no LCP recorded in coordination for this recovery epoch excludes the batch: once one does, recovery aborts
     *       it, and the leader replicas that hold no BatchInfo sign that abort on exactly this absence, so taking
     *       one now could split them.</li>
     * </ul>
     */
    private void onRecoveryBatchInfo(NodeId from, Message.RecoveryBatchInfo r) {
        BatchInfo info = r.info();
        if (!from.equals(clientId) || !r.volume().equals(cfg.volume()) || !info.volume().equals(cfg.volume())) {
            return; // not for this replica
        }
        if (r.signature() == null || !verifier.verify(clientId, r.signedBytes(), r.signature())
                || info.clientSig() == null || !verifier.verify(clientId, info.signedBytes(), info.clientSig())) {
            refuseRecoveryBatchInfo(r, "not signed by the client");
            return;
        }
        long b = info.batchId();
        String fenceProblem = recoveryFenceProblem(r.fence(), b);
        if (fenceProblem != null) {
            refuseRecoveryBatchInfo(r, fenceProblem);
            return;
        }
        ReplicaLog.Entry e = log.entryOfBatch(b);
        if (e == null || e.sb.leaderRegion() != regionId.index() || !info.participants().contains(regionId.index())
                || e.sb.puts().stream().anyMatch(p -> p.seq() < info.firstSeq() || p.seq() > info.lastSeq())) {
            refuseRecoveryBatchInfo(r, e == null ? "no logged entry of the batch here"
                    : "the logged entry (leader region " + e.sb.leaderRegion() + ", seqs "
                    + e.sb.puts().stream().map(Put::seq).toList() + ") is not this BatchInfo's as its leader region");
            return;
        }
        Certificate mine = batchLeader.decision(b);
        if (mine != null) {
            Statement.Decision d = mine.statement(Statement.Decision.class);
            if (d.firstSeq() == info.firstSeq() && d.lastSeq() == info.lastSeq()) {
                batchLeader.rememberCommittedInfo(b, info); // a COMMIT reloaded from the disk proves itself again
            }
            sendDecision(mine, null); // decided already: the same decision again
            return;
        }
        if (batchLeader.decided(b) || batchLeader.knowsInfo(b)) {
            return; // being recorded (sent once durable), decided long ago, or the BatchInfo is here already
        }
        Optional<Coordination.Lcp> lcp;
        try {
            lcp = coordination.lcp(r.fence()).filter(l -> l.signedBy(verifier, clientId, cfg.volume()));
        } catch (RuntimeException x) {
            refuseRecoveryBatchInfo(r, "cannot read the LCP of recovery epoch " + r.fence() + ": " + x.getMessage());
            return;
        }
        if (lcp.isPresent() && lcp.get().seq() < info.lastSeq()) {
            refuseRecoveryBatchInfo(r, "the LCP of recovery epoch " + r.fence() + " (seq " + lcp.get().seq()
                    + ") excludes it: recovery aborts it");
            return;
        }
        BatchLeaderState.LeaderBatch lb = batchLeader.forBatchInfo(b);
        lb.info = info;
        recoveryBatchInfosTaken++;
        if (info.prevBatchId() >= 0 && !cfg.mutated(Mutation.COMMIT_WITHOUT_CONFIRMATION)) {
            requestPrevDecision(info);
        }
        tryDecide(lb);
    }

    /** Sends a decision this replica signed to every replica of every region (and {@code extra}). */
    private void sendDecision(Certificate t, Set<NodeId> extra) {
        Set<NodeId> to = new HashSet<>();
        for (int r = 0; r < cfg.regionCount(); r++) {
            to.addAll(membership.current(r).replicas());
        }
        if (extra != null) {
            to.addAll(extra);
        }
        for (NodeId n : to) {
            net.send(n, new Message.DecisionMsg(t));
        }
    }

    /**
     * True if {@code proof} holds, for one participant region of the batch, the signed recovery states of its three
     * current replicas, each fenced above the batch and listing no entry of it: such a region never logs the
     * batch (the client's sub-batch is refused below the fence; a replica logs a sub-batch only from the client or
     * its chain predecessor), so at least its correct replica never votes YES and no COMMIT can form.
     */
    private boolean neverVotedYes(BatchInfo info, List<Message.RecoveryState> proof) {
        long b = info.batchId();
        for (int p : info.participants()) {
            if (p < 0 || p >= cfg.regionCount()) {
                continue;
            }
            RrsConfig c = membership.current(p);
            Set<NodeId> shown = new HashSet<>();
            for (Message.RecoveryState x : proof) {
                if (x.region() == p && x.volume().equals(cfg.volume()) && x.generation() == c.generation()
                        && c.replicas().contains(x.replica()) && x.fenceBelow() > b && !x.lists(b)
                        && x.signature() != null && verifier.verify(x.replica(), x.signedBytes(), x.signature())) {
                    shown.add(x.replica());
                }
            }
            if (shown.size() == c.replicas().size()) {
                return true;
            }
        }
        return false;
    }

    /** Periodic retransmission (lost messages, restarted peers). Idempotent for every receiver. */
    public void tick() {
        LatencyTrace.tickBegin();
        try {
            tickInner();
        } finally {
            LatencyTrace.tickEnd();
        }
        throwCheckpointFailure();
    }

    private void tickInner() {
        signWrittenCheckpoints();
        rebuildStep();
        answerFreedDecisionRequests();
        if (++ticks % RETRANSMIT_TICKS != 0) {
            return;
        }
        boolean legacy = LatencyTrace.legacy();
        for (ReplicaLog.Entry e : log.entries()) {
            if (e.resolved || e.committing || !e.logged) {
                continue; // resolved, or its own record is being written (it is sent once that is durable)
            }
            if (!legacy) {
                if (e.retransmitEvery == 0) {
                    // first seen here: its messages went out when it was logged (at most one period ago); resent only
                    // after a whole period (task net18: resending at once sent every 64-block sub-batch down the chain
                    // a second time whenever its chain took longer than the rest of the current period)
                    e.retransmitEvery = RETRANSMIT_TICKS;
                    e.retransmitAt = ticks + RETRANSMIT_TICKS;
                    continue;
                } else if (ticks < e.retransmitAt) {
                    continue;
                }
                e.retransmitAt = ticks + e.retransmitEvery;
                e.retransmitEvery = Math.min(2 * e.retransmitEvery, MAX_RETRANSMIT_TICKS);
            }
            boolean stalled = ++e.rounds % STALLED_ROUNDS == 0;
            NodeId next = rrs.next(me);
            if (next != null && hooks.forward(e.sb) && (legacy || !(chainLogged(e) || e.successorLogged)
                    || e.successorAsked || e.rounds % PAYLOAD_RESEND_ROUNDS == 0)) {
                // the payload again only while the successor may lack it: before the successor acknowledged the
                // entry (CHAIN_ACK, task net19) or every holder stored it (see chainLogged), once the successor asked
                // for the log (it restarted or has a gap), and, rarely, for a successor that lost it without asking
                // (nothing else brings an undecided entry back to it)
                e.successorAsked = false;
                net.send(next, new Message.SubBatchMsg(e.sb));
            }
            if (stalled && !cfg.mutated(Mutation.SKIP_WITNESS_STORES)) {
                // still unresolved after a while: a metadata holder that acknowledged the entry may have restarted
                // empty since (an interim holder hosted in a replica region that moved or was reopened after a crash
                // keeps its certificates in memory). It stores the entry only with the tentatives of all three
                // replicas, and a replica that needs its ack (one reopened, or whose ack was lost) cannot vote
                // without it: offer the tentative again to every holder (one that has the entry acknowledges again)
                sendTentativeToAll(e);
                if (!e.voted) {
                    // a replica restarted with the entry unvoted: the batch may have been decided long ago (its peers
                    // resolved it, they offer it to no holder again, and a holder that restarted empty then never
                    // stores it). A COMMIT/ABORT certificate proves the votes it needs: ask the leader replicas
                    for (NodeId l : leaderReplicas(e.sb.leaderRegion())) {
                        net.send(l, new Message.DecisionRequest(e.sb.leaderRegion(), e.sb.batchId()));
                    }
                }
            } else if (!e.voted || e.acks.size() < 5 && !cfg.mutated(Mutation.SKIP_WITNESS_STORES)) {
                sendTentative(e);
            }
            if (e.voted) {
                sendVote(e, true);
                for (NodeId l : leaderReplicas(e.sb.leaderRegion())) {
                    net.send(l, new Message.DecisionRequest(e.sb.leaderRegion(), e.sb.batchId()));
                }
            }
        }
        for (BatchLeaderState.LeaderBatch lb : batchLeader.batches()) {
            if (lb.info != null && lb.info.prevBatchId() >= 0 && !batchLeader.decided(lb.info.batchId())
                    && log.decision(lb.info.prevBatchId()) == null) {
                requestPrevDecision(lb.info);
            }
        }
        for (Long k : checkpoints.proposals()) {
            if (checkpoints.hasSnapshot(k)) {
                signCheckpoint(k);
            }
        }
        askPeersForLogIfBehind();
    }

    // ------------------------------------------------------------------ catch-up of the log while serving

    /**
     * How this replica reads LOG_ENTRY certificates from its region's metadata holders without sealing a slot (an
     * adapter's witness connections; {@link LogEntryReader#NONE} until set): with it, an entry a peer transfers while
     * this replica catches up is corroborated by its certificate, not only by the other peer's transfer (review
     * rvw22 finding 2b, {@link ReplicaCatchUp.Corroboration}). Call before the replica receives messages.
     */
    public void logEntryReader(LogEntryReader reader) {
        this.peerTransfers = new PeerTransfers(ReplicaCatchUp.certifiedBy(cfg, rrs, verifier, reader));
    }

    /**
     * Call at region open when this replica starts from the empty generation-0 state because its region has no
     * CHECKPOINT certificate yet: it cannot tell a fresh region from one whose log it lost (its DataNode disk) while
     * its peers logged and resolved entries. It serves at once (a fresh region must not wait for peers that may be
     * opening too) and asks both peers for their log; each retransmission round asks again those that have not
     * answered, until both have or one gave entries ({@link #onStateTransfer}). Peers that are empty too answer with
     * no entry. Must be called on the replica's event loop (as {@link #receive}).
     */
    public void catchUpFromPeersAtOpen() {
        askingAtOpen = true;
        answeredAtOpen.clear();
        aheadAtOpen.clear();
        askedAtOpen.clear();
        aheadRounds = 0;
        aheadAskRounds = 2 * STALLED_ROUNDS;
        askPeersForLog();
    }

    /**
     * At each retransmission round: asks again at open (above), and asks both peers for their log once a sub-batch
     * has waited {@link #STALLED_ROUNDS} rounds for a predecessor while the log did not grow, then again after twice
     * as many rounds, and so on up to 16 times as many (the predecessor's
     * sender retransmits an unresolved entry within {@link #MAX_RETRANSMIT_TICKS} ticks; one resolved at the peers is
     * never sent again: a replica whose log lost entries its peers resolved would wait for ever).
     */
    private void askPeersForLogIfBehind() {
        if (askingAtOpen) {
            askPeersForLog();
        }
        if (!aheadAtOpen.isEmpty() && ++aheadRounds >= aheadAskRounds) {
            // a peer held entries after this replica's log that it could not take yet (rvw23-4): asked again while
            // this replica has not got them meanwhile (from its chain predecessor), backing off
            aheadRounds = 0;
            aheadAskRounds = Math.min(2 * aheadAskRounds, 16 * STALLED_ROUNDS);
            aheadAtOpen.values().removeIf(end -> end < log.nextIndex);
            for (NodeId p : aheadAtOpen.keySet()) {
                logAsked.add(p);
                peerLogRequests++;
                net.send(p, new Message.StateRequest(regionId.index(), rrs.generation(), checkpoints.checkpointedIndex));
            }
        }
        if (!log.waitsForMissing()) {
            gapRounds = 0;
            if (!askingAtOpen && aheadAtOpen.isEmpty()) {
                peerTransfers.clear(); // not behind: the entries kept to corroborate are not needed
            }
            return;
        }
        if (log.lastAcceptedSeq != gapSeq) {
            gapSeq = log.lastAcceptedSeq;
            gapRounds = 0;
            gapAskRounds = STALLED_ROUNDS;
        }
        if (++gapRounds >= gapAskRounds) {
            // asked again while it lasts, backing off: a sub-batch that waits for a predecessor that never comes
            // (one the peers do not have either) must not make them read their log for it every second
            askPeersForLog();
            gapRounds = 0;
            gapAskRounds = Math.min(2 * gapAskRounds, 16 * STALLED_ROUNDS);
        }
    }

    private void askPeersForLog() {
        for (NodeId p : rrs.replicas()) {
            if (!p.equals(me) && !(askingAtOpen && answeredAtOpen.contains(p))) {
                if (askingAtOpen) {
                    askedAtOpen.add(p);
                }
                logAsked.add(p);
                peerLogRequests++;
                // through this replica's latest certified checkpoint: the peers keep their log after it (a newer
                // certificate needs this replica's signature); through -1 in a region without one (cheap: no blocks)
                net.send(p, new Message.StateRequest(regionId.index(), rrs.generation(), checkpoints.checkpointedIndex));
            }
        }
    }

    /**
     * A peer's answer to {@link #askPeersForLog}: appends the entries that continue this replica's own log, each
     * checked ({@link ReplicaCatchUp#continuation}: client-signed, prevNum chain from this replica's last accepted
     * seq, decided by a COMMIT/ABORT certificate with its three leader signatures), durably and at their indexes, as
     * if received from the chain predecessor; learns their decisions and commits them in log order; takes the
     * transferred writer fence if it is newer; then accepts the sub-batches that waited for them. The region state in
     * the transfer is ignored. So a faulty peer cannot make this replica skip, reorder, alter or apply an undecided
     * write; it can only give fewer entries (the next round asks again, both peers).
     */
    private void onStateTransfer(NodeId from, Message.StateTransfer x) {
        if (!logAsked.remove(from) || x.region() != regionId.index() || x.generation() != rrs.generation()) {
            return;
        }
        peerTransfers.heard(from, x);
        ReplicaCatchUp.Continuation c = ReplicaCatchUp.continuation(cfg, rrs, clientId, verifier, membership, x,
                log.nextIndex, log.lastAcceptedSeq, log::hasBatch, peerTransfers.corroboration(from));
        if (c.fence() != null) {
            long epoch = c.fence().statement(Statement.WriterEpoch.class).epoch();
            if (epoch > writerEpoch) {
                disk.recordDecision(rrs.generation(), c.fence()); // as a fence from the client: durable first
                writerEpoch = epoch;
            }
        }
        for (ReplicaCatchUp.Continued e : c.entries()) {
            disk.append(rrs.generation(), e.index(), e.bytes());
            log.add(e.index(), e.sb(), cfg.hash().hash(e.bytes()));
            lastBatchId = Math.max(lastBatchId, e.sb().batchId());
            log.learnDecision(e.sb().batchId(), e.decision()); // the decision's batch (checked in continuation)
        }
        long end = x.throughIndex() + x.entries().size();
        boolean openAnswer = askedAtOpen.remove(from) || aheadAtOpen.containsKey(from);
        if (end >= log.nextIndex && openAnswer) {
            aheadAtOpen.put(from, end); // it holds entries this replica could not take yet: asked again (rvw23-4)
        } else {
            aheadAtOpen.remove(from);
        }
        if (!c.entries().isEmpty()) {
            aheadAskRounds = 2 * STALLED_ROUNDS;
        }
        answeredAtOpen.add(from);
        if (askingAtOpen && (!c.entries().isEmpty() || answeredAtOpen.size() >= rrs.replicas().size() - 1)) {
            askingAtOpen = false;
        }
        if (c.entries().isEmpty()) {
            return;
        }
        peerLogEntries += c.entries().size();
        peerLogTransfers++;
        Set<Long> learned = new HashSet<>();
        c.entries().forEach(e -> learned.add(e.sb().batchId()));
        for (BatchLeaderState.LeaderBatch lb : batchLeader.batchesCopy()) {
            if (lb.info != null && learned.contains(lb.info.prevBatchId())) {
                tryDecide(lb); // a batch this replica leads waited for that decision (its own tentative was lost)
            }
        }
        tryCommit();
        log.dropStaleWaiting();
        SubBatch nextSb;
        while ((nextSb = log.takeSuccessor()) != null) {
            if (!log.hasBatch(nextSb.batchId()) && !refusedForEpoch(nextSb.batchId(), nextSb.epoch())) {
                accept(nextSb);
            }
        }
    }

    /** Log entries this replica appended from its peers' transfers while serving (review rv15 finding 2). */
    public long peerLogEntries() {
        return peerLogEntries;
    }

    /** Peer transfers that gave this replica entries while serving. */
    public long peerLogTransfers() {
        return peerLogTransfers;
    }

    /** Requests for their log this replica sent its peers while serving. */
    public long peerLogRequests() {
        return peerLogRequests;
    }

    /** Copies of sub-batches this replica had logged already that reached it (retransmissions), since it started. */
    public long subBatchCopies() {
        return subBatchCopies;
    }

    /** Their bytes (log-entry encoding). */
    public long subBatchCopyBytes() {
        return subBatchCopyBytes;
    }

    private volatile long subBatchCopies; // written on the replica's loop only; read by metrics
    private volatile long subBatchCopyBytes;

    /** The entry's log-entry length (what its tentative names), encoded once. */
    private static int entryLength(ReplicaLog.Entry e) {
        if (e.length < 0) {
            e.length = e.sb.encode().length;
        }
        return e.length;
    }

    /** Checkpoint writes of this replica that failed (each one's checkpoint is not signed; the next one retries). */
    /** The index of the latest CHECKPOINT certificate this replica formed or started from (-1: none). */
    public long certifiedIndex() {
        return checkpoints.checkpointedIndex;
    }

    public long checkpointWriteFailures() {
        return checkpointWriteFailures;
    }

    // ------------------------------------------------------------------ PUT path (PC2, AS steps 1-3)

    /** Whether {@code from} may send this replica a sub-batch: the client (to the primary) or the chain predecessor. */
    private boolean chainSender(NodeId from) {
        if (rrs.primary().equals(me)) {
            return from.equals(clientId) || from.equals(me);
        }
        return from.equals(rrs.previous(me));
    }

    private boolean validSubBatch(NodeId from, SubBatch sb) {
        if (!sb.volume().equals(cfg.volume()) || sb.region() != regionId.index()) {
            return false;
        }
        if (!chainSender(from)) {
            return false;
        }
        if (sb.clientSig() == null || !verifier.verify(clientId, sb.signedBytes(), sb.clientSig())) {
            return false;
        }
        long first = cfg.layout().firstBlock(regionId.index());
        for (Put p : sb.puts()) {
            if (p.block() < first || p.block() >= first + cfg.layout().blocksPerRegion()
                    || p.block() >= cfg.layout().volumeBlocks() || p.data().length != cfg.blockSize()
                    || !cfg.hash().leafHash(p.data()).equals(p.dataHash())) {
                return false;
            }
        }
        return true;
    }

    private void onSubBatch(NodeId from, SubBatch sb) {
        LatencyTrace.stage(sb.batchId(), "recv@" + pos);
        // a retransmitted copy of a logged entry is recognised by comparing bytes with what was validated when it
        // was logged, not validated again (a client signature check and a hash of every block per copy: with
        // 64-block sub-batches retransmitted every few ticks, re-validation kept the event loop from progressing)
        ReplicaLog.Entry logged = log.hasBatch(sb.batchId()) ? log.entryOfBatch(sb.batchId()) : null;
        boolean copyOfLogged = logged != null && chainSender(from) && sameSubBatch(logged, sb);
        if (!copyOfLogged && !validSubBatch(from, sb)) {
            return; // corrupted or misrouted: the sender retransmits; persistent failure triggers recovery
        }
        if (refusedForEpoch(sb.batchId(), sb.epoch())) {
            // another writer's epoch: nothing of it is logged, applied or forwarded (checked before the
            // retransmission path: a newer writer reuses batch ids, and a fenced writer learns it is fenced)
            return;
        }
        if (log.hasBatch(sb.batchId())) {
            ReplicaLog.Entry e = log.entryOfBatch(sb.batchId());
            if (e != null && sameSubBatch(e, sb)) {
                subBatchCopies++;
                subBatchCopyBytes += entryLength(e);
                if (e.logged && !from.equals(clientId) && chainSender(from)) {
                    ackToPredecessor(e); // the predecessor resent it: this replica's acknowledgement may be lost
                }
                NodeId next = rrs.next(me);
                if (next != null && hooks.forward(sb)) {
                    // passed on: a client's retransmission of a resolved entry is how the replicas down the chain
                    // answer a lost reply again (below). (Task net18 tried passing on only copies of resolved
                    // entries: the simulator's seed 9711 then found an aborted write in a recovered prefix, while
                    // passing every copy on, as before, and passing none both pass it; see docs/salus-on-hbase.md.)
                    // Copies are rare now: the predecessor resends only while the successor may lack the entry
                    // (tick, chainLogged) and the client only when its pipeline stopped (VolumeClient#tick)
                    net.send(next, new Message.SubBatchMsg(sb));
                }
                Certificate d = log.decision(sb.batchId());
                if (e.resolved && d != null) {
                    sendPutOutcome(e, d.type() == CertType.COMMIT); // the client retries: its reply was lost
                }
            }
            return;
        }
        if (from.equals(clientId) && sb.batchId() < fenceBelow) {
            return; // a late sub-batch of a writer that a mount has fenced: never logged
        }
        // the client signed the prevNum chain inside the sub-batch; a broken chain is a client fault
        for (int i = 1; i < sb.puts().size(); i++) {
            if (sb.puts().get(i).prevNum() != sb.puts().get(i - 1).seq()) {
                voteNo(sb);
                return;
            }
        }
        long prev = sb.puts().get(0).prevNum();
        if (!cfg.mutated(Mutation.SKIP_PREVNUM_CHECK)) {
            if (prev > log.lastAcceptedSeq) {
                log.await(prev, sb); // predecessor not here yet
                return;
            }
            if (prev < log.lastAcceptedSeq) {
                return; // stale or conflicting with an accepted PUT
            }
        }
        accept(sb);
        SubBatch nextSb;
        while ((nextSb = log.takeSuccessor()) != null) {
            // a successor may have waited across a fence: its epoch is checked again
            if (!log.hasBatch(nextSb.batchId()) && !refusedForEpoch(nextSb.batchId(), nextSb.epoch())) {
                accept(nextSb);
            }
        }
    }

    private void accept(SubBatch sb) {
        if (diskBroken) {
            return; // an earlier record could not be written: nothing more is logged here
        }
        long idx = log.nextIndex;
        byte[] bytes = sb.encode();
        Hash digest = cfg.hash().hash(bytes);
        lastBatchId = Math.max(lastBatchId, sb.batchId());
        // forwarded before the own append (the chain's appends overlap instead of adding up): the successor
        // validates and logs it on its own, and nothing is voted or acknowledged before every replica logged it
        // and its five stores acknowledged that replica's entry
        NodeId next = rrs.next(me);
        boolean legacy = LatencyTrace.legacy();
        if (!legacy && next != null && hooks.forward(sb)) {
            net.send(next, new Message.SubBatchMsg(sb));
        }
        if (writeOffLoop()) {
            // the entry takes its index now (later sub-batches follow it); nothing of it is sent before it is durable
            ReplicaLog.Entry e = log.add(idx, sb, digest);
            e.length = bytes.length;
            e.logged = false;
            diskWritesPending++;
            long t0 = LatencyTrace.now();
            diskWriter.append(rrs.generation(), idx, hooks.onDiskWrite(bytes), () -> {
                diskWritesPending--;
                LatencyTrace.took("diskAppendOffLoop", t0);
                e.logged = true;
                if (log.entry(e.index) == e) {
                    logged(e);
                    tryCommit(); // (an entry decided before it was durable here: only with mutated consent rules)
                }
            });
            return;
        }
        long t0 = LatencyTrace.now();
        disk.append(rrs.generation(), idx, hooks.onDiskWrite(bytes));
        LatencyTrace.took("diskAppend", t0);
        ReplicaLog.Entry e = log.add(idx, sb, digest);
        e.length = bytes.length;
        if (legacy && next != null && hooks.forward(sb)) {
            net.send(next, new Message.SubBatchMsg(sb));
        }
        logged(e);
    }

    /** The entry is durable in this replica's log: what that allows (its tentative to the stores, or a vote). */
    private void logged(ReplicaLog.Entry e) {
        SubBatch sb = e.sb;
        LatencyTrace.stage(sb.batchId(), "logged@" + pos);
        if (hooks.earlyPutSuccess()) {
            sendPutOutcome(e, true);
        }
        if (cfg.mutated(Mutation.SKIP_WITNESS_STORES) || hooks.earlyVote()) {
            e.voted = true;
            sendVote(e, hooks.voteYes(sb));
        }
        if (!cfg.mutated(Mutation.SKIP_WITNESS_STORES)) {
            sendTentative(e);
        }
        voteIfStored(e); // acks that came before the entry was durable here (only a faulty holder sends them)
        ackToPredecessor(e);
    }

    /**
     * Task net19: tells the chain predecessor that the entry is durable here ({@link Message.ChainAck}), so it stops
     * resending its payload. The primary has no predecessor (the client learns of the entry from the PUT reply).
     */
    private void ackToPredecessor(ReplicaLog.Entry e) {
        NodeId prev = rrs.previous(me);
        if (prev != null && !LatencyTrace.legacy()) {
            net.send(prev, new Message.ChainAck(regionId.index(), rrs.generation(), e.index, e.digest));
        }
    }

    /**
     * The chain successor logged an entry (task net19): taken only from the successor (the transport between region
     * servers authenticates the sender), for this region and generation, and only if this replica's entry at that
     * index has the same digest. A faulty successor can only stop the resends of its own copy: that costs liveness,
     * which the rare {@link #PAYLOAD_RESEND_ROUNDS} resend and the client's recovery bound, not safety (it still
     * needs the entry to sign its tentative, and the holders need the tentatives of all three replicas).
     */
    private void onChainAck(NodeId from, Message.ChainAck a) {
        if (!from.equals(rrs.next(me)) || a.region() != regionId.index() || a.generation() != rrs.generation()) {
            return;
        }
        ReplicaLog.Entry e = log.entry(a.index());
        if (e != null && e.digest.equals(a.digest())) {
            e.successorLogged = true;
        }
    }

    /**
     * Whether every replica of the RRS has this entry durably in its log, as far as this replica can prove: every
     * metadata holder acknowledged it. A holder acknowledges (signed, verified in {@link #onStoreAck}) only once it
     * stored the LOG_ENTRY that combines the TENTATIVE_LOG_ENTRY of all three replicas for this index and digest
     * ({@code WitnessLog#offer}), and a replica signs its tentative only once the entry is durable in its own log
     * ({@link #logged}). With all holders' acks at least one comes from an honest holder, so the chain successor has
     * logged it (or is faulty, and a copy would not help): sending it the entry's payload again is waste.
     */
    private boolean chainLogged(ReplicaLog.Entry e) {
        return e.acks.size() >= rrs.metadataHolders().size();
    }

    private Certificate tentativeLogEntry(ReplicaLog.Entry e) {
        Statement.LogEntry st = new Statement.LogEntry(regionId, rrs.generation(), e.index,
                hooks.digestToSign(e.digest), entryLength(e));
        return Certificate.sign(CertType.TENTATIVE_LOG_ENTRY, st, signer);
    }

    private void sendTentativeToAll(ReplicaLog.Entry e) {
        Certificate t = tentativeLogEntry(e);
        for (NodeId h : rrs.metadataHolders()) {
            net.send(h, new Message.LogCertMsg(t));
        }
    }

    private void sendTentative(ReplicaLog.Entry e) {
        Certificate t = tentativeLogEntry(e);
        for (NodeId h : rrs.metadataHolders()) {
            if (!e.acks.contains(h)) {
                net.send(h, new Message.LogCertMsg(t));
            }
        }
    }

    private void onStoreAck(NodeId from, Message.StoreAck a) {
        if (a.region() != regionId.index() || a.generation() != rrs.generation()
                || !rrs.metadataHolders().contains(from)) {
            return;
        }
        ReplicaLog.Entry e = log.entry(a.index());
        if (e == null || !a.digest().equals(e.digest) || !verifier.verify(from,
                Message.StoreAck.signedBytes(a.region(), a.generation(), a.index(), a.digest()), a.signature())) {
            return;
        }
        e.acks.add(from);
        voteIfStored(e);
    }

    /** Votes once the entry is durable here and its five metadata holders acknowledged it. */
    private void voteIfStored(ReplicaLog.Entry e) {
        if (e.logged && e.acks.size() >= (cfg.mutated(Mutation.VOTE_AFTER_FOUR_STORE_ACKS) ? 4 : 5) && !e.voted) {
            LatencyTrace.stage(e.sb.batchId(), "acks@" + pos);
            e.voted = true;
            sendVote(e, hooks.voteYes(e.sb));
        }
    }

    /** Bytes a vote signature covers. */
    public static byte[] voteBytes(long batchId, int region, long generation, boolean yes) {
        return new Wire.Out().u8(0x56).i64(batchId).i32(region).i64(generation).u8(yes ? 1 : 0).toByteArray();
    }

    private void sendVote(ReplicaLog.Entry e, boolean yes) {
        LatencyTrace.stage(e.sb.batchId(), "vote@" + pos);
        byte[] sig = signer.sign(voteBytes(e.sb.batchId(), regionId.index(), rrs.generation(), yes));
        Message.Vote v = new Message.Vote(e.sb.batchId(), regionId.index(), rrs.generation(), yes, sig);
        for (NodeId l : leaderReplicas(e.sb.leaderRegion())) {
            net.send(l, v);
        }
    }

    private void voteNo(SubBatch sb) {
        byte[] sig = signer.sign(voteBytes(sb.batchId(), regionId.index(), rrs.generation(), false));
        Message.Vote v = new Message.Vote(sb.batchId(), regionId.index(), rrs.generation(), false, sig);
        for (NodeId l : leaderReplicas(sb.leaderRegion())) {
            net.send(l, v);
        }
    }

    private List<NodeId> leaderReplicas(int leaderRegion) {
        if (leaderRegion < 0 || leaderRegion >= cfg.regionCount()) {
            return List.of();
        }
        return membership.current(leaderRegion).replicas();
    }

    // ------------------------------------------------------------------ writer fencing

    /**
     * True (and the client told, with a signed {@link Message.WriterEpochReply}) if a sub-batch or BatchInfo of
     * writer epoch {@code epoch} must be refused: it is not the epoch this replica has recorded. Lower: its writer
     * was fenced by a newer one. Higher: that writer has not fenced this replica yet (it must, first; the reply
     * makes it send its fence again). The check is on the client-signed epoch, so no one can replay a fenced
     * writer's message under the new epoch.
     */
    private boolean refusedForEpoch(long batchId, long epoch) {
        if (epoch == writerEpoch) {
            return false;
        }
        sendEpochReply(batchId, epoch);
        return true;
    }

    private void sendEpochReply(long batchId, long clientEpoch) {
        byte[] sig = signer.sign(Message.WriterEpochReply.signedBytes(cfg.volume(), regionId.index(), batchId,
                clientEpoch, writerEpoch));
        net.send(clientId, new Message.WriterEpochReply(cfg.volume(), regionId.index(), batchId, clientEpoch,
                writerEpoch, sig));
    }

    /**
     * A writer announces its lease epoch. A higher epoch than the recorded one is recorded on the disk (hsync)
     * before the replica answers or acts on it, so neither a late message nor a restart lets the older writer in
     * again. The answer carries the replica's epoch: equal means fenced for this writer, higher tells a stale
     * writer that it was fenced.
     */
    private void onWriterFence(NodeId from, Certificate c) {
        if (!from.equals(clientId) || c.type() != CertType.WRITER_EPOCH || !c.verify(verifier, Set.of(clientId))) {
            return;
        }
        Statement.WriterEpoch we = c.statement(Statement.WriterEpoch.class);
        if (!we.volume().equals(cfg.volume())) {
            return;
        }
        if (we.epoch() > writerEpoch) {
            disk.recordDecision(rrs.generation(), c);
            writerEpoch = we.epoch();
        }
        sendEpochReply(-1, we.epoch());
    }

    // ------------------------------------------------------------------ FLUSH (task tput18)

    /**
     * The client's FLUSH (an NBD FLUSH, or a FUA write): everything this replica logged and recorded before the request
     * arrived, so every entry and commit mark of each write the client saw acknowledged (its PutReply was sent only
     * after the mark was written), is made durable against a machine crash (hsync, {@link ReplicaDisk#sync}) before
     * the signed {@link Message.FlushReply}. On the batch path log appends and commit marks only survive a crash of the
     * writing process ({@link DurableWriter}: hflush). Through the writer, in order after every record handed to it
     * before; a replica whose writer failed never answers (the client keeps asking, then asks for recovery). Only the
     * client is answered; a repeated request is synced and answered again (the client retransmits).
     */
    private void onFlushRequest(NodeId from, long flushId) {
        if (!from.equals(clientId) || diskBroken) {
            return;
        }
        long gen = rrs.generation();
        if (writeOffLoop()) {
            diskWritesPending++;
            diskWriter.sync(gen, () -> {
                diskWritesPending--;
                sendFlushReply(flushId);
            });
            return;
        }
        disk.sync(gen);
        sendFlushReply(flushId);
    }

    private void sendFlushReply(long flushId) {
        byte[] sig = signer.sign(Message.FlushReply.signedBytes(cfg.volume(), regionId.index(), rrs.generation(),
                flushId));
        net.send(clientId, new Message.FlushReply(cfg.volume(), regionId.index(), rrs.generation(), flushId, sig));
    }

    // ------------------------------------------------------------------ batch leader role (PC3)

    private void onBatchInfo(NodeId from, BatchInfo info) {
        if (!from.equals(clientId) || !info.volume().equals(cfg.volume()) || info.clientSig() == null
                || !verifier.verify(clientId, info.signedBytes(), info.clientSig())) {
            return;
        }
        if (info.batchId() < fenceBelow && !batchLeader.knowsInfo(info.batchId())) {
            // a late BatchInfo of a writer a mount fenced: not taken, so a leader replica that reported no BatchInfo
            // of the batch to the mount never gets one (recovery may abort the batch on that report)
            return;
        }
        if (refusedForEpoch(info.batchId(), info.epoch())) {
            return; // a fenced writer's batch is never led (and a newer writer's batch id is not taken by it)
        }
        if (batchLeader.decided(info.batchId())) {
            return; // decided already (a retransmission)
        }
        BatchLeaderState.LeaderBatch lb = batchLeader.forBatchInfo(info.batchId());
        if (lb.info != null) {
            return;
        }
        lb.info = info;
        LatencyTrace.stage(info.batchId(), "binfo@" + pos);
        if (info.prevBatchId() >= 0 && !cfg.mutated(Mutation.COMMIT_WITHOUT_CONFIRMATION)) {
            requestPrevDecision(info);
        }
        tryDecide(lb);
    }

    private void requestPrevDecision(BatchInfo info) {
        for (NodeId l : leaderReplicas(info.prevLeaderRegion())) {
            net.send(l, new Message.DecisionRequest(info.prevLeaderRegion(), info.prevBatchId()));
        }
    }

    private void onVote(NodeId from, Message.Vote v) {
        if (v.region() < 0 || v.region() >= cfg.regionCount()) {
            return;
        }
        RrsConfig voterRrs = membership.current(v.region());
        if (!LatencyTrace.legacy() && (batchLeader.decided(v.batchId())
                || batchLeader.counted(v.batchId(), new ReplicaId(voterRrs.region(), from)))) {
            return; // a retransmitted copy: nothing to count, so no signature to verify (only verified votes count)
        }
        if (voterRrs.generation() != v.generation() || !voterRrs.replicas().contains(from)
                || !verifier.verify(from, voteBytes(v.batchId(), v.region(), v.generation(), v.yes()), v.signature())) {
            return;
        }
        if (batchLeader.decided(v.batchId())) {
            return; // decided already: a late vote changes nothing
        }
        BatchLeaderState.LeaderBatch lb = batchLeader.forVote(v.batchId());
        if (lb == null) {
            return; // too many batches whose BatchInfo has not come: the voter retransmits
        }
        if (!lb.voted.add(new ReplicaId(voterRrs.region(), from))) {
            return;
        }
        if (v.yes()) {
            lb.yes.computeIfAbsent(v.region(), k -> new HashSet<>()).add(from);
        } else {
            lb.no.add(v.region()); // counted at decision time, and only if the region is a participant
        }
        tryDecide(lb);
    }

    private void tryDecide(BatchLeaderState.LeaderBatch lb) {
        BatchInfo info = lb.info;
        if (info == null || batchLeader.decided(info.batchId())) {
            return;
        }
        Boolean commit = null;
        if (lb.participantSaidNo()) {
            commit = false;
        } else {
            boolean prevOk = true;
            if (info.prevBatchId() >= 0 && !cfg.mutated(Mutation.COMMIT_WITHOUT_CONFIRMATION)) {
                Certificate prev = log.decision(info.prevBatchId());
                if (prev == null) {
                    prevOk = false;
                } else if (prev.type() == CertType.ABORT) {
                    commit = false;
                }
            }
            if (commit == null && prevOk) {
                boolean all = true;
                for (int p : info.participants()) {
                    Set<NodeId> y = lb.yes.get(p);
                    int need = cfg.mutated(Mutation.TWO_OF_THREE_CONSENT) ? 2 : 3;
                    if (y == null || y.size() < need) {
                        all = false;
                        break;
                    }
                }
                if (all) {
                    commit = true;
                }
            } else if (commit == null && LatencyTrace.enabled()) {
                LatencyTrace.count("decideWaitsForPrev");
            }
        }
        if (commit == null && hooks.decideEarly()) {
            commit = true;
        }
        if (commit == null || diskBroken) {
            return; // (a replica whose writer failed decides nothing more: it could not record it)
        }
        Certificate t = signDecision(info, commit);
        long t0 = LatencyTrace.now();
        if (writeOffLoop()) {
            // task tput19: the record (an hsync) is written off the loop like the log appends and commit marks. The
            // batch counts as decided at once (a vote or BatchInfo retransmitted meanwhile does not make this replica
            // sign it again), but nobody gets the decision before it is durable: not the participants, not an asker
            // (answered in decided, below). A restart before that loses it with nothing sent: as if never decided
            batchLeader.startRecording(info.batchId(), t);
            diskWritesPending++;
            final boolean c = commit;
            diskWriter.recordLeaderDecision(rrs.generation(), t, commit ? info : null, () -> {
                diskWritesPending--;
                LatencyTrace.took("diskLeaderDecisionOffLoop", t0);
                decided(info, t, c);
            });
            return;
        }
        // durable before it is sent: a restart cannot flip it; a COMMIT with its BatchInfo (review rv20-1)
        disk.recordLeaderDecision(rrs.generation(), t, commit ? info : null);
        LatencyTrace.took("diskLeaderDecision", t0);
        decided(info, t, commit);
    }

    /** The decision this replica signed for a batch it leads is durable on its disk: send it. */
    private void decided(BatchInfo info, Certificate t, boolean commit) {
        LatencyTrace.stage(info.batchId(), "decided@" + pos);
        batchLeader.decide(info.batchId(), t); // decided: votes and BatchInfo are no longer needed
        ledParticipants.put(info.batchId(), info.participants()); // until its decision is collected from the disk
        maxLedBatch = Math.max(maxLedBatch, info.batchId());
        Set<NodeId> to = new HashSet<>();
        for (int p : info.participants()) {
            if (p >= 0 && p < cfg.regionCount()) {
                to.addAll(membership.current(p).replicas());
            }
        }
        Set<NodeId> waiters = batchLeader.takeWaiters(info.batchId());
        if (waiters != null) {
            to.addAll(waiters);
        }
        for (NodeId n : to) {
            boolean c = hooks.decisionFor(info.batchId(), n, commit);
            net.send(n, new Message.DecisionMsg(c == commit ? t : signDecision(info, c)));
        }
    }

    private Certificate signDecision(BatchInfo info, boolean commit) {
        Statement.Decision st = new Statement.Decision(commit, cfg.volume(), info.batchId(), info.firstSeq(),
                info.lastSeq(), regionId, rrs.generation());
        return Certificate.sign(commit ? CertType.TENTATIVE_COMMIT : CertType.TENTATIVE_ABORT, st, signer);
    }

    private void onDecisionRequest(NodeId from, long batchId) {
        Certificate d = batchLeader.decision(batchId);
        if (d == null && batchLeader.forgotten(batchId)) {
            // answered from the disk at the next tick, with every other such request: one scan per tick
            // whatever the request rate (anyone can ask, and the decision records grow with the run)
            batchLeader.addDiskRequest(batchId, from);
            return;
        }
        if (d == null) {
            d = ledCertificate(log.decision(batchId));
        }
        if (d != null) {
            net.send(from, new Message.DecisionMsg(d));
        } else if (!batchLeader.decided(batchId) || batchLeader.recording(batchId)) {
            batchLeader.addWaiter(batchId, from); // (a decision being recorded: answered once it is durable)
        }
    }

    /**
     * {@code c} if it is a whole COMMIT/ABORT certificate of a batch this region leads (three signatures of its
     * replicas: the asker verifies them), else null. A replica whose own tentative decision is gone (its disk was lost
     * and it caught up from a peer, whose transfer carries the certificates of the log after the checkpoint) answers
     * with it: without it the leaders of a later batch in another region, who need this batch's decision, got only
     * the other two leader replicas' tentatives and waited for ever.
     */
    private Certificate ledCertificate(Certificate c) {
        if (c == null || c.type() != CertType.COMMIT && c.type() != CertType.ABORT) {
            return null;
        }
        Statement.Decision st = c.statement(Statement.Decision.class);
        return st.leader().equals(regionId) && st.generation() == rrs.generation() ? c : null;
    }

    /**
     * Answers the requests for decisions freed from memory (a checkpoint covers them) since the last
     * tick with one read of the disk, where each decision was recorded before it was sent.
     */
    private void answerFreedDecisionRequests() {
        Map<Long, Set<NodeId>> asked = batchLeader.takeDiskRequests();
        if (asked.isEmpty()) {
            return;
        }
        Map<Long, Certificate> whole = new HashMap<>();
        for (Certificate d : disk.decisions(rrs.generation())) {
            Certificate led = ledCertificate(d);
            if (led != null) {
                // a whole certificate of a batch this region led (a caught-up replica's only record of it): the
                // answer if no tentative of its own is on the disk
                long b = led.statement(Statement.Decision.class).batchId();
                if (asked.containsKey(b)) {
                    whole.putIfAbsent(b, led);
                }
                continue;
            }
            if (d.type() != CertType.TENTATIVE_COMMIT && d.type() != CertType.TENTATIVE_ABORT
                    || !d.signers().equals(Set.of(me))) {
                continue;
            }
            Set<NodeId> askers = asked.remove(d.statement(Statement.Decision.class).batchId());
            if (askers != null && d.verify(verifier, Set.of(me))) {
                for (NodeId n : askers) {
                    net.send(n, new Message.DecisionMsg(d));
                }
            }
            if (asked.isEmpty()) {
                return;
            }
        }
        for (Map.Entry<Long, Set<NodeId>> e : asked.entrySet()) {
            Certificate led = whole.get(e.getKey());
            if (led != null && led.verify(verifier, rrs.replicaSet())) {
                for (NodeId n : e.getValue()) {
                    net.send(n, new Message.DecisionMsg(led));
                }
            }
        }
    }

    private void onDecision(Certificate t) {
        boolean whole = t.type() == CertType.COMMIT || t.type() == CertType.ABORT;
        if (t.type() != CertType.TENTATIVE_COMMIT && t.type() != CertType.TENTATIVE_ABORT && !whole) {
            return;
        }
        Statement.Decision st = t.statement(Statement.Decision.class);
        int leader = st.leader().index();
        if (!LatencyTrace.legacy() && st.volume().equals(cfg.volume()) && log.decision(st.batchId()) != null) {
            return; // decided here already (a retransmitted copy): dropped below anyway, without verifying it
        }
        if (!st.volume().equals(cfg.volume()) || leader < 0 || leader >= cfg.regionCount()
                || st.generation() != membership.current(leader).generation() // a stale generation's decision
                || !t.verify(verifier, membership.current(leader).replicaSet())) {
            return;
        }
        if (log.decision(st.batchId()) != null) {
            return; // (one freed below the batch floor may be learned again: a later batch's leader
                    // asks for it; the next checkpoint frees it again)
        }
        if (!log.hasBatch(st.batchId()) && !batchLeader.awaitsDecisionOf(st.batchId())) {
            // neither logged here nor the previous batch of one this replica leads: keeping it let one
            // faulty leader-region replica grow memory without bound (a participant that logs the batch
            // later asks for the decision at its tick)
            return;
        }
        ReplicaLog.Entry logged = log.entryOfBatch(st.batchId());
        if (logged != null ? logged.sb.leaderRegion() != leader : !batchLeader.awaitsDecisionOf(st.batchId(), leader)) {
            // signed by a region that does not lead the batch (review rv18r: a recovery abort asked of another
            // region, whose replicas hold no BatchInfo of it, made an ABORT certificate of a batch its own leaders
            // committed): only the decision of the batch's leader region counts
            return;
        }
        // a whole certificate (a leader replica that caught up from a peer answers with it) carries the three leader
        // replicas' signatures, verified above against the leader region's replicas
        Certificate cert = whole ? t : log.offerLeaderTentative(st.batchId(), t,
                cfg.mutated(Mutation.DECISION_FROM_TWO_LEADER_TENTATIVES) ? 2 : Tentatives.UNANIMOUS);
        if (cert == null) {
            return;
        }
        log.learnDecision(st.batchId(), cert);
        LatencyTrace.stage(st.batchId(), "learned@" + pos);
        for (BatchLeaderState.LeaderBatch lb : batchLeader.batchesCopy()) {
            if (lb.info != null && lb.info.prevBatchId() == st.batchId()) {
                LatencyTrace.stage(lb.info.batchId(), "leaderPrevLearned@" + pos);
                tryDecide(lb);
            }
        }
        tryCommit();
    }

    // ------------------------------------------------------------------ commit (AS step 4)

    private void tryCommit() {
        while (true) {
            ReplicaLog.Entry e = log.nextToCommit();
            if (e == null || !e.logged || diskBroken) {
                return; // (not durable here yet: committed once it is)
            }
            Certificate d = log.decision(e.sb.batchId());
            if (d == null) {
                return;
            }
            Statement.Decision st = d.statement(Statement.Decision.class);
            if (st.firstSeq() > e.sb.firstSeq() || st.lastSeq() < e.sb.lastSeq()
                    || st.leader().index() != e.sb.leaderRegion()) {
                return; // decision does not cover this sub-batch: wait for recovery
            }
            // the entry's commit/abort mark is durable before the replica acts on it: recovery uses the
            // ABORT marks to keep logged-then-aborted entries out of the prepared prefix
            if (writeOffLoop()) {
                // decided: the next entry may follow (its mark is written after this one, and acted on after it)
                log.committedIndex++;
                e.committing = true;
                diskWritesPending++;
                long t0 = LatencyTrace.now();
                diskWriter.recordDecision(rrs.generation(), d, () -> {
                    diskWritesPending--;
                    LatencyTrace.took("diskCommitMarkOffLoop", t0);
                    resolve(e, d);
                });
                continue;
            }
            long t0 = LatencyTrace.now();
            disk.recordDecision(rrs.generation(), d);
            LatencyTrace.took("diskCommitMark", t0);
            log.committedIndex++;
            resolve(e, d);
        }
    }

    /** The entry's commit/abort mark is durable: apply it (COMMIT) and tell the client. In log order. */
    private void resolve(ReplicaLog.Entry e, Certificate d) {
        e.committing = false;
        e.resolved = true;
        log.resolvedIndex = e.index;
        if (d.type() == CertType.COMMIT) {
            apply(e);
            sendPutOutcome(e, true);
            LatencyTrace.stage(e.sb.batchId(), "applied@" + pos);
        } else {
            sendPutOutcome(e, false);
        }
        // the blocks are in the log and (a COMMIT) in the store: memory keeps the entry's metadata only (issue 27),
        // so what a replica holds between certificates does not grow with the size of its writes
        e.dropData();
    }

    /** Whether {@code sb} is the sub-batch logged as {@code e} (by its bytes' digest once {@code e} dropped its data). */
    private boolean sameSubBatch(ReplicaLog.Entry e, SubBatch sb) {
        return e.hollow ? cfg.hash().hash(sb.encode()).equals(e.digest) : e.sb.equals(sb);
    }

    private void apply(ReplicaLog.Entry e) {
        long first = cfg.layout().firstBlock(regionId.index());
        for (Put p : e.sb.puts()) {
            long local = p.block() - first;
            byte[] data = hooks.onApply(p.data().clone());
            try {
                store.apply(local, data);
            } catch (RuntimeException failed) {
                diskBroken = true;
                throw new StoreWriteFailed(me + ": applying log entry " + e.index + " (block " + p.block()
                        + ") to the region's store failed; this replica commits nothing more until its region reopens",
                        failed);
            }
            rootRecord = rootRecord.newer(new VolumeRootRecord(p.volumeRoot(), p.seq()));
        }
        appliedSeq = e.sb.lastSeq();
        rootHistory.put(appliedSeq, store.root());
        serveGets();
        if (cfg.checkpointIndex(e.index)) {
            flush(e.index);
        }
    }

    private void sendPutOutcome(ReplicaLog.Entry e, boolean success) {
        Statement.PutOutcome st = new Statement.PutOutcome(success, regionId, e.sb.batchId(), e.sb.firstSeq(),
                e.sb.lastSeq(), e.index, e.digest);
        net.send(clientId, new Message.PutReply(Certificate.sign(
                success ? CertType.TENTATIVE_PUT_SUCCESS : CertType.TENTATIVE_PUT_FAILED, st, signer)));
    }

    // ------------------------------------------------------------------ GET (§3.3.3)

    private void onGet(NodeId from, Message.GetRequest g) {
        if (g.block() < 0 || g.block() >= cfg.layout().volumeBlocks()
                || cfg.layout().regionOf(g.block()) != regionId.index()) {
            return;
        }
        if (!from.equals(clientId)) {
            return; // only the volume's client reads; anyone else's GET would wait here for ever
        }
        pendingGets.removeIf(p -> p.from.equals(from) && p.req.requestId() == g.requestId()); // a retry
        if (pendingGets.size() >= MAX_PENDING_GETS) {
            pendingGets.remove(0); // the oldest: its client retries it (at another replica) when it times out
        }
        pendingGets.add(new PendingGet(from, g));
        serveGets();
    }

    /**
     * Answers the waiting GETs whose prevNum has applied. A block the store cannot read (the adapter's read failed,
     * e.g. an HBase store file block that fails its checksum) is not answered at all, never with other bytes: the GET
     * is dropped ({@link #unreadableGets()}) and its client retries it at another replica after its timeout. The
     * failure stays inside the GET: serveGets runs after every apply, where an exception would stop the commit.
     */
    private void serveGets() {
        pendingGets.removeIf(p -> {
            if (appliedSeq < p.req.prevNum()) {
                return false;
            }
            long local = cfg.layout().localIndex(p.req.block());
            if (missingForRebuild(local)) {
                rebuildDroppedGets++; // not here yet: never answered with other bytes; the client asks another replica
                return true;
            }
            byte[] data;
            MerkleProof proof;
            try {
                data = block(local);
                proof = store.proof(local);
            } catch (RuntimeException e) {
                unreadableGets++;
                lastUnreadableGet = "block " + p.req.block() + ": " + e;
                return true;
            }
            net.send(p.from, new Message.GetReply(p.req.requestId(), p.req.block(), hooks.onGetReply(data),
                    appliedSeq, proof));
            return true;
        });
    }

    /** GETs dropped because the store could not read their block (see {@link #serveGets}). */
    public long unreadableGets() {
        return unreadableGets;
    }

    /** The last such failure (block and error), or null. */
    public String lastUnreadableGet() {
        return lastUnreadableGet;
    }

    private volatile long unreadableGets; // written on the replica's loop only; read by metrics
    private volatile String lastUnreadableGet;

    // ------------------------------------------------------------------ flush / compaction consent

    private void flush(long index) {
        // a checkpoint costs what changed since the previous durable one, not the region's size. The state is
        // captured here (a copy of the changed blocks, the root, the record); the write runs on the checkpoint
        // writer, and the snapshot is signed only once it is durable (signWrittenCheckpoints). The dirty set keeps
        // every block whose write has not completed (markDurable(written) forgets only those written), so after a
        // failed write this one holds that write's blocks too and composes over the last durable checkpoint
        Map<Long, byte[]> changed = store.dirty();
        long seq = appliedSeq;
        VolumeRootRecord rec = rootRecord;
        WrittenCheckpoint w = new WrittenCheckpoint(index, store.root(), rec);
        long gen = rrs.generation();
        // issue 27: over a versioned store the checkpoint is metadata only, naming the store's version (its blocks
        // stay in the store, made durable by markDurable below before anything is signed). While a rebuild still
        // fetches blocks the store holds no complete state at any version: nothing is written until it is done
        boolean stored = store.versioned();
        long version = stored ? store.version() : -1;
        boolean write = !stored || rebuild == null;
        Executor writer = LatencyTrace.legacy() ? Runnable::run : checkpointWriter;
        if (write) {
            writer.execute(() -> {
                try {
                    long t0 = LatencyTrace.now();
                    if (stored) {
                        // the store first: a stored checkpoint file names only a version that is durable
                        store.makeDurableThrough(version);
                        disk.writeStoredCheckpoint(gen, index, seq, changed, rec, w.root(), version);
                    } else {
                        disk.writeCheckpoint(gen, index, seq, changed, rec);
                        store.markDurable(changed);
                    }
                    LatencyTrace.took("checkpointWrite", t0);
                    checkpointsWritten.add(w);
                } catch (RuntimeException ex) {
                    checkpointWriteFailures++;
                    checkpointFailures.add(new CheckpointWriteFailed(me + ": the checkpoint through index " + index
                            + " was not written (" + ex + "); it is not signed, the next one writes its blocks too",
                            ex));
                }
            });
        }
        if (me.equals(rrs.primary())) {
            for (NodeId r : rrs.replicas()) {
                net.send(r, new Message.CheckpointPropose(regionId.index(), rrs.generation(), index));
            }
        }
        signWrittenCheckpoints(); // an inline writer has written it already
    }

    /** On the loop: a failed checkpoint write is thrown once (the adapter logs it). */
    private void throwCheckpointFailure() {
        CheckpointWriteFailed f = checkpointFailures.poll();
        if (f != null) {
            throw f;
        }
    }

    private void signWrittenCheckpoints() {
        WrittenCheckpoint w;
        while ((w = checkpointsWritten.poll()) != null) {
            if (w.index() <= checkpoints.checkpointedIndex) {
                continue; // a certificate at or after it formed meanwhile
            }
            checkpoints.snapshot(w.index(), w.root(), w.record());
            if (checkpoints.proposed(w.index())) {
                signCheckpoint(w.index());
            }
        }
    }

    /**
     * Frees the memory a CHECKPOINT certificate through {@code index} covers: the entries and their
     * batch index, their decision certificates, region roots before the checkpoint, older snapshot
     * roots. Decision certificates a batch led here still waits for (its previous batch) are kept.
     */
    private void freeCoveredState(long index, long lastSeq) {
        long maxFreedBatch = log.freeEntriesThrough(index);
        long floor = batchLeader.lowestNeeded(log.lowestOpenBatch(maxFreedBatch + 1));
        log.raiseBatchFloor(floor);
        batchLeader.freeBelow(log.batchFloor);
        rootHistory.headMap(lastSeq, false).clear();
        checkpoints.freeBefore(index);
    }

    private void onCheckpointPropose(NodeId from, Message.CheckpointPropose p) {
        // deterministic criterion: only at the fixed flush interval, only from our primary
        if (!from.equals(rrs.primary()) || p.region() != regionId.index() || p.generation() != rrs.generation()
                || !cfg.checkpointIndex(p.throughIndex()) || p.throughIndex() <= checkpoints.checkpointedIndex) {
            return;
        }
        checkpoints.propose(p.throughIndex());
        if (checkpoints.hasSnapshot(p.throughIndex())) {
            signCheckpoint(p.throughIndex());
        }
    }

    private void signCheckpoint(long index) {
        if (rebuild != null) {
            return; // its disk has no checkpoint through the certified index yet; signed once rebuilt (finishRebuild)
        }
        Statement.Checkpoint st = checkpoints.statement(regionId, rrs.generation(), index);
        Certificate t = Certificate.sign(CertType.TENTATIVE_CHECKPOINT, st, signer);
        for (NodeId r : rrs.replicas()) {
            net.send(r, new Message.CheckpointVote(t));
        }
    }

    private void onCheckpointVote(Certificate t) {
        if (t.type() != CertType.TENTATIVE_CHECKPOINT || !t.verify(verifier, rrs.replicaSet())) {
            return;
        }
        Statement.Checkpoint st = t.statement(Statement.Checkpoint.class);
        if (!st.region().equals(regionId) || st.generation() != rrs.generation()
                || st.throughIndex() <= checkpoints.checkpointedIndex) {
            return;
        }
        if (!cfg.checkpointIndex(st.throughIndex()) || st.throughIndex() >= log.nextIndex) {
            // Not a flush index, or one this replica has not logged: an honest peer flushes an index only
            // once its entry is stored by the witnesses, which needs this replica's tentative, sent after
            // it logged the entry. Keeping such votes let one faulty peer grow memory without bound;
            // an honest peer resends its vote (tick) until the certificate forms.
            return;
        }
        if (t.signers().contains(rrs.primary()) && !checkpoints.proposed(st.throughIndex())) {
            // the primary proposes an index once (CHECKPOINT_PROPOSE) and resends its own vote every retransmission
            // round: its verified vote is the proposal, so a replica that lost the proposal (a busy replica refuses
            // messages past its inbound bound, issue 27) still signs, and the checkpoint certifies
            checkpoints.propose(st.throughIndex());
            if (checkpoints.hasSnapshot(st.throughIndex())) {
                signCheckpoint(st.throughIndex());
            }
        }
        Certificate cp = checkpoints.offerVote(st.throughIndex(), t);
        if (cp != null) {
            long through = st.throughIndex();
            long gen = rrs.generation();
            Runnable persist = () -> {
                long t0 = LatencyTrace.now();
                coordination.putCheckpoint(cp);
                // the store keeps the latest valid checkpoint (and anything newer), not the region's history
                coordination.pruneCheckpoints(regionId, Coordination.signedByItsGeneration(verifier, membership));
                disk.truncateLogPrefix(gen, through); // GC only after the certificate is stored
                persistedThrough = Math.max(persistedThrough, through);
                LatencyTrace.took("checkpointCertified", t0);
            };
            if (!checkpointsOffLoop || LatencyTrace.legacy() || LatencyTrace.inlineDisk()) {
                persist.run();
            } else {
                // on the checkpoint writer (tput17): a ZooKeeper write and prune, then an HDFS marker file, a segment
                // roll and deletes took ~90 ms of the loop per batch, every message behind them waiting. In order
                // with the checkpoint writes; the log is still truncated only after the certificate is stored (each
                // of the three replicas stores it; until one has, the previous certificate and the log still hold)
                checkpointWriter.execute(() -> {
                    try {
                        persist.run();
                    } catch (RuntimeException ex) {
                        // reported once on the loop like a failed checkpoint write; the log keeps its prefix
                        // (truncated only after a stored certificate) until the next certificate is stored
                        checkpointFailures.add(new CheckpointWriteFailed(me + ": the CHECKPOINT certificate through"
                                + " index " + through + " was not stored (" + ex + "); the log is collected after"
                                + " the next one", ex));
                    }
                });
            }
            long[] previous = checkpoints.certified(through, st.lastSeq());
            // memory lags one certificate: the entries this certificate covers stay until the next one,
            // so a client whose reply was lost still gets its outcome resent for its retransmission while
            // fewer than cfg.checkpointEvery() later entries of this region were logged since (SalusVolume
            // keeps at most 32 batches outstanding, each at most one entry per region: below the default
            // interval of 64). Liveness only: an entry freed from memory is never re-logged or re-decided
            // (a retransmitted copy is then stale and dropped), the client's retries end in recovery
            if (previous != null) {
                freeCoveredState(previous[0], previous[1]);
            }
            collectGarbage(cp, st.throughIndex());
        }
    }

    // ------------------------------------------------------------------ garbage collection (issue 14 item 1)

    /**
     * What a CHECKPOINT certificate through {@code k} (formed here from the three replicas' verified votes, each
     * signed only once that replica's own checkpoint through k was durable) lets go, besides the log prefix
     * ({@link ReplicaDisk#truncateLogPrefix}, above):
     * <ul>
     * <li>the metadata holders' LOG_ENTRY certificates through k: the primary sends them the certificate, and each
     * holder verifies it before it drops anything ({@code WitnessLog#truncate});</li>
     * <li>checkpoint files ({@link ReplicaDisk#collectCheckpoints}), on the checkpoint writer, so after this replica's
     * own checkpoint write through k;</li>
     * <li>decision records, every {@link #DECISION_GC_EVERY} certificates ({@link #compactDecisions}).</li>
     * </ul>
     * A GC step that fails leaves its files (counted in {@link #gcFailures()}); the next certificate tries again.
     */
    private void collectGarbage(Certificate cp, long k) {
        if (me.equals(rrs.primary()) && !cfg.mutated(Mutation.SKIP_WITNESS_STORES)) {
            for (NodeId h : rrs.metadataHolders()) {
                net.send(h, new Message.CheckpointCert(cp));
            }
        }
        long gen = rrs.generation();
        Executor writer = LatencyTrace.legacy() ? Runnable::run : checkpointWriter;
        writer.execute(() -> {
            // the certificate through k carries this replica's signature, given only once its own checkpoint
            // through k was written: a checkpoint write that failed before k is covered by a later one (rv17)
            try {
                if (persistedThrough < k) {
                    // review rvw27-3: the certificate through k was not stored (a ZooKeeper outage): a restart still
                    // starts from the previous one, whose checkpoint files and cell versions must stay
                    return;
                }
                disk.collectCheckpoints(gen, k);
                if (store.versioned()) {
                    // versions older than the certified state's are not needed any more (compactions drop them)
                    RegionSnapshot s = disk.readSnapshot(gen, k);
                    if (s != null && s.isStored()) {
                        store.retainFrom(s.stored().storeVersion());
                    }
                }
            } catch (RuntimeException ex) {
                gcFailures.incrementAndGet();
            }
        });
        for (ReplicaLog.Entry e : log.entries()) {
            if (e.index <= k) {
                batchThroughCertified = Math.max(batchThroughCertified, e.sb.batchId());
            }
        }
        if (++certsSinceDecisionGc >= DECISION_GC_EVERY) {
            certsSinceDecisionGc = 0;
            try {
                compactDecisions(k);
            } catch (RuntimeException ex) {
                gcFailures.incrementAndGet();
            }
        }
    }

    /**
     * Keeps the decision records a restart, a peer's catch-up, volume recovery or another replica may still need:
     * <ul>
     * <li>WRITER_EPOCH: the recorded epoch (the fence must survive a restart); lower ones are dropped;</li>
     * <li>COMMIT/ABORT marks of this replica's entries: those of batches after the certified index (the restart
     * replay, {@link ReplicaCatchUp#answer} and recovery's ABORT marks read them), and the one of the highest batch
     * (a restart reports it as its last batch id at mount); marks of batches whose entries are all at or below
     * the index are dropped (those entries are gone from the log);</li>
     * <li>TENTATIVE_COMMIT/ABORT this replica signed as a batch-leader replica: until
     * {@link #leaderDecisionCollectable};</li>
     * <li>anything else: kept.</li>
     * </ul>
     */
    private void compactDecisions(long k) {
        long minAfter = Long.MAX_VALUE;
        for (ReplicaLog.Entry e : log.entries()) {
            if (e.index > k) {
                minAfter = Math.min(minAfter, e.sb.batchId());
            }
        }
        long markFloor = Math.min(batchThroughCertified, minAfter == Long.MAX_VALUE ? Long.MAX_VALUE : minAfter - 1);
        long maxMark = -1;
        for (Certificate d : disk.decisions(rrs.generation())) {
            if ((d.type() == CertType.COMMIT || d.type() == CertType.ABORT)
                    && d.statement(Statement.Decision.class).volume().equals(cfg.volume())) {
                maxMark = Math.max(maxMark, d.statement(Statement.Decision.class).batchId());
            }
        }
        long highestMark = maxMark;
        Map<Integer, Long> certifiedSeq = new java.util.HashMap<>();
        Set<Long> collectedLeader = new HashSet<>();
        long[] dropped = {0};
        disk.compactDecisions(rrs.generation(), d -> {
            boolean keep = keepDecision(d, markFloor, highestMark, certifiedSeq, collectedLeader);
            if (!keep) {
                dropped[0]++;
            }
            return keep;
        });
        decisionsCollected += dropped[0];
        ledParticipants.keySet().removeAll(collectedLeader);
    }

    private boolean keepDecision(Certificate d, long markFloor, long highestMark, Map<Integer, Long> certifiedSeq,
                                 Set<Long> collectedLeader) {
        if (d.type() == CertType.WRITER_EPOCH) {
            Statement.WriterEpoch we = d.statement(Statement.WriterEpoch.class);
            return !we.volume().equals(cfg.volume()) || we.epoch() >= writerEpoch;
        }
        if (!(d.statement() instanceof Statement.Decision st) || !st.volume().equals(cfg.volume())) {
            return true;
        }
        if (d.type() == CertType.COMMIT || d.type() == CertType.ABORT) {
            return st.batchId() > markFloor || st.batchId() == highestMark;
        }
        if ((d.type() == CertType.TENTATIVE_COMMIT || d.type() == CertType.TENTATIVE_ABORT)
                && d.signers().equals(Set.of(me)) && leaderDecisionCollectable(st, certifiedSeq)) {
            collectedLeader.add(st.batchId());
            return false;
        }
        return true;
    }

    /**
     * A decision this replica signed as a batch-leader replica may leave its disk only when nobody can still ask
     * for it: (1) it is below the batch floor, forgotten from memory (this replica never decides that batch again
     * while it runs); (2) every participant region of the batch (every region, if this replica restarted since and
     * no longer knows them) has a CHECKPOINT certificate in coordination, signed by its generation's replicas, whose
     * last seq reaches the batch's last seq: a region applies its puts in seq order, so that region's sub-batch of
     * the batch is at or below its certified index, resolved by all three of its replicas, and none of them asks
     * again; (3) batches {@link #LEADER_DECISIONS_KEPT} ids later exist here: the next batch's leader asks for this
     * decision (its previous batch's) only while that next batch is open.
     */
    private boolean leaderDecisionCollectable(Statement.Decision st, Map<Integer, Long> certifiedSeq) {
        long b = st.batchId();
        if (!batchLeader.forgotten(b) || Math.max(lastBatchId, maxLedBatch) - b < LEADER_DECISIONS_KEPT) {
            return false;
        }
        List<Integer> parts = ledParticipants.get(b);
        if (parts == null) {
            List<Integer> all = new ArrayList<>();
            for (int p = 0; p < cfg.regionCount(); p++) {
                all.add(p);
            }
            parts = all;
        }
        for (int p : parts) {
            if (p < 0 || p >= cfg.regionCount()) {
                return false;
            }
            long seq = certifiedSeq.computeIfAbsent(p, r -> coordination.latestCheckpoint(membership.current(r).region(),
                            Coordination.signedByItsGeneration(verifier, membership))
                    .map(c -> c.statement(Statement.Checkpoint.class).lastSeq()).orElse(-1L));
            if (seq < st.lastSeq()) {
                return false;
            }
        }
        return true;
    }

    /** GC steps that failed since this replica started (their files stay until the next certificate). */
    public long gcFailures() {
        return gcFailures.get();
    }

    /** Decision records dropped by compaction since this replica started. */
    public long decisionsCollected() {
        return decisionsCollected;
    }
}
