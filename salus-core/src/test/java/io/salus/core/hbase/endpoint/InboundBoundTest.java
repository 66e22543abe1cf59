package io.salus.core.hbase.endpoint;

import static org.junit.jupiter.api.Assertions.*;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class InboundBoundTest {
    @Test
    void refusesPastEitherBoundAndAdmitsAgainOnceRoomIsGivenBack() {
        InboundBound b = new InboundBound(3, 1000);
        assertTrue(b.tryAdmit(400));
        assertTrue(b.tryAdmit(400));
        assertFalse(b.tryAdmit(400), "1,200 bytes queued would pass the 1,000-byte bound");
        assertTrue(b.tryAdmit(100));
        assertFalse(b.tryAdmit(1), "a fourth message passes the 3-message bound");
        assertEquals(2, b.refused());
        assertEquals(3, b.queuedMessages());
        assertEquals(900, b.queuedBytes(), "a refused message takes no room");
        b.release(400);
        assertTrue(b.tryAdmit(500));
        assertEquals(3, b.peakMessages());
    }

    @Test
    void aMessageLargerThanTheByteBoundIsAdmittedIntoAnEmptyQueueOnly() {
        InboundBound b = new InboundBound(10, 100);
        assertTrue(b.tryAdmit(10));
        assertFalse(b.tryAdmit(500));
        b.release(10);
        assertTrue(b.tryAdmit(500), "else it would be refused for ever and its sender retransmit it for ever");
        assertFalse(b.tryAdmit(1));
    }

    @Test
    void concurrentAdmitsNeverPassTheBound() throws Exception {
        InboundBound b = new InboundBound(50, Long.MAX_VALUE);
        AtomicInteger over = new AtomicInteger();
        AtomicInteger held = new AtomicInteger(); // admitted and not released (the counter itself may count a refusal
        // a moment before it rolls it back)
        ExecutorService ex = Executors.newFixedThreadPool(8);
        for (int t = 0; t < 8; t++) {
            ex.execute(() -> {
                for (int i = 0; i < 20_000; i++) {
                    if (b.tryAdmit(1)) {
                        if (held.incrementAndGet() > 50) {
                            over.incrementAndGet();
                        }
                        held.decrementAndGet();
                        b.release(1);
                    }
                }
            });
        }
        ex.shutdown();
        assertTrue(ex.awaitTermination(60, TimeUnit.SECONDS));
        assertEquals(0, over.get());
        assertEquals(0, b.queuedMessages());
        assertTrue(b.peakMessages() <= 50);
    }

    @Test
    void aBoundWithoutRoomIsRefusedAtConstruction() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new InboundBound(0, 10));
        assertTrue(e.getMessage().contains("0 messages"), e.getMessage());
    }
}
