package io.salus.core.protocol.replica;

/**
 * A replica's files on its colocated DataNode: the region log (one file per generation in HDFS,
 * entries addressed by logical index; the physical offset is the implementation's business) and
 * checkpoint (flush) files. {@link #append} returns only once the entry is durable (hsync).
 */
public interface ReplicaDisk {
    void append(long generation, long index, byte[] entry);

    /** The entry bytes, or null if this disk has none at that position. */
    byte[] read(long generation, long index);

    /** Highest index stored for the generation, or -1. */
    long lastIndex(long generation);

    void writeSnapshot(RegionSnapshot s);

    /** The snapshot of the generation through the given index, or null. */
    RegionSnapshot readSnapshot(long generation, long throughIndex);

    /** Garbage-collects log entries with index &lt;= throughIndex (only after a CHECKPOINT certificate). */
    void truncateLogPrefix(long generation, long throughIndex);
}
