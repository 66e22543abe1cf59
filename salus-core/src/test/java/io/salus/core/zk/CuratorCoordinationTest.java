package io.salus.core.zk;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.salus.core.cert.Certificate;
import io.salus.core.protocol.recovery.Coordination;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.api.ACLProvider;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.retry.RetryOneTime;
import org.apache.curator.test.TestingServer;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Id;
import org.apache.zookeeper.server.auth.DigestAuthenticationProvider;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@link CuratorCoordination} against a real ZooKeeper server (Curator's {@link TestingServer}, a real
 * ZooKeeperServer in this JVM, one per class): the shared {@link CoordinationContract} plus what only
 * a real ZooKeeper can do to it: session expiry, a server restart, a server that is down, a lost
 * compare-and-set, and foreign bytes in a znode.
 */
class CuratorCoordinationTest extends CoordinationContract {
    private static TestingServer server;
    private static final AtomicInteger NAMESPACES = new AtomicInteger();
    private final List<CuratorFramework> clients = new ArrayList<>();
    private final Map<Coordination, String> bases = new java.util.IdentityHashMap<>();

    @BeforeAll
    static void startZooKeeper() throws Exception {
        server = new TestingServer(true);
    }

    @AfterAll
    static void stopZooKeeper() throws Exception {
        server.close();
    }

    @AfterEach
    void closeClients() {
        clients.forEach(CuratorFramework::close);
    }

    private CuratorFramework client() throws InterruptedException {
        CuratorFramework c = CuratorFrameworkFactory.builder().connectString(server.getConnectString())
                .sessionTimeoutMs(30_000).connectionTimeoutMs(15_000)
                .retryPolicy(new ExponentialBackoffRetry(100, 5)).build();
        clients.add(c);
        c.start();
        assertTrue(c.blockUntilConnected(60, TimeUnit.SECONDS), "connect to " + server.getConnectString());
        return c;
    }

    @Override
    Coordination newStore() throws Exception {
        String base = CuratorCoordination.volumePath("/salus-test-" + NAMESPACES.incrementAndGet(), "vol1");
        CuratorCoordination c = new CuratorCoordination(client(), base);
        bases.put(c, base);
        return c;
    }

    @Override
    Coordination peer(Coordination c) throws Exception {
        CuratorCoordination p = new CuratorCoordination(client(), bases.get(c));
        bases.put(p, bases.get(c));
        return p;
    }

    /** Expires the client's session on the server, as a long GC pause or a partition would. */
    private static void expireSession(CuratorFramework c) throws Exception {
        ZooKeeper zk = c.getZookeeperClient().getZooKeeper();
        CountDownLatch connected = new CountDownLatch(1);
        ZooKeeper twin = new ZooKeeper(server.getConnectString(), 30_000, e -> {
            if (e.getState() == org.apache.zookeeper.Watcher.Event.KeeperState.SyncConnected) {
                connected.countDown();
            }
        }, zk.getSessionId(), zk.getSessionPasswd());
        assertTrue(connected.await(60, TimeUnit.SECONDS));
        twin.close(); // closing a session from another connection expires it for the owner
    }

    @Test
    void sessionExpiryLosesNothingAndTheStoreKeepsWorking() throws Exception {
        CuratorCoordination c = (CuratorCoordination) newStore();
        CuratorFramework client = clients.get(clients.size() - 1);
        c.putCheckpoint(checkpoint(R0, 1, 5));
        c.report(2, 0, report(4, 6L));
        c.putLcp(lcp(2, 4));
        CountDownLatch lost = new CountDownLatch(1);
        client.getConnectionStateListenable().addListener((cl, s) -> {
            if (s == ConnectionState.LOST) {
                lost.countDown();
            }
        });
        long session = client.getZookeeperClient().getZooKeeper().getSessionId();
        expireSession(client);
        assertTrue(lost.await(60, TimeUnit.SECONDS), "Curator reports the session as LOST");
        // nothing was ephemeral: a new session reads every value, and writes go on
        assertEquals(5, indexOf(c.latestCheckpoint(R0, VALID)));
        assertNotEquals(session, client.getZookeeperClient().getZooKeeper().getSessionId(), "a new session");
        assertEquals(Map.of(0, report(4, 6L)), c.reports(2));
        assertEquals(lcp(2, 4), c.putLcp(lcp(2, 9)), "the LCP agreed before the expiry still wins");
        c.putCheckpoint(checkpoint(R0, 1, 7));
        assertEquals(7, indexOf(c.latestCheckpoint(R0, VALID)));
    }

