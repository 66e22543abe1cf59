package io.salus.core.zk;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.salus.core.cert.Statement;
import io.salus.core.protocol.recovery.Coordination;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.test.InstanceSpec;
import org.apache.curator.test.TestingCluster;
import org.apache.curator.test.TestingZooKeeperServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@link CuratorCoordination} on a real three-server ZooKeeper ensemble (Curator's
 * {@link TestingCluster}) whose leader is killed between a writer's read and its conditional write:
 * the compare-and-set and the first-writer-wins LCP must hold across the leader change, and nothing
 * acknowledged before it may be lost.
 */
class CuratorCoordinationEnsembleTest {
    private static TestingCluster cluster;

    @BeforeAll
    static void start() throws Exception {
        cluster = new TestingCluster(3);
        cluster.start();
    }

    @AfterAll
    static void stop() throws Exception {
        cluster.close();
    }

    private static CuratorFramework client() throws InterruptedException {
        CuratorFramework c = CuratorFrameworkFactory.builder().connectString(cluster.getConnectString())
                .sessionTimeoutMs(30_000).connectionTimeoutMs(15_000)
                .retryPolicy(new ExponentialBackoffRetry(200, 10)).build();
        c.start();
        assertTrue(c.blockUntilConnected(60, TimeUnit.SECONDS), "connect to " + cluster.getConnectString());
        return c;
    }

    @Test
    void theLeaderDiesBetweenReadAndConditionalWrite() throws Exception {
        try (CuratorFramework ca = client(); CuratorFramework cb = client()) {
            String base = CuratorCoordination.volumePath("/salus-ensemble", "vol1");
            CuratorCoordination a = new CuratorCoordination(ca, base);
            Coordination b = new CuratorCoordination(cb, base);
            a.putCheckpoint(CoordinationContract.checkpoint(CoordinationContract.R0, 1, 5));
            a.report(1, 0, CoordinationContract.report(3, 4L));
            AtomicBoolean once = new AtomicBoolean();
            a.beforeConditionalWrite(path -> {
                if (once.compareAndSet(false, true)) {
                    try {
                        InstanceSpec leader = leader();
                        b.putCheckpoint(CoordinationContract.checkpoint(CoordinationContract.R0, 1, 9));
                        assertTrue(cluster.killServer(leader), "killed the leader " + leader);
                    } catch (Exception e) {
                        throw new AssertionError(e);
                    }
                }
            });
            a.putCheckpoint(CoordinationContract.checkpoint(CoordinationContract.R0, 1, 7));
            assertTrue(once.get());
            assertEquals(9, a.latestCheckpoint(CoordinationContract.R0, CoordinationContract.VALID).orElseThrow()
                    .statement(Statement.Checkpoint.class).throughIndex(), "the stale write was not applied");
            assertEquals(Map.of(0, CoordinationContract.report(3, 4L)), b.reports(1), "written before the failover");
            assertEquals(CoordinationContract.lcp(2, 10), b.putLcp(CoordinationContract.lcp(2, 10)));
            assertEquals(CoordinationContract.lcp(2, 10), a.putLcp(CoordinationContract.lcp(2, 11)));
        }
    }

    private static InstanceSpec leader() throws Exception {
        for (TestingZooKeeperServer s : cluster.getServers()) {
            if (s.getQuorumPeer() != null && s.getQuorumPeer().leader != null) {
                return s.getInstanceSpec();
            }
        }
        throw new AssertionError("no server of " + cluster.getConnectString() + " is the leader");
    }
}
