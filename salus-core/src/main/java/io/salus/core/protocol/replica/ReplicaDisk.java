package io.salus.core.protocol.replica;

import io.salus.core.cert.Certificate;
import io.salus.core.merkle.VolumeRootRecord;
import io.salus.core.protocol.message.BatchInfo;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/**
 * A replica's files on its colocated DataNode: the region log (one file per generation in HDFS,
 * entries addressed by logical index; the physical offset is the implementation's business) and
 * checkpoint (flush) files. {@link #append} returns only once the entry is durable (hsync).
 *
 * <p>Two levels of durability (task tput18): {@link #append}, {@link #recordDecision}, {@link #recordDecisions} and
 * the checkpoint writes return once the record survives a crash of the whole machine (HDFS: hsync, on the
 * DataNode's disk). {@link #appendAll} and {@link #recordCommitMarks}, the group writes of a replica's batch path
 * ({@link DurableWriter}), return once it survives a crash of the writing process (HDFS: hflush, in the DataNode's
 * memory, on its disk once the OS writes it back); {@link #sync} makes everything written so far survive a machine
 * crash. A replica syncs when the client asks it to ({@code Message.FlushRequest}: an NBD FLUSH or FUA write).
 */
public interface ReplicaDisk {
    /**
     * Checkpoint GC policy ({@link #collectCheckpoints}): once this many deltas have accumulated after the latest
     * whole snapshot at or below a certified index, they are composed into a new whole snapshot at that index and
     * the files before it are deleted. A checkpoint keeps costing what changed (a whole snapshot, the region's
     * written blocks, is written once per this many checkpoints, not at each), and a restart or a peer's catch-up
     * reads at most one whole snapshot and this many deltas.
     */
    int DELTAS_PER_WHOLE = 8;

    void append(long generation, long index, byte[] entry);

    /**
     * Appends {@code entries.get(i)} at {@code indexes.get(i)}, in list order, and returns once all of them survive
     * a crash of the writing process (HDFS: one hflush for all: group commit); {@link #sync} makes them survive a
     * machine crash. By default, one {@link #append} each (durable at once).
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

    /**
     * Writes a checkpoint through {@code throughIndex} whose blocks stay in the replica's versioned region store
     * (issue 27, {@link RegionStore#versioned()}): metadata only (last seq, volume-root record, region tree root and
     * the store version holding the state), so it costs O(1) whatever changed; {@link #readSnapshot} then returns it as
     * a {@link RegionSnapshot#isStored stored} snapshot. The default writes a {@link #writeCheckpoint carried} one
     * with the changed blocks (a disk without the stored format: the simulator's).
     */
    default void writeStoredCheckpoint(long generation, long throughIndex, long lastSeq, Map<Long, byte[]> changed,
                                       VolumeRootRecord rootRecord, io.salus.core.merkle.Hash regionRoot,
                                       long storeVersion) {
        writeCheckpoint(generation, throughIndex, lastSeq, changed, rootRecord);
    }

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

    /**
     * Review rv20-1: {@link #recordDecisions} of decisions this replica signed as a batch-leader replica, each
     * TENTATIVE_COMMIT followed by the client-signed BatchInfo it was signed on ({@code infos.get(i)}, null for none:
     * an ABORT), as a {@link BatchInfoRecord} in the same durable write (hsync). {@link #decisions} does not return
     * these records, {@link #decisionBatchInfos} does; {@link #compactDecisions} keeps one while it keeps its
     * TENTATIVE_COMMIT. No default: a disk (or a wrapper of one) that dropped the BatchInfo would bring back the stall
     * of rv20-1 silently.
     */
    void recordLeaderDecisions(long generation, List<Certificate> decisions, List<BatchInfo> infos);

    /** {@link #recordLeaderDecisions} of one decision ({@code info} null: none). */
    default void recordLeaderDecision(long generation, Certificate decision, BatchInfo info) {
        recordLeaderDecisions(generation, List.of(decision), Arrays.asList(info));
    }

    /**
     * The BatchInfos recorded with leader decisions ({@link #recordLeaderDecisions}) for the generation, in recording
     * order, as stored: their signatures are not checked here (the replica checks each against the client's key and
     * its own reloaded TENTATIVE_COMMIT). A record that does not decode is skipped. Empty for decision records written
     * before rv20-1.
     */
    List<BatchInfo> decisionBatchInfos(long generation);

    /**
     * Records the commit/abort marks of the replica's log entries (COMMIT/ABORT certificates), in list order, as
     * {@link #recordDecisions} does, but returns once they survive a crash of the writing process, like
     * {@link #appendAll}; {@link #sync} makes them survive a machine crash. By default {@link #recordDecisions}.
     */
    default void recordCommitMarks(long generation, List<Certificate> marks) {
        recordDecisions(generation, marks);
    }

    /**
     * Makes everything written to the generation's log and decision records so far durable against a machine crash
     * (HDFS: hsync of each file with data not hsynced yet). No default: a FLUSH or FUA write is answered after this
     * returns, so every implementation, and every wrapper of one, says what it does (a wrapper that inherited a no-op
     * default answered FLUSHes without syncing anything: the merge of tasks tput18 and disk18).
     */
    void sync(long generation);

    /** The decisions recorded for the generation, in recording order (empty if none). */
    List<Certificate> decisions(long generation);

    /** Garbage-collects log entries with index &lt;= throughIndex (only after a CHECKPOINT certificate). */
    void truncateLogPrefix(long generation, long throughIndex);

    /**
     * Garbage-collects the checkpoint files no state at or after {@code throughIndex} needs. Called only after a
     * CHECKPOINT certificate through {@code throughIndex} formed (three replicas signed it, each only once its own
     * checkpoint through it was durable). An implementation does nothing unless this disk holds its own checkpoint
     * through {@code throughIndex} (whole or delta), and always keeps what {@link #readSnapshot} needs to compose the
     * state through {@code throughIndex} and every later checkpoint: the latest whole snapshot at or below it and the
     * deltas after that snapshot. The default keeps everything.
     */
    default void collectCheckpoints(long generation, long throughIndex) {
    }

    /**
     * Rewrites the generation's decision records keeping, in recording order, only those {@code keep} accepts
     * (garbage collection after a CHECKPOINT certificate; the caller decides what is still needed). A crash midway
     * may leave a record both in its old place and in the rewritten one: reloading a decision twice is harmless.
     * A BatchInfo recorded with a leader decision ({@link #recordLeaderDecisions}) is kept exactly while a kept
     * TENTATIVE_COMMIT of its volume and batch is ({@link BatchInfoRecord#kept}). The default keeps everything.
     */
    default void compactDecisions(long generation, Predicate<Certificate> keep) {
    }
}
