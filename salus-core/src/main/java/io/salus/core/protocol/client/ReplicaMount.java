package io.salus.core.protocol.client;

import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.Verifier;
import io.salus.core.merkle.Hash;
import io.salus.core.merkle.MerkleTree;
import io.salus.core.merkle.VolumeRootRecord;
import io.salus.core.protocol.Membership;
import io.salus.core.protocol.ProtocolConfig;
import io.salus.core.protocol.RrsConfig;
import io.salus.core.protocol.message.BatchInfo;
import io.salus.core.protocol.message.Message;
import io.salus.core.protocol.recovery.Coordination;
import java.util.Optional;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The client mount protocol against the replicas (§3.3.3), for a new writer of an existing volume: every replica
 * of every region reports its region's state ({@link Message.MountState}), signed and bound to the mount's nonce.
 * Two rounds: the first learns the highest batch id any replica knows and picks the fence (the first batch id of
 * the next {@link #BATCH_ID_EPOCH}); the second, signed by the client, fences the previous writer at every replica
 * (no sub-batch of it is logged any more) and collects the states the mount is built from. Because nothing new can
 * be logged after the fence, a region whose logged entries are all decided ("settled") cannot change any more, so
 * answers taken at different times describe one state of the volume.
 * A region's state is accepted only when its three replicas signed the same state (unanimous consent: at least one
 * of them is correct) and nothing they logged is still undecided; a region whose replicas signed different states
 * for the same log position is refused, naming the region and the replicas. The volume tree is rebuilt from one
 * replica's leaf hashes that hash to the signed region root, fetched a range at a time once the region's replicas
 * agree ({@link MountLeafFetch}: the client's memory does not grow with the data), and checked (by
 * {@link VolumeClient}) against the newest root record: the volume root the client itself put into its last
 * committed PUT. So the mounted volume is exactly the committed prefix the replicas certify, or the mount stops.
 *
 * <p>What this does not do (yet): resolve a previous writer's batches that can never be decided (a sub-batch
 * that reached only some of its regions): such a region keeps the mount {@link Outcome.Waiting}, and the caller
 * gives up with the reason. That needs identifyLCP and aborting the batches after it (§3.3.4, issue 14).
 *
 * <p>Single-threaded: used by {@link VolumeClient} on its caller's thread.
 */
public final class ReplicaMount {
    /** What a mount has reached. */
    public sealed interface Outcome {
        /** Answers are missing, or a region is not settled yet; {@code why} names the region. */
        record Waiting(String why) implements Outcome {
        }

        /** The mount stops: {@code why} names the region and what does not check. Nothing was installed. */
        record Refused(String why) implements Outcome {
        }

        /** Every region is certified by its three replicas (internal: {@link VolumeClient} installs it). */
        record Ready(long seq, Hash root, int newestRegion, long nextBatchId,
                     Map<Integer, VolumeClient.RegionView> views, long[] lastAcceptedSeq,
                     io.salus.core.merkle.MerkleTree tree) implements Outcome {
        }

        /** Installed: the volume is at {@code seq} / {@code root}; the next batch id is {@code nextBatchId}. */
        record Mounted(long seq, Hash root, long nextBatchId) implements Outcome {
        }
    }

    /**
     * Batch ids of one mount start at a multiple of this above every batch id a replica knows, so a late message
     * of the previous writer (a batch id it had issued that no replica had seen yet) never names a batch of the
     * new one.
     */
    public static final long BATCH_ID_EPOCH = 1L << 32;

    /** Epochs a mount's fence moves past LCPs its client did not sign at most (review rvw23-3), then it refuses. */
    static final int MAX_FENCE_MOVES = 16;

    /** The highest batch id a replica may report: the fence, moved, and a mount's batch ids stay below Long.MAX_VALUE. */
    static final long MAX_REPORTED_BATCH_ID = Long.MAX_VALUE - (2L + MAX_FENCE_MOVES) * BATCH_ID_EPOCH;

    private final ProtocolConfig cfg;
    private final Membership membership;
    private final Verifier verifier;
    private final long nonce;
    private final io.salus.core.crypto.Signer signer;
    /** 0 while learning the batch ids the replicas know; then the fence every answer must carry. */
    private long fence;
    private boolean askAllNow;
    /** Per region, per replica: its latest verified answer. */
    private final Map<Integer, Map<NodeId, Message.MountState>> answers = new HashMap<>();
    /** Per replica: its latest verified recovery state of the fenced round. */
    private final Map<NodeId, Message.RecoveryState> recovery = new HashMap<>();
    /** Per replica: the batches its latest recovery state proves it committed as their leader, with their BatchInfo. */
    private final Map<NodeId, Map<Long, Message.CommitProof>> proven = new HashMap<>();
    /** Where identifyLCP records its reports and the LCP (null: recovery is not possible, the mount waits). */
    private final Coordination coordination;
    private final NodeId client;
    /** What the current recovery plan asks (changes of it are sent at once). */
    private String recoveryPlan = "";
    /** The LCP this mount recorded (or found recorded) for its recovery epoch, or null. */
    private Coordination.Lcp lcp;
    /** The recovery messages of the current plan (sent now and at every retransmission until the mount ends). */
    private List<Map.Entry<NodeId, Message>> recoverySends = List.of();
    private boolean recoverySendsNew;
    /** Batches this mount asked the leaders to abort (tests, the driver's log). */
    private final java.util.SortedSet<Long> abortsRequested = new java.util.TreeSet<>();
    /** Test seam: recovery messages sent at most this many times in all, then none (a client that dies mid-recovery). */
    int recoverySendBudget = Integer.MAX_VALUE;
    long sentAt;
    /** The client's clock, set before each call (the leaf fetch's retransmissions). */
    long now;
    /** The regions' leaf hashes, fetched into the new volume tree once each region's replicas agree. */
    private final MountLeafFetch leafFetch;

