package io.salus.it.salus;

import io.salus.core.hbase.SalusPlacementObserver;
import io.salus.core.hbase.SalusTableLayout;
import io.salus.core.hbase.VolumeGeometry;
import io.salus.core.hbase.endpoint.EndpointKeyring;
import io.salus.core.hbase.endpoint.SalusReplicaEndpoint;
import java.util.HashSet;
import java.util.Set;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HBaseTestingUtility;
import org.apache.hadoop.hbase.ServerName;
import org.apache.hadoop.hbase.StartMiniClusterOption;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.regionserver.HRegion;
import org.apache.hadoop.hbase.regionserver.HRegionServer;
import org.apache.hadoop.hbase.util.Bytes;
import org.apache.hadoop.hbase.util.JVMClusterUtil;
import org.apache.log4j.Level;
import org.apache.log4j.LogManager;

/**
 * One HBase mini cluster with three region servers running the Salus replica endpoint (as in
 * SalusReplicaEndpointTest): a production keyring (a fresh {@code KeyringFile} pair), the placement observer, and the endpoint's default replica storage
 * (Salus log on a mini HDFS, each region server paired with its own DataNode; blocks in the region's cells). Nothing is mocked.
 */
final class SalusMiniCluster implements AutoCloseable {
  /** Log entries between checkpoints on this cluster (set explicitly: the default is 64). */
  static final int CHECKPOINT_EVERY = 4;
  static final long DEADLINE_MS = 240_000;
  final HBaseTestingUtility util = new HBaseTestingUtility();
  /** host:port of each DataNode (transfer address), the favored node of the region server paired with it. */
  final java.util.List<String> dataNodes = new java.util.ArrayList<>();

  SalusMiniCluster() throws Exception {
    this(c -> { });
  }

  /** JUnit tag of the test classes that run on {@link #shared()} (it/pom.xml runs them in one JVM, one after another). */
  static final String SHARED_TAG = "salus-shared-cluster";
  private static SalusMiniCluster shared;
  private static boolean sharedShutDown;

  /**
   * The one default-configured cluster of this JVM for the classes annotated {@link OnSharedSalusCluster} (they
   * configure nothing of their own): started by the first of them, shut down after the last test class of the JVM
   * ({@link SharedShutdown}). They run on it one after another instead of each starting and stopping a mini DFS,
   * ZooKeeper and HBase of its own; their volume names differ, so each class sees only its own volumes. Such a class
   * never closes it. Only for JVMs that start no other mini cluster: HBaseTestingUtility's shutdown deletes the
   * JVM-wide java.io.tmpdir it set (see it/pom.xml), so there is no second start after the shutdown.
   */
  static synchronized SalusMiniCluster shared() throws Exception {
    if (sharedShutDown) {
      throw new IllegalStateException("the shared cluster of this JVM was shut down; it is not started twice");
    }
    if (shared == null) {
      shared = new SalusMiniCluster();
    }
    return shared;
  }

  /**
   * Shuts the shared cluster down when JUnit closes its root context (after the last test class of the run). Not a
   * JVM shutdown hook: HBase's and Hadoop's shutdown code removes shutdown hooks, which fails once the JVM is
   * exiting ("Shutdown in progress"), and the cluster's data directory stayed behind.
   */
  static final class SharedShutdown implements org.junit.jupiter.api.extension.BeforeAllCallback {
    @Override
    public void beforeAll(org.junit.jupiter.api.extension.ExtensionContext context) {
      context.getRoot().getStore(org.junit.jupiter.api.extension.ExtensionContext.Namespace.create(SharedShutdown.class))
          .getOrComputeIfAbsent(SharedShutdown.class, k -> new Closer(), Closer.class);
    }
  }

  @SuppressWarnings("deprecation") // CloseableResource: closed with the root context, also where AutoCloseable is not
  private static final class Closer implements org.junit.jupiter.api.extension.ExtensionContext.Store.CloseableResource {
    @Override
    public void close() throws Throwable {
      SalusMiniCluster c;
      synchronized (SalusMiniCluster.class) {
        c = shared;
        shared = null;
        sharedShutDown = true;
      }
      if (c != null) {
        c.util.shutdownMiniCluster();
      }
    }
  }

