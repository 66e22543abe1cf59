package io.salus.hdfs.placement;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.BooleanSupplier;

import io.salus.hdfs.MiniDfs;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.BlockLocation;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.server.blockmanagement.DatanodeDescriptor;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * Location hints on a real MiniDFSCluster (one NameNode, three DataNodes of 32 MiB simulated
 * capacity each). Tests run in order because the "full" test leaves DataNode 2 over its threshold.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class LocationHintPlacementTest {
  private static final long CAPACITY = 32L << 20;
  private static MiniDFSCluster cluster;
  private static DistributedFileSystem fs;
  private static LocationHintPlacementPolicy policy;

  @BeforeAll
  static void start() throws Exception {
    Configuration conf = MiniDfs.conf("placement");
    conf.set("dfs.block.replicator.classname", LocationHintPlacementPolicy.class.getName());
    conf.setDouble(LocationHintPlacementPolicy.MAX_UTILIZATION_KEY, 0.5);
    conf.setInt(LocationHintPlacementPolicy.MAX_XCEIVERS_KEY, 6);
    conf.setDouble(LocationHintPlacementPolicy.MAX_LOAD_FACTOR_KEY, 0); // only absolute rule here
    conf.setBoolean("dfs.namenode.redundancy.considerLoad", false); // isolate our load rule
    cluster = new MiniDFSCluster.Builder(conf).numDataNodes(3).storagesPerDatanode(1)
        .storageCapacities(new long[][] {{CAPACITY}, {CAPACITY}, {CAPACITY}}).build();
    cluster.waitActive();
    fs = cluster.getFileSystem();
    policy = (LocationHintPlacementPolicy) cluster.getNamesystem().getBlockManager()
        .getBlockPlacementPolicy();
  }

  @AfterAll
  static void stop() {
    if (cluster != null) {
      cluster.shutdown(true);
    }
  }

  private static InetSocketAddress xfer(int dn) {
    return cluster.getDataNodes().get(dn).getXferAddress();
  }

  private static String name(InetSocketAddress a) {
    return a.getAddress().getHostAddress() + ":" + a.getPort();
  }

  private static List<String> locations(Path p) throws Exception {
    FileStatus st = fs.getFileStatus(p);
    List<String> names = new ArrayList<>();
    for (BlockLocation b : fs.getFileBlockLocations(st, 0, st.getLen())) {
      names.addAll(Arrays.asList(b.getNames()));
    }
    return names;
  }

  private static void writeHinted(Path p, int dn, int bytes, long blockSize) throws Exception {
    try (FSDataOutputStream out =
        LocationHints.create(fs, p, (short) 1, blockSize, true, xfer(dn))) {
      out.write(new byte[bytes]);
    }
  }

  private static DatanodeDescriptor nnView(int dn) {
    DataNode d = cluster.getDataNodes().get(dn);
    try {
      return cluster.getNamesystem().getBlockManager().getDatanodeManager()
          .getDatanode(d.getDatanodeId());
    } catch (java.io.IOException e) {
      throw new AssertionError(e);
    }
  }

  private static void waitFor(String what, BooleanSupplier cond) throws Exception {
    long deadline = System.currentTimeMillis() + 60_000;
    while (!cond.getAsBoolean()) {
      if (System.currentTimeMillis() > deadline) {
        throw new AssertionError("timed out waiting for " + what);
      }
      cluster.triggerHeartbeats();
      Thread.sleep(200);
    }
  }

  @Test
  @Order(1)
  void hundredHintedReplicationOneFilesLandOnTheHintedDataNode() throws Exception {
    long followedBefore = policy.getMetrics().followed();
    for (int i = 0; i < 100; i++) {
      int dn = i % 3;
      Path p = new Path("/hinted/f" + i);
      writeHinted(p, dn, 2048, 1 << 20);
      List<String> locs = locations(p);
      assertEquals(List.of(name(xfer(dn))), locs, "file " + p + " hinted to DataNode " + dn);
    }
    assertEquals(100, policy.getMetrics().followed() - followedBefore);
    assertEquals(0, policy.getMetrics().fallbacks(), "no fallback expected: " + policy.getMetrics());
  }

  @Test
  @Order(2)
  void normalFilesBehaveAsBefore() throws Exception {
    long hintedBefore = policy.getMetrics().hintedRequests();
    Path p = new Path("/normal/three-replicas");
    try (FSDataOutputStream out = fs.create(p, true, 4096, (short) 3, 1 << 20)) {
      out.write(new byte[4096]);
    }
    List<String> locs = locations(p);
    assertEquals(3, locs.size());
    assertEquals(3, locs.stream().distinct().count());
    assertEquals(hintedBefore, policy.getMetrics().hintedRequests(),
        "a file without favored nodes must not go through the hint logic");
  }

  @Test
  @Order(3)
  void busyDataNodeMakesThePolicyFallBack() throws Exception {
    // Keep 8 write pipelines open on DataNode 1: each holds an active DataXceiver there.
    List<FSDataOutputStream> open = new ArrayList<>();
    try {
      for (int i = 0; i < 8; i++) {
        FSDataOutputStream out =
            LocationHints.create(fs, new Path("/busy/open" + i), (short) 1, 1 << 20, true, xfer(1));
        out.write(new byte[1024]);
        out.hflush();
        open.add(out);
      }
      waitFor("NameNode to see DataNode 1 busy", () -> nnView(1).getXceiverCount() > 6);
      // Counted only now: the last of the 8 pipelines may already have fallen back if a
      // heartbeat reported DataNode 1 busy while they were being opened (seen on a loaded machine).
      long loadBefore =
          policy.getMetrics().fallbacks(LocationHintPlacementPolicy.FallbackReason.LOAD);
      Path p = new Path("/busy/hinted-to-busy");
      writeHinted(p, 1, 2048, 1 << 20);
      List<String> locs = locations(p);
      assertEquals(1, locs.size());
      assertNotEquals(name(xfer(1)), locs.get(0), "busy DataNode must not get the block");
      assertEquals(loadBefore + 1,
          policy.getMetrics().fallbacks(LocationHintPlacementPolicy.FallbackReason.LOAD));
    } finally {
      for (FSDataOutputStream out : open) {
        out.close();
      }
    }
    // Once the load is gone the hint is followed again.
    waitFor("DataNode 1 load to drop", () -> nnView(1).getXceiverCount() <= 6);
    Path again = new Path("/busy/hinted-after");
    writeHinted(again, 1, 2048, 1 << 20);
    assertEquals(List.of(name(xfer(1))), locations(again));
  }

  @Test
  @Order(4)
  void fullDataNodeMakesThePolicyFallBack() throws Exception {
    long utilBefore =
        policy.getMetrics().fallbacks(LocationHintPlacementPolicy.FallbackReason.UTILIZATION);
    // Fill DataNode 2 to ~63% of its 32 MiB with hinted files. The threshold is lifted while
    // filling, because the NameNode's view (heartbeats, space reserved for blocks being written)
    // could otherwise already refuse the last fill files.
    policy.setMaxUtilization(1.0);
    try {
      for (int i = 0; i < 5; i++) {
        Path p = new Path("/full/fill" + i);
        writeHinted(p, 2, 4 << 20, 4 << 20);
        assertEquals(List.of(name(xfer(2))), locations(p));
      }
    } finally {
      policy.setMaxUtilization(0.5);
    }
    waitFor("NameNode to see DataNode 2 over 50% used", () -> {
      DatanodeDescriptor d = nnView(2);
      return d.getCapacity() > 0 && 1.0 - (double) d.getRemaining() / d.getCapacity() > 0.5;
    });
    Path p = new Path("/full/hinted-to-full");
    writeHinted(p, 2, 2048, 1 << 20);
    List<String> locs = locations(p);
    assertEquals(1, locs.size());
    assertNotEquals(name(xfer(2)), locs.get(0), "full DataNode must not get the block");
    assertEquals(utilBefore + 1,
        policy.getMetrics().fallbacks(LocationHintPlacementPolicy.FallbackReason.UTILIZATION),
        policy.getMetrics().toString());
  }
}