    @Test
    void aServerRestartLosesNothingAndADownServerIsAClearError() throws Exception {
        Coordination c = newStore();
        c.putCheckpoint(checkpoint(R0, 3, 11));
        c.putLcp(lcp(5, 20));
        String base = bases.get(c);
        server.stop();
        try {
            CuratorFramework impatient = CuratorFrameworkFactory.builder().connectString(server.getConnectString())
                    .sessionTimeoutMs(4_000).connectionTimeoutMs(1_000).retryPolicy(new RetryOneTime(100)).build();
            clients.add(impatient);
            impatient.start();
            CoordinationStoreException e = assertThrows(CoordinationStoreException.class,
                    () -> new CuratorCoordination(impatient, base).lcp(5));
            assertTrue(e.getMessage().contains(base + "/lcp/5") && e.getMessage().contains(server.getConnectString()),
                    e.getMessage());
        } finally {
            server.restart();
        }
        assertEquals(11, indexOf(c.latestCheckpoint(R0, VALID)));
        assertEquals(Optional.of(lcp(5, 20)), c.lcp(5));
    }

    /**
     * Hostile: just before this writer files index 7, a peer files index 9. Filed checkpoints are
     * never replaced, so the late, older one cannot roll the region back: the reader still gets 9.
     */
    @Test
    void aLateOlderCheckpointDoesNotRollBackAPeersNewerOne() throws Exception {
        CuratorCoordination a = (CuratorCoordination) newStore();
        Coordination b = peer(a);
        a.putCheckpoint(checkpoint(R0, 1, 5));
        AtomicBoolean once = new AtomicBoolean();
        AtomicInteger hookRuns = new AtomicInteger();
        a.beforeConditionalWrite(path -> {
            hookRuns.incrementAndGet();
            if (once.compareAndSet(false, true)) {
                b.putCheckpoint(checkpoint(R0, 1, 9));
            }
        });
        a.putCheckpoint(checkpoint(R0, 1, 7));
        assertEquals(9, indexOf(a.latestCheckpoint(R0, VALID)));
        assertEquals(1, hookRuns.get(), "one create, no read-compare-write loop");
        a.putCheckpoint(checkpoint(R0, 1, 12));
        assertEquals(12, indexOf(b.latestCheckpoint(R0, VALID)));
    }

    /** Hostile: the region's first checkpoint is created by a peer between this writer's read and create. */
    @Test
    void aPeersCreateBetweenCheckAndCreateIsKept() throws Exception {
        CuratorCoordination a = (CuratorCoordination) newStore();
        Coordination b = peer(a);
        AtomicBoolean once = new AtomicBoolean();
        a.beforeConditionalWrite(path -> {
            if (once.compareAndSet(false, true)) {
                b.putCheckpoint(checkpoint(R0, 2, 1));
                b.putLcp(lcp(4, 40));
            }
        });
        a.putCheckpoint(checkpoint(R0, 1, 50)); // older generation: must lose to the peer's
        assertEquals(2, a.latestCheckpoint(R0, VALID).orElseThrow()
                .statement(io.salus.core.cert.Statement.Checkpoint.class).generation());
        assertEquals(lcp(4, 40), a.putLcp(lcp(4, 41)), "the LCP created by the peer first is returned");
    }

    /**
     * Review finding: the reader and the pruner took a filed checkpoint for the region whose
     * directory held it without checking the region its statement names. A faulty replica holding the
     * ZooKeeper credentials copied a genuine CHECKPOINT of region 1 (all three signatures, a newer
     * generation) into region 0's directory under its own correct name: region 0's latest checkpoint
     * became region 1's, and pruning deleted every valid checkpoint of region 0.
     */
    @Test
    void anotherRegionsGenuineCheckpointFiledUnderThisRegionIsNeitherReadNorPrunedFor() throws Exception {
        CuratorCoordination c = (CuratorCoordination) newStore();
        CuratorFramework raw = clients.get(clients.size() - 1);
        Certificate mine = checkpoint(R0, 1, 7);
        c.putCheckpoint(mine);
        Certificate other = checkpoint(R1, 3, 11); // genuine, of region 1
        c.putCheckpoint(other);
        raw.create().forPath(c.checkpointPath(R0) + "/" + CuratorCoordination.checkpointName(other), other.encode());
        assertEquals(Optional.of(mine), c.latestCheckpoint(R0, VALID), "region 1's checkpoint read as region 0's");
        c.pruneCheckpoints(R0, VALID);
        assertEquals(Optional.of(mine), c.latestCheckpoint(R0, VALID), "region 0's valid checkpoint was pruned");
        assertEquals(Optional.of(other), c.latestCheckpoint(R1, VALID));
    }

