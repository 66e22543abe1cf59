package io.salus.core.protocol.client;

import io.salus.core.cert.CertType;
import io.salus.core.cert.Certificate;
import io.salus.core.cert.RegionId;
import io.salus.core.cert.Statement;
import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.Signer;
import io.salus.core.crypto.Verifier;
import io.salus.core.merkle.Hash;
import io.salus.core.merkle.MerkleProof;
import io.salus.core.merkle.MerkleTree;
import io.salus.core.merkle.RegionLayout;
import io.salus.core.merkle.VolumeRootRecord;
import io.salus.core.protocol.LatencyTrace;
import io.salus.core.protocol.Membership;
import io.salus.core.protocol.Mutation;
import io.salus.core.protocol.ProtocolConfig;
import io.salus.core.protocol.RrsConfig;
import io.salus.core.protocol.Tentatives;
import io.salus.core.protocol.Transport;
import io.salus.core.protocol.message.BatchInfo;
import io.salus.core.protocol.message.Message;
import io.salus.core.protocol.message.Put;
import io.salus.core.protocol.message.SubBatch;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * The protocol side of the block driver: batching into per-region sub-batches with seq/prevNum
 * (PC1), the batch leader choice, the volume tree updated on every PUT, PUT_SUCCESS assembly, and
 * end-to-end verified GETs carrying prevNum (§3.3.3). PUTs to a block with an outstanding GET are
 * refused until the GET completes.
 *
 * <p>Single-threaded: the caller serialises all calls.
 */
public final class VolumeClient {
    private final ProtocolConfig cfg;
    private final RegionLayout layout;
    private final NodeId me;
    private final Signer signer;
    private final Verifier verifier;
    private final Membership membership;
    private final Transport net;
    private final ClientListener listener;
    private final int maxOutstanding;
    private final long retransmitEvery;
    private final int retriesBeforeRecovery;
    /** See {@link #suspectSilentAfter(int)}. */
    private int suspectSilentAfter;
    /** Default number of retransmissions without any progress after which the client asks for recovery. */
    public static final int DEFAULT_RETRIES_BEFORE_RECOVERY = 4;
    /** Non-null once a batch failed: the client's tree holds writes the servers did not apply. */
    private String needsRemount;
    private boolean recoveryRequested;

    private MerkleTree tree;
    /** Where a volume tree keeps its nodes: the heap by default, see {@link #useTreeStores}. */
    private java.util.function.Supplier<io.salus.core.merkle.NodeStore> treeStores =
            io.salus.core.merkle.InMemoryNodeStore::new;
    /** The server hosting a replica, for the mount's leaf fetch ({@link #hostsBy}); the replica's id by default. */
    private java.util.function.Function<NodeId, ?> hostOf = n -> n;
    private long nextSeq = 1;
    private long nextBatchId = 1;
    private long[] lastSeqOfRegion;
    /** Per region, the prevNum of the next PUT to it (the region's last accepted seq). */
    private long[] nextPrevNum;
    /** Where a mount runs identifyLCP (null: a region that cannot settle keeps the mount waiting). */
    private io.salus.core.protocol.recovery.Coordination recoveryCoordination;
    /** Test seam: messages this client does not send (a writer that dies with a batch only partly sent). */
    private volatile java.util.function.BiPredicate<NodeId, Message> dropForTest;
    /** Test seam: a mount sends at most this many recovery messages (then it is as if the client died). */
    private int recoverySendBudget = Integer.MAX_VALUE;
    /** What the last mount's recovery did: the LCP it recorded or found, the batches it asked to abort. */
    private io.salus.core.protocol.recovery.Coordination.Lcp lastMountLcp;
    private java.util.SortedSet<Long> lastMountAborts = java.util.Collections.emptySortedSet();
    /**
     * Per block, the seq of its last write issued above its region's confirmed floor ({@link #confirmedFloor}):
     * what a GET of the block must wait for. Entries at or below the floor are pruned when a batch completes.
     */
    private final Map<Long, Long> recentWrites = new HashMap<>();
    private final Map<Integer, TreeMap<Long, Hash>> regionRootHistory = new HashMap<>();
    private long prevBatchId = -1;
    private int prevLeader = -1;
    private final LinkedHashMap<Long, OutBatch> outstanding = new LinkedHashMap<>();
    private final Map<Long, OutGet> gets = new HashMap<>();
    private long nextGetId = 1;
    private long now;
    /** The writer's lease epoch (0: no lease, no fencing: simulations). */
    private final long epoch;
    /** Replicas that have not yet confirmed this writer's fence (null: {@link #fence} not called). */
    private Set<NodeId> fencePending;
    private Certificate fenceCert;
    private long fenceSentAt;
    /** The mount in progress (queries sent, answers collected), or null. */
    private ReplicaMount remount;
    /** FLUSHes not done yet, in issue order (task tput18). */
    private final TreeMap<Long, OutFlush> flushes = new TreeMap<>();
    /**
     * Starts at a random id, not 1 (review rv18r): a FlushReply is signed over the flush id only (with volume, region,
     * generation), so with ids from 1 in every client a reply to a previous client of the volume (same key: the writer
     * before a restart) replayed by the network completed this client's FLUSH of the same id without any sync.
     */
    private long nextFlushId = 1 + (new java.security.SecureRandom().nextLong() >>> 2);
    /**
     * Regions with a write acknowledged (PUT_SUCCESS) since the last FLUSH was issued: the next FLUSH asks their
     * replicas to sync. All regions at first (a new client does not know what its predecessor left unsynced).
     */
    private final Set<Integer> unflushed = new java.util.TreeSet<>();

    private static final class OutFlush {
        /** Replicas that have not answered. */
        final Set<NodeId> pending = new HashSet<>();
        long sentAt;
        int retries;
    }

    private static final class OutBatch {
        BatchInfo info;
        final Map<Integer, SubBatch> subs = new TreeMap<>();
        /** Every distinct valid tentative outcome received, per region. */
        final Map<Integer, List<Certificate>> tentatives = new HashMap<>();
        final Map<Integer, Certificate> success = new TreeMap<>();
        long sentAt;
        int retries;
        /** Replicas reported silent for this batch ({@link ClientListener#replicasSilent}), for the escalation. */
        final Set<NodeId> reportedSilent = new HashSet<>();
        /**
         * Valid TENTATIVE_COMMITs of the batch's leader replicas (one slot: the batch), asked for on a retransmission
         * ({@link #onDecision}).
         */
        final Tentatives<Long> leaderCommits = new Tentatives<>();
    }

    private static final class OutGet {
        final long block;
        final long prevNum;
        int tries;
        long sentAt;

