package io.salus.core.hbase.endpoint;

import com.google.protobuf.RpcCallback;
import com.google.protobuf.RpcController;
import com.google.protobuf.Service;
import io.salus.core.crypto.NodeId;
import io.salus.core.hbase.SalusTableLayout;
import io.salus.core.hbase.VolumeGeometry;
import io.salus.core.hbase.endpoint.generated.SalusReplicaProtos.DeliverRequest;
import io.salus.core.hbase.endpoint.generated.SalusReplicaProtos.DeliverResponse;
import io.salus.core.hbase.endpoint.generated.SalusReplicaProtos.Envelope;
import io.salus.core.hbase.endpoint.generated.SalusReplicaProtos.PollRequest;
import io.salus.core.hbase.endpoint.generated.SalusReplicaProtos.SalusReplicaService;
import io.salus.core.protocol.message.Message;
import io.salus.core.protocol.message.MessageCodec;
import io.salus.core.protocol.message.TrafficCounters;
import io.salus.core.hbase.storage.HdfsReplicaStorage;
import java.io.IOException;
import java.util.Collections;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.CoprocessorEnvironment;
import org.apache.hadoop.hbase.client.AsyncConnection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.TableDescriptor;
import org.apache.hadoop.hbase.coprocessor.CoprocessorException;
import org.apache.hadoop.hbase.coprocessor.ObserverContext;
import org.apache.hadoop.hbase.coprocessor.RegionCoprocessor;
import org.apache.hadoop.hbase.coprocessor.RegionCoprocessorEnvironment;
import org.apache.hadoop.hbase.coprocessor.RegionObserver;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Salus replica endpoint (issue 13 item 3): a region coprocessor on each replica table of a Salus volume
 * ({@link SalusTableLayout} sets it as a table attribute) hosting one {@link io.salus.core.protocol.replica.RegionReplica}
 * per replica region, with its colocated metadata store, behind the {@code SalusReplicaService} protobuf 2.5
 * service.
 *
 * <p>RULE: an RPC handler never waits for another server. {@code deliver} decodes each envelope (MessageCodec),
 * checks it is addressed to a node this region hosts, queues it into the region's single-threaded event loop
 * ({@link ReplicaHost}) and returns, with any replies waiting for the calling client. Messages to peer regions
 * leave from a separate executor through the async client ({@link ReplicaLink}). {@code poll} returns the
 * waiting replies at once.
 *
 * <p>Who may talk to a replica ({@link CallAuth}): every call is signed by the calling node (the volume's client, or
 * a replica for the nodes its region hosts) over the destination, a counter and the envelopes; an unsigned, badly
 * signed or replayed call has its envelopes dropped and gets no replies, and only the client's own signed calls
 * take the client's replies.
 */
public final class SalusReplicaEndpoint extends SalusReplicaService implements RegionCoprocessor, RegionObserver {
    private static final Logger LOG = LoggerFactory.getLogger(SalusReplicaEndpoint.class);

    private static final Object SHARED_LOCK = new Object();
    private static CompletableFuture<AsyncConnection> shared;
    private static int sharedUsers;

    private static final java.util.concurrent.atomic.AtomicBoolean WARNED_SYNC_ON_CLOSE =
            new java.util.concurrent.atomic.AtomicBoolean();
    private volatile ReplicaHost host;
    /** {@link #INBOUND_MESSAGES_KEY} and {@link #INBOUND_BYTES_KEY}, read at start. */
    private int inboundMessages = ReplicaHost.MAX_QUEUED_MESSAGES;
    private long inboundBytes = ReplicaHost.MAX_QUEUED_BYTES;
    /** The region's cells as the replica's store (set at open): its retention cutoff guides compactions. */
    private volatile io.salus.core.protocol.replica.RegionStore regionStore;
    private volatile String startError = "the Salus replica endpoint is not running on this region (closing?)";
    private ReplicaLink link;
    private VolumeAddressing addressing;
    private ReplicaStorageFactory storage;
    private EndpointKeyring keys;
    private ReplicaFaultInjector faults;
    private int region;
    private int replicaIndex;
    private WitnessHolders.Settings witnesses;

