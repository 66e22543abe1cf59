package io.salus.core.hbase.endpoint;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The bound on what a replica region's event loop has been handed and not yet run (issue 27 item 4: every queue
 * bounded): at most {@code maxMessages} messages and {@code maxBytes} of their encoded bytes, and of those at most a
 * {@link #SENDER_SHARE}th from any one sender (the caller the RPC authenticated), so that one faulty node that keeps
 * the queue full cannot keep the client and the honest peers out (review of 2026-12-02). A message past a bound is
 * refused at the RPC (the endpoint answers "busy" for it) and the sender retransmits it later, as it does any lost
 * message: the client's write path waits instead of the region server's heap growing. A single message larger than a
 * byte bound is admitted when its sender has nothing queued and the queue holds no bytes, so no message is refused for
 * ever.
 *
 * <p>Thread-safe: {@link #tryAdmit} on RPC handler threads, {@link #release} on the loop.
 */
public final class InboundBound {
    /** One sender may hold at most 1/4 of either bound (a replica set has two peers, a client, witnesses). */
    public static final int SENDER_SHARE = 4;
    private final int maxMessages;
    private final long maxBytes;
    private final int senderMessages;
    private final long senderBytes;
    private final AtomicInteger messages = new AtomicInteger();
    private final AtomicLong bytes = new AtomicLong();
    private final AtomicLong refused = new AtomicLong();
    private final AtomicLong peakMessages = new AtomicLong();
    private final ConcurrentHashMap<Object, long[]> bySender = new ConcurrentHashMap<>();

    public InboundBound(int maxMessages, long maxBytes) {
        if (maxMessages < 1 || maxBytes < 1) {
            throw new IllegalArgumentException("an inbound bound needs at least one message and one byte, got "
                    + maxMessages + " messages, " + maxBytes + " bytes");
        }
        this.maxMessages = maxMessages;
        this.maxBytes = maxBytes;
        this.senderMessages = Math.max(1, maxMessages / SENDER_SHARE);
        this.senderBytes = Math.max(1, maxBytes / SENDER_SHARE);
    }

    /**
     * Takes room for one message of {@code size} bytes from {@code sender}; false (and nothing taken) if the queue, or
     * the sender's share of it, is full.
     */
    public boolean tryAdmit(Object sender, long size) {
        long[] mine = bySender.computeIfAbsent(sender, s -> new long[2]); // {messages, bytes}, guarded by itself
        synchronized (mine) {
            if (mine[0] >= senderMessages || (mine[1] + size > senderBytes && mine[0] > 0)) {
                refused.incrementAndGet();
                return false;
            }
            int m = messages.incrementAndGet();
            long b = bytes.addAndGet(size);
            if (m > maxMessages || (b > maxBytes && b > size)) {
                messages.decrementAndGet();
                bytes.addAndGet(-size);
                refused.incrementAndGet();
                return false;
            }
            mine[0]++;
            mine[1] += size;
            peakMessages.accumulateAndGet(m, Math::max);
            return true;
        }
    }

    /** Gives back the room of a message of {@code size} bytes admitted from {@code sender} (it ran, or never will). */
    public void release(Object sender, long size) {
        long[] mine = bySender.get(sender);
        if (mine != null) {
            synchronized (mine) {
                mine[0]--;
                mine[1] -= size;
            }
        }
        messages.decrementAndGet();
        bytes.addAndGet(-size);
    }

    public int queuedMessages() {
        return messages.get();
    }

    public long queuedBytes() {
        return bytes.get();
    }

    /** Messages refused because the queue or the sender's share was full, since creation. */
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
