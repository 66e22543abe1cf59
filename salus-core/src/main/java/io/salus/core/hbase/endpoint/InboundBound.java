package io.salus.core.hbase.endpoint;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The bound on what a replica region's event loop has been handed and not yet run (issue 27 item 4: every queue
 * bounded): at most {@code maxMessages} messages and {@code maxBytes} of their encoded bytes. A message past either
 * bound is refused at the RPC (the endpoint answers "busy" for it) and the sender retransmits it later, as it does any
 * lost message: the client's write path waits instead of the region server's heap growing. A single message larger
 * than {@code maxBytes} is admitted only into an empty queue, so no message is refused for ever.
 *
 * <p>Thread-safe: {@link #tryAdmit} on RPC handler threads, {@link #release} on the loop.
 */
public final class InboundBound {
    private final int maxMessages;
    private final long maxBytes;
    private final AtomicInteger messages = new AtomicInteger();
    private final AtomicLong bytes = new AtomicLong();
    private final AtomicLong refused = new AtomicLong();
    private final AtomicLong peakMessages = new AtomicLong();

    public InboundBound(int maxMessages, long maxBytes) {
        if (maxMessages < 1 || maxBytes < 1) {
            throw new IllegalArgumentException("an inbound bound needs at least one message and one byte, got "
                    + maxMessages + " messages, " + maxBytes + " bytes");
        }
        this.maxMessages = maxMessages;
        this.maxBytes = maxBytes;
    }

    /** Takes room for one message of {@code size} bytes; false (and nothing taken) if the queue is full. */
    public boolean tryAdmit(long size) {
        int m = messages.incrementAndGet();
        long b = bytes.addAndGet(size);
        if (m > maxMessages || (b > maxBytes && m > 1)) {
            messages.decrementAndGet();
            bytes.addAndGet(-size);
            refused.incrementAndGet();
            return false;
        }
        peakMessages.accumulateAndGet(m, Math::max);
        return true;
    }

    /** Gives back the room of an admitted message of {@code size} bytes (once it ran, or will never run). */
    public void release(long size) {
        messages.decrementAndGet();
        bytes.addAndGet(-size);
    }

    public int queuedMessages() {
        return messages.get();
    }

    public long queuedBytes() {
        return bytes.get();
    }

    /** Messages refused because the queue was full, since creation. */
    public long refused() {
        return refused.get();
    }

    /** The most messages queued at once, since creation. */
    public long peakMessages() {
        return peakMessages.get();
    }

    public int maxMessages() {
        return maxMessages;
    }

    public long maxBytes() {
        return maxBytes;
    }
}