    /**
     * Log entries between a replica's checkpoints (its checkpoint file, region flush and TENTATIVE_CHECKPOINT; the
     * CHECKPOINT certificate after which the log, witness certificates and old checkpoint files are collected).
     * Read from the region's configuration (hbase-site.xml of the region server, or the table's own configuration).
     * Every region server hosting a replica of the volume must use the same value: the replicas of a region
     * checkpoint at the same log indexes ({@code (index + 1) % value == 0}) and ignore proposals and votes at any
     * other index, so a mismatch stops checkpoints and log GC for that region (never safety).
     */
    public static final String CHECKPOINT_EVERY_KEY = "salus.checkpoint.every-entries";
    /**
     * Messages a replica's event loop may hold not yet run ({@link ReplicaHost#offer}); more are answered "busy" and
     * retransmitted by their senders. Default {@link ReplicaHost#MAX_QUEUED_MESSAGES}.
     */
    public static final String INBOUND_MESSAGES_KEY = "salus.replica.inbound.max-messages";
    /** Bytes of those messages at most. Default {@link ReplicaHost#MAX_QUEUED_BYTES}. */
    public static final String INBOUND_BYTES_KEY = "salus.replica.inbound.max-bytes";

    /** {@link #CHECKPOINT_EVERY_KEY}, default {@link io.salus.core.protocol.ProtocolConfig#DEFAULT_CHECKPOINT_EVERY}. */
    public static int checkpointEvery(Configuration conf) throws CoprocessorException {
        int n = conf.getInt(CHECKPOINT_EVERY_KEY, io.salus.core.protocol.ProtocolConfig.DEFAULT_CHECKPOINT_EVERY);
        if (n < 1) {
            throw new CoprocessorException(CHECKPOINT_EVERY_KEY + " must be at least 1 (log entries between"
                    + " checkpoints), got " + n + "; default "
                    + io.salus.core.protocol.ProtocolConfig.DEFAULT_CHECKPOINT_EVERY);
        }
        return n;
    }

    @Override
    public Optional<RegionObserver> getRegionObserver() {
        return Optional.of(this);
    }

    @Override
    public Iterable<Service> getServices() {
        return Collections.singleton(this);
    }

