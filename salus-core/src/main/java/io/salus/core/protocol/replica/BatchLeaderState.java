package io.salus.core.protocol.replica;

import io.salus.core.cert.Certificate;
import io.salus.core.crypto.NodeId;
import io.salus.core.protocol.ReplicaId;
import io.salus.core.protocol.message.BatchInfo;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The batch-leader state of one {@link RegionReplica} (pipelined commit, PC3): for the batches its
 * region leads, the client's BatchInfo, the participants' votes, the decision this replica signed
 * (durable on the {@link ReplicaDisk} before it is sent; while a {@link DurableWriter} writes it, "recording"), and
 * who waits for it. Pure state, no I/O.
 */
final class BatchLeaderState {
    /** One batch this region leads and this replica has not decided yet. */
    static final class LeaderBatch {
        BatchInfo info;
        final Map<Integer, Set<NodeId>> yes = new HashMap<>();
        /** Regions from whose current replicas a signed NO arrived; only participants' NOs count. */
        final Set<Integer> no = new HashSet<>();
        /** One vote per replica: a server hosting two participant regions votes once for each. */
        final Set<ReplicaId> voted = new HashSet<>();

        /** A signed NO from a replica of one of the batch's participant regions. */
        boolean participantSaidNo() {
            for (int p : info.participants()) {
                if (no.contains(p)) {
                    return true;
                }
            }
            return false;
        }
    }

    private final int maxUnknown;
    private final Map<Long, LeaderBatch> leading = new HashMap<>();
    private final Map<Long, Certificate> myDecisions = new HashMap<>();
    /**
     * Task tput19: decisions this replica signed whose record the {@link DurableWriter} is making durable. The batch
     * counts as decided at once (a retransmitted vote or BatchInfo does not make it sign again), but the decision is
     * not in {@link #decision} (nobody gets it) until {@link #decide} once the record is durable; a restart before
     * that loses it with nothing sent.
     */
    private final Map<Long, Certificate> recording = new HashMap<>();
    private final Map<Long, Set<NodeId>> decisionWaiters = new HashMap<>();
    /**
     * Review rv19-2/3: the client-signed BatchInfo of each batch this replica signed COMMIT for (recorded or being
     * recorded), kept as long as the decision is in memory: with its TENTATIVE_COMMIT it is this replica's proof to a
     * mount that the batch committed, and the BatchInfo the mount re-sends to a leader replica that lost its decision.
     */
    private final Map<Long, BatchInfo> committedInfos = new HashMap<>();
    /**
     * Askers of decisions freed from memory, answered together from one read of the disk at the next
     * tick (bounded: beyond it an asker is not remembered and asks again), so the rate of requests
     * does not set the rate of disk scans.
     */
    private final Map<Long, Set<NodeId>> diskRequests = new HashMap<>();
    /**
     * Batch ids below this are decided here and forgotten from memory (a CHECKPOINT certificate covers
     * their entries): they are never decided again, and their decision is read back from the disk.
     */
    private long decidedFloor;

    BatchLeaderState(int maxUnknown) {
        this.maxUnknown = maxUnknown;
    }

    /** True once this replica signed a decision for the batch (or the batch is below the decided floor). */
    boolean decided(long batchId) {
        return batchId < decidedFloor || myDecisions.containsKey(batchId) || recording.containsKey(batchId);
    }

    /** True while this replica's decision for the batch is being made durable (signed, sent to nobody yet). */
    boolean recording(long batchId) {
        return recording.containsKey(batchId);
    }

    /** The replica signed {@code t} for the batch and handed it to its writer: decided, not yet durable. */
    void startRecording(long batchId, Certificate t) {
        recording.put(batchId, t);
        keepCommittedInfo(batchId, t, leading.remove(batchId));
    }

    private void keepCommittedInfo(long batchId, Certificate t, LeaderBatch lb) {
        if (t.type() == io.salus.core.cert.CertType.TENTATIVE_COMMIT && lb != null && lb.info != null) {
            committedInfos.put(batchId, lb.info);
        }
    }

