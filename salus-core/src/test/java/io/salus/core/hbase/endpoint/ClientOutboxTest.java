package io.salus.core.hbase.endpoint;

import static org.junit.jupiter.api.Assertions.*;

import com.google.protobuf.ByteString;
import io.salus.core.hbase.endpoint.generated.SalusReplicaProtos.Envelope;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Review rv37: a replica's replies to the client were bounded by count only (8,192), and a mount's leaf ranges are
 * ~650 KB each: 5 GB of a region server's heap from one client that asks and does not collect.
 */
class ClientOutboxTest {
    static Envelope of(int i, int bytes) {
        return Envelope.newBuilder().setFrom("v/0/r0").setTo("v/client").setMessage(ByteString.copyFrom(new byte[bytes]))
                .build();
    }

    @Test
    void boundedInBytesTheOldestDropped() {
        ClientOutbox o = new ClientOutbox(ReplicaHost.MAX_OUTBOX, ReplicaHost.MAX_OUTBOX_BYTES);
        int chunk = 650_000;
        for (int i = 0; i < 200; i++) { // 130 MB asked for
            o.add(of(i, chunk));
            assertTrue(o.bytes() <= ReplicaHost.MAX_OUTBOX_BYTES, "after " + (i + 1) + ": " + o.bytes());
        }
        long kept = ReplicaHost.MAX_OUTBOX_BYTES / chunk;
        assertEquals(200 - kept, o.dropped());
        List<Envelope> first = o.take(4 * ReplicaLink.MAX_PER_CALL, ReplicaHost.MAX_REPLY_BYTES);
        assertEquals((ReplicaHost.MAX_REPLY_BYTES + chunk - 1) / chunk, first.size(),
                "one collection stops at the reply budget (the crossing message included)");
        long rest = 0;
        for (List<Envelope> l; !(l = o.take(4 * ReplicaLink.MAX_PER_CALL, ReplicaHost.MAX_REPLY_BYTES)).isEmpty(); ) {
            rest += l.size();
        }
        assertEquals(kept, first.size() + rest, "every kept reply is collected");
        assertEquals(0, o.bytes());
    }

    @Test
    void boundedInMessagesToo() {
        ClientOutbox o = new ClientOutbox(4, 1 << 20);
        for (int i = 0; i < 10; i++) {
            o.add(of(i, 10));
        }
        assertEquals(6, o.dropped());
        assertEquals(4, o.take(100, 1 << 20).size());
    }
}