    @Override
    public void start(CoprocessorEnvironment env) throws IOException {
        if (!(env instanceof RegionCoprocessorEnvironment renv)) {
            throw new CoprocessorException(getClass().getName() + " is a region coprocessor: set it on a Salus replica"
                    + " table (SalusTableLayout does), not as a master or region server coprocessor");
        }
        TableDescriptor td = renv.getRegion().getTableDescriptor();
        String layout = td.getValue(SalusTableLayout.LAYOUT_ATTRIBUTE);
        String replica = td.getValue(SalusTableLayout.REPLICA_ATTRIBUTE);
        if (layout == null || replica == null) {
            throw new CoprocessorException(getClass().getSimpleName() + " on table " + td.getTableName()
                    + ", which is not a Salus replica table (no " + SalusTableLayout.LAYOUT_ATTRIBUTE + "/"
                    + SalusTableLayout.REPLICA_ATTRIBUTE + " attribute); create volumes with SalusTableLayout.create");
        }
        VolumeGeometry g;
        int k;
        try {
            g = VolumeGeometry.parse(layout, SalusTableLayout.LAYOUT_VERSION);
            k = Integer.parseInt(replica);
        } catch (IllegalArgumentException e) {
            throw new CoprocessorException("table " + td.getTableName() + ": " + e.getMessage());
        }
        addressing = new VolumeAddressing(g, checkpointEvery(renv.getConfiguration()));
        byte[] start = renv.getRegionInfo().getStartKey();
        this.region = start.length == 0 ? 0 : g.regionOf(org.apache.hadoop.hbase.util.Bytes.toLong(start));
        this.replicaIndex = k;
        Configuration conf = renv.getConfiguration();
        try {
            keys = EndpointKeyring.fromConfiguration(conf, addressing);
            // read before anything opens: a bad value leaves the region open without a replica, saying why
            inboundMessages = conf.getInt(INBOUND_MESSAGES_KEY, ReplicaHost.MAX_QUEUED_MESSAGES);
            inboundBytes = conf.getLongBytes(INBOUND_BYTES_KEY, ReplicaHost.MAX_QUEUED_BYTES);
            if (inboundMessages < 1 || inboundBytes < 1) {
                throw new IllegalArgumentException(INBOUND_MESSAGES_KEY + "=" + inboundMessages + " and "
                        + INBOUND_BYTES_KEY + "=" + inboundBytes + " must both be at least 1 (leave them unset for the"
                        + " defaults " + ReplicaHost.MAX_QUEUED_MESSAGES + " and " + ReplicaHost.MAX_QUEUED_BYTES + ")");
            }
            witnesses = WitnessHolders.Settings.fromConfiguration(conf);
            if (witnesses == null) {
                LOG.warn("{} is unset: the metadata holders of {} are the interim in-region ones, signed with the"
                        + " region server's test keys (tests only; `salus up` sets the real witnesses)",
                        WitnessHolders.CONNECTOR_KEY, td.getTableName());
            }
            if (!conf.getBoolean("dfs.datanode.synconclose", false) && !WARNED_SYNC_ON_CLOSE.getAndSet(true)) {
                // issue 27 (review rvw27-2): a stored checkpoint's blocks are the region's HFiles, closed by HBase
                // without an hsync; only DataNodes that fsync at close keep them through a power loss
                LOG.warn("dfs.datanode.synconclose is not true in this region server's configuration: unless the"
                        + " DataNodes set it (hdfs-site.xml), a power loss can take HFiles that a certified Salus"
                        + " checkpoint names, after the log before it was collected; set it on every DataNode");
            }
            storage = newStorage(conf);
            Class<? extends ReplicaFaultInjector> fc = conf.getClass(ReplicaFaultInjector.CLASS_KEY, null,
                    ReplicaFaultInjector.class);
            faults = fc == null ? ReplicaFaultInjector.NONE : fc.getDeclaredConstructor().newInstance();
            if (fc != null) {
                faults.hostedOn(renv.getServerName().toString());
                LOG.warn("{}={}: test fault injection is ON for this region", ReplicaFaultInjector.CLASS_KEY, fc.getName());
            }
        } catch (ReflectiveOperationException | RuntimeException e) {
            // not thrown: a table coprocessor that fails to start aborts the region server by default
            // (hbase.coprocessor.abortonerror); the region opens, and every call says why Salus is not serving it
            startError = "the Salus replica endpoint of " + renv.getRegionInfo().getRegionNameAsString()
                    + " is not running: " + e.getMessage();
            LOG.error(startError);
            storage = null;
            return;
        }
        startError = "the Salus replica " + addressing.replica(region, k) + " on "
                + renv.getRegionInfo().getRegionNameAsString() + " is opening (replaying its Salus log before it"
                + " serves): retry";
        retryFirstMs = conf.getLong(START_RETRY_KEY, START_RETRY_DEFAULT_MS);
        retryMaxMs = conf.getLong(START_RETRY_MAX_KEY, START_RETRY_MAX_DEFAULT_MS);
        if (retryFirstMs > 0 && retryMaxMs < retryFirstMs) {
            LOG.warn("{}={} is below {}={}: failed replica starts are retried every {} ms; set it to at least the"
                    + " first wait (default {})", START_RETRY_MAX_KEY, retryMaxMs, START_RETRY_KEY, retryFirstMs,
                    retryFirstMs, START_RETRY_MAX_DEFAULT_MS);
            retryMaxMs = retryFirstMs;
        }
        startable = true;
    }

    private static ReplicaStorageFactory newStorage(Configuration conf) throws ReflectiveOperationException {
        return conf.getClass(ReplicaStorageFactory.CLASS_KEY, HdfsReplicaStorage.class, ReplicaStorageFactory.class)
                .getDeclaredConstructor().newInstance();
    }

