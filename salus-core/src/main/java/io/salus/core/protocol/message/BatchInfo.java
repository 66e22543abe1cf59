package io.salus.core.protocol.message;

import io.salus.core.cert.Wire;
import java.util.Arrays;
import java.util.List;

/**
 * What the client tells the batch leader (PC1): the batch's seq range, the participating regions,
 * the previous batch (id and leader region; {@code prevBatchId < 0} means there is none since
 * the volume was mounted, so no COMMIT-CONFIRMATION is needed), and the writer's lease epoch (0 = no lease).
 * Signed by the client.
 */
public record BatchInfo(String volume, long batchId, long firstSeq, long lastSeq, List<Integer> participants,
                        long prevBatchId, int prevLeaderRegion, long epoch, byte[] clientSig) {
    public BatchInfo {
        participants = List.copyOf(participants);
        if (epoch < 0) {
            throw new IllegalArgumentException("writer epoch " + epoch + " < 0");
        }
    }

    /** A BatchInfo of writer epoch 0 (no lease: simulations and tests without fencing). */
    public BatchInfo(String volume, long batchId, long firstSeq, long lastSeq, List<Integer> participants,
                     long prevBatchId, int prevLeaderRegion, byte[] clientSig) {
        this(volume, batchId, firstSeq, lastSeq, participants, prevBatchId, prevLeaderRegion, 0, clientSig);
    }

    public byte[] signedBytes() {
        Wire.Out o = new Wire.Out().u8(0x42).str8(volume).i64(batchId).i64(firstSeq).i64(lastSeq)
                .i32(participants.size());
        for (int p : participants) {
            o.i32(p);
        }
        return o.i64(prevBatchId).i32(prevLeaderRegion).i64(epoch).toByteArray();
    }

    public BatchInfo withSignature(byte[] sig) {
        return new BatchInfo(volume, batchId, firstSeq, lastSeq, participants, prevBatchId, prevLeaderRegion, epoch, sig);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof BatchInfo b && Arrays.equals(b.signedBytes(), signedBytes())
                && Arrays.equals(b.clientSig, clientSig);
    }

    @Override
    public int hashCode() {
        return Long.hashCode(batchId);
    }
}
