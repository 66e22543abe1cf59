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
        InboundBound b = new InboundBound(12, 4000); // 3 messages / 1,000 bytes per sender
        assertTrue(b.tryAdmit("a", 400));
        assertTrue(b.tryAdmit("a", 400));
        assertFalse(b.tryAdmit("a", 400), "1,200 bytes from a would pass its 1,000-byte share");
        assertTrue(b.tryAdmit("a", 100));
        assertFalse(b.tryAdmit("a", 1), "a fourth message from a passes its 3-message share");
        assertEquals(2, b.refused());
        assertEquals(3, b.queuedMessages());
        assertEquals(900, b.queuedBytes(), "a refused message takes no room");
        b.release("a", 400);
        assertTrue(b.tryAdmit("a", 500));
        assertEquals(3, b.peakMessages());
    }

    /**
     * Review of 2026-12-02: one faulty node (any replica of the volume may call any replica) that keeps refilling the
     * queue kept the client and the honest peers out; each sender now has a quarter of it.
     */
    @Test
    void oneSenderThatFillsItsShareLeavesRoomForTheOthers() {
        InboundBound b = new InboundBound(8, 1 << 20);
        int flood = 0;
        while (b.tryAdmit("faulty", 1)) {
            flood++;
        }
        assertEquals(2, flood, "a quarter of 8");
        assertTrue(b.tryAdmit("client", 1));
        assertTrue(b.tryAdmit("peer", 1));
        assertTrue(b.tryAdmit("peer2", 1));
        assertTrue(b.tryAdmit("peer2", 1));
        assertTrue(b.tryAdmit("client", 1));
        assertTrue(b.tryAdmit("peer", 1));
        assertFalse(b.tryAdmit("witness", 1), "the whole bound is reached");
        b.release("faulty", 1);
        assertFalse(b.tryAdmit("faulty", 1) && b.tryAdmit("faulty", 1), "faulty is still at its share");
    }

    @Test
    void aMessageLargerThanTheByteBoundIsAdmittedIntoAnEmptyQueueOnly() {
        InboundBound b = new InboundBound(40, 400); // 100 bytes per sender
        assertTrue(b.tryAdmit("a", 10));
        assertFalse(b.tryAdmit("b", 500), "the queue holds bytes");
        b.release("a", 10);
        assertTrue(b.tryAdmit("b", 500), "else it would be refused for ever and its sender retransmit it for ever");
        assertFalse(b.tryAdmit("c", 1), "past the whole byte bound");
    }

    @Test
    void concurrentAdmitsNeverPassTheBound() throws Exception {
        InboundBound b = new InboundBound(200, Long.MAX_VALUE); // 50 per sender
        AtomicInteger over = new AtomicInteger();
        AtomicInteger held = new AtomicInteger(); // admitted and not released (the counter itself may count a refusal
        // a moment before it rolls it back)
        ExecutorService ex = Executors.newFixedThreadPool(8);
        for (int t = 0; t < 8; t++) {
            String sender = "s" + (t % 2); // two senders, four threads each: 100 at most in all
            ex.execute(() -> {
                for (int i = 0; i < 20_000; i++) {
                    if (b.tryAdmit(sender, 1)) {
                        if (held.incrementAndGet() > 100) {
                            over.incrementAndGet();
                        }
                        held.decrementAndGet();
                        b.release(sender, 1);
                    }
                }
            });
        }
        ex.shutdown();
        assertTrue(ex.awaitTermination(60, TimeUnit.SECONDS));
        assertEquals(0, over.get());
        assertEquals(0, b.queuedMessages());
        assertTrue(b.peakMessages() <= 100);
    }

    @Test
    void aBoundWithoutRoomIsRefusedAtConstruction() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new InboundBound(0, 10));
        assertTrue(e.getMessage().contains("0 messages"), e.getMessage());
    }
    /**
     * Review rv37: the share was per caller identity, and one region server hosts a replica of every region of the
     * volume, each its own identity: four of them took every share of a replica's queue. Replicas of other regions now
     * share one quarter; the client and this region's own peers keep theirs.
     */
    @Test
    void oneServersReplicasOfOtherRegionsShareOneQuarter() {
        VolumeAddressing a = new VolumeAddressing(new io.salus.core.hbase.VolumeGeometry("v", 32L * 16 * 4096, 4096, 16));
        io.salus.core.crypto.NodeId client = a.client();
        int region = 5;
        InboundBound b = new InboundBound(64, 1 << 20);
        int flood = 0;
        for (int r = 0; r < 32; r++) { // the faulty server's replica k=0 of every other region, each flooding
            if (r == region) {
                continue;
            }
            while (b.tryAdmit(ReplicaHost.inboundShare(a, client, region, a.replica(r, 0)), 1)) {
                flood++;
            }
        }
        assertEquals(16, flood, "31 identities of other regions took one quarter of 64");
        assertTrue(b.tryAdmit(ReplicaHost.inboundShare(a, client, region, client), 1), "the client still gets in");
        assertTrue(b.tryAdmit(ReplicaHost.inboundShare(a, client, region, a.replica(region, 1)), 1),
                "this region's peer still gets in");
        assertNotEquals(ReplicaHost.inboundShare(a, client, region, a.replica(region, 1)),
                ReplicaHost.inboundShare(a, client, region, a.replica(region, 2)), "each peer of the region its own");
    }
}
