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
 * its replies arrive piggy-backed on {@code deliver} responses and through the non-blocking {@code poll} RPC.
 * The loop polls only the replica regions the client awaits a reply from ({@link VolumeClient#awaitedReplicas}),
 * one poll in flight per region; a region is polled again {@link #POLL_MILLIS} after a poll that brought
 * replies or after the client sent it something, and each empty poll doubles that wait up to
 * {@link #MAX_POLL_MILLIS}. No server ever holds a handler for the client.
 */
public final class HBaseVolumeClientRunner implements Closeable {
    private static final Logger LOG = LoggerFactory.getLogger(HBaseVolumeClientRunner.class);
    public static final long POLL_MILLIS = 5;
    /** Longest wait between polls of a region the client awaits replies from (after empty polls). */
    public static final long MAX_POLL_MILLIS = 20;
    public static final long TICK_MILLIS = 50;
    /**
     * Configuration key: the local directory whose file system holds the client's volume tree (a sparse file,
     * memory-mapped and unlinked at once: {@link io.salus.core.merkle.MappedNodeStore}); default {@code
     * java.io.tmpdir}; {@value #TREE_IN_HEAP} keeps it in the Java heap (~250 bytes per written block).
     */
    public static final String TREE_DIR_KEY = "salus.client.tree.dir";
    public static final String TREE_IN_HEAP = "heap";

    private final VolumeAddressing addressing;
    private final NodeId me;
    private final ScheduledThreadPoolExecutor loop;
    private final ReplicaLink link;
    private final VolumeClient client;
    /** Per polled region, touched only on the loop: when to poll next, the current back-off, a poll in flight. */
    private final Map<VolumeAddressing.Address, PollState> polling = new java.util.HashMap<>();
    private final AtomicLong polls = new AtomicLong();
    private final AtomicLong badReplies = new AtomicLong();
    private final Map<NodeId, AtomicLong> getRetries = new ConcurrentHashMap<>();

    private static final class PollState {
        long interval = POLL_MILLIS;
        long nextAt;
        boolean inFlight;
    }

    /**
     * @param retransmitMillis the client retransmits unacknowledged batches and retries GETs at another replica
     *                         after this long
     */
    public HBaseVolumeClientRunner(AsyncConnection conn, VolumeAddressing addressing, Signer signer, Verifier verifier,
                                   ClientListener listener, int maxOutstandingBatches, long retransmitMillis) {
        this(conn, addressing, signer, verifier, listener, maxOutstandingBatches, retransmitMillis, 0);
    }

    /**
     * @param epoch the writer's lease epoch, carried by every sub-batch and BatchInfo (0: no lease; the replicas
     *              then accept the client only while no writer has fenced them). With an epoch &gt; 0 the caller
     *              runs {@link VolumeClient#fence} first and writes once {@link VolumeClient#fenceOutstanding} is
     *              empty ({@code SalusVolume.open} does).
     */
    public HBaseVolumeClientRunner(AsyncConnection conn, VolumeAddressing addressing, Signer signer, Verifier verifier,
                                   ClientListener listener, int maxOutstandingBatches, long retransmitMillis,
                                   long epoch) {
        this(conn, addressing, signer, verifier, listener, maxOutstandingBatches, retransmitMillis, epoch,
                VolumeClient.DEFAULT_RETRIES_BEFORE_RECOVERY);
    }

    /**
     * @param retriesBeforeRecovery retransmissions of the outstanding batches without any progress after which the
     *                              client gives up and asks for recovery ({@link VolumeClient}). A replica region
     *                              being reassigned (a balancer move, a region server crash) answers nothing until it
     *                              reopened and recovered; the budget must cover that gap
     *                              ({@code SalusVolume.STALL_MILLIS}), or the writer fails for good on a move.
     */
    public HBaseVolumeClientRunner(AsyncConnection conn, VolumeAddressing addressing, Signer signer, Verifier verifier,
                                   ClientListener listener, int maxOutstandingBatches, long retransmitMillis,
                                   long epoch, int retriesBeforeRecovery) {
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
                + addressing.geometry().volume(), me.name(), e -> loop.execute(() -> onReply(e)),
                // every call signed with the client's key: only then do the replicas act on its envelopes and hand
                // it its replies (CallAuth); the lease epoch gives a new writer a fresh counter space
                new CallAuth.Signing(addressing.geometry().volume(), signer, epoch));
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
            public void recoveryNeeded(String reason, java.util.Set<NodeId> suspects) {
                listener.recoveryNeeded(reason, suspects);
            }

            @Override
            public void replicasSilent(java.util.Set<NodeId> silent, String reason) {
                LOG.warn("volume {}: replicas {} did not answer: {}", addressing.geometry().volume(), silent, reason);
                listener.replicasSilent(silent, reason);
            }

            @Override
            public void getSucceeded(long requestId, long block, byte[] data) {
                listener.getSucceeded(requestId, block, data);
            }

            @Override
            public void flushed(long flushId) {
                listener.flushed(flushId);
            }

            @Override
            public void fenced(String reason) {
                LOG.error("volume {}: this writer (epoch {}) is fenced: {}", addressing.geometry().volume(), epoch,
                        reason);
                listener.fenced(reason);
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
                (to, m) -> send(to, m), counting, maxOutstandingBatches, retransmitMillis,
                retriesBeforeRecovery, epoch);
        String treeDir = conn.getConfiguration().get(TREE_DIR_KEY, System.getProperty("java.io.tmpdir"));
        if (!TREE_IN_HEAP.equals(treeDir)) {
            long leaves = addressing.protocolConfig().layout().volumeBlocks();
            java.nio.file.Path dir = java.nio.file.Path.of(treeDir);
            client.useTreeStores(() -> new io.salus.core.merkle.MappedNodeStore(dir, leaves));
        }
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
        long t0 = io.salus.core.protocol.LatencyTrace.now();
        try {
            client.receive(from, m);
        } catch (RuntimeException bug) {
            // a listener or client bug: logged, not swallowed by the executor (a test listener's failed assertion
            // here once looked like a stall, task fix21)
            LOG.error("the client failed on a {} from {}", m.getClass().getSimpleName(), from, bug);
        }
        io.salus.core.protocol.LatencyTrace.took("clientLoop:receive", t0);
    }

    private void tick() {
        try {
            client.tick(System.currentTimeMillis());
        } catch (RuntimeException bug) {
            // a periodic task that throws is never run again: retransmissions would stop for good
            LOG.error("the client's tick failed", bug);
        }
    }

    /** On the loop: the client's transport. A region just sent to will have replies soon: poll it soon. */
    private void send(NodeId to, Message m) {
        io.salus.core.protocol.LatencyTrace.sent("client." + m.getClass().getSimpleName());
        VolumeAddressing.Address a = addressing.route(to);
        link.send(a, ReplicaLink.envelope(me, to, m));
        PollState st = polling.computeIfAbsent(a, k -> new PollState());
        st.interval = POLL_MILLIS;
        st.nextAt = Math.min(st.nextAt, System.currentTimeMillis() + POLL_MILLIS);
    }

    /** On the loop: polls the regions the client awaits replies from, each when its back-off has passed. */
    private void pollAll() {
        if (client.outstandingBatches() == 0 && client.outstandingGets() == 0 && client.outstandingFlushes() == 0
                && (client.fenceOutstanding() == null || client.fenceOutstanding().isEmpty())
                && !client.remounting()) {
            return;
        }
        long now = System.currentTimeMillis();
        java.util.Set<VolumeAddressing.Address> due = new java.util.HashSet<>();
        for (NodeId n : client.awaitedReplicas()) {
            due.add(addressing.route(n));
        }
        for (VolumeAddressing.Address a : due) {
            PollState st = polling.computeIfAbsent(a, k -> new PollState());
            if (st.inFlight || now < st.nextAt) {
                continue;
            }
            st.inFlight = true;
            polls.incrementAndGet();
            io.salus.core.protocol.LatencyTrace.count("rpc:poll");
            link.poll(a).whenComplete((n, err) -> {
                try {
                    loop.execute(() -> {
                        st.inFlight = false;
                        boolean got = err == null && n != null && n > 0;
                        if (!got) {
                            io.salus.core.protocol.LatencyTrace.count("rpc:pollEmpty");
                        }
                        boolean legacy = io.salus.core.protocol.LatencyTrace.legacy();
                        st.interval = got ? POLL_MILLIS : Math.min(2 * st.interval, legacy ? 40 : MAX_POLL_MILLIS);
                        long t = System.currentTimeMillis();
                        st.nextAt = t + st.interval;
                        if (got && !legacy) {
                            // the replicas of a region apply a batch together (they learn its decision from the
                            // same leader messages): one answered, so the others have replies now too
                            for (PollState o : polling.values()) {
                                if (o != st) {
                                    o.interval = POLL_MILLIS;
                                    o.nextAt = Math.min(o.nextAt, t);
                                }
                            }
                        }
                    });
                } catch (java.util.concurrent.RejectedExecutionException closed) {
                    // the runner is closed
                }
            });
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

    /** The link's envelopes waiting to be delivered, over all destinations (tests). */
    public int queued() {
        return link.queued();
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