    /**
     * @param client       the client's id (the BatchInfos the replicas report must carry its signature)
     * @param coordination where identifyLCP records the LCP (null: a region that cannot settle keeps the mount waiting)
     * @param fresh        an empty volume tree: the mount fetches the regions' leaves into it
     */
    ReplicaMount(ProtocolConfig cfg, Membership membership, Verifier verifier, io.salus.core.crypto.Signer signer,
                 long nonce, NodeId client, Coordination coordination, io.salus.core.merkle.MerkleTree fresh) {
        this(cfg, membership, verifier, signer, nonce, client, coordination, fresh, n -> n);
    }

    /** As above; {@code hostOf}: the server hosting a replica, or null if unknown (the leaf fetch's silence). */
    ReplicaMount(ProtocolConfig cfg, Membership membership, Verifier verifier, io.salus.core.crypto.Signer signer,
                 long nonce, NodeId client, Coordination coordination, io.salus.core.merkle.MerkleTree fresh,
                 java.util.function.Function<NodeId, ?> hostOf) {
        this.leafFetch = new MountLeafFetch(cfg, verifier, nonce, fresh, hostOf);
        this.coordination = coordination;
        this.client = client;
        this.signer = signer;
        this.cfg = cfg;
        this.membership = membership;
        this.verifier = verifier;
        this.nonce = nonce;
    }

    /** The query to send now: unfenced while learning, then fenced and signed by the client. */
    Message.MountQuery query() {
        if (fence == 0) {
            return new Message.MountQuery(nonce, 0, null);
        }
        return new Message.MountQuery(nonce, fence, signer.sign(Message.MountQuery.signedBytes(cfg.volume(), nonce,
                fence)));
    }

    /** Every replica, once, right after the fence was chosen (the fenced query goes to all); else empty. */
    List<NodeId> takeAskAll() {
        if (!askAllNow) {
            return List.of();
        }
        askAllNow = false;
        List<NodeId> l = new ArrayList<>();
        for (int r = 0; r < cfg.regionCount(); r++) {
            l.addAll(membership.current(r).replicas());
        }
        return l;
    }

    /** Takes a replica's answer if it is for this mount, from a replica of its region, and signed by it. */
    void offer(NodeId from, Message.MountState s) {
        if (s.nonce() != nonce || s.fenceBelow() < fence || !s.volume().equals(cfg.volume()) || s.region() < 0 || s.region() >= cfg.regionCount()
                || s.signature() == null) {
            return;
        }
        RrsConfig rrs = membership.current(s.region());
        if (!rrs.replicas().contains(from) || s.generation() != rrs.generation()
                || !verifier.verify(from, s.signedBytes(), s.signature())) {
            return;
        }
        Map<NodeId, Message.MountState> a = answers.computeIfAbsent(s.region(), k -> new LinkedHashMap<>());
        Message.MountState held = a.get(from);
        if (held != null && held.fenceBelow() == s.fenceBelow() && (held.committedIndex() > s.committedIndex()
                || held.appliedSeq() > s.appliedSeq())) {
            // an earlier answer of this mount delivered late (review rv18r): a replica's resolved index and applied
            // seq never go back, so its newest answer is the one with the highest. Taking the stale one made the
            // mount record the LCP below a batch this region had applied since, and refused every later mount
            return;
        }
        a.put(from, s);
    }

    /** Takes a replica's leaf range if the mount's leaf fetch asked it of that replica. */
    void offer(NodeId from, Message.LeafChunk c) {
        leafFetch.offer(from, c, now);
    }

    /** The leaf queries to send now (new ranges, and ranges to ask again after {@code retransmitEvery}). */
    List<Map.Entry<NodeId, Message>> takeLeafQueries(long retransmitEvery) {
        return leafFetch.takeSends(now, retransmitEvery);
    }