  /** As above, with {@code extra} applied to the configuration before anything starts (e.g. a storage factory). */
  SalusMiniCluster(java.util.function.Consumer<Configuration> extra) throws Exception {
    LogManager.getRootLogger().setLevel(Level.WARN);
    Configuration conf = util.getConfiguration();
    extra.accept(conf);
    conf.setInt("hbase.master.info.port", -1);
    conf.setInt("hbase.regionserver.info.port", -1);
    conf.setBoolean("hbase.unsafe.stream.capability.enforce", false);
    conf.set("hbase.wal.provider", "filesystem");
    conf.setInt("hbase.client.retries.number", 10);
    conf.set("hbase.coprocessor.master.classes", SalusPlacementObserver.class.getName());
    conf.setLong(SalusPlacementObserver.PERIOD_KEY, 1000);
    // -Dsalus.test.balancer.period=MS keeps HBase's balancer on and runs it that often (to reproduce moves of
    // replica regions mid-write); otherwise the balancer is switched off once the cluster is up (below)
    String balancerPeriod = System.getProperty("salus.test.balancer.period");
    if (balancerPeriod != null) {
      conf.set("hbase.balancer.period", balancerPeriod);
    }
    // the production keyring (task key22): the region servers read the servers' file, the client (SalusVolume, same
    // configuration object here) the client's; one file each, as `salus keys init` writes them
    java.nio.file.Path keys = java.nio.file.Files.createTempDirectory("salus-keys");
    io.salus.core.crypto.KeyringFile.Pair pair = io.salus.core.crypto.KeyringFile.generate("*",
        new java.security.SecureRandom());
    pair.servers().write(keys.resolve("server.keyring"));
    pair.client().write(keys.resolve("client.keyring"));
    conf.setIfUnset(EndpointKeyring.KEYRING_FILE_KEY, keys.resolve("server.keyring").toString());
    conf.setIfUnset(EndpointKeyring.CLIENT_KEYRING_FILE_KEY, keys.resolve("client.keyring").toString());
    // checkpoints every 4 log entries, as these tests were written for (the default is 64, task tput18): their short
    // runs must reach certificates, GC and catch-up from a checkpoint (unless the test's extra settings chose another)
    conf.setIfUnset(SalusReplicaEndpoint.CHECKPOINT_EVERY_KEY, Integer.toString(CHECKPOINT_EVERY));
    // inert until a test puts a replica into GetFaults.corrupt
    conf.set(io.salus.core.hbase.endpoint.ReplicaFaultInjector.CLASS_KEY,
        io.salus.it.hbase.endpoint.GetFaults.class.getName());
    // The endpoint's default replica storage: the Salus log on HDFS (each region server paired with
    // its own DataNode, the favored node of its log) and the blocks in the region's cells.
    org.apache.hadoop.hdfs.MiniDFSCluster dfs = util.startMiniDFSCluster(3);
    for (var dn : dfs.getDataNodes()) {
      dataNodes.add("127.0.0.1:" + dn.getXferAddress().getPort());
    }
    util.startMiniZKCluster();
    conf.set(io.salus.core.hbase.storage.SalusFavoredNodes.DATANODE_KEY, dataNodes.get(0));
    util.startMiniHBaseCluster(StartMiniClusterOption.builder().numMasters(1).numRegionServers(1).build());
    for (int i = 1; i < 3; i++) { // each region server copies the cluster configuration when it starts
      util.getMiniHBaseCluster().getConfiguration()
          .set(io.salus.core.hbase.storage.SalusFavoredNodes.DATANODE_KEY, dataNodes.get(i));
      util.getMiniHBaseCluster().startRegionServer();
    }
    if (balancerPeriod == null) {
      // HBase's balancer first runs hbase.balancer.period (300 s) after the master starts. Volumes created through
      // the CLI never passed awaitPlaced, so the balancer stayed on, its run moved replica regions while
      // SalusNbdTest's third test wrote, the placement observer moved them back, and the volume stopped
      // ("no PUT_SUCCESS after 4 retries": CI run of 2026-11-24; reproduced with -Dsalus.test.balancer.period=15000).
      // A move is survived since issue 14 (reopen = recovery, the writer retransmits across it:
      // SalusRegionRecoveryTest), but these tests' timings stay deterministic without balancer runs.
      try (Admin admin = util.getConnection().getAdmin()) {
        admin.balancerSwitch(false, true);
      }
    }
  }

