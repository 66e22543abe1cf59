package io.salus.core.protocol.replica;

import io.salus.core.cert.CertType;
import io.salus.core.cert.Certificate;
import io.salus.core.cert.RegionId;
import io.salus.core.cert.Statement;
import io.salus.core.merkle.Hash;
import io.salus.core.merkle.VolumeRootRecord;
import io.salus.core.protocol.Tentatives;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * The checkpoint (flush/compaction consent) state of one {@link RegionReplica}: the region root and
 * volume-root record at each local flush, the primary's proposals, the replicas' TENTATIVE_CHECKPOINT
 * votes, and the latest CHECKPOINT certificate, whose covered state is freed when the next one forms.
 * Pure state, no I/O.
 */
final class CheckpointState {
    private final Map<Long, Hash> snapshotRoots = new HashMap<>();
    /** The volume-root record at each snapshot index (its seq is the snapshot's last seq). */
    private final Map<Long, VolumeRootRecord> snapshotRecords = new HashMap<>();
    private final Set<Long> proposals = new HashSet<>();
    private final Tentatives<Long> votes = new Tentatives<>();
    long checkpointedIndex;
    /** (through index, last seq) of the latest CHECKPOINT certificate, freed at the next. */
    private long[] lastCertified;

    CheckpointState(long throughIndex, Hash root, VolumeRootRecord record) {
        this.checkpointedIndex = throughIndex;
        snapshot(throughIndex, root, record);
    }

    /** Records a local flush through {@code index}. */
    void snapshot(long index, Hash root, VolumeRootRecord record) {
        snapshotRoots.put(index, root);
        snapshotRecords.put(index, record);
    }

    boolean hasSnapshot(long index) {
        return snapshotRoots.containsKey(index);
    }

    /** The statement a replica signs for its flush through {@code index}. */
    Statement.Checkpoint statement(RegionId region, long generation, long index) {
        VolumeRootRecord rec = snapshotRecords.get(index);
        return new Statement.Checkpoint(region, generation, index, rec.seq(), snapshotRoots.get(index), rec.root());
    }

    void propose(long index) {
        proposals.add(index);
    }

    boolean proposed(long index) {
        return proposals.contains(index);
    }

    Set<Long> proposals() {
        return proposals;
    }

    /** Offers a verified TENTATIVE_CHECKPOINT; returns the CHECKPOINT certificate once three match, else null. */
    Certificate offerVote(long index, Certificate t) {
        if (t.type() != CertType.TENTATIVE_CHECKPOINT) {
            return null;
        }
        return Tentatives.combineIfEnough(votes.offer(index, t), Tentatives.UNANIMOUS);
    }

    /**
     * A CHECKPOINT certificate through {@code index} formed: forgets proposals and votes it covers,
     * and returns the previous certificate's (through index, last seq), whose state is now freed, or null.
     */
    long[] certified(long index, long lastSeq) {
        checkpointedIndex = index;
        proposals.removeIf(k -> k <= index);
        votes.forgetIf(k -> k <= index);
        long[] previous = lastCertified;
        lastCertified = new long[] {index, lastSeq};
        return previous;
    }

    /** Drops the snapshots before {@code index}. */
    void freeBefore(long index) {
        snapshotRoots.keySet().removeIf(k -> k < index);
        snapshotRecords.keySet().removeIf(k -> k < index);
    }

    void sizes(Map<String, Integer> m) {
        m.put("snapshotRoots", snapshotRoots.size());
        m.put("snapshotRecords", snapshotRecords.size());
        m.put("checkpointProposals", proposals.size());
        m.put("checkpointVotes", votes.size());
    }
}
