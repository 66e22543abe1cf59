package io.salus.core.hbase.endpoint;

import io.salus.core.cert.Certificate;
import io.salus.core.cert.Statement;
import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.SignatureScheme;
import io.salus.core.protocol.message.Message;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiConsumer;
import java.util.function.Function;
import org.apache.hadoop.conf.Configuration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The five metadata holders of one replica's RRS as <b>real witness stores</b> (issue 13 item 3): {@code s<k>} is
 * the witness plugin of the DataNode paired with the region server of replica {@code k}, {@code w0}/{@code w1} are
 * the two standalone witness daemons. One {@link Proxy} per holder, each with its own single thread and its own
 * connection, so the replica's event loop and the RPC handlers never wait for a witness: the loop hands a
 * tentative to the proxy and returns; a STORED reply comes back as a {@link Message.StoreAck} carrying the
 * <b>witness's own signature</b>, which the replica verifies against the key the witness announced (the key is
 * registered for the holder's node id in the {@link EndpointKeyring}, replacing the region server's test key, so
 * an ack the region server signs itself is not counted). A witness that is down only withholds its ack (counted in
 * {@link #counters()}, logged once per outage); the replica's retransmission offers again when it returns.
 */
public final class WitnessHolders implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(WitnessHolders.class);
    /** Class implementing {@link RemoteWitness.Connector}; unset: the interim in-region holders (tests only). */
    public static final String CONNECTOR_KEY = "salus.endpoint.witness.connector";
    /** The two standalone witnesses {@code w0,w1}: {@code host:port,host:port}. */
    public static final String STANDALONE_KEY = "salus.endpoint.witness.standalone";
    /**
     * The witness plugin of the DataNode paired with each region server: {@code rsHost:rsPort=witnessHost:port,...}.
     * The region server's host may be {@code *} (match the port only: several region servers on one machine).
     * A region server not listed: its own host and {@link #PLUGIN_PORT_KEY}.
     */
    public static final String PAIRED_KEY = "salus.endpoint.witness.paired";
    /** The DataNode witness plugins' port (the plugin's own {@code salus.witness.port}); default 9877. */
    public static final String PLUGIN_PORT_KEY = "salus.witness.port";
    public static final int PLUGIN_PORT_DEFAULT = 9877;
    /** Connect and request timeout towards a witness, milliseconds; default 5000. */
    public static final String TIMEOUT_KEY = "salus.endpoint.witness.timeout-ms";
    /** Offers queued per holder beyond which new ones are dropped (the replica retransmits). */
    public static final int MAX_QUEUED = 1 << 16;
    /** After a failure, a proxy does not reconnect for this long (offers meanwhile are dropped and counted). */
    public static final long RECONNECT_MILLIS = 200;

    /** Where the holders are and how to reach them. */
    public record Settings(RemoteWitness.Connector connector, InetSocketAddress[] standalone,
                           Map<String, InetSocketAddress> paired, int pluginPort, int timeoutMillis) {
        /**
         * Reads the keys above; null if {@link #CONNECTOR_KEY} is unset.
         *
         * @throws IllegalArgumentException naming the bad key and the expected form
         */
        public static Settings fromConfiguration(Configuration conf) {
            String cls = conf.getTrimmed(CONNECTOR_KEY);
            if (cls == null || cls.isEmpty()) {
                return null;
            }
            RemoteWitness.Connector connector;
            try {
                connector = Class.forName(cls, true, Thread.currentThread().getContextClassLoader() != null
                                ? Thread.currentThread().getContextClassLoader() : WitnessHolders.class.getClassLoader())
                        .asSubclass(RemoteWitness.Connector.class).getDeclaredConstructor().newInstance();
            } catch (ReflectiveOperationException | ClassCastException e) {
                throw new IllegalArgumentException(CONNECTOR_KEY + "=" + cls + " is not a loadable "
                        + RemoteWitness.Connector.class.getName() + " (use io.salus.hdfs.witness.WitnessClientConnector"
                        + " with salus-hdfs on the region server's classpath): " + e, e);
            }
            String[] sa = conf.getTrimmedStrings(STANDALONE_KEY);
            if (sa.length != 2) {
                throw new IllegalArgumentException(STANDALONE_KEY + " must name the two standalone witnesses as"
                        + " host:port,host:port (found " + sa.length + " entries)");
            }
            InetSocketAddress[] standalone = {address(STANDALONE_KEY, sa[0]), address(STANDALONE_KEY, sa[1])};
            Map<String, InetSocketAddress> paired = new HashMap<>();
            for (String p : conf.getTrimmedStrings(PAIRED_KEY)) {
                int eq = p.indexOf('=');
                if (eq <= 0) {
                    throw new IllegalArgumentException(PAIRED_KEY + ": `" + p + "` is not"
                            + " regionServerHost:port=witnessHost:port");
                }
                address(PAIRED_KEY, p.substring(0, eq));
                paired.put(p.substring(0, eq), address(PAIRED_KEY, p.substring(eq + 1)));
            }
            return new Settings(connector, standalone, paired, conf.getInt(PLUGIN_PORT_KEY, PLUGIN_PORT_DEFAULT),
                    conf.getInt(TIMEOUT_KEY, 5000));
        }

        static InetSocketAddress address(String key, String hp) {
            int c = hp.lastIndexOf(':');
            try {
                if (c > 0) {
                    return InetSocketAddress.createUnresolved(hp.substring(0, c), Integer.parseInt(hp.substring(c + 1)));
                }
            } catch (NumberFormatException e) {
                // falls through
            }
            throw new IllegalArgumentException(key + ": `" + hp + "` is not host:port");
        }

        /** The witness of the DataNode paired with region server {@code rsHostPort} (host:port). */
        InetSocketAddress pairedWith(String rsHostPort) {
            InetSocketAddress a = paired.get(rsHostPort);
            if (a == null) { // "*:port": any host (several region servers on one machine)
                a = paired.get("*" + rsHostPort.substring(rsHostPort.lastIndexOf(':')));
            }
            if (a != null) {
                return a;
            }
            return InetSocketAddress.createUnresolved(rsHostPort.substring(0, rsHostPort.lastIndexOf(':')), pluginPort);
        }
    }

    private final Map<NodeId, Proxy> proxies = new LinkedHashMap<>();
    private final AtomicLong acks = new AtomicLong();
    private final AtomicLong pending = new AtomicLong();
    private final AtomicLong failures = new AtomicLong();
    private final AtomicLong dropped = new AtomicLong();
    private final AtomicLong truncations = new AtomicLong();
    private final AtomicLong truncationFailures = new AtomicLong();

    /**
     * @param holders     the five holders of the RRS (s0, s1, s2, w0, w1), in that order
     * @param regionServer resolves replica k's region server as host:port (asynchronously; called on a proxy thread)
     * @param keys        where a witness's announced key is registered for its holder node id
     * @param onAck       receives (holder, witness-signed ack); called on a proxy thread
     */
    public WitnessHolders(Settings settings, java.util.List<NodeId> holders,
                          Function<Integer, CompletableFuture<String>> regionServer, EndpointKeyring keys,
                          BiConsumer<NodeId, Message.StoreAck> onAck) {
        if (holders.size() != 5) {
            throw new IllegalArgumentException("an RRS has 5 metadata holders, got " + holders);
        }
        for (int i = 0; i < 5; i++) {
            NodeId h = holders.get(i);
            int k = i;
            InetSocketAddressSource where = k < 3
                    ? () -> settings.pairedWith(regionServer.apply(k).get(settings.timeoutMillis, TimeUnit.MILLISECONDS))
                    : () -> settings.standalone[k - 3];
            proxies.put(h, new Proxy(h, settings, where, keys, onAck));
        }
        keys.useWitnessKeys(holders);
    }

    @FunctionalInterface
    interface InetSocketAddressSource {
        InetSocketAddress get() throws Exception;
    }

    /** True if {@code id} is one of these holders. */
    public boolean holds(NodeId id) {
        return proxies.containsKey(id);
    }

    /** Queues an offer of {@code tentative} to {@code holder}; returns at once. */
    public void offer(NodeId holder, Certificate tentative) {
        proxies.get(holder).offer(tentative);
    }

    /**
     * Queues a CHECKPOINT certificate for {@code holder} to truncate its store with (the witness verifies it); returns
     * at once. Only the newest one waiting is sent: a later certificate covers an earlier one.
     */
    public void truncate(NodeId holder, Certificate checkpoint) {
        proxies.get(holder).truncate(checkpoint);
    }

    /**
     * Reads what each holder stores at a slot without sealing it (the unsigned read-only QUERY), one holder after the
     * other on its proxy's thread, and returns the first certificate {@code proves} accepts, or null. Blocks the
     * caller up to the holders' timeout each; a holder that is down or does not answer in time is skipped. For a
     * replica catching up ({@link io.salus.core.protocol.replica.LogEntryReader}), rarely.
     */
    public Certificate read(io.salus.core.cert.RegionId region, long generation, long index,
                            java.util.function.Predicate<Certificate> proves) {
        for (Proxy p : proxies.values()) {
            Certificate c = p.read(region, generation, index);
            if (c != null && proves.test(c)) {
                return c;
            }
        }
        return null;
    }

    /**
     * Acks received, PENDING replies, offers failed (witness unreachable or refusing), offers dropped; truncations
     * the witnesses accepted and those that failed (witness unreachable or refusing the certificate).
     */
    public Map<String, Long> counters() {
        return Map.of("witnessAcks", acks.get(), "witnessPending", pending.get(), "witnessFailures", failures.get(),
                "witnessDropped", dropped.get(), "witnessTruncations", truncations.get(),
                "witnessTruncationFailures", truncationFailures.get());
    }

    @Override
    public void close() {
        proxies.values().forEach(Proxy::close);
    }

    /** One holder: its own thread and connection. */
    private final class Proxy {
        private final NodeId holder;
        private final Settings settings;
        private final InetSocketAddressSource where;
        private final EndpointKeyring keys;
        private final BiConsumer<NodeId, Message.StoreAck> onAck;
        private final ScheduledThreadPoolExecutor exec;
        private final Set<Long> queued = ConcurrentHashMap.newKeySet();
        private RemoteWitness conn;
        private long downUntil;
        private boolean down;

        Proxy(NodeId holder, Settings settings, InetSocketAddressSource where, EndpointKeyring keys,
              BiConsumer<NodeId, Message.StoreAck> onAck) {
            this.holder = holder;
            this.settings = settings;
            this.where = where;
            this.keys = keys;
            this.onAck = onAck;
            this.exec = new ScheduledThreadPoolExecutor(1, r -> {
                Thread t = new Thread(r, "salus-witness-" + holder.name());
                t.setDaemon(true);
                return t;
            });
            exec.setRemoveOnCancelPolicy(true);
            exec.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
        }

        void offer(Certificate t) {
            Statement.LogEntry st = t.statement(Statement.LogEntry.class);
            // one offer per slot in flight: the replica's retransmissions do not pile up behind a slow witness
            if (exec.getQueue().size() >= MAX_QUEUED || !queued.add(st.index())) {
                dropped.incrementAndGet();
                return;
            }
            exec.execute(() -> attempt(t, st, 0));
        }

        Certificate read(io.salus.core.cert.RegionId region, long generation, long index) {
            java.util.concurrent.Future<byte[]> f;
            try {
                f = exec.submit(() -> connection().read(region.volume(), region.index(), generation, index));
            } catch (java.util.concurrent.RejectedExecutionException e) {
                return null; // closed
            }
            try {
                byte[] b = f.get(settings.timeoutMillis, TimeUnit.MILLISECONDS);
                return b == null ? null : Certificate.decode(b);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                f.cancel(true);
                return null;
            } catch (Exception e) {
                f.cancel(false); // unreachable, slow or an undecodable answer: this holder does not corroborate
                return null;
            }
        }

        /** The newest CHECKPOINT certificate waiting to be sent (null: none). */
        private final java.util.concurrent.atomic.AtomicReference<Certificate> truncation =
                new java.util.concurrent.atomic.AtomicReference<>();

        void truncate(Certificate checkpoint) {
            if (truncation.getAndSet(checkpoint) == null) {
                try {
                    exec.execute(this::sendTruncation);
                } catch (java.util.concurrent.RejectedExecutionException e) {
                    // closed: nothing is truncated (the next open's first certificate covers this one)
                }
            }
        }

        private void sendTruncation() {
            Certificate c = truncation.getAndSet(null);
            if (c == null) {
                return;
            }
            try {
                if (connection().truncate(c.encode())) {
                    truncations.incrementAndGet();
                } else {
                    truncationFailures.incrementAndGet();
                }
            } catch (Exception e) {
                truncationFailures.incrementAndGet();
                failed(e); // the next certificate truncates through a later index, covering this one
            }
        }

        private void attempt(Certificate t, Statement.LogEntry st, int retry) {
            byte[] sig;
            try {
                sig = connection().offer(t.encode());
            } catch (Exception e) {
                failed(e);
                queued.remove(st.index());
                return;
            }
            if (down) {
                down = false;
                LOG.info("witness holder {} is reachable again", holder);
            }
            if (sig == null) {
                pending.incrementAndGet();
                if (retry < 6) { // the other replicas' tentatives are on their way: ask again shortly
                    exec.schedule(() -> attempt(t, st, retry + 1), 2L << retry, TimeUnit.MILLISECONDS);
                } else {
                    queued.remove(st.index());
                }
                return;
            }
            queued.remove(st.index());
            acks.incrementAndGet();
            onAck.accept(holder, new Message.StoreAck(st.region().index(), st.generation(), st.index(), st.digest(), sig));
        }

        private RemoteWitness connection() throws Exception {
            if (conn != null) {
                return conn;
            }
            if (System.currentTimeMillis() < downUntil) {
                throw new IOException("witness holder " + holder + " unreachable, retrying in <" + RECONNECT_MILLIS + " ms");
            }
            InetSocketAddress a = where.get();
            InetSocketAddress resolved = a.isUnresolved() ? new InetSocketAddress(a.getHostString(), a.getPort()) : a;
            RemoteWitness c = settings.connector.connect(resolved, settings.timeoutMillis);
            RemoteWitness.Identity id;
            try {
                id = c.identity();
                keys.registerHolderKey(holder, SignatureScheme.valueOf(id.scheme()), id.verificationKey());
            } catch (IOException | RuntimeException e) {
                c.close();
                throw e;
            }
            LOG.info("witness holder {} is the witness {} at {}", holder, id.nodeId(), resolved);
            conn = c;
            return c;
        }

        private void failed(Exception e) {
            failures.incrementAndGet();
            downUntil = System.currentTimeMillis() + RECONNECT_MILLIS;
            if (conn != null) {
                try {
                    conn.close();
                } catch (IOException ignored) {
                    // closing a broken connection
                }
                conn = null;
            }
            if (!down) {
                down = true;
                LOG.warn("witness holder {}: {} (its store ack is withheld until it answers; counted in"
                        + " witnessFailures)", holder, e.toString());
            }
        }

        void close() {
            exec.shutdownNow();
            RemoteWitness c = conn;
            if (c != null) {
                try {
                    c.close();
                } catch (IOException ignored) {
                    // closing
                }
            }
        }
    }
}