    /**
     * First wait (ms) before a replica whose start failed is started again on its open region (doubled after each
     * failed attempt, up to {@link #START_RETRY_MAX_KEY}); 0 or less: never (the region stays open without a replica
     * until it is reopened).
     */
    public static final String START_RETRY_KEY = "salus.replica.start.retry.ms";
    public static final long START_RETRY_DEFAULT_MS = 2_000;
    public static final String START_RETRY_MAX_KEY = "salus.replica.start.retry.max-ms";
    public static final long START_RETRY_MAX_DEFAULT_MS = 60_000;
    /** Starts of replicas again after a failed start (shared by the regions of this JVM; daemon). */
    private static final java.util.concurrent.ScheduledExecutorService START_RETRIES =
            java.util.concurrent.Executors.newScheduledThreadPool(2, r -> { // one slow start does not hold the rest
                Thread t = new Thread(r, "salus-replica-start-retry");
                t.setDaemon(true);
                return t;
            });
    private static final java.util.concurrent.atomic.AtomicLong START_RETRIES_RUN =
            new java.util.concurrent.atomic.AtomicLong();

    /** Starts run again after a failed start, by this JVM's replica regions (tests and metrics). */
    public static long startRetries() {
        return START_RETRIES_RUN.get();
    }

    /** Set once {@link #start} configured everything: only such an endpoint starts (and retries) its replica. */
    private boolean startable;
    /** Set when the region closes: no start (or retry) after it. */
    private volatile boolean stopped;
    /** Guards {@link #starting} and the hand-over of what a start built to {@link #stop}; never held during a start. */
    private final Object stateLock = new Object();
    /** A start runs now (at most one at a time). */
    private boolean starting;
    private long retryFirstMs;
    private long retryMaxMs;
    /** Failed starts of this region incarnation so far. */
    private int failedStarts;

    /**
     * The region is open (its cells readable): open the replica's log, region state and coordination, and start the
     * replica, which re-applies the certified log entries after its verified base before this method returns, so
     * before it serves anything ({@link #deliver} answers "opening" until then). A failure leaves the region open
     * without a running replica, every call saying why, until a later attempt ({@link #startReplica}) starts it.
     */
    @Override
    public void postOpen(ObserverContext<RegionCoprocessorEnvironment> ctx) {
        startReplica(ctx.getEnvironment());
    }

    /**
     * Starts the replica (at open, and again after a failed start: review rv38, a start that failed for a passing
     * reason, ZooKeeper or a DataNode briefly unreachable, left the region open without a replica for good). A start
     * that failed on damage its storage handles by reopening the region ({@link ReplicaStorageFactory#reopenAsked})
     * is not retried here, nor one that ran out of heap; any other is, on the open region, after
     * {@link #START_RETRY_KEY} ms, doubling up to {@link #START_RETRY_MAX_KEY}, until it starts or the region closes.
     */
    private void startReplica(RegionCoprocessorEnvironment renv) {
        synchronized (stateLock) {
            if (!startable || stopped || host != null || starting) {
                return;
            }
            starting = true;
        }
        long retryIn = -1;
        try {
            retryIn = attemptStart(renv);
        } finally {
            synchronized (stateLock) {
                starting = false;
                if (stopped) { // the region closed while this start ran (stop did not wait): close what it built
                    stopLocked();
                    retryIn = -1;
                }
            }
        }
        if (retryIn >= 0) {
            LOG.warn("Salus replica of region {}: start {} failed; starting it again in {} ms",
                    renv.getRegionInfo().getRegionNameAsString(), failedStarts, retryIn);
            START_RETRIES.schedule(() -> {
                START_RETRIES_RUN.incrementAndGet();
                startReplica(renv);
            }, retryIn, java.util.concurrent.TimeUnit.MILLISECONDS);
        }
    }

