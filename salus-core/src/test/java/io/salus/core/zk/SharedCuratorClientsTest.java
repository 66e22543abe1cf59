package io.salus.core.zk;

import static org.junit.jupiter.api.Assertions.*;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.imps.CuratorFrameworkState;
import org.apache.curator.retry.RetryOneTime;
import org.apache.curator.test.InstanceSpec;
import org.apache.curator.test.TestingServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@link SharedCuratorClients} against a real ZooKeeper server (Curator's TestingServer) that admits at most
 * {@value #MAX_CNXNS} connections per address, as a stock ZooKeeper admits 60 and HBase's 300: the CI failure of stop
 * 38 was a region server JVM whose replica regions (one ZooKeeper session each) passed that limit, after which every
 * new replica failed to start with "cannot reach ZooKeeper".
 */
class SharedCuratorClientsTest {
    static final int MAX_CNXNS = 5;
    TestingServer server;

    @BeforeEach
    void start() throws Exception {
        InstanceSpec spec = new InstanceSpec(null, -1, -1, -1, true, -1, -1, MAX_CNXNS,
                Map.of("maxClientCnxns", Integer.toString(MAX_CNXNS)));
        server = new TestingServer(spec, true);
    }

    @AfterEach
    void stop() throws Exception {
        server.close();
    }

    @Test
    void controlOneSessionPerHolderIsRefusedPastTheServersLimit() throws Exception {
        List<CuratorFramework> own = new ArrayList<>();
        int connected = 0;
        try {
            for (int i = 0; i < 2 * MAX_CNXNS; i++) {
                CuratorFramework c = CuratorFrameworkFactory.newClient(server.getConnectString(), 2_000, 1_000,
                        new RetryOneTime(100));
                c.start();
                own.add(c);
                if (c.blockUntilConnected(2, TimeUnit.SECONDS)) {
                    connected++;
                }
            }
        } finally {
            own.forEach(CuratorFramework::close);
        }
        assertTrue(connected <= MAX_CNXNS, "the server's per-address limit acted: " + connected + " of "
                + 2 * MAX_CNXNS + " sessions connected");
    }

    @Test
    void holdersPastTheServersLimitShareOneSession() throws Exception {
        List<SharedCuratorClients.Lease> leases = new ArrayList<>();
        for (int i = 0; i < 3 * MAX_CNXNS; i++) {
            leases.add(SharedCuratorClients.acquire(server.getConnectString(), 10_000));
        }
        CuratorFramework c = leases.get(0).client();
        for (SharedCuratorClients.Lease l : leases) {
            assertSame(c, l.client(), "one client for the ensemble");
        }
        c.create().forPath("/shared", new byte[] {1});
        assertArrayEquals(new byte[] {1}, leases.get(leases.size() - 1).client().getData().forPath("/shared"));
        for (int i = 0; i < leases.size() - 1; i++) {
            leases.get(i).close();
            leases.get(i).close(); // a second close of a lease releases nothing more
        }
        assertEquals(CuratorFrameworkState.STARTED, c.getState(), "open while a holder remains");
        leases.get(leases.size() - 1).close();
        assertEquals(CuratorFrameworkState.STOPPED, c.getState(), "the last release closes the session");
        try (SharedCuratorClients.Lease again = SharedCuratorClients.acquire(server.getConnectString(), 10_000)) {
            assertNotSame(c, again.client(), "a new client after the last release");
            assertArrayEquals(new byte[] {1}, again.client().getData().forPath("/shared"));
        }
    }

    @Test
    void anUnreachableEnsembleIsNamedAndReleased() throws Exception {
        String quorum = server.getConnectString();
        server.stop();
        int before = SharedCuratorClients.clients();
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> SharedCuratorClients.acquire(quorum, 1_000));
        assertTrue(e.getMessage().contains(quorum), e.getMessage());
        assertEquals(before, SharedCuratorClients.clients(), "the failed acquire released its client");
    }
}
