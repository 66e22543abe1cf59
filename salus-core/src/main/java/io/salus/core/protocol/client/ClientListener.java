package io.salus.core.protocol.client;

import io.salus.core.cert.Certificate;
import io.salus.core.crypto.NodeId;
import java.util.List;

/** Completion callbacks of a {@link VolumeClient}. */
public interface ClientListener {
    /** Every sub-batch of the batch has a PUT_SUCCESS certificate: the PUTs are durable and committed. */
    void putSucceeded(long batchId, long firstSeq, long lastSeq, List<Certificate> putSuccess);

    /**
     * The batch failed and its writes will never be applied: either PUT_FAILED is proven (three
     * matching TENTATIVE_PUT_FAILED from one participant region's replicas, so the batch leader's
     * ABORT certificate exists), or the batch follows an aborted batch in the pipeline (the
     * COMMIT-CONFIRMATION chain aborts it too). One replica's TENTATIVE_PUT_FAILED alone is not
     * proof and does not fail the batch. After this the client refuses new writes until it is
     * remounted; {@link #recoveryNeeded} has been called.
     */
    void putFailed(long batchId);

    /**
     * §3.3.2 step 4: the client has proof of misbehaviour (PUT_FAILED, replicas of one region that
     * disagree on a sub-batch's outcome) or its retries made no progress; the block driver asks the
     * Master to recover (RRS replacement) and then remounts ({@link VolumeClient#mount}). Called
     * once until the next mount.
     */
    void recoveryNeeded(String reason);

    /** A GET reply passed the end-to-end check. */
    void getSucceeded(long requestId, long block, byte[] data);

    /**
     * A GET is being retried at another replica because {@code replica} sent a reply that failed the end-to-end
     * check, or did not answer within the retransmission period ({@code reason} says which). The block driver logs
     * and counts it per replica (a suspect for recovery). Default: nothing.
     */
    default void getRetried(long requestId, long block, NodeId replica, String reason) {
    }

    /**
     * FLUSH {@code flushId} ({@link VolumeClient#flush}) is done: all three replicas of every region that had a write
     * acknowledged before it reported that everything they held then is durable (hsync). FLUSHes complete in issue
     * order. Default: nothing.
     */
    default void flushed(long flushId) {
    }

    /**
     * A replica holds a newer writer epoch than this client's: another writer took the volume's lease and fenced
     * this one. Called once, before {@link #putFailed} for each outstanding batch; the client refuses every write
     * and read from then on. Default: nothing.
     */
    default void fenced(String reason) {
    }
}
