package io.salus.core.protocol.replica;

import io.salus.core.cert.Certificate;
import io.salus.core.merkle.VolumeRootRecord;
import java.util.List;
import java.util.Map;

/**
 * A replica's files on its colocated DataNode: the region log (one file per generation in HDFS,
 * entries addressed by logical index; the physical offset is the implementation's business) and
 * checkpoint (flush) files. {@link #append} returns only once the entry is durable (hsync).
 */
public interface ReplicaDisk {
    void append(long generation, long index, byte[] entry);

    /**
     * Appends {@code entries.get(i)} at {@code indexes.get(i)}, in list order, and returns once all of them are
     * durable. A disk may share one hsync among them (group commit); by default, one {@link #append} each.
     */
    default void appendAll(long generation, List<Long> indexes, List<byte[]> entries) {
        for (int i = 0; i < entries.size(); i++) {
            append(generation, indexes.get(i), entries.get(i));
        }
    }

    /** The entry bytes, or null if this disk has none at that position. */
    byte[] read(long generation, long index);

    /** Highest index stored for the generation, or -1. */
    long lastIndex(long generation);

    /** Writes a whole-region snapshot (the generation's starting state after recovery). */
    void writeSnapshot(RegionSnapshot s);

    /**
     * Writes a checkpoint (flush) through log index {@code throughIndex} that costs what changed:
     * only the blocks changed since the generation's previous checkpoint (or its starting
     * snapshot), with the last seq and root record at that point. {@link #readSnapshot} composes
     * the full state from the starting snapshot and the checkpoints up to the one asked for.
     */
    void writeCheckpoint(long generation, long throughIndex, long lastSeq, Map<Long, byte[]> changed,
                         VolumeRootRecord rootRecord);

    /** The region state of the generation through the given index (composed), or null. */
    RegionSnapshot readSnapshot(long generation, long throughIndex);

    /**
     * Durably records (hsync) a decision before the replica sends or acts on it: a
     * TENTATIVE_COMMIT/TENTATIVE_ABORT this replica signed as a batch-leader replica, or a
     * COMMIT/ABORT certificate (3 leader signatures) it resolved one of its log entries with (the
     * entry's commit/abort mark). A restarted replica reloads them, so it never signs the opposite
     * decision and recovery can prove which logged entries were aborted.
     */
    void recordDecision(long generation, Certificate decision);

    /** {@link #recordDecision} of each, in list order; returns once all are durable (one hsync may cover them). */
    default void recordDecisions(long generation, List<Certificate> decisions) {
        for (Certificate d : decisions) {
            recordDecision(generation, d);
        }
    }

    /** The decisions recorded for the generation, in recording order (empty if none). */
    List<Certificate> decisions(long generation);

    /** Garbage-collects log entries with index &lt;= throughIndex (only after a CHECKPOINT certificate). */
    void truncateLogPrefix(long generation, long throughIndex);
}