        OutGet(long block, long prevNum) {
            this.block = block;
            this.prevNum = prevNum;
        }
    }

    public VolumeClient(ProtocolConfig cfg, NodeId me, Signer signer, Verifier verifier, Membership membership,
                        Transport net, ClientListener listener, int maxOutstandingBatches, long retransmitEvery) {
        this(cfg, me, signer, verifier, membership, net, listener, maxOutstandingBatches, retransmitEvery,
                DEFAULT_RETRIES_BEFORE_RECOVERY);
    }

    /**
     * @param retriesBeforeRecovery retransmissions of the outstanding batches without any progress
     *                              (no PUT_SUCCESS) after which the client asks for recovery
     */
    public VolumeClient(ProtocolConfig cfg, NodeId me, Signer signer, Verifier verifier, Membership membership,
                        Transport net, ClientListener listener, int maxOutstandingBatches, long retransmitEvery,
                        int retriesBeforeRecovery) {
        this(cfg, me, signer, verifier, membership, net, listener, maxOutstandingBatches, retransmitEvery,
                retriesBeforeRecovery, 0);
    }

    /**
     * @param epoch the writer's lease epoch (&gt; 0: the client must {@link #fence} every replica before it writes,
     *              and every sub-batch and BatchInfo carries it; 0: no lease, no fencing)
     */
    public VolumeClient(ProtocolConfig cfg, NodeId me, Signer signer, Verifier verifier, Membership membership,
                        Transport net, ClientListener listener, int maxOutstandingBatches, long retransmitEvery,
                        int retriesBeforeRecovery, long epoch) {
        if (epoch < 0) {
            throw new IllegalArgumentException("writer epoch must be >= 0, got " + epoch);
        }
        this.epoch = epoch;
        if (retriesBeforeRecovery < 1) {
            throw new IllegalArgumentException("retriesBeforeRecovery must be >= 1, got " + retriesBeforeRecovery);
        }
        this.retriesBeforeRecovery = retriesBeforeRecovery;
        this.cfg = cfg;
        this.layout = cfg.layout();
        this.me = me;
        this.signer = signer;
        this.verifier = verifier;
        this.membership = membership;
        this.net = (to, m) -> {
            if (dropForTest == null || !dropForTest.test(to, m)) {
                net.send(to, m);
            }
        };
        this.listener = listener;
        this.maxOutstanding = maxOutstandingBatches;
        this.retransmitEvery = retransmitEvery;
        this.tree = new MerkleTree(cfg.hash(), cfg.blockSize(), layout.volumeBlocks());
        this.lastSeqOfRegion = new long[cfg.regionCount()];
        this.nextPrevNum = new long[cfg.regionCount()];
        for (int r = 0; r < cfg.regionCount(); r++) {
            regionRootHistory.computeIfAbsent(r, k -> new TreeMap<>()).put(0L, tree.node(layout.regionLevel(), r));
            unflushed.add(r);
        }
    }

    /**
     * Names the server hosting each replica ({@code hostOf} may return null: unknown, the replica's id stands for it):
     * a mount remembers a server silent on leaf queries for every region it hosts a replica of.
     */
    public void hostsBy(java.util.function.Function<NodeId, ?> hostOf) {
        this.hostOf = hostOf;
    }

    /**
     * Keeps the volume tree's nodes in stores made by {@code stores} (e.g. a {@link io.salus.core.merkle.MappedNodeStore}
     * outside the heap) from now on: the current, still empty tree is replaced, and every mount builds its tree in a
     * new store. Only before the first write or mount.
     */
    public void useTreeStores(java.util.function.Supplier<io.salus.core.merkle.NodeStore> stores) {
        if (!tree.root().equals(tree.emptyHash(tree.depth())) || !outstanding.isEmpty() || remount != null) {
            throw new IllegalStateException("the volume tree's store is chosen before the first write or mount");
        }
        treeStores = stores;
        tree = new MerkleTree(cfg.hash(), cfg.blockSize(), layout.volumeBlocks(), stores.get());
    }

    public Hash volumeRoot() {
        return tree.root();
    }

    public long nextSeq() {
        return nextSeq;
    }

    public int outstandingBatches() {
        return outstanding.size();
    }

    public int outstandingGets() {
        return gets.size();
    }

    /** True if a PUT to {@code block} would be refused because a GET to it is outstanding. */
    public boolean blockedByGet(long block) {
        for (OutGet g : gets.values()) {
            if (g.block == block) {
                return true;
            }
        }
        return false;
    }

    /**
     * Issues a batch (PC1). Returns the batch id, or -1 if the pipeline is full or a written block has
     * an outstanding GET (try again later). Blocks are written in list order and get consecutive seqs.
     */
    public long submit(List<BlockWrite> writes) {
        requireMounted("write");
        if (epoch > 0 && (fencePending == null || !fencePending.isEmpty())) {
            throw new IllegalStateException("volume " + cfg.volume() + ": writer epoch " + epoch + " is not fenced at"
                    + " every replica yet (" + (fencePending == null ? "fence() was not called"
                    : "waiting for " + fencePending) + "); call fence() and wait until fenceOutstanding() is empty");
        }
        if (writes.isEmpty() || outstanding.size() >= maxOutstanding) {
            return -1;
        }
        for (BlockWrite w : writes) {
            if (w.data().length != cfg.blockSize()) {
                throw new IllegalArgumentException("block " + w.block() + ": data must be " + cfg.blockSize()
                        + " bytes, got " + w.data().length);
            }
            layout.regionOf(w.block()); // range check with a clear message
            if (blockedByGet(w.block())) {
                return -1;
            }
        }
        long batchId = nextBatchId++;
        long firstSeq = nextSeq;
        Map<Integer, List<Put>> byRegion = new TreeMap<>();
        for (BlockWrite w : writes) {
            int r = (int) layout.regionOf(w.block());
            long seq = nextSeq++;
            Hash dataHash = cfg.hash().leafHash(w.data());
            Hash root = tree.setLeaf(w.block(), dataHash);
            byRegion.computeIfAbsent(r, k -> new ArrayList<>())
                    .add(new Put(seq, nextPrevNum[r], w.block(), w.data().clone(), dataHash, root));
            lastSeqOfRegion[r] = seq;
            nextPrevNum[r] = seq;
            recentWrites.put(w.block(), seq);
        }
        int leader = (int) layout.regionOf(writes.get(0).block());
        OutBatch ob = new OutBatch();
        for (Map.Entry<Integer, List<Put>> e : byRegion.entrySet()) {
            SubBatch sb = new SubBatch(cfg.volume(), e.getKey(), batchId, leader, epoch, e.getValue(), null);
            ob.subs.put(e.getKey(), sb.withSignature(signer.sign(sb.signedBytes())));
            regionRootHistory.get(e.getKey()).put(sb.lastSeq(), tree.node(layout.regionLevel(), e.getKey()));
        }
        BatchInfo info = new BatchInfo(cfg.volume(), batchId, firstSeq, nextSeq - 1, new ArrayList<>(byRegion.keySet()),
                prevBatchId, prevLeader, epoch, null);
        ob.info = info.withSignature(signer.sign(info.signedBytes()));
        prevBatchId = batchId;
        prevLeader = leader;
        outstanding.put(batchId, ob);
        byRegion.keySet().forEach(this::pruneHistory); // after the batch is outstanding: its floor counts
        LatencyTrace.stage(batchId, "submit");
        send(ob);
        return batchId;
    }

