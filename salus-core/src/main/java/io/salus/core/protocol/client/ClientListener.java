package io.salus.core.protocol.client;

import io.salus.core.cert.Certificate;
import io.salus.core.crypto.NodeId;
import java.util.List;

/** Completion callbacks of a {@link VolumeClient}. */
public interface ClientListener {
    /**
     * Every sub-batch of the batch has a PUT_SUCCESS certificate, or the batch's leader region's three replicas signed
     * its COMMIT (asked for on a retransmission): the PUTs are durable and committed. {@code putSuccess} holds each
     * participant region's PUT_SUCCESS, or the COMMIT certificate for a region whose PUT_SUCCESS was not assembled.
     */
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

    /**
     * {@link #recoveryNeeded(String)} with the replicas the client suspects: those that did not answer the stuck
     * batch or FLUSH while a peer of their region did, or every replica of a region none of whose replicas answered
     * (the client cannot tell which one is at fault: the paper swaps the RRS); empty when the reason names no
     * replica (e.g. PUT_FAILED proven, replicas that disagree). The block driver asks the Master to replace them.
     * Default: {@link #recoveryNeeded(String)}.
     */
    default void recoveryNeeded(String reason, java.util.Set<NodeId> suspects) {
        recoveryNeeded(reason);
    }

    /**
     * An outstanding batch or FLUSH has been retransmitted {@link VolumeClient#suspectSilentAfter} times without
     * progress: {@code silent} are the replicas that have not answered it while a peer of their region did (or, when
     * no replica of a region answered, or the same batch was stuck on the same replicas before, all three of that
     * region's). The client keeps retransmitting (nothing is failed): the block driver asks the Master to replace
     * them (paper §3.2 RRS replacement), and the new incarnations recover at open and answer the retransmissions.
     * Called again every {@code suspectSilentAfter} retransmissions while it stays stuck. Default: nothing.
     */
    default void replicasSilent(java.util.Set<NodeId> silent, String reason) {
    }

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
