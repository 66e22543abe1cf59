package io.salus.core.protocol;

import static org.junit.jupiter.api.Assertions.*;

import io.salus.core.cert.Certificate;
import io.salus.core.protocol.PipelinedCommitTest.Envelope;
import io.salus.core.protocol.client.BlockWrite;
import io.salus.core.protocol.client.ClientListener;
import io.salus.core.protocol.client.VolumeClient;
import io.salus.core.protocol.message.Message;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Review rv18r: a FlushReply says "what I held when FLUSH {@code flushId} arrived is synced", signed over the volume,
 * region, generation and flush id only. Flush ids started at 1 in every client, so a FlushReply to a previous client of
 * the volume (the same client key: the writer before a restart or a remount) answered the new client's FLUSH of the
 * same id: replayed by the network, it made a FLUSH done without any replica syncing, and the writes acknowledged
 * before it were not durable against a machine crash.
 */
class FlushReplayTest {
    final PipelinedCommitTest h = new PipelinedCommitTest();

    /** A client of the volume, the one the harness delivers the client's messages to from now on. */
    VolumeClient client(List<Long> flushed) {
        return h.client = new VolumeClient(h.cfg, h.clientId, h.signers.get(h.clientId), h.dir, h.membership,
                (to, m) -> h.send(new Envelope(h.clientId, to, m)), new ClientListener() {
                    public void putSucceeded(long b, long f, long l, List<Certificate> certs) {
                        h.acked.add(new long[] {b, f, l});
                    }

                    public void putFailed(long b) {
                    }

                    public void recoveryNeeded(String reason) {
                    }

                    public void getSucceeded(long id, long block, byte[] data) {
                    }

                    public void flushed(long id) {
                        flushed.add(id);
                    }
                }, 4, 1000);
    }

    @Test
    void aFlushReplyToAPreviousClientDoesNotCompleteANewClientsFlush() {
        List<Long> flushed1 = new ArrayList<>();
        VolumeClient c1 = client(flushed1);
        long f0 = c1.flush();
        h.drain();
        assertEquals(List.of(f0), flushed1);
        List<Envelope> oldReplies = new ArrayList<>();
        for (Envelope e : h.sent) {
            if (e.m() instanceof Message.FlushReply) {
                oldReplies.add(e);
            }
        }
        assertEquals(6, oldReplies.size(), "every replica of both regions answered");

        // the next client of the volume (the same key); its first FLUSH asks every replica, none gets it yet
        List<Long> flushed2 = new ArrayList<>();
        VolumeClient c2 = client(flushed2);
        h.hold = e -> e.m() instanceof Message.FlushRequest;
        long syncsBefore = h.disks.values().stream().mapToLong(d -> d.syncs()).sum();
        long f = c2.flush();
        h.drain();
        oldReplies.forEach(h.net::add); // the old replies, replayed
        h.drain();
        assertEquals(syncsBefore, h.disks.values().stream().mapToLong(d -> d.syncs()).sum(), "no replica synced");
        assertTrue(flushed2.isEmpty(), "FLUSH " + f + " reported done though no replica synced: " + flushed2);
        assertTrue(c2.flushPending(f));
        h.hold = e -> false;
        h.held.forEach(h.net::add);
        h.held.clear();
        h.drain();
        assertEquals(List.of(f), flushed2, "done once the replicas synced for it");
    }
}