    private void send(OutBatch ob) {
        ob.sentAt = now;
        for (NodeId l : membership.current(leaderOf(ob)).replicas()) {
            net.send(l, new Message.BatchInfoMsg(ob.info));
        }
        for (Map.Entry<Integer, SubBatch> e : ob.subs.entrySet()) {
            if (!ob.success.containsKey(e.getKey())) {
                net.send(membership.current(e.getKey()).primary(), new Message.SubBatchMsg(e.getValue()));
            }
        }
    }

    private int leaderOf(OutBatch ob) {
        return ob.subs.values().iterator().next().leaderRegion();
    }

    /** Issues a GET (prevNum = last PUT issued to the block's region). Returns the request id. */
    public long get(long block) {
        requireMounted("read");
        int r = (int) layout.regionOf(block);
        long id = nextGetId++;
        // the GET waits for the last write to this block, not for the region's last write: a write to another
        // block of the region still in the pipeline (seconds behind the pipelined decisions) no longer holds it
        long prevNum = LatencyTrace.legacy() ? lastSeqOfRegion[r]
                : Math.max(confirmedFloor(r), recentWrites.getOrDefault(block, 0L));
        OutGet g = new OutGet(block, prevNum);
        gets.put(id, g);
        sendGet(id, g);
        return id;
    }

    private void sendGet(long id, OutGet g) {
        int r = (int) layout.regionOf(g.block);
        List<NodeId> reps = membership.current(r).replicas();
        g.sentAt = now;
        net.send(reps.get(g.tries % reps.size()), new Message.GetRequest(id, g.block, g.prevNum));
    }

    public void receive(NodeId from, Message m) {
        if (m instanceof Message.PutReply p) {
            onPutReply(from, p.tentative());
        } else if (m instanceof Message.GetReply g) {
            onGetReply(from, g);
        } else if (m instanceof Message.WriterEpochReply r) {
            onWriterEpochReply(from, r);
        } else if (m instanceof Message.MountState st && remount != null) {
            remount.offer(from, st);
        } else if (m instanceof Message.LeafChunk c && remount != null) {
            remount.now = now;
            remount.offer(from, c);
        } else if (m instanceof Message.RecoveryState st && remount != null) {
            remount.offer(from, st);
        } else if (m instanceof Message.FlushReply f) {
            onFlushReply(from, f);
        } else if (m instanceof Message.DecisionMsg d) {
            onDecision(from, d.tentative());
        }
    }

    // ------------------------------------------------------------------ FLUSH (task tput18)

    /**
     * Issues a FLUSH: every write acknowledged before this call ({@link ClientListener#putSucceeded}) becomes durable
     * against a machine crash on all three replicas of each region it wrote. Replicas make log entries and commit
     * marks durable against a process crash only (hflush) on the write path; this asks every replica of every region
     * with a write acknowledged since the previous FLUSH was issued to sync (hsync) what it holds, and the FLUSH is
     * done ({@link ClientListener#flushed}) once all of them answered with a signed {@link Message.FlushReply}
     * (unanimous: one faulty replica cannot make it done) and every earlier FLUSH is done (a region synced for an
     * earlier FLUSH still in flight is not asked again). Retransmitted to the silent replicas at {@link #tick}; after
     * the retries a batch gets, the client asks for recovery. Returns the FLUSH's id ({@link #flushPending}).
     */
    public long flush() {
        long id = nextFlushId++;
        OutFlush f = new OutFlush();
        for (int r : unflushed) {
            f.pending.addAll(membership.current(r).replicas());
        }
        unflushed.clear();
        flushes.put(id, f);
        sendFlush(id, f, f.pending);
        completeFlushes();
        return id;
    }

    /** FLUSHes not done yet (their replicas' replies are awaited: a polling transport must poll for them). */
    public int outstandingFlushes() {
        return flushes.size();
    }

    /** True while FLUSH {@code flushId} is not done. */
    public boolean flushPending(long flushId) {
        return flushes.containsKey(flushId);
    }

    private void sendFlush(long id, OutFlush f, Set<NodeId> to) {
        f.sentAt = now;
        for (NodeId n : to) {
            net.send(n, new Message.FlushRequest(id));
        }
    }

    private void onFlushReply(NodeId from, Message.FlushReply r) {
        OutFlush f = flushes.get(r.flushId());
        if (f == null || !f.pending.contains(from) || !r.volume().equals(cfg.volume()) || r.region() < 0
                || r.region() >= cfg.regionCount()) {
            return;
        }
        io.salus.core.protocol.RrsConfig rrs = membership.current(r.region());
        if (rrs.generation() != r.generation() || !rrs.replicas().contains(from) || r.signature() == null
                || !verifier.verify(from, Message.FlushReply.signedBytes(r.volume(), r.region(), r.generation(),
                        r.flushId()), r.signature())) {
            return; // not signed by that replica of the region it names
        }
        f.pending.remove(from);
        completeFlushes();
    }

    /** Reports the FLUSHes whose replicas all answered, in issue order (a later one waits for the earlier ones). */
    private void completeFlushes() {
        while (!flushes.isEmpty() && flushes.firstEntry().getValue().pending.isEmpty()) {
            long id = flushes.pollFirstEntry().getKey();
            listener.flushed(id);
        }
    }

    // ------------------------------------------------------------------ writer fencing