    /** Takes a replica's recovery state if it is for this mount's fenced round, from a replica of its region, and signed. */
    void offer(NodeId from, Message.RecoveryState s) {
        if (fence == 0 || s.nonce() != nonce || s.fenceBelow() < fence || !s.volume().equals(cfg.volume())
                || s.region() < 0 || s.region() >= cfg.regionCount() || !s.replica().equals(from) || s.signature() == null) {
            return;
        }
        RrsConfig rrs = membership.current(s.region());
        if (!rrs.replicas().contains(from) || s.generation() != rrs.generation()
                || !verifier.verify(from, s.signedBytes(), s.signature())) {
            return;
        }
        recovery.put(from, s);
        Map<Long, Message.CommitProof> mine = new HashMap<>();
        for (Message.CommitProof p : s.commitProofs()) {
            long b = p.batchId();
            if (s.reportsCommitted(b) && provesCommit(s, p)) {
                mine.merge(b, p, (a, c) -> a.info() != null ? a : c); // (verified once per answer, not per outcome)
            }
        }
        proven.put(from, mine);
    }

    /** The recovery messages to send now (new plan), else empty. */
    List<Map.Entry<NodeId, Message>> takeRecoverySends() {
        if (!recoverySendsNew) {
            return List.of();
        }
        recoverySendsNew = false;
        return budgeted(recoverySends);
    }

    /** The recovery messages to send again at a retransmission. */
    List<Map.Entry<NodeId, Message>> recoveryResends() {
        return budgeted(recoverySends);
    }

    private List<Map.Entry<NodeId, Message>> budgeted(List<Map.Entry<NodeId, Message>> l) {
        List<Map.Entry<NodeId, Message>> out = new ArrayList<>();
        for (Map.Entry<NodeId, Message> e : l) {
            if (recoverySendBudget <= 0) {
                break;
            }
            recoverySendBudget--;
            out.add(e);
        }
        return out;
    }

    /**
     * True if every key of {@code leaves} is a block of region {@code r} that the volume has: below the region's size
     * and, in a last region the volume fills only partly, below the volume's end. A leaf set to the empty hash past the
     * volume's end leaves the region root unchanged, so only this bound keeps a faulty replica's answer with one out of
     * the mount (review of 2026-12-02: the install refused it, and every mount failed while that replica answered first).
     */
    /** The blocks region {@code r} has: its size, or less in a last region the volume fills only partly. */
    static long blocksInRegion(ProtocolConfig cfg, int r) {
        return Math.min(cfg.layout().blocksPerRegion(), cfg.layout().volumeBlocks() - cfg.layout().firstBlock(r));
    }

    static boolean leavesInRegion(ProtocolConfig cfg, int r, Map<Long, Hash> leaves) {
        long inRegion = blocksInRegion(cfg, r);
        if (leaves instanceof java.util.SortedMap<Long, Hash> sorted) {
            return sorted.isEmpty() || (sorted.firstKey() >= 0 && sorted.lastKey() < inRegion);
        }
        return leaves.keySet().stream().allMatch(k -> k >= 0 && k < inRegion);
    }

    /** The LCP recorded in coordination for this mount's recovery epoch, once identifyLCP ran (else null). */
    public Coordination.Lcp lcp() {
        return lcp;
    }

    /** Batches this mount asked the leader replicas to abort. */
    public java.util.SortedSet<Long> abortsRequested() {
        return java.util.Collections.unmodifiableSortedSet(abortsRequested);
    }

    /** The replicas the leaf fetch waits for (a transport that polls for replies polls these too). */
    List<NodeId> leafSources() {
        return leafFetch.asked();
    }

    /** The replicas to ask again: those that have not answered, and every replica of a region not settled yet. */
    List<NodeId> toAsk() {
        List<NodeId> l = new ArrayList<>();
        for (int r = 0; r < cfg.regionCount(); r++) {
            Map<NodeId, Message.MountState> a = answers.getOrDefault(r, Map.of());
            boolean settled = a.size() == 3 && a.values().stream().allMatch(Message.MountState::settled)
                    && agree(a);
            for (NodeId n : membership.current(r).replicas()) {
                // (a settled replica is asked again while its recovery state of the fenced round is missing: a
                // recovery needs every replica's, and a transport that polls asks only these)
                if (!settled || !a.containsKey(n) || fence != 0 && !recovery.containsKey(n)) {
                    l.add(n);
                }
            }
        }
        return l;
    }

    private static boolean agree(Map<NodeId, Message.MountState> a) {
        Message.MountState first = a.values().iterator().next();
        return a.values().stream().allMatch(first::sameState);
    }

