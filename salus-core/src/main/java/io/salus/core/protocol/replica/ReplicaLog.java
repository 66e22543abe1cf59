package io.salus.core.protocol.replica;

import io.salus.core.cert.Certificate;
import io.salus.core.crypto.NodeId;
import io.salus.core.merkle.Hash;
import io.salus.core.protocol.Tentatives;
import io.salus.core.protocol.message.SubBatch;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * The log and commit state of one {@link RegionReplica} (AS steps 1-4): the sub-batches accepted
 * in log order and those waiting for their predecessor, the store acknowledgements of each entry,
 * the COMMIT/ABORT certificates that resolve entries (and the leader tentatives they are combined
 * from), and how far the log is committed. Pure state, no I/O; the replica drives it.
 */
final class ReplicaLog {
    /** One accepted sub-batch at its log index. */
    static final class Entry {
        final long index;
        /** The logged sub-batch; without block data once {@link #hollow} (see {@link #dropData}). */
        SubBatch sb;
        final Hash digest;
        /**
         * Resolved and acted on: the block data was dropped from memory (issue 27: the server's heap does not hold
         * what the log and the region's cells already hold). Only its metadata is used from then on; a copy of it
         * that arrives is recognised by its {@link #digest}; its bytes are on the disk for a peer that asks.
         */
        boolean hollow;
        final Set<NodeId> acks = new HashSet<>();
        boolean voted;
        boolean resolved;
        /**
         * The entry is durable in the replica's log. False only while a {@link DurableWriter} writes it: until then
         * nothing of it is sent (tentative, vote) and it is not committed.
         */
        boolean logged = true;
        /** Its commit/abort mark is being written by the {@link DurableWriter}: decided, not yet acted on. */
        boolean committing;
        /** Retransmission back-off (ticks): when the tick next resends this entry's messages, and the wait after. */
        long retransmitAt;
        int retransmitEvery;
        /** Retransmission rounds this entry has stayed unresolved. */
        int rounds;
        /** Length of {@code sb.encode()} (-1: not computed yet). */
        int length = -1;
        /** The chain successor asked for the log since this entry was last sent to it: send it again. */
        boolean successorAsked;
        /**
         * The chain successor acknowledged this entry (its index and digest) as durable in its log (task net19,
         * {@code Message.ChainAck}): its payload is not resent to it at every round. Cleared when the successor asks
         * for the log again.
         */
        boolean successorLogged;

        Entry(long index, SubBatch sb, Hash digest) {
            this.index = index;
            this.sb = sb;
            this.digest = digest;
        }

        /** Drops the block data (after the entry was resolved and applied); keeps its encoded length. */
        void dropData() {
            if (!hollow) {
                if (length < 0) {
                    length = sb.encode().length;
                }
                sb = sb.withoutData();
                hollow = true;
            }
        }
    }

    long lastAcceptedSeq;
    long nextIndex;
    /** The last entry whose decision this replica took up (in log order; its mark may still be being written). */
    long committedIndex;
    /**
     * The last entry resolved here: its commit/abort mark durable and, for a COMMIT, applied. Equal to
     * {@link #committedIndex} except while a {@link DurableWriter} writes marks; what the replica reports (mount).
     */
    long resolvedIndex;
    /** Batch ids below this are finished here: their entries are checkpointed and no open batch needs them. */
    long batchFloor;

    private final Map<Long, SubBatch> waiting = new HashMap<>();
    private final TreeMap<Long, Entry> entries = new TreeMap<>();
    private final Map<Long, Long> indexByBatch = new HashMap<>();
    private final Tentatives<Long> decisionTentatives = new Tentatives<>();
    private final Map<Long, Certificate> decisionCerts = new HashMap<>();

    ReplicaLog(long throughIndex, long lastSeq) {
        this.lastAcceptedSeq = lastSeq;
        this.committedIndex = throughIndex;
        this.resolvedIndex = throughIndex;
        this.nextIndex = throughIndex + 1;
    }

    // ---------------------------------------------------------------- entries

    /** Adds an accepted (or reloaded) sub-batch at the next index. */
    Entry add(long index, SubBatch sb, Hash digest) {
        Entry e = new Entry(index, sb, digest);
        entries.put(index, e);
        indexByBatch.put(sb.batchId(), index);
        lastAcceptedSeq = sb.lastSeq();
        nextIndex = index + 1;
        return e;
    }