    /**
     * First thing a writer does after it takes the lease: sends its client-signed WRITER_EPOCH to every replica of
     * every region (and again every retransmission period to those that have not confirmed it). A replica records
     * it durably and from then on refuses sub-batches and BatchInfos of any other epoch, so the previous writer
     * cannot get a write accepted, even before this writer writes anything. Writes are refused until every replica
     * confirmed ({@link #fenceOutstanding} empty); a replica that already holds a higher epoch makes this client
     * fenced ({@link #needsRemount}).
     */
    public void fence() {
        if (epoch <= 0) {
            throw new IllegalStateException("a client without a writer epoch (0) cannot fence: open it with its lease's epoch");
        }
        fenceCert = Certificate.sign(CertType.WRITER_EPOCH, new Statement.WriterEpoch(cfg.volume(), epoch), signer);
        fencePending = new HashSet<>();
        for (int r = 0; r < cfg.regionCount(); r++) {
            fencePending.addAll(membership.current(r).replicas());
        }
        sendFence(fencePending);
    }

    private void sendFence(Set<NodeId> to) {
        fenceSentAt = now;
        for (NodeId n : to) {
            net.send(n, new Message.WriterFence(fenceCert));
        }
    }

    /** Replicas that have not confirmed this writer's fence yet (empty: fenced everywhere; null before {@link #fence}). */
    public Set<NodeId> fenceOutstanding() {
        return fencePending == null ? null : Set.copyOf(fencePending);
    }

    public long epoch() {
        return epoch;
    }

    private void onWriterEpochReply(NodeId from, Message.WriterEpochReply r) {
        if (epoch <= 0 || r.clientEpoch() != epoch || !r.volume().equals(cfg.volume()) || r.region() < 0
                || r.region() >= cfg.regionCount() || !membership.current(r.region()).replicas().contains(from)
                || !verifier.verify(from, Message.WriterEpochReply.signedBytes(r.volume(), r.region(), r.batchId(),
                        r.clientEpoch(), r.replicaEpoch()), r.signature())) {
            return; // not about this writer (another writer shares the client id), or not signed by a replica
        }
        if (r.replicaEpoch() > epoch) {
            fenced("replica " + from + " of region " + r.region() + " holds writer epoch " + r.replicaEpoch()
                    + ", newer than this writer's " + epoch + ": another writer took the volume's lease"
                    + (r.batchId() >= 0 ? " (batch " + r.batchId() + " refused, nothing of it applied there)" : ""));
        } else if (r.replicaEpoch() == epoch) {
            if (r.batchId() < 0 && fencePending != null) {
                fencePending.remove(from);
            }
        } else if (fenceCert != null) {
            net.send(from, new Message.WriterFence(fenceCert)); // it has not recorded this writer's fence: again
        }
    }

    /**
     * A newer writer fenced this one: every outstanding batch fails, outstanding GETs are dropped (the listener's
     * {@link ClientListener#fenced} covers them), and no write or read is issued again.
     */
    private void fenced(String reason) {
        if (needsRemount != null && needsRemount.startsWith("fenced")) {
            return;
        }
        needsRemount = "fenced: " + reason;
        List<Long> ids = new ArrayList<>(outstanding.keySet());
        outstanding.clear();
        // and its GETs: one waiting for a refused write's seq was retried for ever, and its transport kept polling
        // the replicas, taking replies that the new writer (same client id) waits for (review rv15)
        gets.clear();
        flushes.clear(); // never done: the listener's fenced covers them
        listener.fenced(needsRemount);
        ids.forEach(listener::putFailed);
    }

    /** Retransmits batches and retries GETs on another replica after a timeout. */
    public void tick(long nowTime) {
        LatencyTrace.tickBegin();
        try {
            tickInner(nowTime);
        } finally {
            LatencyTrace.tickEnd();
        }
    }

    private void tickInner(long nowTime) {
        this.now = nowTime;
        if (fencePending != null && !fencePending.isEmpty() && needsRemount == null
                && now - fenceSentAt >= retransmitEvery) {
            sendFence(fencePending);
        }
        if (remount != null && now - remount.sentAt >= retransmitEvery) {
            remount.sentAt = now;
            // lost queries or answers, or a region not settled yet: ask again (answers replace earlier ones)
            Message.MountQuery q = remount.query();
            for (NodeId n : remount.toAsk()) {
                net.send(n, q);
            }
            remount.recoveryResends().forEach(e -> net.send(e.getKey(), e.getValue()));
        }
        if (remount != null) {
            remount.now = now;
            remount.takeLeafQueries(retransmitEvery).forEach(e -> net.send(e.getKey(), e.getValue()));
        }
        for (OutBatch ob : outstanding.values()) {
            if (now - ob.sentAt >= retransmitEvery) {
                send(ob); // retry: no proof of misbehaviour yet
                askDecision(ob);
                if (++ob.retries >= retriesBeforeRecovery) {
                    requestRecovery("batch " + ob.info.batchId() + ": no PUT_SUCCESS after " + ob.retries
                            + " retries", silent(ob, false));
                } else if (suspectSilentAfter > 0 && ob.retries % suspectSilentAfter == 0) {
                    Set<NodeId> silent = silent(ob, true);
                    if (!silent.isEmpty()) {
                        listener.replicasSilent(silent, "batch " + ob.info.batchId() + ": no PUT_SUCCESS after "
                                + ob.retries + " retransmissions; replicas " + silent + " did not answer");
                    }
                }
            }
        }
        for (Map.Entry<Long, OutFlush> e : flushes.entrySet()) {
            OutFlush f = e.getValue();
            if (!f.pending.isEmpty() && now - f.sentAt >= retransmitEvery) {
                sendFlush(e.getKey(), f, f.pending);
                if (++f.retries >= retriesBeforeRecovery) {
                    requestRecovery("FLUSH " + e.getKey() + ": replicas " + f.pending + " did not report their log"
                            + " synced after " + f.retries + " retries", Set.copyOf(f.pending));
                } else if (suspectSilentAfter > 0 && f.retries % suspectSilentAfter == 0) {
                    listener.replicasSilent(Set.copyOf(f.pending), "FLUSH " + e.getKey() + ": replicas " + f.pending
                            + " did not report their log synced after " + f.retries + " retransmissions");
                }
            }
        }
        for (Map.Entry<Long, OutGet> e : gets.entrySet()) {
            if (now - e.getValue().sentAt >= retransmitEvery) {
                OutGet g = e.getValue();
                List<NodeId> reps = membership.current((int) layout.regionOf(g.block)).replicas();
                listener.getRetried(e.getKey(), g.block, reps.get(g.tries % reps.size()),
                        "did not answer within " + retransmitEvery);
                g.tries++;
                sendGet(e.getKey(), g);
            }
        }
    }