    /**
     * The client-signed BatchInfo of a batch whose COMMIT this replica reloaded from its disk (its BatchInfo is not
     * on the disk), once a mount re-sends it: kept with the decision, so its report proves the commit again.
     */
    void rememberCommittedInfo(long batchId, BatchInfo info) {
        Certificate t = myDecisions.get(batchId);
        if (t != null && t.type() == io.salus.core.cert.CertType.TENTATIVE_COMMIT) {
            committedInfos.putIfAbsent(batchId, info);
        }
    }

    /** True if the batch's decision was freed from memory (it is on the disk). */
    boolean forgotten(long batchId) {
        return batchId < decidedFloor && !myDecisions.containsKey(batchId);
    }

    /** The decision this replica signed for the batch if still in memory, or null. */
    Certificate decision(long batchId) {
        return myDecisions.get(batchId);
    }

    /** The batches this replica signed COMMIT for, whose decision it still holds in memory, in id order. */
    List<Long> committedInMemory() {
        // a COMMIT being recorded too: it goes out once durable (a missed one lets a mount record an LCP inside the
        // batch; one a crash then loses is decided again once the mount re-sends the BatchInfo: review rv19-2)
        return java.util.stream.Stream.of(myDecisions, recording).flatMap(m -> m.entrySet().stream())
                .filter(e -> e.getValue().type() == io.salus.core.cert.CertType.TENTATIVE_COMMIT)
                .map(Map.Entry::getKey).sorted().toList();
    }

    /**
     * The proofs of {@link #committedInMemory()} (review rv19-3): its TENTATIVE_COMMIT with the batch's client-signed
     * BatchInfo, in id order. A COMMIT reloaded from the disk has no BatchInfo (null) until a mount re-sends it
     * ({@link #rememberCommittedInfo}).
     */
    List<io.salus.core.protocol.message.Message.CommitProof> commitProofs() {
        return committedInMemory().stream().map(b -> new io.salus.core.protocol.message.Message.CommitProof(
                myDecisions.getOrDefault(b, recording.get(b)), committedInfos.get(b))).toList();
    }

    /** Reloads a decision this replica signed before a restart. */
    void reload(long batchId, Certificate t) {
        myDecisions.putIfAbsent(batchId, t);
    }

    /** The batch, created for its BatchInfo. */
    LeaderBatch forBatchInfo(long batchId) {
        return leading.computeIfAbsent(batchId, k -> new LeaderBatch());
    }

    /** The batch for a vote, created if fewer than the bound of unknown batches are held, else null. */
    LeaderBatch forVote(long batchId) {
        LeaderBatch lb = leading.get(batchId);
        if (lb == null && unknownBatches() < maxUnknown) {
            lb = new LeaderBatch();
            leading.put(batchId, lb);
        }
        return lb;
    }

    /** True if an open batch led here waits for {@code batchId}'s decision, led by {@code leaderRegion}. */
    boolean awaitsDecisionOf(long batchId, int leaderRegion) {
        for (LeaderBatch lb : leading.values()) {
            if (lb.info != null && lb.info.prevBatchId() == batchId && lb.info.prevLeaderRegion() == leaderRegion) {
                return true;
            }
        }
        return false;
    }

    /** True if an open batch led here waits for {@code batchId}'s decision (its previous batch). */
    boolean awaitsDecisionOf(long batchId) {
        for (LeaderBatch lb : leading.values()) {
            if (lb.info != null && lb.info.prevBatchId() == batchId) {
                return true;
            }
        }
        return false;
    }

    /** True if this replica already counted a vote of {@code voter} for the (undecided) batch. */
    boolean counted(long batchId, ReplicaId voter) {
        LeaderBatch lb = leading.get(batchId);
        return lb != null && lb.voted.contains(voter);
    }

    /** The BatchInfo of an undecided batch led here, or null. */
    io.salus.core.protocol.message.BatchInfo info(long batchId) {
        LeaderBatch lb = leading.get(batchId);
        return lb == null ? null : lb.info;
    }

    boolean knowsInfo(long batchId) {
        LeaderBatch lb = leading.get(batchId);
        return lb != null && lb.info != null;
    }