    /** One start of the replica; returns in how many ms to try again after a failure, or -1 (started, or not again). */
    private long attemptStart(RegionCoprocessorEnvironment renv) {
        String name = renv.getRegionInfo().getRegionNameAsString();
        if (storage == null) {
            try {
                storage = newStorage(renv.getConfiguration());
            } catch (ReflectiveOperationException | RuntimeException e) {
                startError = "the Salus replica endpoint of " + name + " is not running: " + e;
                LOG.error(startError, e);
                return -1;
            }
        }
        boolean connAcquired = false;
        try {
            NodeId me = addressing.replica(region, replicaIndex);
            var disk = storage.disk(renv, me);
            var coordination = storage.coordination(renv, addressing.protocolConfig().volume());
            var store = storage.regionStore(renv, addressing.protocolConfig(), region);
            regionStore = store;
            CompletableFuture<AsyncConnection> conn = acquireConnection(renv.getConfiguration());
            connAcquired = true;
            java.util.function.Function<Integer, CompletableFuture<String>> regionServer = k -> conn.thenCompose(c -> {
                VolumeAddressing.Address a = addressing.address(region, k);
                return c.getRegionLocator(a.table()).getRegionLocation(a.row());
            }).thenApply(loc -> loc.getServerName().getHostname() + ":" + loc.getServerName().getPort());
            // the link signs its calls with this replica's key: a peer accepts from it only the nodes this region
            // hosts (CallAuth)
            link = new ReplicaLink(conn, addressing,
                    addressing.protocolConfig().volume() + "-" + region + "-r" + replicaIndex, null, null,
                    new CallAuth.Signing(addressing.geometry().volume(), keys.signer(me), 0));
            ReplicaStorageFactory st = storage;
            host = new ReplicaHost(addressing, region, replicaIndex, keys, link, disk,
                    h -> st.certificateStore(renv, h), coordination, faults, store, witnesses, regionServer,
                    error -> st.quarantineDisk(renv, error), new ReplicaHost.RebuildSettings(
                            renv.getConfiguration().getBoolean(ReplicaHost.RebuildSettings.BACKGROUND_KEY, true),
                            renv.getConfiguration().getInt(ReplicaHost.RebuildSettings.RATE_KEY,
                                    io.salus.core.protocol.replica.RegionReplica.DEFAULT_REBUILD_BLOCKS_PER_SECOND)));
            host.onDiskFailure(e -> st.diskFailed(renv, e)); // a lost disk: the region is reopened (= recovery)
            host.limitInbound(inboundMessages, inboundBytes);
            LOG.info("Salus replica {} started on region {} ({})", host.replicaId(), name, host.counters());
            return -1;
        } catch (RuntimeException | OutOfMemoryError e) {
            // never fails the region server (issue 27): the region stays open, every call says why Salus does not
            // serve it, the endpoint's metrics and `salus status` show it, and the peers keep serving the region
            startError = "the Salus replica endpoint of " + name + " is not running: " + e;
            if (failedStarts == 0) {
                LOG.error(startError, e);
            } else {
                LOG.warn("{} (failed start {})", startError, failedStarts + 1);
            }
            if (host != null) { // built, then something after it failed: nothing may keep feeding it
                host.close();
                host = null;
            }
            if (link != null) {
                link.close();
                link = null;
            }
            if (connAcquired) {
                releaseConnection();
            }
            boolean reopening = storage.reopenAsked();
            storage.close();
            storage = null; // closed once: stop() would close it again when the region closes
            failedStarts++;
            if (e instanceof OutOfMemoryError) {
                // another try would take the heap again, and the server's other threads with it
                startError += "; not started again in this open (out of heap: give the region server more heap,"
                        + " then reopen the region)";
                return -1;
            }
            if (reopening || retryFirstMs <= 0) {
                return -1;
            }
            long delay = Math.min(retryMaxMs, retryFirstMs << Math.min(20, failedStarts - 1));
            startError += "; started again in " + delay + " ms (failed start " + failedStarts + ")";
            return delay;
        }
    }

