package io.salus.core.protocol.client;

import io.salus.core.cert.Certificate;
import java.util.List;

/** Completion callbacks of a {@link VolumeClient}. */
public interface ClientListener {
    /** Every sub-batch of the batch has a PUT_SUCCESS certificate: the PUTs are durable and committed. */
    void putSucceeded(long batchId, long firstSeq, long lastSeq, List<Certificate> putSuccess);

    /** A replica reported TENTATIVE_PUT_FAILED (the leader aborted): the block driver triggers recovery. */
    void putFailed(long batchId);

    /** A GET reply passed the end-to-end check. */
    void getSucceeded(long requestId, long block, byte[] data);
}