    private void onPutReply(NodeId from, Certificate t) {
        if (t.type() != CertType.TENTATIVE_PUT_SUCCESS && t.type() != CertType.TENTATIVE_PUT_FAILED) {
            return;
        }
        Statement.PutOutcome st = t.statement(Statement.PutOutcome.class);
        OutBatch ob = outstanding.get(st.batchId());
        int region = st.region().index();
        if (ob == null || !st.region().volume().equals(cfg.volume()) || !ob.subs.containsKey(region)) {
            return;
        }
        SubBatch sb = ob.subs.get(region);
        if (st.firstSeq() != sb.firstSeq() || st.lastSeq() != sb.lastSeq()
                || !t.verify(verifier, membership.current(region).replicaSet())
                || !t.signatures().get(0).signer().equals(from)) {
            return;
        }
        LatencyTrace.stage(st.batchId(), "reply");
        List<Certificate> held = ob.tentatives.computeIfAbsent(region, k -> new ArrayList<>());
        for (Certificate c : held) {
            if (c.signatures().get(0).signer().equals(from)) {
                if (c.type() == t.type() && c.statement().equals(st)) {
                    return; // a duplicate
                }
                // the same replica signed two outcomes: proof of misbehaviour. Both stay held, so a
                // unanimous outcome can still form from the other replicas' answers and its true one.
                requestRecovery("replica " + from + " of region " + region + " sent two different outcomes for"
                        + " batch " + st.batchId() + ": " + c + " and " + t);
                break;
            }
        }
        held.add(t);
        int need = st.success() && cfg.mutated(Mutation.TWO_OF_THREE_CONSENT) ? 2 : Tentatives.UNANIMOUS;
        List<Certificate> matching = Tentatives.matching(held, t);
        if (matching.size() < need) {
            Set<NodeId> answered = new HashSet<>();
            held.forEach(c -> answered.add(c.signatures().get(0).signer()));
            if (answered.size() == Tentatives.UNANIMOUS) { // all three answered and they disagree
                requestRecovery("the replicas of region " + region + " disagree on the outcome of batch "
                        + st.batchId() + ": " + held);
            }
            return; // one replica's word is not proof: keep retrying until the others answer
        }
        if (!st.success()) {
            batchFailed(ob, region);
            return;
        }
        if (!ob.success.containsKey(region)) {
            ob.success.put(region, Tentatives.combineIfEnough(matching, need)); // PUT_SUCCESS
        }
        if (ob.success.size() == ob.subs.size()) {
            completed(ob);
        }
    }

    /** Every participant region's PUT_SUCCESS (or the batch's COMMIT) is held: the batch is acknowledged. */
    private void completed(OutBatch ob) {
        long id = ob.info.batchId();
        outstanding.remove(id);
        unflushed.addAll(ob.subs.keySet()); // acknowledged below: the next FLUSH must sync these regions
        pruneRecentWrites();
        LatencyTrace.stage(id, "done");
        for (OutBatch o : outstanding.values()) {
            o.retries = 0; // progress
        }
        listener.putSucceeded(id, ob.info.firstSeq(), ob.info.lastSeq(), new ArrayList<>(ob.success.values()));
    }

    /**
     * On a retransmission: asks the batch's leader replicas for their decision ({@link #onDecision}). A replica that
     * lost the batch's log entry and caught up from a certified checkpoint that covers it (a replacement's new
     * incarnation, task fix21) holds the batch's writes but can never sign its TENTATIVE_PUT_SUCCESS again (the
     * outcome names the entry's log index and digest, which a checkpoint does not keep): it drops the retransmitted
     * sub-batch as stale, and the batch waited for ever.
     */
    private void askDecision(OutBatch ob) {
        int leader = leaderOf(ob);
        for (NodeId l : membership.current(leader).replicas()) {
            net.send(l, new Message.DecisionRequest(leader, ob.info.batchId()));
        }
    }

    /**
     * A leader replica's answer to {@link #askDecision}: a TENTATIVE_COMMIT it signed (or a whole COMMIT). Three
     * matching ones from the leader region's replicas are the batch's COMMIT certificate, which completes the batch
     * like a PUT_SUCCESS from every participant region: an honest leader replica signs COMMIT only after the YES
     * votes of all three replicas of every participant region (each sent once its sub-batch was in its log) and
     * after the previous batch's COMMIT, so the batch's writes are logged by every replica and committed in order,
     * which is what a PUT_SUCCESS says. Nothing else is taken: an ABORT still fails the batch only through PUT_FAILED.
     */
    private void onDecision(NodeId from, Certificate c) {
        if (c.type() != CertType.TENTATIVE_COMMIT && c.type() != CertType.COMMIT) {
            return;
        }
        Statement.Decision st = c.statement(Statement.Decision.class);
        OutBatch ob = outstanding.get(st.batchId());
        if (ob == null) {
            return;
        }
        int leader = leaderOf(ob);
        RrsConfig lr = membership.current(leader);
        if (!st.commit() || !st.volume().equals(cfg.volume()) || !st.leader().equals(new RegionId(cfg.volume(), leader))
                || st.generation() != lr.generation() || st.firstSeq() != ob.info.firstSeq()
                || st.lastSeq() != ob.info.lastSeq() || !c.verify(verifier, lr.replicaSet())) {
            return;
        }
        Certificate commit;
        if (c.type() == CertType.COMMIT) {
            commit = c;
        } else {
            if (!c.signatures().get(0).signer().equals(from)) {
                return;
            }
            // the first statement of each leader replica counts (a duplicate or a second one changes nothing)
            List<Certificate> matching = ob.leaderCommits.offer(st.batchId(), c);
            if (matching.size() < Tentatives.UNANIMOUS) {
                return;
            }
            commit = Tentatives.combineIfEnough(matching, Tentatives.UNANIMOUS);
        }
        for (Integer region : ob.subs.keySet()) {
            ob.success.putIfAbsent(region, commit);
        }
        completed(ob);
    }

    /**
     * PUT_FAILED is proven for one of the batch's sub-batches. The batch and every later outstanding
     * batch (aborted through the COMMIT-CONFIRMATION chain) fail; the client's tree already holds
     * their writes, so it refuses new writes and reads until recovery and {@link #mount}.
     */
    private void batchFailed(OutBatch failed, int region) {
        long id = failed.info.batchId();
        needsRemount = "batch " + id + " (seqs " + failed.info.firstSeq() + ".." + failed.info.lastSeq()
                + ") was aborted: PUT_FAILED from the 3 replicas of region " + region;
        List<Long> ids = new ArrayList<>();
        outstanding.entrySet().removeIf(e -> {
            if (e.getKey() >= id) {
                ids.add(e.getKey());
                return true;
            }
            return false;
        });
        ids.forEach(listener::putFailed);
        requestRecovery(needsRemount);
    }