    Outcome outcome() {
        if (fence == 0) {
            return learnFence();
        }
        String badLeaves = leafFetch.refusal();
        if (badLeaves != null) {
            return new Outcome.Refused(badLeaves);
        }
        int leavesMissing = 0;
        Map<Integer, VolumeClient.RegionView> views = new HashMap<>();
        long[] accepted = new long[cfg.regionCount()];
        VolumeRootRecord newest = null;
        int newestRegion = 0;
        for (int r = 0; r < cfg.regionCount(); r++) {
            Map<NodeId, Message.MountState> a = answers.getOrDefault(r, Map.of());
            String lie = contradiction(r, a);
            if (lie != null) {
                return new Outcome.Refused(lie);
            }
            if (a.size() < 3) {
                return new Outcome.Waiting("region " + r + ": " + a.size() + " of its 3 replicas answered the mount query"
                        + " (missing: " + missing(r, a) + ")");
            }
            if (!agree(a) || !a.values().stream().allMatch(Message.MountState::settled)) {
                Outcome rec = recover();
                if (rec != null) {
                    return rec;
                }
                return new Outcome.Waiting("region " + r + " is not settled: its replicas report " + a.values()
                        + "; waiting for the previous writer's last batches to be decided");
            }
            Message.MountState s = a.values().iterator().next();
            if (s.recordSeq() != s.appliedSeq() || s.lastAcceptedSeq() < s.appliedSeq()) {
                return new Outcome.Refused("region " + r + ": its replicas report accepted seq " + s.lastAcceptedSeq()
                        + ", applied seq " + s.appliedSeq() + " and root record seq " + s.recordSeq() + " (the applied"
                        + " seq must be the record's, and not above the accepted one): its state does not check");
            }
            // accepted seq > applied seq: the region's last entries were aborted (after an LCP, or a NO vote); the
            // next PUT to the region continues its log after them (prevNum = accepted seq), GETs wait for the applied
            if (!leafFetch.verified(r, s.regionRoot())) {
                leafFetch.want(r, s.regionRoot(), membership.current(r).replicas());
                leavesMissing++;
            }
            VolumeRootRecord rec = new VolumeRootRecord(s.recordRoot(), s.recordSeq());
            views.put(r, new VolumeClient.RegionView(s.regionRoot(), rec, null, null));
            accepted[r] = s.lastAcceptedSeq();
            if (newest == null || newest.newer(rec) != newest) {
                newest = rec;
                newestRegion = r;
            }
        }
        if (coordination != null) {
            // a recovery of this epoch (this mount's, or one that died before it completed) recorded the LCP: the
            // regions must now rebuild exactly it (rebuildVolume's check, §3.3.4 step 4)
            Optional<Coordination.Lcp> recorded;
            try {
                recorded = lcp != null ? Optional.of(lcp) : coordination.lcp(fence);
            } catch (RuntimeException e) {
                return new Outcome.Waiting("cannot read the LCP of recovery epoch " + fence + ": " + e.getMessage());
            }
            if (recorded.isPresent() && !recorded.get().signedBy(verifier, client, cfg.volume())) {
                return unsignedLcpAtFence("");
            }
            if (recorded.isPresent() && (recorded.get().seq() != newest.seq()
                    || !recorded.get().root().equals(newest.root()))) {
                return new Outcome.Refused("coordination records the LCP of recovery epoch " + fence + " as seq "
                        + recorded.get().seq() + " root " + recorded.get().root() + ", but the regions' certified states"
                        + " end at seq " + newest.seq() + " root " + newest.root() + " (region " + newestRegion + "): the"
                        + " volume is not the agreed prefix; check region " + newestRegion + " and the znode "
                        + "lcp/" + fence + " of the volume's coordination");
            }
            lcp = recorded.orElse(null);
        }
        if (leavesMissing > 0) {
            return new Outcome.Waiting("fetching the regions' leaf hashes: " + leafFetch.verifiedRegions() + " of "
                    + cfg.regionCount() + " regions checked against their signed roots");
        }
        return new Outcome.Ready(newest.seq(), newest.root(), newestRegion, fence, views, accepted, leafFetch.tree());
    }

