package io.salus.core.protocol.replica;

import io.salus.core.crypto.NodeId;
import io.salus.core.merkle.Hash;
import io.salus.core.protocol.message.SubBatch;

/**
 * Fault-injection points of a replica, used by the simulator to model commission failures (memory
 * corruption, signing wrong data, reordering/withholding, corrupt GET replies). {@link #NONE} is the
 * correct behaviour and the only one production code uses.
 */
public interface ReplicaHooks {
    ReplicaHooks NONE = new ReplicaHooks() {
    };

    /** Bytes actually written to the DataNode for a log entry. */
    default byte[] onDiskWrite(byte[] entry) {
        return entry;
    }

    /** Digest put in the replica's TENTATIVE_LOG_ENTRY. */
    default Hash digestToSign(Hash digest) {
        return digest;
    }

    /** Whether to forward the sub-batch down the chain now. */
    default boolean forward(SubBatch sb) {
        return true;
    }

    /** Whether to vote YES (a faulty replica may withhold or vote NO). */
    default boolean voteYes(SubBatch sb) {
        return true;
    }

    /** If true the replica votes YES right after logging, without waiting for the 5 store acks. */
    default boolean earlyVote() {
        return false;
    }

    /** Block content kept in memory (memstore and region tree) when a PUT is applied. */
    default byte[] onApply(byte[] data) {
        return data;
    }

    /** Data returned in a GET reply. */
    default byte[] onGetReply(byte[] data) {
        return data;
    }

    /** If true the replica sends TENTATIVE_PUT_SUCCESS as soon as it logs (before the decision). */
    default boolean earlyPutSuccess() {
        return false;
    }

    /** If true, a (faulty) leader replica decides as soon as it knows the batch, without votes or confirmation. */
    default boolean decideEarly() {
        return false;
    }

    /** The decision (true = COMMIT) a leader replica signs for {@code recipient}; a faulty one may lie or equivocate. */
    default boolean decisionFor(long batchId, NodeId recipient, boolean decided) {
        return decided;
    }

    /** The state a replica signs in its answer to a mount query; a faulty one may report another state. */
    default io.salus.core.protocol.message.Message.MountState mountReport(
            io.salus.core.protocol.message.Message.MountState honest) {
        return honest;
    }

    /** The leaf hashes a replica sends a mounting client; a faulty one may send others. */
    default io.salus.core.protocol.message.Message.LeafChunk leafReport(
            io.salus.core.protocol.message.Message.LeafChunk honest) {
        return honest;
    }
}