    private void requestRecovery(String reason) {
        requestRecovery(reason, Set.of());
    }

    private void requestRecovery(String reason, Set<NodeId> suspects) {
        if (!recoveryRequested) {
            recoveryRequested = true;
            listener.recoveryNeeded(reason, suspects);
        }
    }

    /**
     * The replicas that have not answered {@code ob}: per region without PUT_SUCCESS, those without a tentative
     * outcome while a peer sent one, or all three when none did. With {@code escalate}, a region whose silent replicas
     * were reported for this batch before is reported whole (the earlier replacement did not unstick it: the fault
     * may be a peer that does not forward).
     */
    private Set<NodeId> silent(OutBatch ob, boolean escalate) {
        Set<NodeId> out = new java.util.TreeSet<>(java.util.Comparator.comparing(NodeId::name));
        for (int r : ob.subs.keySet()) {
            if (ob.success.containsKey(r)) {
                continue;
            }
            List<NodeId> reps = membership.current(r).replicas();
            Set<NodeId> answered = new HashSet<>();
            ob.tentatives.getOrDefault(r, List.of()).forEach(c -> answered.add(c.signatures().get(0).signer()));
            Set<NodeId> silent = new HashSet<>(reps);
            silent.removeAll(answered);
            if (silent.isEmpty()) {
                continue; // all answered (disagreeing or not yet matching): not silence
            }
            if (escalate && ob.reportedSilent.containsAll(silent)) {
                silent = new HashSet<>(reps);
            }
            out.addAll(silent);
        }
        if (escalate) {
            ob.reportedSilent.addAll(out);
        }
        return out;
    }

    /**
     * Retransmissions of a batch or FLUSH without progress after which the client reports the replicas that did not
     * answer ({@link ClientListener#replicasSilent}), and again every as many; 0 (the default) never.
     */
    public void suspectSilentAfter(int retransmissions) {
        if (retransmissions < 0) {
            throw new IllegalArgumentException("suspectSilentAfter must be >= 0, got " + retransmissions);
        }
        this.suspectSilentAfter = retransmissions;
    }

    private void requireMounted(String what) {
        if (needsRemount != null) {
            throw new IllegalStateException("volume " + cfg.volume() + " refuses to " + what + ": " + needsRemount
                    + "; the client's tree holds writes the servers did not apply. Recover the volume and"
                    + " remount it (VolumeClient.mount) before the next " + what);
        }
    }

    /**
     * Why the client refuses writes and reads until it is remounted (a batch failed), or null while
     * it accepts them.
     */
    public String needsRemount() {
        return needsRemount;
    }

    /** True once the client has asked for recovery (until the next mount). */
    public boolean recoveryRequested() {
        return recoveryRequested;
    }

    private void onGetReply(NodeId from, Message.GetReply r) {
        OutGet g = gets.get(r.requestId());
        if (g == null || r.block() != g.block) {
            return;
        }
        if (!cfg.mutated(Mutation.SKIP_GET_VERIFICATION) && !verifyGet(g, r)) {
            listener.getRetried(r.requestId(), g.block, from, "sent a reply that failed the end-to-end check"
                    + " (data, applied seq or Merkle proof against the expected region root)");
            g.tries++; // end-to-end check failed: retry at another replica
            sendGet(r.requestId(), g);
            return;
        }
        gets.remove(r.requestId());
        pruneHistory((int) layout.regionOf(g.block));
        listener.getSucceeded(r.requestId(), r.block(), r.data().clone());
    }

    /**
     * Drops region roots no GET can need any more: a future GET's prevNum is at least the region's
     * last issued seq, and an outstanding GET accepts only replies at or after its prevNum.
     */
    private void pruneHistory(int region) {
        long keepFrom = Math.min(lastSeqOfRegion[region], confirmedFloor(region));
        for (OutGet og : gets.values()) {
            if (layout.regionOf(og.block) == region) {
                keepFrom = Math.min(keepFrom, og.prevNum);
            }
        }
        regionRootHistory.get(region).headMap(keepFrom, false).clear();
    }

    /**
     * The highest seq of region {@code region} that every replica of it has applied as far as this client knows:
     * just below the first unconfirmed sub-batch of an outstanding batch in the region (its prevNum), or the
     * region's last issued seq when none is unconfirmed. Every write to the region at or below it has PUT_SUCCESS
     * from the region's three replicas (they commit in log order).
     */
    private long confirmedFloor(int region) {
        long floor = lastSeqOfRegion[region];
        for (OutBatch ob : outstanding.values()) {
            SubBatch sb = ob.subs.get(region);
            if (sb != null && !ob.success.containsKey(region)) {
                floor = Math.min(floor, sb.puts().get(0).prevNum());
            }
        }
        return floor;
    }

    /** Forgets the recent writes at or below their region's confirmed floor (a GET waits for the floor anyway). */
    private void pruneRecentWrites() {
        long[] floor = new long[cfg.regionCount()];
        for (int r = 0; r < floor.length; r++) {
            floor[r] = confirmedFloor(r);
        }
        recentWrites.entrySet().removeIf(e -> e.getValue() <= floor[(int) layout.regionOf(e.getKey())]);
    }

    /** Number of region roots kept for GET verification (bounded by the outstanding work). */
    public int regionRootHistorySize() {
        int n = 0;
        for (TreeMap<Long, Hash> h : regionRootHistory.values()) {
            n += h.size();
        }
        return n;
    }

    private boolean verifyGet(OutGet g, Message.GetReply r) {
        int region = (int) layout.regionOf(g.block);
        if (r.appliedSeq() < g.prevNum || r.data() == null || r.data().length != cfg.blockSize()) {
            return false;
        }
        Hash expectedRegionRoot = regionRootHistory.get(region).get(r.appliedSeq());
        MerkleProof p = r.proof();
        return expectedRegionRoot != null && p != null && p.block() == layout.localIndex(g.block)
                && p.toLevel() == layout.regionLevel() && cfg.hash().leafHash(r.data()).equals(p.leaf())
                && p.ancestor(cfg.hash()).equals(expectedRegionRoot);
    }

    /**
     * What the client fetches at mount time for one region: from one replica, the region root, its
     * volume-root record and the leaf hashes; and the region's newest CHECKPOINT certificate (from
     * coordination or the replica; the client verifies it). The certificate may be null only when the
     * volume is mounted at seq 0.
     */
    public record RegionView(Hash regionRoot, VolumeRootRecord rootRecord, Map<Long, Hash> leafHashes,
                             Certificate checkpoint) {
    }