    /**
     * identifyLCP and the aborts after it (§3.3.4 steps 3-4, issue 14 item 4), for a mount that found regions not
     * settled. Null: nothing to recover (yet); else what the mount waits for, or why it stops.
     *
     * <p>From every replica's signed recovery state (fenced: nothing new of the previous writer enters any log):
     * the undecided batches are those with an unresolved entry anywhere, or whose BatchInfo a leader replica holds.
     * In batch order, the first one that can never commit is found: no leader replica holds its BatchInfo (a leader
     * never decides without one, and a fenced one never gets it), or one participant region's three replicas all
     * have no entry of it (the client's sub-batch never reached that region: it never votes YES). Batches before it
     * are left to the protocol (they are complete: the leaders decide them); once none of them has an unresolved
     * entry anywhere, every region has applied exactly the committed prefix, whose newest root record is the LCP
     * (seq and volume root). It is recorded in coordination under this mount's fence as the recovery epoch (first
     * writer wins: a mount after a crash mid-recovery finds the same one and must agree with it), with each region's
     * report, before anything is aborted. Then every undecided batch from the first stuck one on is aborted at its
     * leader replicas ({@link Message.RecoveryAbort}), each of which checks the request itself; the COMMIT-CONFIRMATION
     * chain would abort the later ones too where their leaders hold a BatchInfo. The participants learn the ABORT
     * certificates as any decision, the regions settle, and the mount completes at the LCP.
     *
     * <p>A batch is decided as a whole: the LCP ends at a batch boundary, the end of the last committed batch. The
     * paper's LCP is the longest prefix of prepared seqs and may end inside a batch; this one keeps every
     * acknowledged write (an acknowledged batch is committed) and never applies part of a batch (a block device
     * write is one batch or several whole ones). Batches after the first stuck one are dropped even if they were
     * prepared: ordered commit (COMMIT-CONFIRMATION) could never commit them.
     */
    private Outcome recover() {
        if (coordination == null) {
            return null;
        }
        for (int r = 0; r < cfg.regionCount(); r++) {
            if (answers.getOrDefault(r, Map.of()).size() < 3) {
                return new Outcome.Waiting("recovery: waiting for the mount states of region " + r);
            }
            for (NodeId n : membership.current(r).replicas()) {
                if (!recovery.containsKey(n)) {
                    return new Outcome.Waiting("recovery: waiting for the recovery state of replica " + n
                            + " of region " + r);
                }
            }
        }
        java.util.TreeSet<Long> undecided = new java.util.TreeSet<>();
        Map<Long, BatchInfo> infos = new HashMap<>();
        Map<Long, Integer> leaderOf = new HashMap<>();
        Map<Long, long[]> seqRange = new HashMap<>();
        for (Message.RecoveryState x : recovery.values()) {
            for (Message.PendingEntry e : x.pending()) {
                undecided.add(e.batchId());
                leaderOf.putIfAbsent(e.batchId(), e.leaderRegion());
                for (long q : e.seqs()) {
                    long[] range = seqRange.computeIfAbsent(e.batchId(), k -> new long[] {Long.MAX_VALUE, Long.MIN_VALUE});
                    range[0] = Math.min(range[0], q);
                    range[1] = Math.max(range[1], q);
                }
            }
            for (BatchInfo bi : x.batchInfos()) {
                if (bi.volume().equals(cfg.volume()) && bi.clientSig() != null
                        && client != null && verifier.verify(client, bi.signedBytes(), bi.clientSig())) {
                    undecided.add(bi.batchId());
                    infos.putIfAbsent(bi.batchId(), bi);
                    leaderOf.putIfAbsent(bi.batchId(), x.region());
                }
            }
        }
        if (undecided.isEmpty()) {
            return null; // nothing undecided: the regions are settling (or disagree: the caller waits)
        }
        Long stuck = null;
        String why = null;
        List<Message.RecoveryState> proof = List.of();
        for (long b : undecided) {
            if (committedAtLeader(b)) {
                // a leader replica signed COMMIT for it (and so reports no BatchInfo): every participant voted YES, its
                // COMMIT may be on its way to them: not a batch that never commits (taking it for one recorded an LCP
                // inside it, and every later mount of the epoch was refused). A later stuck batch waits for it below.
                continue;
            }
            BatchInfo bi = infos.get(b);
            if (bi == null) {
                stuck = b;
                why = "no replica of its leader region " + leaderOf.get(b) + " holds its BatchInfo";
                break;
            }
            for (int p : bi.participants()) {
                if (p < 0 || p >= cfg.regionCount()) {
                    continue;
                }
                List<Message.RecoveryState> states = new ArrayList<>();
                for (NodeId n : membership.current(p).replicas()) {
                    states.add(recovery.get(n));
                }
                if (states.stream().noneMatch(x -> x.lists(b))) {
                    stuck = b;
                    why = "its sub-batch to region " + p + " is in none of that region's logs";
                    proof = states;
                    break;
                }
            }
            if (stuck != null) {
                break;
            }
        }
        // review rv19-2: a batch a leader replica proves it committed may wait on another leader replica that lost its
        // own decision in a crash (queued for its writer, sent to nobody) and, the writer gone, never gets the BatchInfo
        // again: the proof's client-signed BatchInfo goes to the batch's leader replicas, bound to this mount's fence
        List<Map.Entry<NodeId, Message>> resends = new ArrayList<>();
        java.util.SortedSet<Long> resent = new java.util.TreeSet<>();
        for (long b : undecided) {
            Message.RecoveryState x = provenCommit(b, true);
            if (x == null || stuck != null && b >= stuck) {
                continue;
            }
            BatchInfo bi = proven.get(x.replica()).get(b).info();
            Message.RecoveryBatchInfo rb = new Message.RecoveryBatchInfo(cfg.volume(), fence, bi,
                    signer.sign(Message.RecoveryBatchInfo.signedBytes(cfg.volume(), fence, bi)));
            for (NodeId n : membership.current(x.region()).replicas()) {
                resends.add(Map.<NodeId, Message>entry(n, query())); // a leader replica restarted since holds no fence
                resends.add(Map.<NodeId, Message>entry(n, rb));
            }
            resent.add(b);
        }
        if (stuck == null) {
            planResends(resent, resends);
            return new Outcome.Waiting("recovery: the previous writer's batches " + undecided + " reached every"
                    + " participant region; waiting for their leaders to decide them"
                    + (resent.isEmpty() ? "" : " (the BatchInfos of " + resent + ", proven committed at a leader"
                    + " replica, sent again to their leader replicas)"));
        }
        final long bStar = stuck;
        for (Message.RecoveryState x : recovery.values()) {
            for (Message.PendingEntry e : x.pending()) {
                if (e.batchId() < bStar) {
                    planResends(resent, resends);
                    return new Outcome.Waiting("recovery: batch " + bStar + " can never commit (" + why + "); waiting"
                            + " for the batches before it to be decided (batch " + e.batchId() + " at " + x.replica()
                            + ")");
                }
                if (committedAtLeader(e.batchId())) {
                    // a leader replica signed COMMIT for a batch after the "stuck" one (ordered commit: only if the
                    // stuck one is not what it seems, e.g. invented by a faulty replica): the LCP would end inside it.
                    // Recorded only once it is resolved everywhere (review rv18r)
                    planResends(resent, resends);
                    return new Outcome.Waiting("recovery: batch " + e.batchId() + " is committed at a leader replica"
                            + " and not resolved at " + x.replica() + "; waiting for its COMMIT to reach it");
                }
            }
        }
        // every batch before bStar is resolved everywhere: the regions' applied states are the committed prefix
        VolumeRootRecord newest = null;
        Map<Integer, Coordination.RegionReport> reports = new java.util.TreeMap<>();
        for (int r = 0; r < cfg.regionCount(); r++) {
            Map<NodeId, Message.MountState> a = answers.getOrDefault(r, Map.of());
            Message.MountState first = a.values().iterator().next();
            for (Message.MountState m : a.values()) {
                if (m.appliedSeq() != first.appliedSeq() || m.recordSeq() != first.recordSeq()
                        || !m.recordRoot().equals(first.recordRoot()) || !m.regionRoot().equals(first.regionRoot())) {
                    return new Outcome.Waiting("recovery: the replicas of region " + r + " report different applied"
                            + " states " + a.values() + "; waiting for them to apply the same decisions");
                }
            }
            VolumeRootRecord rec = new VolumeRootRecord(first.recordRoot(), first.recordSeq());
            newest = newest == null ? rec : newest.newer(rec);
            java.util.SortedSet<Long> prepared = new java.util.TreeSet<>();
            for (NodeId n : membership.current(r).replicas()) {
                recovery.get(n).pending().forEach(e -> prepared.addAll(e.seqs()));
            }
            reports.put(r, new Coordination.RegionReport(first.appliedSeq(), prepared));
        }
        Coordination.Lcp mine = new Coordination.Lcp(fence, newest.seq(), newest.root());
        Coordination.Lcp agreed;
        try {
            if (lcp == null) {
                reports.forEach((r, rep) -> coordination.report(fence, r, rep));
                lcp = coordination.putLcp(mine.signed(cfg.volume(), signer));
            }
            agreed = lcp;
        } catch (RuntimeException e) {
            lcp = null;
            return new Outcome.Waiting("recovery: cannot record the LCP of recovery epoch " + fence
                    + " in coordination: " + e.getMessage());
        }
        if (!agreed.signedBy(verifier, client, cfg.volume())) {
            lcp = null;
            return unsignedLcpAtFence("nothing is aborted; ");
        }
        if (agreed.seq() != mine.seq() || !agreed.root().equals(mine.root())) {
            return new Outcome.Refused("recovery epoch " + fence + ": coordination holds the LCP seq " + agreed.seq()
                    + " root " + agreed.root() + ", but the regions' committed prefix ends at seq " + mine.seq()
                    + " root " + mine.root() + "; the recorded decision is not this volume's state (forged or from"
                    + " another run): nothing is aborted; check the znode lcp/" + fence + " of the volume's coordination");
        }
        List<Map.Entry<NodeId, Message>> sends = new ArrayList<>();
        for (long b : undecided.tailSet(bStar)) {
            Integer leader = leaderOf.get(b);
            if (leader == null || leader < 0 || leader >= cfg.regionCount()) {
                continue;
            }
            BatchInfo bi = infos.get(b);
            long first = bi != null ? bi.firstSeq() : seqRange.get(b)[0];
            long last = bi != null ? bi.lastSeq() : seqRange.get(b)[1];
            byte[] sig = signer.sign(Message.RecoveryAbort.signedBytes(cfg.volume(), fence, b, leader, first, last));
            Message.RecoveryAbort ra = new Message.RecoveryAbort(cfg.volume(), fence, b, leader, first, last,
                    b == bStar ? proof : List.of(), sig);
            for (NodeId n : membership.current(leader).replicas()) {
                sends.add(Map.<NodeId, Message>entry(n, query())); // a leader replica restarted since holds no fence: fenced again
                sends.add(Map.<NodeId, Message>entry(n, ra));
            }
            abortsRequested.add(b);
        }
        resends.addAll(sends);
        plan(bStar + " " + undecided.tailSet(bStar) + " " + agreed + " resend " + resent, resends);
        return new Outcome.Waiting("recovery epoch " + fence + ": LCP seq " + agreed.seq() + " recorded in"
                + " coordination; batch " + bStar + " can never commit (" + why + "): aborting batches "
                + undecided.tailSet(bStar) + " at their leader replicas");
    }

