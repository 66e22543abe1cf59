package io.salus.core.zk;

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;

/**
 * One started Curator client (one ZooKeeper session) per ensemble in this JVM, shared by reference count: every
 * replica region of a region server files its checkpoint certificates through it. Before, each replica region opened
 * a session of its own, so a region server hosting hundreds of replica regions held hundreds of sessions from one
 * address, and ZooKeeper's per-address limit ({@code maxClientCnxns}: 300 in HBase's ZooKeeper, 60 in a stock one)
 * refused the next: replicas failed to start with "cannot reach ZooKeeper" while ZooKeeper was up (CI of stop 38,
 * a shared test cluster's 26th volume). HBase's own region server keeps one session too.
 */
public final class SharedCuratorClients {
    private SharedCuratorClients() {
    }

    private static final Map<String, Entry> CLIENTS = new HashMap<>();

    private static final class Entry {
        final CuratorFramework client;
        int users;

        Entry(CuratorFramework client) {
            this.client = client;
        }
    }

    /** A holder's use of the shared client; {@link #close} releases it (the last release closes the client). */
    public static final class Lease implements AutoCloseable {
        private final String quorum;
        private final Entry entry;
        private boolean closed;

        private Lease(String quorum, Entry entry) {
            this.quorum = quorum;
            this.entry = entry;
        }

        public CuratorFramework client() {
            return entry.client;
        }

        @Override
        public void close() {
            synchronized (CLIENTS) {
                if (closed) {
                    return;
                }
                closed = true;
                if (--entry.users == 0 && CLIENTS.get(quorum) == entry) {
                    CLIENTS.remove(quorum);
                    entry.client.close();
                }
            }
        }
    }

    /**
     * The shared client for {@code quorum} (started on first use), once connected within {@code connectMillis}.
     *
     * @throws IllegalStateException naming the quorum if it does not connect in time (the lease is released)
     */
    public static Lease acquire(String quorum, long connectMillis) throws InterruptedException {
        Lease lease;
        synchronized (CLIENTS) {
            Entry e = CLIENTS.get(quorum);
            if (e == null) {
                CuratorFramework c = CuratorFrameworkFactory.newClient(quorum, new ExponentialBackoffRetry(200, 10));
                c.start();
                e = new Entry(c);
                CLIENTS.put(quorum, e);
            }
            e.users++;
            lease = new Lease(quorum, e);
        }
        boolean connected = false;
        try {
            connected = lease.client().blockUntilConnected((int) Math.min(Integer.MAX_VALUE, connectMillis),
                    TimeUnit.MILLISECONDS);
        } finally {
            if (!connected) {
                lease.close();
            }
        }
        if (!connected) {
            throw new IllegalStateException("cannot reach ZooKeeper at " + quorum + " within " + connectMillis
                    + " ms");
        }
        return lease;
    }

    /** Sessions this JVM holds now (tests and metrics). */
    public static int clients() {
        synchronized (CLIENTS) {
            return CLIENTS.size();
        }
    }
}
