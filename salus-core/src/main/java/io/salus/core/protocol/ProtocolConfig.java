package io.salus.core.protocol;

import io.salus.core.merkle.HashAlgorithm;
import io.salus.core.merkle.RegionLayout;
import java.util.EnumSet;
import java.util.Set;

/**
 * Fixed parameters of one volume: name, block size, hash algorithm, region layout, the checkpoint interval, and
 * (tests only) enabled {@link Mutation}s.
 *
 * @param checkpointEvery a replica checkpoints (writes its checkpoint file, flushes its region store, and signs a
 *                        TENTATIVE_CHECKPOINT) after every this many log entries of its region: at each log index
 *                        {@code k} with {@code (k + 1) % checkpointEvery == 0}. The three replicas of a region must
 *                        use the same value (a vote or proposal at another index is ignored, so a mismatch stops
 *                        checkpoints and log GC, never safety). Default {@link #DEFAULT_CHECKPOINT_EVERY}.
 */
public record ProtocolConfig(String volume, int blockSize, HashAlgorithm hash, RegionLayout layout,
                             Set<Mutation> mutations, int checkpointEvery) {
    /**
     * Log entries between checkpoints by default (task tput18; it was 4). A checkpoint costs a delta file on HDFS and
     * an HBase region flush (222-1052 ms of CPU each on the shared 2-core machine, docs/salus-on-hbase.md) and a new
     * HFile (compactions are off for Salus tables), per replica; at 4 entries the three replicas of a region busy with
     * a QD32 stream flushed several times a second. 64 makes that cost 16 times rarer while keeping what it bounds
     * small: a replica keeps at most two intervals of entries in memory (memory lags one certificate), at most
     * 2 x 64 x 256 KiB = 32 MiB with the largest (64-block) sub-batches; a restart replays at most 64 entries after
     * its checkpoint; and a client with at most {@code 64} batches outstanding (SalusVolume: 32) cannot be two
     * checkpoints ahead of a batch whose reply it still waits for (see RegionReplica's onCheckpointVote).
     */
    public static final int DEFAULT_CHECKPOINT_EVERY = 64;

    public ProtocolConfig {
        if (blockSize <= 0) {
            throw new IllegalArgumentException("block size must be positive, got " + blockSize);
        }
        if (checkpointEvery < 1) {
            throw new IllegalArgumentException("checkpoint interval must be at least 1 log entry, got " + checkpointEvery);
        }
        mutations = mutations.isEmpty() ? Set.of() : EnumSet.copyOf(mutations);
    }

    public ProtocolConfig(String volume, int blockSize, HashAlgorithm hash, RegionLayout layout,
                          Set<Mutation> mutations) {
        this(volume, blockSize, hash, layout, mutations, DEFAULT_CHECKPOINT_EVERY);
    }

    public static ProtocolConfig of(String volume, int blockSize, HashAlgorithm hash, RegionLayout layout) {
        return new ProtocolConfig(volume, blockSize, hash, layout, Set.of(), DEFAULT_CHECKPOINT_EVERY);
    }

    public boolean mutated(Mutation m) {
        return mutations.contains(m);
    }

    public ProtocolConfig withMutation(Mutation m) {
        EnumSet<Mutation> s = mutations.isEmpty() ? EnumSet.noneOf(Mutation.class) : EnumSet.copyOf(mutations);
        s.add(m);
        return new ProtocolConfig(volume, blockSize, hash, layout, s, checkpointEvery);
    }

    /** The same configuration with a checkpoint every {@code entries} log entries. */
    public ProtocolConfig withCheckpointEvery(int entries) {
        return new ProtocolConfig(volume, blockSize, hash, layout, mutations, entries);
    }

    /** True if log index {@code index} ends a checkpoint interval (a replica checkpoints through it). */
    public boolean checkpointIndex(long index) {
        return index >= 0 && (index + 1) % checkpointEvery == 0;
    }

    public int regionCount() {
        return (int) layout.regionCount();
    }
}