    /** While the mount waits before recording an LCP, the re-sent BatchInfos (if any) are the whole plan. */
    private void planResends(java.util.SortedSet<Long> resent, List<Map.Entry<NodeId, Message>> resends) {
        if (!resent.isEmpty()) {
            plan("resend " + resent, resends);
        }
    }

    /** Makes {@code sends} the recovery messages of this mount if the plan changed (sent now and at every retransmission). */
    private void plan(String plan, List<Map.Entry<NodeId, Message>> sends) {
        if (!plan.equals(recoveryPlan)) {
            recoveryPlan = plan;
            recoverySends = sends;
            recoverySendsNew = true;
        }
    }

    /**
     * True if a replica proves it signed COMMIT for the batch as its leader ({@link #provenCommit}). A missed commit
     * records an LCP inside a committed batch (review rv18r); before review rv19-3 any replica's bare report counted,
     * also one of a region that does not lead the batch, and one faulty replica kept every mount waiting for ever.
     */
    private boolean committedAtLeader(long b) {
        return provenCommit(b, false) != null;
    }

    /**
     * The recovery state of a replica that proves it signed COMMIT for batch {@code b} as a replica of its leader
     * region, else null (review rv19-3). The proof ({@link Message.CommitProof}) is the TENTATIVE_COMMIT of {@code b}
     * signed by the reporter alone, for this volume, naming the reporter's region (current generation) as the batch's
     * leader, and either
     * <ul>
     *   <li>the batch's BatchInfo signed by the client, with the same seqs and the reporter's region among its
     *       participants (a leader region always takes part in its batch): the client sends a BatchInfo only to the
     *       leader region's replicas, so a replica of another region cannot show one; or</li>
     *   <li>no BatchInfo (a COMMIT reloaded from the disk after a restart: the BatchInfo is not recorded), and the
     *       three replicas of some region all list an unresolved entry of the batch naming the reporter's region as
     *       its leader (one of them is correct: its entry is the client-signed sub-batch).</li>
     * </ul>
     * Either way a claim is refuted when the three replicas of some region all name another leader region. A bare
     * "committed" id is not counted. {@code withInfo}: only a proof that carries the BatchInfo (to re-send it).
     */
    private Message.RecoveryState provenCommit(long b, boolean withInfo) {
        Set<Integer> named = unanimousLeaders(b);
        for (Message.RecoveryState x : recovery.values()) {
            Message.CommitProof p = proven.getOrDefault(x.replica(), Map.of()).get(b);
            if (p == null || withInfo && p.info() == null) {
                continue;
            }
            // refuted: the three replicas of some region all name another leader region (at least one of them is
            // correct, and its entry is the client-signed sub-batch, which names the batch's true leader; a BatchInfo
            // leaked to a replica of another region does not make it one). Confirmed without the BatchInfo (a COMMIT
            // reloaded from the disk after a restart): some region's three replicas all name the reporter's region
            if (named.stream().anyMatch(r -> r != x.region())) {
                continue;
            }
            if (p.info() != null || named.contains(x.region())) {
                return x;
            }
        }
        return null;
    }