    /**
     * A compaction of the replica region keeps every version of a cell that a read as of a stored checkpoint still
     * needs (issue 27): all newer than the retention cutoff, and the newest at or below it
     * ({@link io.salus.core.hbase.storage.VersionRetentionScanner}). Before the replica has a certified stored
     * checkpoint (cutoff -1), and on a table that keeps one version, the compaction is HBase's own.
     */
    @Override
    public org.apache.hadoop.hbase.regionserver.InternalScanner preCompact(
            ObserverContext<RegionCoprocessorEnvironment> c, org.apache.hadoop.hbase.regionserver.Store store,
            org.apache.hadoop.hbase.regionserver.InternalScanner scanner,
            org.apache.hadoop.hbase.regionserver.ScanType scanType,
            org.apache.hadoop.hbase.regionserver.compactions.CompactionLifeCycleTracker tracker,
            org.apache.hadoop.hbase.regionserver.compactions.CompactionRequest request) {
        if (regionStore instanceof io.salus.core.hbase.storage.HRegionStore h && h.versioned()
                && h.retainedFrom() >= 0) {
            return new io.salus.core.hbase.storage.VersionRetentionScanner(scanner, h.retainedFrom());
        }
        return scanner;
    }

    @Override
    public void stop(CoprocessorEnvironment env) {
        stopped = true; // a start retry scheduled for later does nothing
        synchronized (stateLock) {
            if (starting) {
                // a start runs now (a retry, on its own thread): never waited for here, HBase holds the region's
                // write lock while it closes it (review of rv38's retry: a start waiting for ZooKeeper or a lease
                // recovery held the close for minutes, and one that flushed at a checkpoint could deadlock it); the
                // start closes what it built when it ends
                return;
            }
            stopLocked();
        }
    }

    private void stopLocked() {
        startError = "the Salus replica endpoint is not running on this region (closed)";
        if (host != null) {
            host.close();
            link.close();
            releaseConnection();
            host = null;
        }
        if (storage != null) {
            storage.close();
            storage = null;
        }
    }

    private static CompletableFuture<AsyncConnection> acquireConnection(Configuration conf) {
        synchronized (SHARED_LOCK) {
            if (shared == null) {
                shared = ConnectionFactory.createAsyncConnection(conf);
            }
            sharedUsers++;
            return shared;
        }
    }

    private static void releaseConnection() {
        synchronized (SHARED_LOCK) {
            if (--sharedUsers == 0 && shared != null) {
                CompletableFuture<AsyncConnection> c = shared;
                shared = null;
                c.thenAccept(conn -> {
                    try {
                        conn.close();
                    } catch (IOException e) {
                        LOG.warn("closing the Salus endpoint connection: {}", e.toString());
                    }
                });
            }
        }
    }

    /** The storage of this region's replica (tests and metrics); null before start and after stop. */
    public ReplicaStorageFactory storage() {
        return storage;
    }

    /**
     * Why this region's Salus replica is not running (its open failed and the region stays open without it: issue 27,
     * "opening a replica region never fails the region server") or its log could not be written (a disk failure: the
     * region is reopened), or null while it runs (serving, or catching up from a peer: {@link ReplicaHost#serving()}).
     * For health reports ({@code salus up}, {@code salus status}).
     */
    public String notRunning() {
        ReplicaHost h = host;
        if (h == null) {
            return startError;
        }
        RuntimeException disk = h.diskFailure();
        return disk == null ? null : "the Salus replica " + h.replicaId() + " stopped writing its log (" + disk
                + "); its region is being reopened to recover it";
    }

    /** The hosted nodes (tests and metrics); null before start and after stop. */
    public ReplicaHost host() {
        return host;
    }