    @Test
    void foreignBytesInAZnodeAreReportedWithThePath() throws Exception {
        CuratorCoordination c = (CuratorCoordination) newStore();
        CuratorFramework raw = clients.get(clients.size() - 1);
        // checkpoints are signed and filed by anyone with the credentials: garbage is skipped, not fatal
        String cp = c.checkpointPath(R0);
        Certificate good = checkpoint(R0, 1, 1);
        c.putCheckpoint(good);
        raw.create().creatingParentsIfNeeded().forPath(cp + "/not-a-checkpoint", new byte[] {1, 8, 0});
        raw.create().forPath(cp + "/9-9-" + "ab".repeat(32), new byte[] {1, 8, 0}); // well named, foreign bytes
        raw.create().forPath(cp + "/8-8-" + "cd".repeat(32), checkpoint(R0, 8, 8).encode()); // name lies
        assertEquals(Optional.of(good), c.latestCheckpoint(R0, VALID));
        raw.create().creatingParentsIfNeeded().forPath(c.reportPath(3, 0), new byte[] {1, 0, 0});
        CoordinationStoreException e = assertThrows(CoordinationStoreException.class, () -> c.reports(3));
        assertTrue(e.getMessage().contains(c.reportPath(3, 0)) && e.getMessage().contains("truncated"),
                e.getMessage());
        raw.create().creatingParentsIfNeeded().forPath(c.lcpPath(6),
                CuratorCoordination.encodeLcp(lcp(7, 1))); // an LCP filed under the wrong epoch
        e = assertThrows(CoordinationStoreException.class, () -> c.lcp(6));
        assertTrue(e.getMessage().contains("epoch 7, not 6"), e.getMessage());
    }

    @Test
    void aBadBasePathIsRefusedWithTheFix() throws Exception {
        CuratorFramework c = client();
        for (String bad : new String[] {"relative/path", "/trailing/", "/", "", "/a//b"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> new CuratorCoordination(c, bad), bad);
            assertTrue(e.getMessage().contains("/salus/volumes/<volume>/coordination"), e.getMessage());
        }
        assertThrows(IllegalArgumentException.class, () -> new CuratorCoordination(null, "/x"));
    }

    @Test
    void volumeNamesNeedNoEscapingByTheCaller() throws Exception {
        CuratorFramework raw = client();
        CuratorCoordination c = new CuratorCoordination(raw, CuratorCoordination.volumePath("/salus-odd", "a/../b ü"));
        io.salus.core.cert.RegionId odd = new io.salus.core.cert.RegionId("..", 3);
        Certificate cp = checkpoint(odd, 1, 2);
        c.putCheckpoint(cp);
        assertEquals(Optional.of(cp), c.latestCheckpoint(odd, VALID));
    }

    /**
     * Hostile: another ZooKeeper client tries to overwrite the coordination state. The LCP is not
     * signed, so the base path must be writable only by Salus: a client built with an ACL provider
     * (here digest auth) creates every znode, parents included, with that ACL, and a client without
     * the credentials gets a clear error and changes nothing.
     */
    @Test
    void aClientWithoutTheCredentialsCannotChangeTheAgreedState() throws Exception {
        String secret = "salus:" + NAMESPACES.get();
        // a mutable list: ZooKeeper's validateACL calls contains(null), which List.of refuses with an NPE
        List<ACL> acl = new ArrayList<>(List.of(
                new ACL(ZooDefs.Perms.ALL, new Id("digest", DigestAuthenticationProvider.generateDigest(secret))),
                new ACL(ZooDefs.Perms.READ, ZooDefs.Ids.ANYONE_ID_UNSAFE)));
        CuratorFramework owner = CuratorFrameworkFactory.builder().connectString(server.getConnectString())
                .retryPolicy(new ExponentialBackoffRetry(100, 5)).authorization("digest", secret.getBytes())
                .aclProvider(new ACLProvider() {
                    @Override
                    public List<ACL> getDefaultAcl() {
                        return acl;
                    }

                    @Override
                    public List<ACL> getAclForPath(String path) {
                        return acl;
                    }
                }).build();
        clients.add(owner);
        owner.start();
        String base = CuratorCoordination.volumePath("/salus-acl-" + NAMESPACES.incrementAndGet(), "vol1");
        CuratorCoordination salus = new CuratorCoordination(owner, base);
        salus.putLcp(lcp(1, 5));
        salus.putCheckpoint(checkpoint(R0, 1, 5));
        salus.report(1, 0, report(4));

        CuratorCoordination intruder = new CuratorCoordination(client(), base);
        assertEquals(Optional.of(lcp(1, 5)), intruder.lcp(1), "reading is allowed");
        CoordinationStoreException e = assertThrows(CoordinationStoreException.class,
                () -> intruder.putCheckpoint(checkpoint(R0, 1, 9)));
        assertTrue(e.getMessage().contains(base + "/checkpoints/") && e.getMessage().contains("NoAuth"),
                e.getMessage());
        assertThrows(CoordinationStoreException.class, () -> intruder.report(1, 0, report(9)));
        assertThrows(CoordinationStoreException.class, () -> intruder.report(1, 1, report(9)));
        assertThrows(CoordinationStoreException.class, () -> intruder.putLcp(lcp(2, 9)));
        assertEquals(5, indexOf(salus.latestCheckpoint(R0, VALID)));
        assertEquals(Map.of(0, report(4)), salus.reports(1));
        assertEquals(Optional.empty(), salus.lcp(2));
    }
}