    /**
     * The leader regions named by all three replicas of some region in an unresolved entry of batch {@code b}: one of
     * the three is correct, and its entry is the client-signed sub-batch.
     */
    private Set<Integer> unanimousLeaders(long b) {
        Set<Integer> named = new HashSet<>();
        for (int r = 0; r < cfg.regionCount(); r++) {
            Integer n = unanimousLeader(r, b);
            if (n != null) {
                named.add(n);
            }
        }
        return named;
    }

    /** The leader region all three replicas of region {@code r} name in an unresolved entry of {@code b}, or null. */
    private Integer unanimousLeader(int r, long b) {
        Integer named = null;
        for (NodeId n : membership.current(r).replicas()) {
            Message.RecoveryState x = recovery.get(n);
            Message.PendingEntry e = x == null ? null : x.pending().stream().filter(p -> p.batchId() == b)
                    .findFirst().orElse(null);
            if (e == null || named != null && named != e.leaderRegion()) {
                return null;
            }
            named = e.leaderRegion();
        }
        return named;
    }

    private boolean provesCommit(Message.RecoveryState x, Message.CommitProof p) {
        BatchInfo bi = p.info();
        io.salus.core.cert.Certificate t = p.tentative();
        if (t.type() != io.salus.core.cert.CertType.TENTATIVE_COMMIT) {
            return false;
        }
        io.salus.core.cert.Statement.Decision d = t.statement(io.salus.core.cert.Statement.Decision.class);
        if (bi != null && (client == null || !bi.volume().equals(cfg.volume()) || d.batchId() != bi.batchId()
                || d.firstSeq() != bi.firstSeq() || d.lastSeq() != bi.lastSeq() || !bi.participants().contains(x.region())
                || bi.clientSig() == null || !verifier.verify(client, bi.signedBytes(), bi.clientSig()))) {
            return false;
        }
        RrsConfig rrs = membership.current(x.region());
        return d.commit() && d.volume().equals(cfg.volume()) && d.leader().index() == x.region()
                && d.leader().volume().equals(cfg.volume()) && d.generation() == rrs.generation()
                && t.signers().equals(java.util.Set.of(x.replica())) && t.verify(verifier, java.util.Set.of(x.replica()));
    }

