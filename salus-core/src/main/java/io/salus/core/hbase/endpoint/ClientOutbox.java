package io.salus.core.hbase.endpoint;

import io.salus.core.hbase.endpoint.generated.SalusReplicaProtos.Envelope;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A replica's replies to its volume's client, waiting for the client's next call to collect them ({@code poll},
 * {@code deliver}): bounded in messages and in bytes, the oldest dropped past either bound (the client retransmits
 * what it misses and gets it again). One collection hands out at most a message count and a byte budget. A mount's
 * leaf ranges are ~650 KB each: bounded by count alone, 8,192 of them were 5 GB of a region server's heap (review
 * rv37).
 *
 * <p>Thread-safe: added to on the replica's event loop, taken by RPC handler threads.
 */
final class ClientOutbox {
    private final int maxMessages;
    private final long maxBytes;
    private final ConcurrentLinkedQueue<Envelope> queue = new ConcurrentLinkedQueue<>();
    private final AtomicInteger size = new AtomicInteger();
    private final AtomicLong bytes = new AtomicLong();
    private final AtomicLong dropped = new AtomicLong();

    ClientOutbox(int maxMessages, long maxBytes) {
        this.maxMessages = maxMessages;
        this.maxBytes = maxBytes;
    }

    /** Queues {@code e}; drops the oldest while the outbox is over a bound. */
    void add(Envelope e) {
        size.incrementAndGet();
        bytes.addAndGet(e.getMessage().size());
        queue.add(e);
        while (size.get() > maxMessages || bytes.get() > maxBytes) {
            Envelope old = queue.poll();
            if (old == null) {
                return;
            }
            size.decrementAndGet();
            bytes.addAndGet(-old.getMessage().size());
            dropped.incrementAndGet();
        }
    }

    /**
     * Takes the oldest replies, at most {@code maxCount}, and no more once {@code maxTakeBytes} are taken (the message
     * that crosses it included); never waits.
     */
    List<Envelope> take(int maxCount, long maxTakeBytes) {
        List<Envelope> l = new ArrayList<>();
        long taken = 0;
        Envelope e;
        while (l.size() < maxCount && taken < maxTakeBytes && (e = queue.poll()) != null) {
            size.decrementAndGet();
            bytes.addAndGet(-e.getMessage().size());
            taken += e.getMessage().size();
            l.add(e);
        }
        return l;
    }

    /** Replies dropped on a full outbox. */
    long dropped() {
        return dropped.get();
    }

    /** Message bytes waiting. */
    long bytes() {
        return bytes.get();
    }
}