    Collection<LeaderBatch> batches() {
        return leading.values();
    }

    /** A snapshot of the undecided batches (safe to iterate while deciding). */
    List<LeaderBatch> batchesCopy() {
        return new ArrayList<>(leading.values());
    }

    /** Records the decision (durable now) and forgets the batch's votes and BatchInfo. */
    void decide(long batchId, Certificate t) {
        myDecisions.put(batchId, t);
        keepCommittedInfo(batchId, t, leading.remove(batchId));
        recording.remove(batchId);
    }

    /** Remembers that {@code from} asked for an undecided batch's decision (bounded for unknown batches). */
    void addWaiter(long batchId, NodeId from) {
        if (decisionWaiters.containsKey(batchId) || decisionWaiters.size() < maxUnknown || knowsInfo(batchId)
                || recording.containsKey(batchId)) {
            // (beyond the bound the asker is not remembered; it asks again)
            decisionWaiters.computeIfAbsent(batchId, k -> new HashSet<>()).add(from);
        }
    }

    /** Remembers that {@code from} asked for a decision freed from memory (bounded). */
    void addDiskRequest(long batchId, NodeId from) {
        Set<NodeId> askers = diskRequests.get(batchId);
        if (askers == null && diskRequests.size() < maxUnknown) {
            askers = new HashSet<>();
            diskRequests.put(batchId, askers);
        }
        if (askers != null && askers.size() < maxUnknown) {
            askers.add(from);
        }
    }

    /** The requests for freed decisions since the last call, removed (empty if none). */
    Map<Long, Set<NodeId>> takeDiskRequests() {
        if (diskRequests.isEmpty()) {
            return Map.of();
        }
        Map<Long, Set<NodeId>> out = new HashMap<>(diskRequests);
        diskRequests.clear();
        return out;
    }

    /** The askers waiting for the batch's decision, removed (null if none). */
    Set<NodeId> takeWaiters(long batchId) {
        return decisionWaiters.remove(batchId);
    }

    /** Led batches known only from votes (no BatchInfo yet). */
    int unknownBatches() {
        int n = 0;
        for (LeaderBatch lb : leading.values()) {
            if (lb.info == null) {
                n++;
            }
        }
        return n;
    }

    /** The lowest batch id an open batch still needs (itself, or its predecessor's decision), or {@code bound}. */
    long lowestNeeded(long bound) {
        long floor = bound;
        for (LeaderBatch lb : leading.values()) {
            if (lb.info != null) {
                floor = Math.min(floor, lb.info.prevBatchId() >= 0 ? lb.info.prevBatchId() : lb.info.batchId());
            }
        }
        return floor;
    }

    /**
     * Frees what the batch floor covers: the decisions this replica signed for batches below it (they
     * stay on the disk), the votes of batches below it that never got a BatchInfo, and their askers.
     * Batches below the floor are never decided again.
     */
    void freeBelow(long batchFloor) {
        leading.entrySet().removeIf(e -> e.getKey() < batchFloor
                && (myDecisions.containsKey(e.getKey()) || e.getValue().info == null));
        long floor = batchFloor;
        for (LeaderBatch lb : leading.values()) {
            if (lb.info != null) {
                floor = Math.min(floor, lb.info.batchId()); // an open batch below the floor keeps its chance
            }
        }
        for (long b : recording.keySet()) {
            floor = Math.min(floor, b); // its decision is not on the disk yet: not one to read back from there
        }
        decidedFloor = Math.max(decidedFloor, floor);
        myDecisions.keySet().removeIf(b -> b < decidedFloor);
        committedInfos.keySet().removeIf(b -> b < decidedFloor);
        decisionWaiters.keySet().removeIf(b -> b < decidedFloor);
    }

    void sizes(Map<String, Integer> m) {
        m.put("leading", leading.size());
        m.put("myDecisions", myDecisions.size() + recording.size());
        m.put("committedInfos", committedInfos.size());
        m.put("decisionWaiters", decisionWaiters.size());
        m.put("diskRequests", diskRequests.size());
    }
}
