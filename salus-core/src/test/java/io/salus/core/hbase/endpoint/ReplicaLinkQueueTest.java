package io.salus.core.hbase.endpoint;

import static org.junit.jupiter.api.Assertions.*;

import com.google.protobuf.ByteString;
import io.salus.core.hbase.endpoint.generated.SalusReplicaProtos.Envelope;
import java.util.concurrent.CompletableFuture;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.AsyncConnection;
import org.junit.jupiter.api.Test;

/**
 * Review rv39 finding 2: a peer replica can ask this one for a rebuild's metadata every retransmission period, each
 * answer the log after the checkpoint (tens of MiB while checkpoints are behind), and its region server can stall the
 * deliver calls that carry them. The link's queue per destination was bounded by count only (4,096 envelopes): the
 * answers piled up in this server's heap. No HBase here: the connection never completes, which is a destination whose
 * first call never returns (nothing is delivered, so what the queue holds is exactly what was sent and not dropped).
 */
class ReplicaLinkQueueTest {
    static Envelope answer(int i, int bytes) {
        byte[] b = new byte[bytes];
        b[0] = (byte) i; // distinct answers (the log grew between them): not taken as copies of one waiting message
        b[1] = (byte) (i >> 8);
        return Envelope.newBuilder().setFrom("v/0/r0").setTo("v/0/r1").setMessage(ByteString.copyFrom(b)).build();
    }

    @Test
    void aStalledDestinationHoldsABoundedNumberOfBytes() throws Exception {
        try (ReplicaLink link = new ReplicaLink(new CompletableFuture<AsyncConnection>(), null, "test", null, e -> {})) {
            var peer = new VolumeAddressing.Address(TableName.valueOf("salus", "v_r1"), new byte[8], 0, 1);
            int answer = 4 << 20;
            for (int i = 0; i < 64; i++) { // 256 MiB of answers asked for, one every retransmission period
                link.send(peer, answer(i, answer));
                assertTrue(link.queuedBytes() <= ReplicaLink.MAX_QUEUED_BYTES + ReplicaLink.MAX_BYTES_PER_CALL + answer,
                        "after " + (i + 1) + " answers: " + link.queuedBytes() + " bytes queued");
            }
            assertTrue(link.counters().get("dropped") > 0, "the bound acted: answers were dropped");
            assertTrue(link.queuedBytes() < 64L << 20, "of 256 MiB asked for, " + link.queuedBytes() + " bytes queued");
            // one envelope larger than the bound still goes when little else waits for that destination
            var other = new VolumeAddressing.Address(TableName.valueOf("salus", "v_r2"), new byte[8], 0, 2);
            long dropped = link.counters().get("dropped");
            link.send(other, answer(1000, (int) ReplicaLink.MAX_QUEUED_BYTES + 1024));
            assertEquals(dropped, link.counters().get("dropped"), "a lone large message is queued, not dropped");
        }
    }
}