  /**
   * Aborts region server {@code victim} (as a crash: no region is closed cleanly, its memstores are lost; its
   * DataNode stays up, so what its replicas hflushed to their Salus logs survives) and starts a new region server
   * paired with the same DataNode, so three remain. Returns the new server.
   */
  ServerName killAndReplace(ServerName victim) throws Exception {
    var cluster = util.getMiniHBaseCluster();
    int idx = -1;
    String dn = null;
    for (int i = 0; i < cluster.getRegionServerThreads().size(); i++) {
      HRegionServer rs = cluster.getRegionServer(i);
      if (rs.getServerName().equals(victim) && !rs.isStopped()) {
        idx = i;
        dn = rs.getConfiguration().get(io.salus.core.hbase.storage.SalusFavoredNodes.DATANODE_KEY);
      }
    }
    if (idx < 0) {
      throw new IllegalArgumentException(victim + " is not a live region server");
    }
    cluster.abortRegionServer(idx);
    cluster.waitOnRegionServer(idx);
    cluster.getConfiguration().set(io.salus.core.hbase.storage.SalusFavoredNodes.DATANODE_KEY, dn);
    return cluster.startRegionServer().getRegionServer().getServerName();
  }

  /**
   * What a supervisor (systemd, Kubernetes, an operator's script) does for an aborted region server: for every region
   * server thread that has aborted (HBase aborts a server whose memstore flush cannot commit, e.g. its store file's
   * only DataNode lost its disk mid-flush), starts a new region server paired with the same DataNode. Returns the
   * servers that were replaced (empty if none).
   */
  java.util.List<ServerName> restartAborted() throws Exception {
    var cluster = util.getMiniHBaseCluster();
    java.util.List<ServerName> replaced = new java.util.ArrayList<>();
    for (int i = 0; i < cluster.getRegionServerThreads().size(); i++) {
      HRegionServer rs = cluster.getRegionServer(i);
      if (rs.isAborted() && !restarted.contains(rs.getServerName())) {
        restarted.add(rs.getServerName());
        String dn = rs.getConfiguration().get(io.salus.core.hbase.storage.SalusFavoredNodes.DATANODE_KEY);
        cluster.waitOnRegionServer(i);
        cluster.getConfiguration().set(io.salus.core.hbase.storage.SalusFavoredNodes.DATANODE_KEY, dn);
        cluster.startRegionServer();
        replaced.add(rs.getServerName());
      }
    }
    return replaced;
  }

  /** Starts one more region server, paired with DataNode {@code dataNode} (a spare, e.g. for RRS replacement). */
  ServerName startSpare(int dataNode) throws Exception {
    var cluster = util.getMiniHBaseCluster();
    cluster.getConfiguration().set(io.salus.core.hbase.storage.SalusFavoredNodes.DATANODE_KEY,
        dataNodes.get(dataNode));
    ServerName s = cluster.startRegionServer().getRegionServer().getServerName();
    cluster.waitForActiveAndReadyMaster();
    long end = System.currentTimeMillis() + DEADLINE_MS;
    try (Admin admin = connection().getAdmin()) {
      while (!admin.getRegionServers().contains(s)) {
        if (System.currentTimeMillis() > end) {
          throw new AssertionError("spare region server " + s + " did not check in");
        }
        Thread.sleep(50);
      }
    }
    return s;
  }

  /** Stops region server {@code s} cleanly (its regions are reassigned) and waits until it is gone. */
  void stopServer(ServerName s) throws Exception {
    var cluster = util.getMiniHBaseCluster();
    for (int i = 0; i < cluster.getRegionServerThreads().size(); i++) {
      if (cluster.getRegionServer(i).getServerName().equals(s) && !cluster.getRegionServer(i).isStopped()) {
        cluster.stopRegionServer(i);
        cluster.waitOnRegionServer(i);
        return;
      }
    }
  }

  private final java.util.Set<ServerName> restarted = java.util.concurrent.ConcurrentHashMap.newKeySet();

  /** The DataNode paired with region server {@code s} (its favored node), as an index into the mini DFS; -1 if none. */
  int dataNodeOf(ServerName s) {
    for (var rst : util.getMiniHBaseCluster().getLiveRegionServerThreads()) {
      if (rst.getRegionServer().getServerName().equals(s)) {
        String dn = rst.getRegionServer().getConfiguration()
            .get(io.salus.core.hbase.storage.SalusFavoredNodes.DATANODE_KEY);
        return dataNodes.indexOf(dn);
      }
    }
    return -1;
  }

  /** An hbase-site.xml for the CLI: the cluster's ZooKeeper and the client's keyring file. */
  java.io.File writeSiteXml(java.io.File dir) throws java.io.IOException {
    dir.mkdirs();
    java.io.File f = new java.io.File(dir, "hbase-site.xml");
    Configuration conf = util.getConfiguration();
    Configuration c = new Configuration(false);
    c.set("hbase.zookeeper.quorum", conf.get("hbase.zookeeper.quorum"));
    c.set("hbase.zookeeper.property.clientPort", conf.get("hbase.zookeeper.property.clientPort"));
    c.set("zookeeper.znode.parent", conf.get("zookeeper.znode.parent", "/hbase"));
    c.set(EndpointKeyring.CLIENT_KEYRING_FILE_KEY, conf.get(EndpointKeyring.CLIENT_KEYRING_FILE_KEY));
    try (java.io.OutputStream o = new java.io.FileOutputStream(f)) {
      c.writeXml(o);
    }
    return f;
  }