    /**
     * Mount protocol (§3.3.3), after recovery: rebuilds the volume tree from each region's leaf hashes,
     * checks each region subtree against its region root, the rebuilt volume root against {@code
     * trustedRoot} (the LCP root from coordination) and the newest region root record. Each region's
     * last seq (the prevNum of the next PUT to it, the seq its GETs wait for) is one replica's word, so
     * it must be what the region's current generation's CHECKPOINT certifies (three replica
     * signatures, at least one correct): the view's seq and region root equal the certificate's last
     * seq and region root (after recovery, the new generation's first checkpoint is exactly the
     * region's state). Resets seqs to continue after {@code trustedSeq}; outstanding work is dropped
     * (the caller re-issues what it needs).
     *
     * @throws IllegalStateException if any check fails (the caller fetches from another replica)
     */
    public void mount(long trustedSeq, Hash trustedRoot, Map<Integer, RegionView> views) {
        install(trustedSeq, trustedRoot, views, (r, v) -> regionSeqProblem(r, trustedSeq, v));
    }

    /**
     * Rebuilds and installs the volume tree from {@code views} (each region subtree checked against its region
     * root, the rebuilt root against {@code trustedRoot} and the newest root record), after {@code seqCheck}
     * (null: the caller has already established each view's last seq).
     */
    private void install(long trustedSeq, Hash trustedRoot, Map<Integer, RegionView> views,
                         java.util.function.BiFunction<Integer, RegionView, String> seqCheck) {
        // one fresh volume tree, each region's leaves set at once (each node hashed once)
        MerkleTree fresh = new MerkleTree(cfg.hash(), cfg.blockSize(), layout.volumeBlocks(), treeStores.get());
        for (int r = 0; r < cfg.regionCount(); r++) {
            RegionView v = views.get(r);
            if (v == null) {
                throw new IllegalStateException("mount: no view of region " + r);
            }
            if (!ReplicaMount.leavesInRegion(cfg, r, v.leafHashes())) {
                throw new IllegalStateException("mount: region " + r + " names a block outside its blocks");
            }
            fresh.setLeaves(layout.firstBlock(r), v.leafHashes());
        }
        installTree(trustedSeq, trustedRoot, fresh, views, seqCheck);
    }

    /**
     * Installs {@code fresh} as the volume tree after checking each region by its node at the region level (a region
     * tree's root equals it: RegionLayout) against its view's region root, the root against {@code trustedRoot} and
     * the newest root record; the client's tree is replaced only once everything checks.
     */
    private void installTree(long trustedSeq, Hash trustedRoot, MerkleTree fresh, Map<Integer, RegionView> views,
                             java.util.function.BiFunction<Integer, RegionView, String> seqCheck) {
        VolumeRootRecord newest = null;
        for (int r = 0; r < cfg.regionCount(); r++) {
            RegionView v = views.get(r);
            if (v == null) {
                throw new IllegalStateException("mount: no view of region " + r);
            }
            if (!fresh.node(layout.regionLevel(), r).equals(v.regionRoot())) {
                throw new IllegalStateException("mount: region " + r + " subtree does not match its root");
            }
            String stale = seqCheck == null ? null : seqCheck.apply(r, v);
            if (stale != null) {
                throw new IllegalStateException("mount: region " + r + ": " + stale);
            }
            newest = newest == null ? v.rootRecord() : newest.newer(v.rootRecord());
        }
        Hash rebuilt = fresh.root();
        if (!rebuilt.equals(trustedRoot)) {
            throw new IllegalStateException("mount: rebuilt volume root " + rebuilt + " != trusted root " + trustedRoot);
        }
        if (newest.seq() != trustedSeq || !newest.root().equals(trustedRoot)) {
            throw new IllegalStateException("mount: newest region root record " + newest + " != LCP " + trustedSeq);
        }
        // install
        tree = fresh;
        for (int r = 0; r < cfg.regionCount(); r++) {
            lastSeqOfRegion[r] = views.get(r).rootRecord().seq();
            nextPrevNum[r] = lastSeqOfRegion[r];
            TreeMap<Long, Hash> h = new TreeMap<>();
            h.put(lastSeqOfRegion[r], views.get(r).regionRoot());
            regionRootHistory.put(r, h);
        }
        nextSeq = trustedSeq + 1;
        prevBatchId = -1;
        prevLeader = -1;
        outstanding.clear();
        gets.clear();
        recentWrites.clear();
        needsRemount = null;
        recoveryRequested = false;
        remount = null;
    }

    /** Why region {@code r}'s view cannot give the client the region's last seq, or null if it can. */
    private String regionSeqProblem(int r, long trustedSeq, RegionView v) {
        long seq = v.rootRecord().seq();
        if (trustedSeq == 0) {
            return seq == 0 ? null : "its root record names seq " + seq + " but the volume is mounted at seq 0";
        }
        Certificate cp = v.checkpoint();
        if (cp == null) {
            return "no CHECKPOINT certificate to trust its last seq " + seq + " (pass the region's newest "
                    + "CHECKPOINT from coordination; mount after recovery)";
        }
        io.salus.core.protocol.RrsConfig current = membership.current(r);
        if (cp.type() != CertType.CHECKPOINT) {
            return "a " + cp.type() + " is not a CHECKPOINT certificate";
        }
        Statement.Checkpoint st = cp.statement(Statement.Checkpoint.class);
        if (!st.region().equals(current.region()) || st.generation() != current.generation()
                || !cp.verify(verifier, current.replicaSet())) {
            return "its CHECKPOINT " + st + " is not signed by the replicas of " + current.region() + " generation "
                    + current.generation() + " " + current.replicas();
        }
        if (!st.rootRecord().equals(v.rootRecord()) || !st.regionRoot().equals(v.regionRoot())) {
            return "the view (last seq " + seq + ", record " + v.rootRecord() + ", region root " + v.regionRoot()
                    + ") is not the state its CHECKPOINT certifies (last seq " + st.lastSeq() + ", record "
                    + st.rootRecord() + ", region root " + st.regionRoot() + "); fetch the view from another replica";
        }
        return null;
    }