    @Override
    public void deliver(RpcController controller, DeliverRequest request, RpcCallback<DeliverResponse> done) {
        ReplicaHost h = host;
        DeliverResponse.Builder resp = DeliverResponse.newBuilder();
        if (h == null) {
            controller.setFailed(startError);
            done.run(null);
            return;
        }
        String replyTo = request.hasReplyTo() ? request.getReplyTo() : null;
        // what the call carries, per message type (the benchmark's network breakdown): the client's calls and the
        // region servers' calls apart, each whole request as the RPC carried it and each envelope's message bytes
        String side = replyTo != null ? "in:client:" : "in:peer:";
        TrafficCounters traffic = h.traffic();
        traffic.add(side + "deliverCall", request.getSerializedSize());
        NodeId caller = h.auth().authenticate(CallAuth.DELIVER, request.hasAuth() ? request.getAuth() : null, replyTo,
                request.getEnvelopesList());
        if (caller == null) {
            // unauthenticated: nothing of the call acts on anyone's identity (the envelopes claim a sender the
            // call cannot prove), and no one's replies leave
            h.auth().dropped(request.getEnvelopesCount());
            if (request.getEnvelopesCount() > 0) {
                resp.addRefused(request.getEnvelopesCount() + " envelope(s): the call is not signed by a node of"
                        + " volume " + addressing.geometry().volume() + " (or replays a counter): dropped");
            }
            if (replyTo != null) {
                h.auth().refusedReplies();
            }
            DeliverResponse refused = resp.build();
            countReplies(traffic, side.replace("in:", "out:") + "deliverResponse", refused);
            done.run(refused);
            return;
        }
        for (Envelope e : request.getEnvelopesList()) {
            traffic.add(side + typeOf(e), e.getMessage().size());
            try {
                NodeId from = NodeId.of(e.getFrom());
                NodeId to = NodeId.of(e.getTo());
                if (!h.auth().speaksFor(caller, from)) {
                    h.auth().foreignSender(caller, from);
                    resp.addRefused(e.getTo() + ": from " + from + " in a call signed by " + caller
                            + ", which does not speak for it: dropped");
                    continue;
                }
                if (!h.hosts(to)) {
                    resp.addRefused(e.getTo() + ": not hosted by this region (it hosts "
                            + addressing.hostedBy(h.region(), h.replicaIndex()) + "); the sender's routing is stale");
                    continue;
                }
                if (!h.offer(caller, from, to, () -> MessageCodec.decode(e.getMessage().toByteArray()),
                        e.getMessage().size())) {
                    resp.addRefused(e.getTo() + ": busy (" + h.inbound().queuedMessages() + " messages, "
                            + h.inbound().queuedBytes() + " bytes queued for the replica's loop): dropped, the sender"
                            + " retransmits");
                }
            } catch (RuntimeException bad) {
                resp.addRefused(e.getTo() + ": " + bad.getMessage());
            }
        }
        if (replyTo != null) {
            if (caller.name().equals(replyTo)) {
                resp.addAllReplies(h.takeReplies(replyTo));
            } else {
                h.auth().refusedReplies();
            }
        }
        DeliverResponse built = resp.build();
        countReplies(traffic, side.replace("in:", "out:") + "deliverResponse", built);
        done.run(built);
    }

    /** The envelope's message type, from its first two bytes (the message is not copied). */
    private static String typeOf(Envelope e) {
        com.google.protobuf.ByteString b = e.getMessage();
        return b.size() < 2 ? "UNKNOWN" : TrafficCounters.typeOf(b.byteAt(0), b.byteAt(1));
    }

    /** The response's size, and each reply it carries to the client per message type. */
    private static void countReplies(TrafficCounters traffic, String call, DeliverResponse r) {
        traffic.add(call, r.getSerializedSize());
        for (Envelope e : r.getRepliesList()) {
            traffic.add("out:client:" + typeOf(e), e.getMessage().size());
        }
    }

    @Override
    public void poll(RpcController controller, PollRequest request, RpcCallback<DeliverResponse> done) {
        ReplicaHost h = host;
        if (h == null) {
            controller.setFailed(startError);
            done.run(null);
            return;
        }
        h.traffic().add("in:client:pollCall", request.getSerializedSize());
        NodeId caller = h.auth().authenticate(CallAuth.POLL, request.hasAuth() ? request.getAuth() : null,
                request.getClient(), Collections.emptyList());
        if (caller == null || !caller.name().equals(request.getClient())) {
            h.auth().refusedReplies(); // only the client takes its replies
            done.run(DeliverResponse.getDefaultInstance());
            return;
        }
        DeliverResponse built = DeliverResponse.newBuilder().addAllReplies(h.takeReplies(request.getClient())).build();
        countReplies(h.traffic(), "out:client:pollResponse", built);
        done.run(built);
    }
}