  /** Ends a writer lease's ZooKeeper session on this cluster's ZooKeeper ({@code LeaseSessions#expire}). */
  void expireLease(io.salus.blockdriver.volume.VolumeLease lease) throws Exception {
    Configuration conf = util.getConfiguration();
    io.salus.it.launcher.LeaseSessions.expire(conf.get("hbase.zookeeper.quorum") + ":"
        + conf.get("hbase.zookeeper.property.clientPort"), lease);
  }

  Connection connection() throws java.io.IOException {
    return util.getConnection();
  }

  /** Creates a Salus volume and waits until its replica regions run their endpoints on three servers each. */
  void createVolume(VolumeGeometry g) throws Exception {
    try (Admin admin = connection().getAdmin()) {
      SalusTableLayout.create(admin, g);
    }
    awaitPlaced(g);
  }

  void awaitPlaced(VolumeGeometry g) throws Exception {
    long end = System.currentTimeMillis() + DEADLINE_MS;
    while (!placed(g)) {
      if (System.currentTimeMillis() > end) {
        throw new AssertionError("volume " + g.volume() + ": replica regions not on three servers with endpoints");
      }
      Thread.sleep(50);
    }
  }

  /**
   * Every replica region of the volume runs its endpoint, the three replicas of each region on three servers, and
   * none of the volume's regions is in transition. Other tables' regions in transition do not count: an earlier
   * volume whose files were lost (the fault table's rows) may keep its regions in transition for ever.
   */
  private boolean placed(VolumeGeometry g) {
    Set<TableName> mine = new HashSet<>();
    for (int k = 0; k < 3; k++) {
      mine.add(SalusTableLayout.tableName(g.volume(), k));
    }
    for (var rit : util.getMiniHBaseCluster().getMaster().getAssignmentManager().getRegionsInTransition()) {
      if (mine.contains(rit.getTable())) {
        return false;
      }
    }
    for (int r = 0; r < g.numRegions(); r++) {
      Set<ServerName> servers = new HashSet<>();
      for (int k = 0; k < 3; k++) {
        ServerName s = locate(g, r, k);
        if (s == null) {
          return false;
        }
        servers.add(s);
      }
      if (servers.size() != 3) {
        return false;
      }
    }
    return true;
  }

  /** The server where region {@code r} of replica table {@code k} runs its endpoint, or null. */
  ServerName locate(VolumeGeometry g, int r, int k) {
    HRegion region = region(g, r, k);
    if (region == null) {
      return null;
    }
    SalusReplicaEndpoint ep = region.getCoprocessorHost().findCoprocessor(SalusReplicaEndpoint.class);
    // a replica catching up from a peer at open (issue 14) runs no protocol yet: not placed
    return ep == null || ep.host() == null || !ep.host().serving() ? null : serverOf(region);
  }

  private ServerName serverOf(HRegion region) {
    for (JVMClusterUtil.RegionServerThread rst : util.getMiniHBaseCluster().getLiveRegionServerThreads()) {
      if (rst.getRegionServer().getRegions(region.getTableDescriptor().getTableName()).contains(region)) {
        return rst.getRegionServer().getServerName();
      }
    }
    return null;
  }

  HRegion region(VolumeGeometry g, int r, int k) {
    TableName t = SalusTableLayout.tableName(g.volume(), k);
    for (JVMClusterUtil.RegionServerThread rst : util.getMiniHBaseCluster().getLiveRegionServerThreads()) {
      HRegionServer rs = rst.getRegionServer();
      for (HRegion region : rs.getRegions(t)) {
        byte[] start = region.getRegionInfo().getStartKey();
        long first = start.length == 0 ? 0 : Bytes.toLong(start);
        if (first == r * g.blocksPerRegion()) {
          return region;
        }
      }
    }
    return null;
  }

  SalusReplicaEndpoint endpoint(VolumeGeometry g, int r, int k) {
    HRegion region = region(g, r, k);
    return region == null ? null : region.getCoprocessorHost().findCoprocessor(SalusReplicaEndpoint.class);
  }

  @Override
  public void close() throws Exception {
    if (this == shared) {
      throw new IllegalStateException("the shared cluster is shut down when the JVM exits, not by a test class");
    }
    util.shutdownMiniCluster();
  }
}