    Entry entry(long index) {
        return entries.get(index);
    }

    /** The entry holding the batch's sub-batch, or null. */
    Entry entryOfBatch(long batchId) {
        Long i = indexByBatch.get(batchId);
        return i == null ? null : entries.get(i);
    }

    boolean hasBatch(long batchId) {
        return indexByBatch.containsKey(batchId);
    }

    Collection<Entry> entries() {
        return entries.values();
    }

    /** The entry to commit next (in log order), or null. */
    Entry nextToCommit() {
        return entries.get(committedIndex + 1);
    }

    /** Parks a sub-batch until the one ending at {@code prevNum} is accepted. */
    void await(long prevNum, SubBatch sb) {
        waiting.putIfAbsent(prevNum, sb);
    }

    /** The parked sub-batch that follows the last accepted one, removed, or null. */
    SubBatch takeSuccessor() {
        return waiting.remove(lastAcceptedSeq);
    }

    /** True if a parked sub-batch waits for a predecessor this log has not accepted (one after the last accepted). */
    boolean waitsForMissing() {
        for (long prev : waiting.keySet()) {
            if (prev > lastAcceptedSeq) {
                return true;
            }
        }
        return false;
    }

    /** Forgets parked sub-batches of batches below {@code batchId} (a mount fenced their writer). */
    void dropWaitingBelow(long batchId) {
        waiting.values().removeIf(sb -> sb.batchId() < batchId);
    }

    /** Forgets parked sub-batches whose predecessor is behind the last accepted seq (the log went past them). */
    void dropStaleWaiting() {
        waiting.keySet().removeIf(prev -> prev < lastAcceptedSeq);
    }

    // ---------------------------------------------------------------- decision certificates

    Certificate decision(long batchId) {
        return decisionCerts.get(batchId);
    }

    Map<Long, Certificate> decisions() {
        return decisionCerts;
    }

    void learnDecision(long batchId, Certificate cert) {
        Entry e = entryOfBatch(batchId);
        if (e != null && cert.statement() instanceof io.salus.core.cert.Statement.Decision st
                && st.leader().index() != e.sb.leaderRegion()) {
            // signed by a region that does not lead the batch (review rv18r: three replicas of another region asked
            // to abort it sign; such a certificate reached the disk through a faulty peer's state transfer and was
            // taken at the restart): only the batch's own leader region decides it
            return;
        }
        decisionCerts.putIfAbsent(batchId, cert);
        decisionTentatives.forget(batchId);
    }

    /** Offers a verified leader tentative; returns the combined certificate once enough match, else null. */
    Certificate offerLeaderTentative(long batchId, Certificate t, int need) {
        return Tentatives.combineIfEnough(decisionTentatives.offer(batchId, t), need);
    }

    // ---------------------------------------------------------------- freeing

    /**
     * Drops the entries through {@code index} (a CHECKPOINT certificate covers them) and their batch
     * index; returns the highest batch id freed, or {@code batchFloor - 1} if none.
     */
    long freeEntriesThrough(long index) {
        long maxFreedBatch = batchFloor - 1;
        var covered = entries.headMap(index, true);
        for (Entry e : covered.values()) {
            indexByBatch.remove(e.sb.batchId());
            maxFreedBatch = Math.max(maxFreedBatch, e.sb.batchId());
        }
        covered.clear();
        return maxFreedBatch;
    }

    /** The lowest batch id of an entry still held, or {@code bound} if lower. */
    long lowestOpenBatch(long bound) {
        long floor = bound;
        for (Entry e : entries.values()) {
            floor = Math.min(floor, e.sb.batchId());
        }
        return floor;
    }

    /** Raises the batch floor and frees decision state below it. */
    void raiseBatchFloor(long floor) {
        batchFloor = Math.max(batchFloor, floor);
        decisionCerts.keySet().removeIf(b -> b < batchFloor);
        decisionTentatives.forgetIf(b -> b < batchFloor);
    }

    void sizes(Map<String, Integer> m) {
        m.put("entries", entries.size());
        m.put("indexByBatch", indexByBatch.size());
        m.put("waiting", waiting.size());
        m.put("decisionCerts", decisionCerts.size());
        m.put("decisionTentatives", decisionTentatives.size());
    }
}