    /**
     * The replicas this client waits for a reply from: the three replicas of every region whose sub-batch of an
     * outstanding batch has no PUT_SUCCESS yet, the replica each outstanding GET was sent to, and the replicas that
     * have not confirmed the fence. A transport that has to fetch replies (the HBase client polls) asks only these.
     */
    public Set<NodeId> awaitedReplicas() {
        Set<NodeId> s = new HashSet<>();
        for (OutBatch ob : outstanding.values()) {
            for (int r : ob.subs.keySet()) {
                if (!ob.success.containsKey(r)) {
                    s.addAll(membership.current(r).replicas());
                }
            }
        }
        for (OutGet g : gets.values()) {
            List<NodeId> reps = membership.current((int) layout.regionOf(g.block)).replicas();
            s.add(reps.get(g.tries % reps.size()));
        }
        if (fencePending != null && needsRemount == null) {
            s.addAll(fencePending);
        }
        for (OutFlush f : flushes.values()) {
            s.addAll(f.pending); // a FLUSH waits for their FlushReply
        }
        if (remount != null) {
            s.addAll(remount.toAsk()); // a mount waits for the replicas' MountState answers
            s.addAll(remount.leafSources()); // and for the leaf ranges it asked
        }
        return s;
    }

    /**
     * The coordination service a mount records identifyLCP in (the volume's ZooKeeper coordination on HBase, the same
     * the replicas read): with it, a mount that finds batches of the previous writer that can never commit (they
     * reached only some of their regions) runs recovery (identifyLCP, then the aborts after it) instead of waiting.
     */
    public void recoverWith(io.salus.core.protocol.recovery.Coordination coordination) {
        this.recoveryCoordination = coordination;
    }

    /**
     * Tests only: from now on the client does not send what {@code drop} accepts (null: everything is sent). With
     * a filter for the sub-batches of some regions, a submitted batch reaches only the others: a writer that dies
     * after sending part of a batch.
     */
    public void dropSendsForTest(java.util.function.BiPredicate<NodeId, Message> drop) {
        this.dropForTest = drop;
    }

    /** Tests only: the next mounts send at most {@code n} recovery messages in all (a client that dies mid-recovery). */
    public void limitRecoverySendsForTest(int n) {
        this.recoverySendBudget = n;
    }

    /** The LCP the last mount recorded or found in coordination (null: it ran no recovery). */
    public io.salus.core.protocol.recovery.Coordination.Lcp lastMountLcp() {
        return lastMountLcp;
    }

    /** The previous writer's batches the last mount asked the leader replicas to abort. */
    public java.util.SortedSet<Long> lastMountAborts() {
        return lastMountAborts;
    }

    /**
     * Starts the mount protocol against the replicas (a new writer of an existing volume, after a clean close or
     * a crash of the previous writer): asks every replica of every region for its signed state, bound to {@code
     * nonce} (fresh per attempt). Outstanding work is dropped. The answers arrive through {@link #receive}; {@link
     * #remountOutcome} says when the mount is done. Retransmitted at {@link #tick}.
     */
    public void beginRemount(long nonce) {
        outstanding.clear();
        gets.clear();
        flushes.clear();
        for (int r = 0; r < cfg.regionCount(); r++) {
            unflushed.add(r); // what the previous writer left unsynced: the next FLUSH syncs every region
        }
        recentWrites.clear();
        needsRemount = "a mount against the replicas is in progress";
        remount = new ReplicaMount(cfg, membership, verifier, signer, nonce, me, recoveryCoordination,
                new MerkleTree(cfg.hash(), cfg.blockSize(), layout.volumeBlocks(), treeStores.get()), hostOf);
        remount.recoverySendBudget = recoverySendBudget;
        lastMountLcp = null;
        lastMountAborts = java.util.Collections.emptySortedSet();
        remount.sentAt = now;
        for (int r = 0; r < cfg.regionCount(); r++) {
            for (NodeId n : membership.current(r).replicas()) {
                net.send(n, remount.query());
            }
        }
    }

    /** True while a mount started by {@link #beginRemount} has not been installed or refused. */
    public boolean remounting() {
        return remount != null;
    }

    /**
     * The state of the mount in progress: {@link ReplicaMount.Outcome.Waiting} (answers missing, or a region
     * still has undecided log entries: call again after new answers), {@link ReplicaMount.Outcome.Refused} (a
     * region's replicas contradict each other, or its state does not check: the message names the region;
     * nothing was installed), or {@link ReplicaMount.Outcome.Mounted} (installed: writes continue at its next
     * seq and batch id). Asks regions whose answers showed undecided entries again.
     */
    public ReplicaMount.Outcome remountOutcome() {
        if (remount == null) {
            return new ReplicaMount.Outcome.Refused("no mount in progress (call beginRemount)");
        }
        remount.now = now;
        ReplicaMount.Outcome o = remount.outcome();
        remount.takeLeafQueries(retransmitEvery).forEach(e -> net.send(e.getKey(), e.getValue()));
        List<NodeId> all = remount.takeAskAll();
        if (!all.isEmpty()) {
            Message.MountQuery q = remount.query(); // the fenced round
            remount.sentAt = now;
            all.forEach(n -> net.send(n, q));
        }
        remount.takeRecoverySends().forEach(e -> net.send(e.getKey(), e.getValue()));
        lastMountLcp = remount.lcp();
        lastMountAborts = remount.abortsRequested();
        if (o instanceof ReplicaMount.Outcome.Refused r) {
            remount = null;
            needsRemount = "the mount was refused: " + r.why();
        } else if (o instanceof ReplicaMount.Outcome.Ready ready) {
            remount = null;
            try {
                installTree(ready.seq(), ready.root(), ready.tree(), ready.views(), null);
            } catch (IllegalStateException e) {
                String why = "the regions' certified states do not rebuild the newest root record (seq " + ready.seq()
                        + ", held by region " + ready.newestRegion() + "): " + e.getMessage() + "; some region is not"
                        + " the prefix the client wrote (check region " + ready.newestRegion() + " and the regions"
                        + " written before it)";
                needsRemount = "the mount was refused: " + why;
                return new ReplicaMount.Outcome.Refused(why);
            }
            for (int r = 0; r < cfg.regionCount(); r++) {
                // the next PUT to the region continues its log (prevNum = its last accepted seq, above the applied
                // one when its last entries were aborted); GETs wait for the applied seq (lastSeqOfRegion)
                nextPrevNum[r] = ready.lastAcceptedSeq()[r];
            }
            nextBatchId = ready.nextBatchId();
            return new ReplicaMount.Outcome.Mounted(ready.seq(), ready.root(), ready.nextBatchId());
        }
        return o;
    }

    /** Ids of outstanding batches (for the driver's retry/recovery logic). */
    public Set<Long> outstandingBatchIds() {
        return new HashSet<>(outstanding.keySet());
    }

    @Override
    public String toString() {
        return "VolumeClient[" + me + ", next seq " + nextSeq + ", outstanding " + outstanding.keySet() + ", gets "
                + gets.size() + ", lastSeq " + Arrays.toString(lastSeqOfRegion) + "]";
    }
}
