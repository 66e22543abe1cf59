package io.salus.core.hbase.endpoint;

import com.google.protobuf.ByteString;
import io.salus.core.crypto.NodeId;
import io.salus.core.hbase.endpoint.generated.SalusReplicaProtos.DeliverRequest;
import io.salus.core.hbase.endpoint.generated.SalusReplicaProtos.DeliverResponse;
import io.salus.core.hbase.endpoint.generated.SalusReplicaProtos.Envelope;
import io.salus.core.hbase.endpoint.generated.SalusReplicaProtos.PollRequest;
import io.salus.core.hbase.endpoint.generated.SalusReplicaProtos.SalusReplicaService;
import io.salus.core.protocol.message.Message;
import io.salus.core.protocol.message.MessageCodec;
import java.io.Closeable;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.apache.hadoop.hbase.client.AsyncConnection;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sends envelopes to replica regions through HBase's <b>async</b> client ({@link AsyncConnection}, the
 * coprocessor service on the region's first row), from its own executor: nothing that calls {@link #send} waits,
 * and no RPC handler is ever held for a peer. Per destination region one {@code deliver} is in flight at a time;
 * what queues behind it goes in the next call (coalescing), at most {@link #MAX_PER_CALL} envelopes and
 * {@link #MAX_BYTES_PER_CALL} bytes. A message still waiting in a destination's queue is not queued a second time:
 * the protocol retransmits unresolved work periodically, and without this a slow destination's queue filled with
 * copies of the same 256 KiB sub-batches, each call grew to tens of MiB, and the receivers spent their time
 * re-validating copies (64-block batches never committed). A full queue drops (the protocol retransmits:
 * delivery is unreliable by contract; the queue is full at {@link #MAX_QUEUED} envelopes or {@link #MAX_QUEUED_BYTES}),
 * and so does a failed call, with a log line and a counter.
 *
 * <p>Each call is signed ({@link CallAuth.Signing}) when the link has a key: the endpoint drops unsigned calls.
 *
 * <p>Replies piggy-backed on {@code deliver} responses and returned by {@code poll} go to {@code replies}.
 */
public final class ReplicaLink implements Closeable {
    private static final Logger LOG = LoggerFactory.getLogger(ReplicaLink.class);
    /** Envelopes per destination waiting for the call in flight; beyond it new ones are dropped. */
    public static final int MAX_QUEUED = 4096;
    /**
     * Bytes of envelopes per destination waiting for the call in flight; beyond it new ones are dropped (review
     * rv39: the count bound alone let a peer whose region server stalls its deliver calls, and which asks for large
     * answers (a rebuild's metadata: the log after the checkpoint, up to tens of MiB) every retransmission period,
     * hold 4,096 of them in this server's heap). A larger envelope still queues when at most one call's bytes
     * ({@link #MAX_BYTES_PER_CALL}) wait before it, so a large catch-up answer is not starved by steady small traffic.
     */
    public static final long MAX_QUEUED_BYTES = 32L << 20;
    /** Envelopes per deliver call. */
    public static final int MAX_PER_CALL = 256;
    /** Bytes of messages per deliver call (a single larger message still goes, alone). */
    public static final int MAX_BYTES_PER_CALL = 4 << 20;
    /** Operation (and RPC) timeout of one deliver or poll call, retries included. */
    public static final long CALL_TIMEOUT_MILLIS = 15_000;

    private final CompletableFuture<AsyncConnection> conn;
    private final VolumeAddressing addressing;
    private final String replyTo;
    private final Consumer<Envelope> replies;
    private final CallAuth.Signing auth;
    private final ExecutorService sender;
    private final Map<VolumeAddressing.Address, Dest> dests = new ConcurrentHashMap<>();
    private final AtomicLong dropped = new AtomicLong();
    private final AtomicLong failedCalls = new AtomicLong();
    private final AtomicLong calls = new AtomicLong();
    private final AtomicLong duplicates = new AtomicLong();

    private static final class Dest {
        final VolumeAddressing.Address address;
        final ConcurrentLinkedQueue<Envelope> queue = new ConcurrentLinkedQueue<>();
        /** The envelopes in {@link #queue} (equal bytes = the same message to the same node from the same node). */
        final java.util.Set<Envelope> waiting = ConcurrentHashMap.newKeySet();
        final AtomicInteger size = new AtomicInteger();
        final AtomicLong bytes = new AtomicLong();
        final AtomicBoolean inFlight = new AtomicBoolean();

        Dest(VolumeAddressing.Address address) {
            this.address = address;
        }
    }

    /**
     * @param replyTo the client whose replies ride back on deliver responses, or null (region servers)
     * @param replies receives those replies and what {@link #poll} returns (never null when replyTo is set)
     */
    public ReplicaLink(CompletableFuture<AsyncConnection> conn, VolumeAddressing addressing, String name, String replyTo,
                       Consumer<Envelope> replies) {
        this(conn, addressing, name, replyTo, replies, null);
    }

    /**
     * @param auth signs every call ({@link CallAuth}); null: unsigned calls, which the endpoint drops (tests of
     *             hostile callers)
     */
    public ReplicaLink(CompletableFuture<AsyncConnection> conn, VolumeAddressing addressing, String name, String replyTo,
                       Consumer<Envelope> replies, CallAuth.Signing auth) {
        this.auth = auth;
        this.conn = conn;
        this.addressing = addressing;
        this.replyTo = replyTo;
        this.replies = replies;
        this.sender = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "salus-link-" + name);
            t.setDaemon(true);
            return t;
        });
    }

    public static Envelope envelope(NodeId from, NodeId to, Message m) {
        return Envelope.newBuilder().setFrom(from.name()).setTo(to.name())
                .setMessage(ByteString.copyFrom(MessageCodec.encode(m))).build();
    }

    /** Queues a message for the region hosting {@code to}; never blocks. */
    public void send(NodeId from, NodeId to, Message m) {
        send(addressing.route(to), envelope(from, to, m));
    }

    public void send(VolumeAddressing.Address a, Envelope e) {
        Dest d = dests.computeIfAbsent(a, Dest::new);
        if (!d.waiting.add(e)) {
            duplicates.incrementAndGet(); // the same message is still waiting: one copy goes
            return;
        }
        int n = e.getSerializedSize();
        long queuedBytes = d.bytes.addAndGet(n);
        boolean tooManyBytes = queuedBytes > MAX_QUEUED_BYTES && queuedBytes - n > MAX_BYTES_PER_CALL;
        if (d.size.incrementAndGet() > MAX_QUEUED || tooManyBytes) {
            d.size.decrementAndGet();
            d.bytes.addAndGet(-n);
            d.waiting.remove(e);
            dropped.incrementAndGet();
            return;
        }
        d.queue.add(e);
        kick(d);
    }

    private void kick(Dest d) {
        if (!d.queue.isEmpty() && d.inFlight.compareAndSet(false, true)) {
            try {
                sender.execute(() -> flush(d));
            } catch (java.util.concurrent.RejectedExecutionException closed) {
                d.inFlight.set(false);
            }
        }
    }

    private void flush(Dest d) {
        DeliverRequest.Builder req = DeliverRequest.newBuilder();
        Envelope e;
        long bytes = 0;
        while (req.getEnvelopesCount() < MAX_PER_CALL && (e = d.queue.peek()) != null) {
            int size = e.getSerializedSize();
            if (req.getEnvelopesCount() > 0 && bytes + size > MAX_BYTES_PER_CALL) {
                break; // the next call takes it
            }
            d.queue.poll();
            d.size.decrementAndGet();
            d.bytes.addAndGet(-size);
            d.waiting.remove(e);
            bytes += size;
            req.addEnvelopes(e);
        }
        if (req.getEnvelopesCount() == 0) {
            d.inFlight.set(false);
            kick(d);
            return;
        }
        if (replyTo != null) {
            req.setReplyTo(replyTo);
        }
        if (auth != null) {
            req.setAuth(auth.sign(CallAuth.DELIVER, d.address, replyTo, req.getEnvelopesList()));
        }
        DeliverRequest built = req.build();
        calls.incrementAndGet();
        io.salus.core.protocol.LatencyTrace.count("rpc:deliver");
        io.salus.core.protocol.LatencyTrace.add("rpc:deliverEnvelopes", built.getEnvelopesCount());
        long t0 = io.salus.core.protocol.LatencyTrace.now();
        CompletableFuture<DeliverResponse> f;
        try {
            f = conn.thenCompose(c -> table(c, d.address.table())
                    .<SalusReplicaService.Stub, DeliverResponse>coprocessorService(SalusReplicaService::newStub,
                            (stub, ctl, done) -> stub.deliver(ctl, built, done), d.address.row()));
        } catch (RuntimeException ex) {
            f = CompletableFuture.failedFuture(ex);
        }
        f.whenComplete((resp, err) -> {
            io.salus.core.protocol.LatencyTrace.took("rpc:deliverRoundTrip", t0);
            if (err != null) {
                failed(d.address, built.getEnvelopesCount(), err);
            } else {
                handle(d.address, resp);
            }
            d.inFlight.set(false);
            kick(d);
        });
    }

    /**
     * The replica table with a bounded call: one {@code deliver} per destination is in flight, so a call that HBase
     * keeps retrying against a dead region server (its default operation timeout is 20 minutes) held every later
     * message to that replica back until it gave up: after a region server was killed, a reopened replica received
     * nothing for minutes (SalusRegionRecoveryTest). A call now fails after {@link #CALL_TIMEOUT_MILLIS}; its
     * messages are dropped (the protocol retransmits) and the next call locates the region again.
     */
    private static org.apache.hadoop.hbase.client.AsyncTable<?> table(AsyncConnection c,
                                                                     org.apache.hadoop.hbase.TableName t) {
        return c.getTableBuilder(t)
                .setOperationTimeout(CALL_TIMEOUT_MILLIS, java.util.concurrent.TimeUnit.MILLISECONDS)
                .setRpcTimeout(CALL_TIMEOUT_MILLIS, java.util.concurrent.TimeUnit.MILLISECONDS)
                .build();
    }

    private final AtomicLong refusedResponses = new AtomicLong();

    private void failed(VolumeAddressing.Address a, int n, Throwable err) {
        long k = failedCalls.incrementAndGet();
        if (k <= 10 || k % 1000 == 0) {
            LOG.warn("deliver of {} message(s) to {} failed ({} failed calls so far; the protocol retransmits): {}",
                    n, a, k, err.toString());
        }
    }

    private void handle(VolumeAddressing.Address a, DeliverResponse resp) {
        if (resp == null) {
            return;
        }
        if (resp.getRefusedCount() > 0) {
            // a busy replica (its loop's inbound bound) refuses for as long as it is behind: the first ten and every
            // thousandth, as failed calls
            long k = refusedResponses.incrementAndGet();
            if (k <= 10 || k % 1000 == 0) {
                LOG.warn("{} refused {} envelope(s) ({} responses with refusals so far; the protocol retransmits): {}",
                        a, resp.getRefusedCount(), k, resp.getRefusedList());
            }
        }
        if (replies != null) {
            resp.getRepliesList().forEach(replies);
        }
    }

    /** Asks a region for the replies queued for this link's client; the future completes with how many came. */
    public CompletableFuture<Integer> poll(VolumeAddressing.Address a) {
        if (replyTo == null) {
            throw new IllegalStateException("poll needs a client link (replyTo set)");
        }
        PollRequest.Builder b = PollRequest.newBuilder().setClient(replyTo);
        if (auth != null) {
            b.setAuth(auth.sign(CallAuth.POLL, a, replyTo, java.util.List.of()));
        }
        PollRequest req = b.build();
        long t0 = io.salus.core.protocol.LatencyTrace.now();
        return conn.thenCompose(c -> table(c, a.table())
                .<SalusReplicaService.Stub, DeliverResponse>coprocessorService(SalusReplicaService::newStub,
                        (stub, ctl, done) -> stub.poll(ctl, req, done), a.row()))
                .thenApply(resp -> {
                    io.salus.core.protocol.LatencyTrace.took("rpc:pollRoundTrip", t0);
                    handle(a, resp);
                    return resp.getRepliesCount();
                });
    }

    /** Bytes of envelopes waiting, over every destination (tests, metrics). */
    public long queuedBytes() {
        return dests.values().stream().mapToLong(d -> d.bytes.get()).sum();
    }

    /** Counters: calls made, failed, envelopes dropped on a full queue, copies not queued (already waiting). */
    public Map<String, Long> counters() {
        return Map.of("calls", calls.get(), "failedCalls", failedCalls.get(), "dropped", dropped.get(),
                "duplicatesSkipped", duplicates.get());
    }

    /** Envelopes waiting, over all destinations. */
    public int queued() {
        int n = 0;
        for (Dest d : dests.values()) {
            n += d.size.get();
        }
        return n;
    }

    @Override
    public void close() {
        sender.shutdownNow();
        try {
            sender.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

}