    /**
     * First round: once every replica answered, the fence is the first batch id of the epoch after every batch id
     * any replica knows (the highest any replica reports: a replica that under-reports changes nothing, one that
     * over-reports only skips ids). The fenced query then goes to every replica; from its answers on, no
     * sub-batch of the previous writer is logged any more, so a settled region stays as it is.
     */
    private Outcome learnFence() {
        long maxBatch = 0;
        for (int r = 0; r < cfg.regionCount(); r++) {
            Map<NodeId, Message.MountState> a = answers.getOrDefault(r, Map.of());
            if (a.size() < 3) {
                return new Outcome.Waiting("region " + r + ": " + a.size() + " of its 3 replicas answered the mount"
                        + " query (missing: " + missing(r, a) + ")");
            }
            for (Map.Entry<NodeId, Message.MountState> e : a.entrySet()) {
                if (e.getValue().lastBatchId() < 0 || e.getValue().lastBatchId() > MAX_REPORTED_BATCH_ID) {
                    return new Outcome.Refused("region " + r + ": replica " + e.getKey() + " reports batch id "
                            + e.getValue().lastBatchId() + ", outside 0.." + MAX_REPORTED_BATCH_ID
                            + ": it is faulty; replace it (recovery) and mount again");
                }
                maxBatch = Math.max(maxBatch, e.getValue().lastBatchId());
            }
        }
        long f = (Math.floorDiv(maxBatch, BATCH_ID_EPOCH) + 1) * BATCH_ID_EPOCH;
        if (coordination != null && client != null) {
            // an LCP the client did not sign under the fence (filed by whoever holds the store's credentials: the
            // path is predictable) would refuse this mount and every later one, which picks the same fence (review
            // rvw23-3): the fence moves to the next epoch past it; one the client signed (a recovery of this epoch
            // that died before it completed) is kept, as before
            for (int moved = 0; ; moved++) {
                Optional<Coordination.Lcp> there;
                try {
                    there = coordination.lcp(f);
                } catch (RuntimeException e) {
                    return new Outcome.Waiting("cannot read the LCP of recovery epoch " + f + ": " + e.getMessage());
                }
                if (there.isEmpty() || there.get().signedBy(verifier, client, cfg.volume())) {
                    break;
                }
                if (moved == MAX_FENCE_MOVES) {
                    return new Outcome.Refused("the znodes lcp/" + (f - moved * BATCH_ID_EPOCH) + " .. lcp/" + f
                            + " of the volume's coordination all hold an LCP its client did not sign (not written by a"
                            + " mount of this volume): delete them and mount again");
                }
                f += BATCH_ID_EPOCH;
            }
        }
        fence = f;
        answers.clear();
        askAllNow = true;
        return new Outcome.Waiting("fencing the previous writer below batch id " + fence);
    }

    /**
     * The mount's refusal when the znode of its fence holds an LCP its client did not sign, filed after the fence was
     * chosen (review rvw23-3: the next mount's fence moves past it).
     */
    private Outcome unsignedLcpAtFence(String consequence) {
        return new Outcome.Refused("recovery epoch " + fence + ": the znode lcp/" + fence + " of the volume's"
                + " coordination holds an LCP its client did not sign, filed after this mount chose its fence: "
                + consequence + "mount again (the next mount's fence moves past it)");
    }

    /**
     * Proof that a replica of region {@code r} lies (or its state is corrupted): two settled replicas that
     * resolved the same log index report different states. Honest replicas apply the same committed entries in
     * the same log order, so their states at one index are equal.
     */
    private static String contradiction(int r, Map<NodeId, Message.MountState> a) {
        List<Map.Entry<NodeId, Message.MountState>> l = new ArrayList<>(a.entrySet());
        for (int i = 0; i < l.size(); i++) {
            for (int j = i + 1; j < l.size(); j++) {
                Message.MountState x = l.get(i).getValue();
                Message.MountState y = l.get(j).getValue();
                if (x.settled() && y.settled() && x.committedIndex() == y.committedIndex() && !x.sameState(y)) {
                    return "region " + r + ": its replicas signed different states for the same log position "
                            + x.committedIndex() + " (" + l.get(i).getKey() + ": " + x + "; " + l.get(j).getKey()
                            + ": " + y + "). At least one of them is faulty; the volume is not mounted. Replace the"
                            + " faulty replica of region " + r + " (recovery) and mount again";
                }
            }
        }
        return null;
    }

    private List<NodeId> missing(int r, Map<NodeId, Message.MountState> a) {
        List<NodeId> m = new ArrayList<>();
        for (NodeId n : membership.current(r).replicas()) {
            if (!a.containsKey(n)) {
                m.add(n);
            }
        }
        return m;
    }
}
