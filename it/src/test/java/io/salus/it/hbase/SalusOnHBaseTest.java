package io.salus.it.hbase;

import static org.junit.jupiter.api.Assertions.*;

import io.salus.core.hbase.RrsPlacement;
import io.salus.core.hbase.RrsPlacementReconciler;
import io.salus.core.hbase.SalusPlacementObserver;
import io.salus.core.hbase.SalusTableLayout;
import io.salus.core.hbase.VolumeGeometry;
import io.salus.core.hbase.VolumeLayoutException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HBaseTestingUtility;
import org.apache.hadoop.hbase.MiniHBaseCluster;
import org.apache.hadoop.hbase.ServerName;
import org.apache.hadoop.hbase.StartMiniClusterOption;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptor;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.Durability;
import org.apache.hadoop.hbase.client.RegionInfo;
import org.apache.hadoop.hbase.client.TableDescriptor;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.regionserver.DisabledRegionSplitPolicy;
import org.apache.log4j.Level;
import org.apache.log4j.LogManager;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * The Salus volume layout and the RRS placement rule on a real HBase mini cluster with three region servers and
 * {@link SalusPlacementObserver} as the master coprocessor (local file system; no HDFS, so DFS replication is
 * checked on the descriptor). One cluster for the class; the placement test, which stops and starts region
 * servers, runs last.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class SalusOnHBaseTest {
  /** A generous deadline for the cluster to settle; never a timing assertion. */
  private static final long SETTLE_MS = 240_000;
  private static HBaseTestingUtility util;
  private static Connection connection;
  private static Admin admin;

  @BeforeAll
  static void start() throws Exception {
    LogManager.getRootLogger().setLevel(Level.WARN);
    LogManager.getLogger("io.salus.core.hbase").setLevel(Level.INFO); // the moves the placement check makes
    util = new HBaseTestingUtility();
    Configuration conf = util.getConfiguration();
    conf.setInt("hbase.master.info.port", -1);
    conf.setInt("hbase.regionserver.info.port", -1);
    conf.setBoolean("hbase.unsafe.stream.capability.enforce", false);
    conf.set("hbase.wal.provider", "filesystem");
    conf.setInt("hbase.regionserver.handler.count", 8);
    conf.setInt("hbase.client.retries.number", 10);
    // the one cluster-wide Salus key (docs/salus-on-hbase.md); a short check period for the test
    conf.set("hbase.coprocessor.master.classes", SalusPlacementObserver.class.getName());
    conf.setLong(SalusPlacementObserver.PERIOD_KEY, 1000);
    util.startMiniZKCluster();
    util.startMiniHBaseCluster(StartMiniClusterOption.builder().numMasters(1).numRegionServers(3).build());
    connection = util.getConnection();
    admin = connection.getAdmin();
  }

  @AfterAll
  static void stop() throws Exception {
    if (admin != null) {
      admin.close();
    }
    if (util != null) {
      util.shutdownMiniCluster();
    }
  }

  private static final int BS = 4096;
  private static final long BPR = 16;

  @Test
  @Order(1)
  void createsThreeIdenticallySplitTablesWithTheSalusProperties() throws Exception {
    VolumeGeometry g = new VolumeGeometry("layout", (3 * BPR + 5) * BS, BS, BPR); // 4 regions, last one partial
    assertEquals(4, g.numRegions());
    SalusTableLayout.create(admin, g);
    try {
      assertTrue(Arrays.stream(admin.listNamespaces()).anyMatch("salus"::equals), "namespace salus created");
      List<byte[]> expectedStarts = List.of(new byte[0], VolumeGeometry.rowKey(16), VolumeGeometry.rowKey(32),
          VolumeGeometry.rowKey(48));
      for (int r = 0; r < 3; r++) {
        TableName t = TableName.valueOf("salus:layout_r" + r);
        assertTrue(admin.tableExists(t), t + " exists");
        TableDescriptor d = admin.getDescriptor(t);
        // issue 27: HBase compacts the flush files; every version a stored checkpoint names stays (endpoint hook)
        assertTrue(d.isCompactionEnabled(), "COMPACTION_ENABLED=true on " + t);
        assertEquals(DisabledRegionSplitPolicy.class.getName(), d.getRegionSplitPolicyClassName());
        assertFalse(d.isSplitEnabled());
        assertFalse(d.isMergeEnabled());
        assertEquals(Durability.SKIP_WAL, d.getDurability());
        ColumnFamilyDescriptor[] cfs = d.getColumnFamilies();
        // blocks and the region tree's nodes in "b" ("t" for the nodes unless -Dsalus.layout.treeFamily=false)
        boolean tree = SalusTableLayout.treeFamily();
        assertEquals(tree ? 2 : 1, cfs.length);
        assertEquals("b", cfs[0].getNameAsString());
        if (tree) {
          assertEquals("t", cfs[1].getNameAsString());
        }
        for (ColumnFamilyDescriptor cf : cfs) {
          assertEquals(1, cf.getDFSReplication(), "column-family DFS replication 1 on " + t);
          assertEquals(Integer.MAX_VALUE, cf.getMaxVersions(), "every version kept until a compaction on " + t);
          assertEquals(Long.toString(SalusTableLayout.COMPACTION_MIN_SIZE),
              cf.getConfigurationValue(SalusTableLayout.COMPACTION_MIN_SIZE_KEY),
              "checkpoint flushes are small: the ratio rule applies above 1 MiB on " + t);
        }
        assertEquals(g, VolumeGeometry.parse(d.getValue(SalusTableLayout.LAYOUT_ATTRIBUTE), 1));
        assertEquals(Integer.toString(r), d.getValue(SalusTableLayout.REPLICA_ATTRIBUTE));
        List<RegionInfo> regions = new ArrayList<>(admin.getRegions(t));
        regions.sort(RegionInfo.COMPARATOR);
        assertEquals(4, regions.size());
        for (int i = 0; i < 4; i++) {
          assertArrayEquals(expectedStarts.get(i), regions.get(i).getStartKey(), t + " region " + i + " start");
          byte[] end = i == 3 ? new byte[0] : expectedStarts.get(i + 1);
          assertArrayEquals(end, regions.get(i).getEndKey(), t + " region " + i + " end");
        }
      }
      assertEquals(g, SalusTableLayout.read(admin, "layout"));

      // a second create of the same name is refused and says what to do
      VolumeLayoutException again = assertThrows(VolumeLayoutException.class, () -> SalusTableLayout.create(admin, g));
      assertTrue(again.getMessage().contains("already exists"), again.getMessage());

      // a partial previous creation (one table missing) is refused with the fix, and delete removes the leftovers
      admin.disableTable(TableName.valueOf("salus:layout_r1"));
      admin.deleteTable(TableName.valueOf("salus:layout_r1"));
      VolumeLayoutException partial = assertThrows(VolumeLayoutException.class,
          () -> SalusTableLayout.create(admin, g));
      assertTrue(partial.getMessage().contains("part-way") && partial.getMessage().contains("SalusTableLayout.delete"),
          partial.getMessage());
      VolumeLayoutException incomplete = assertThrows(VolumeLayoutException.class,
          () -> SalusTableLayout.read(admin, "layout"));
      assertTrue(incomplete.getMessage().contains("salus:layout_r1"), incomplete.getMessage());
    } finally {
      SalusTableLayout.delete(admin, "layout");
    }
    for (int r = 0; r < 3; r++) {
      assertFalse(admin.tableExists(TableName.valueOf("salus:layout_r" + r)), "deleted _r" + r);
    }
    assertFalse(SalusTableLayout.delete(admin, "layout"), "nothing left to delete");
    // after the cleanup the name can be used again
    SalusTableLayout.create(admin, g);
    assertEquals(g, SalusTableLayout.read(admin, "layout"));
    assertTrue(SalusTableLayout.delete(admin, "layout"));
  }

  @Test
  @Order(2)
  void refusesANameTakenByANonSalusTableAndNeverDeletesIt() throws Exception {
    VolumeGeometry g = new VolumeGeometry("foreign", 2 * BPR * BS, BS, BPR);
    TableName foreign = TableName.valueOf("salus:foreign_r2");
    if (!Arrays.stream(admin.listNamespaces()).anyMatch("salus"::equals)) {
      admin.createNamespace(org.apache.hadoop.hbase.NamespaceDescriptor.create("salus").build());
    }
    admin.createTable(TableDescriptorBuilder.newBuilder(foreign)
        .setColumnFamily(ColumnFamilyDescriptorBuilder.of("f")).build());
    try {
      VolumeLayoutException e = assertThrows(VolumeLayoutException.class, () -> SalusTableLayout.create(admin, g));
      assertTrue(e.getMessage().contains("not a Salus replica table") && e.getMessage().contains("another"),
          e.getMessage());
      assertFalse(admin.tableExists(TableName.valueOf("salus:foreign_r0")), "nothing created on a clash");
      VolumeLayoutException d = assertThrows(VolumeLayoutException.class,
          () -> SalusTableLayout.delete(admin, "foreign"));
      assertTrue(d.getMessage().contains("refusing"), d.getMessage());
      assertTrue(admin.tableExists(foreign), "a foreign table is never deleted");
    } finally {
      admin.disableTable(foreign);
      admin.deleteTable(foreign);
    }
  }

  @Test
  @Order(3)
  void badGeometryIsRefusedWithTheFix() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> new VolumeGeometry("v", 64L * BS, BS, 3));
    assertTrue(e.getMessage().contains("power of two"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> new VolumeGeometry("v", 1000, BS, BPR));
    assertTrue(e.getMessage().contains("multiple of the block size"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> new VolumeGeometry("a:b", 64L * BS, BS, BPR));
    assertTrue(e.getMessage().contains("not valid"), e.getMessage());
  }

  @Test
  @Order(10)
  void everyRrsStaysOnThreeDistinctRegionServersAcrossRestartAndBalancer() throws Exception {
    VolumeGeometry g = new VolumeGeometry("placed", 6 * BPR * BS, BS, BPR); // 6 RRSs
    // a hostile neighbour: a table that claims the Salus layout but whose replica attribute is no number must not
    // stop the placement of the real volume
    TableName odd = TableName.valueOf("salus:odd_rx");
    if (!Arrays.stream(admin.listNamespaces()).anyMatch("salus"::equals)) {
      admin.createNamespace(org.apache.hadoop.hbase.NamespaceDescriptor.create("salus").build());
    }
    admin.createTable(TableDescriptorBuilder.newBuilder(odd).setColumnFamily(ColumnFamilyDescriptorBuilder.of("b"))
        .setValue(SalusTableLayout.LAYOUT_ATTRIBUTE, "junk").setValue(SalusTableLayout.REPLICA_ATTRIBUTE, "x")
        .build());
    SalusTableLayout.create(admin, g);
    try {
      awaitDistinct("after creation");

      // a region server stops (its regions are reassigned to the two others, colocating replicas), a new one
      // starts: every RRS must be spread over three servers again
      MiniHBaseCluster cluster = util.getMiniHBaseCluster();
      int victim = -1;
      int metaHolder = cluster.getServerWithMeta();
      for (int i = 0; i < cluster.getLiveRegionServerThreads().size(); i++) {
        if (i != metaHolder) {
          victim = i;
          break;
        }
      }
      ServerName stopped = cluster.getRegionServer(victim).getServerName();
      cluster.stopRegionServer(victim);
      cluster.waitOnRegionServer(victim);
      // with two live servers every RRS has two replicas on one server: the next step really has work to do
      awaitPlacement("after " + stopped + " stopped", rrs -> rrs.size() == 2 ? null : "not colocated yet");
      cluster.startRegionServer();
      awaitDistinct("after " + stopped + " stopped and a new region server started");

      // a fourth region server joins and the balancer runs (it moves regions to the new server): still distinct
      cluster.startRegionServer();
      admin.balancerSwitch(true, true);
      admin.balance();
      awaitDistinct("after a fourth region server joined and the balancer ran");
    } finally {
      SalusTableLayout.delete(admin, "placed");
      admin.disableTable(odd);
      admin.deleteTable(odd);
    }
  }

  /** Polls until every RRS of every volume has three distinct live servers and nothing is in transition. */
  private static void awaitDistinct(String when) throws Exception {
    awaitPlacement(when, servers -> servers.size() == 3 ? null : "not on 3 distinct live servers");
  }

  /**
   * Polls until, with nothing in transition, every RRS of volume "placed" satisfies {@code check} (given the set
   * of distinct live servers its replicas are on; returns null when satisfied, else the problem).
   */
  private static void awaitPlacement(String when, java.util.function.Function<Set<ServerName>, String> check)
      throws Exception {
    RrsPlacementReconciler reader = new RrsPlacementReconciler(connection);
    Supplier<String> problems = () -> {
      try {
        if (!util.getMiniHBaseCluster().getMaster().getAssignmentManager().getRegionsInTransition().isEmpty()) {
          return "regions in transition";
        }
        Set<ServerName> live = new HashSet<>(admin.getRegionServers());
        List<String> bad = new ArrayList<>();
        Map<String, List<List<RrsPlacement.Replica>>> volumes = reader.readVolumes(admin);
        if (!volumes.containsKey("placed")) {
          return "volume not visible yet";
        }
        List<List<RrsPlacement.Replica>> sets = volumes.get("placed");
        for (int i = 0; i < sets.size(); i++) {
          List<RrsPlacement.Replica> rrs = sets.get(i);
          Set<ServerName> servers = new HashSet<>();
          for (RrsPlacement.Replica r : rrs) {
            if (r.server() != null && live.contains(r.server())) {
              servers.add(r.server());
            }
          }
          if (rrs.stream().anyMatch(r -> r.server() == null || !live.contains(r.server()))) {
            return "RRS " + i + " has a replica not yet assigned to a live server";
          }
          String problem = check.apply(servers);
          if (problem != null) {
            bad.add("RRS " + i + " " + problem + ": " + rrs.stream().map(r -> String.valueOf(r.server())).toList());
          }
        }
        return bad.isEmpty() ? null : bad.size() + " RRS(s): " + bad;
      } catch (Exception e) {
        return e.toString();
      }
    };
    long deadline = System.currentTimeMillis() + SETTLE_MS;
    String last = problems.get();
    while (last != null && System.currentTimeMillis() < deadline) {
      Thread.sleep(500);
      last = problems.get();
    }
    assertNull(last, when);
  }
}
