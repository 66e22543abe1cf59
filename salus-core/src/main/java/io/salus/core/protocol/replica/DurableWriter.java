package io.salus.core.protocol.replica;

import io.salus.core.cert.Certificate;

/**
 * Makes a replica's log appends and commit marks durable off its event loop (task tput17). The event loop blocked on
 * every hsync: a sub-batch's append, then its commit mark, one batch after the other, so with several batches in
 * flight each replica's loop spent its time waiting for HDFS and every message behind it waited too. With a writer,
 * {@link RegionReplica} hands it the record and goes on; the writer makes it durable (an adapter shares one hsync
 * among the records queued meanwhile: group commit) and then runs {@code then} <b>on the replica's event loop</b>.
 * What the record makes possible (the entry's tentative to the witness stores, its vote; applying a committed entry and
 * its PutReply) happens only in {@code then}, so nothing is acknowledged before it is on the disk.
 *
 * <p>Durability (task tput18): {@link #append} and {@link #recordDecision} make the record survive a crash of the
 * writing process ({@link ReplicaDisk#appendAll}, {@link ReplicaDisk#recordCommitMarks}: HDFS hflush); {@link #sync}
 * makes every record submitted before it survive a machine crash ({@link ReplicaDisk#sync}: hsync), for a client's
 * FLUSH. {@link #recordLeaderDecision} (task tput19: a leader replica's own decision, which before was written with an
 * hsync on the loop) makes its record survive a machine crash before its {@code then}.
 *
 * <p>Contract: records become durable and their {@code then} run in submission order. A record that cannot be written
 * is never followed by a {@code then} of it or of a later record; the adapter calls
 * {@link RegionReplica#diskWriteFailed} on the loop instead.
 */
public interface DurableWriter {
    /** {@link ReplicaDisk#append}, then {@code then} on the loop. */
    void append(long generation, long index, byte[] entry, Runnable then);

    /** {@link ReplicaDisk#recordDecision} (an entry's commit/abort mark), then {@code then} on the loop. */
    void recordDecision(long generation, Certificate decision, Runnable then);

    /**
     * A decision this replica signed as a batch-leader replica (TENTATIVE_COMMIT/ABORT, task tput19): written as
     * {@link ReplicaDisk#recordLeaderDecision} writes it, with the client-signed BatchInfo of a COMMIT ({@code info};
     * null for none: review rv20-1), durable against a machine crash (hsync: a leader replica never signs two
     * different decisions for a batch, also across a restart of its machine), then {@code then} on the loop, in
     * submission order with the other records. The replica sends the decision to nobody before {@code then}. No
     * default: a writer that dropped the BatchInfo would bring back rv20-1's stall silently.
     */
    void recordLeaderDecision(long generation, Certificate decision, io.salus.core.protocol.message.BatchInfo info,
                              Runnable then);

    /**
     * Once every record submitted before this call is written: {@link ReplicaDisk#sync} (hsync), then {@code then} on
     * the loop (in submission order with the records' continuations).
     */
    void sync(long generation, Runnable then);
}
