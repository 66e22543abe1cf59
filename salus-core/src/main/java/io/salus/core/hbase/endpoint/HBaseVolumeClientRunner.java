package io.salus.core.hbase.endpoint;

import io.salus.core.cert.Certificate;
import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.Signer;
import io.salus.core.crypto.Verifier;
import io.salus.core.hbase.endpoint.generated.SalusReplicaProtos.Envelope;
import io.salus.core.protocol.client.ClientListener;
import io.salus.core.protocol.client.VolumeClient;
import io.salus.core.protocol.message.Message;
import io.salus.core.protocol.message.MessageCodec;
import java.io.Closeable;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import org.apache.hadoop.hbase.client.AsyncConnection;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs a {@link VolumeClient} against the replica endpoints of a volume on HBase: a single-threaded loop owns
 * the client (the protocol class is not thread-safe), its transport is a {@link ReplicaLink} (async client), and
 * its replies arrive piggy-backed on {@code deliver} responses and through the non-blocking {@code poll} RPC,
 * which the loop issues to every replica region every {@link #POLL_MILLIS} while the client has work
 * outstanding (one poll in flight per region). No server ever holds a handler for the client.
 */
public final class HBaseVolumeClientRunner implements Closeable {
    private static final Logger LOG = LoggerFactory.getLogger(HBaseVolumeClientRunner.class);
    public static final long POLL_MILLIS = 5;
    public static final long TICK_MILLIS = 50;

    private final VolumeAddressing addressing;
    private final NodeId me;
    private final ScheduledThreadPoolExecutor loop;
    private final ReplicaLink link;
    private final VolumeClient client;
    private final Map<VolumeAddressing.Address, Boolean> polling = new ConcurrentHashMap<>();
    private final AtomicLong polls = new AtomicLong();
    private final AtomicLong badReplies = new AtomicLong();
    private final Map<NodeId, AtomicLong> getRetries = new ConcurrentHashMap<>();

    /**
     * @param retransmitMillis the client retransmits unacknowledged batches and retries GETs at another replica
     *                         after this long
     */
    public HBaseVolumeClientRunner(AsyncConnection conn, VolumeAddressing addressing, Signer signer, Verifier verifier,
                                   ClientListener listener, int maxOutstandingBatches, long retransmitMillis) {
        this.addressing = addressing;
        this.me = addressing.client();
        if (!signer.id().equals(me)) {
            throw new IllegalArgumentException("the client of volume " + addressing.geometry().volume() + " signs as "
                    + me + ", not " + signer.id());
        }
        this.loop = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, "salus-client-" + addressing.geometry().volume());
            t.setDaemon(true);
            return t;
        });
        loop.setRemoveOnCancelPolicy(true);
        this.link = new ReplicaLink(CompletableFuture.completedFuture(conn), addressing, "client-"
                + addressing.geometry().volume(), me.name(), e -> loop.execute(() -> onReply(e)));
        ClientListener counting = new ClientListener() {
            @Override
            public void putSucceeded(long batchId, long firstSeq, long lastSeq, List<Certificate> putSuccess) {
                listener.putSucceeded(batchId, firstSeq, lastSeq, putSuccess);
            }

            @Override
            public void putFailed(long batchId) {
                listener.putFailed(batchId);
            }

            @Override
            public void recoveryNeeded(String reason) {
                listener.recoveryNeeded(reason);
            }

            @Override
            public void getSucceeded(long requestId, long block, byte[] data) {
                listener.getSucceeded(requestId, block, data);
            }

            @Override
            public void getRetried(long requestId, long block, NodeId replica, String reason) {
                long n = getRetries.computeIfAbsent(replica, k -> new AtomicLong()).incrementAndGet();
                LOG.warn("GET {} of block {}: replica {} {} ({} time(s) so far); retrying at another replica",
                        requestId, block, replica, reason, n);
                listener.getRetried(requestId, block, replica, reason);
            }
        };
        this.client = new VolumeClient(addressing.protocolConfig(), me, signer, verifier, addressing.membership(),
                (to, m) -> link.send(me, to, m), counting, maxOutstandingBatches, retransmitMillis);
        loop.scheduleWithFixedDelay(this::tick, TICK_MILLIS, TICK_MILLIS, TimeUnit.MILLISECONDS);
        loop.scheduleWithFixedDelay(this::pollAll, POLL_MILLIS, POLL_MILLIS, TimeUnit.MILLISECONDS);
    }

    private void onReply(Envelope e) {
        Message m;
        NodeId from;
        try {
            from = NodeId.of(e.getFrom());
            m = MessageCodec.decode(e.getMessage().toByteArray());
        } catch (RuntimeException bad) {
            badReplies.incrementAndGet();
            LOG.warn("undecodable reply from {}: {}", e.getFrom(), bad.toString());
            return;
        }
        client.receive(from, m);
    }

    private void tick() {
        client.tick(System.currentTimeMillis());
    }

    private void pollAll() {
        if (client.outstandingBatches() == 0 && client.outstandingGets() == 0 && !client.remounting()) {
            return;
        }
        for (int r = 0; r < addressing.geometry().numRegions(); r++) {
            for (int k = 0; k < 3; k++) {
                VolumeAddressing.Address a = addressing.address(r, k);
                if (polling.putIfAbsent(a, Boolean.TRUE) == null) {
                    polls.incrementAndGet();
                    link.poll(a).whenComplete((n, err) -> polling.remove(a));
                }
            }
        }
    }

    /** Runs {@code f} on the client's loop (every use of the client goes through here). */
    public <T> CompletableFuture<T> call(Function<VolumeClient, T> f) {
        return CompletableFuture.supplyAsync(() -> f.apply(client), loop);
    }

    /** Sends one raw message as the client (tests of hostile input: forged sub-batches). */
    public void sendRaw(NodeId to, Message m) {
        link.send(me, to, m);
    }

    /** Per replica: GETs retried elsewhere because of it (a reply that failed verification, or no answer). */
    public Map<NodeId, Long> getRetriesByReplica() {
        Map<NodeId, Long> m = new java.util.TreeMap<>();
        getRetries.forEach((k, v) -> m.put(k, v.get()));
        return m;
    }

    /** Counters: polls issued, undecodable replies, and the link's. */
    public Map<String, Long> counters() {
        Map<String, Long> m = new java.util.TreeMap<>(link.counters());
        m.put("polls", polls.get());
        m.put("badReplies", badReplies.get());
        return m;
    }

    @Override
    public void close() {
        loop.shutdownNow();
        link.close();
    }

    /**
     * <b>Tests only</b> (a writer that dies): the client's loop stops at once (no tick, retransmission, poll or
     * reply handling, nothing new is sent); what it already handed to the link still goes out.
     */
    public void stopClientForTest() {
        loop.shutdownNow();
    }

    /** Envelopes handed to the link and not yet sent (tests). */
    public int queuedToSend() {
        return link.queued();
    }

    /** The replica regions of RRS {@code region} (tests). */
    public List<VolumeAddressing.Address> replicasOf(int region) {
        return List.of(addressing.address(region, 0), addressing.address(region, 1), addressing.address(region, 2));
    }
}
