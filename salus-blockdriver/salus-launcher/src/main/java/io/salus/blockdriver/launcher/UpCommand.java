package io.salus.blockdriver.launcher;

import io.salus.blockdriver.cli.ByteSizeConverter;
import io.salus.blockdriver.cli.StopSignals;
import io.salus.blockdriver.volume.VolumeCatalog;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code salus up}: the whole stack in one JVM, state under --data, Ctrl-C to stop. */
@Command(
    name = "up",
    mixinStandardHelpOptions = true,
    description = {
      "Start ZooKeeper, HDFS (>= 3 DataNodes) and HBase (1 master, >= 3 region servers) with the"
          + " Salus plugins in this JVM, and export a volume over NBD (a Salus volume unless --kind hbase).",
      "State lives under --data; running 'salus up' again reopens it. Ctrl-C or SIGTERM stops"
          + " cleanly."
    })
public final class UpCommand implements Callable<Integer> {
  @Option(names = "--data", defaultValue = "salus-data", description = "Data directory (default: ${DEFAULT-VALUE}).")
  Path data;

  @Option(names = "--host", defaultValue = "127.0.0.1", description = "Address every server binds (default: ${DEFAULT-VALUE}).")
  String host;

  @Option(names = "--zk-port", description = "ZooKeeper client port on first start; 0 picks a free one (default: 2181). A restart reuses the recorded port.")
  Integer zkPort;

  @Option(names = "--namenode-port", description = "NameNode RPC port on first start; 0 picks a free one (default: 8020). A restart reuses the recorded port.")
  Integer nameNodePort;

  @Option(names = "--nbd-port", defaultValue = "10809", description = "NBD server port (default: ${DEFAULT-VALUE}).")
  int nbdPort;

  @Option(names = "--volume", defaultValue = "demo", description = "Volume to create (if missing) and export (default: ${DEFAULT-VALUE}).")
  String volume;

  @Option(names = "--size", defaultValue = "1G", converter = ByteSizeConverter.class, description = "Size of the volume if it is created (default: ${DEFAULT-VALUE}).")
  long size;

  @Option(names = "--kind", paramLabel = "salus|hbase",
      description = "Kind of the exported volume: salus (a SalusVolume: the Salus write and read path through the"
          + " replica endpoints) or hbase (the plain-HBase baseline). Default: salus for a new volume, the recorded"
          + " kind for an existing one.")
  String kind;

  @Option(names = "--datanodes", defaultValue = "3", description = "Number of DataNodes (default: ${DEFAULT-VALUE}).")
  int dataNodes;

  @Option(names = "--regionservers", defaultValue = "3", description = "Number of region servers (default: ${DEFAULT-VALUE}).")
  int regionServers;

  @Option(names = "--skip-memory-check", description = "Start even if the memory check fails.")
  boolean skipMemoryCheck;

  @Override
  public Integer call() throws Exception {
    PrintStream out = System.out;
    LauncherOptions options;
    try {
      options = new LauncherOptions(data, host,
          zkPort == null ? LauncherOptions.UNSET : zkPort,
          nameNodePort == null ? LauncherOptions.UNSET : nameNodePort, nbdPort, dataNodes,
          regionServers, volume, size, kind, skipMemoryCheck);
    } catch (IllegalArgumentException e) {
      System.err.println("salus up: " + e.getMessage());
      return 2;
    }
    try {
      ByteSizeConverter.checkMultiple(size, 4096);
    } catch (IllegalArgumentException e) {
      System.err.println("salus up: " + e.getMessage());
      return 2;
    }
    try {
      VolumeCatalog.checkName(volume);
    } catch (IllegalArgumentException e) {
      System.err.println("salus up: --volume: " + e.getMessage());
      return 2;
    }
    // A refused run must leave nothing behind: remember whether the directory existed.
    boolean newDir = !java.nio.file.Files.exists(data);
    DataDirLayout layout;
    try {
      layout = DataDirLayout.open(data);
    } catch (LauncherException e) {
      System.err.println("salus up: " + e.getMessage());
      return 2;
    }
    Path logFile = LauncherLogging.toFile(layout.root().resolve("logs"));
    EmbeddedCluster cluster = new EmbeddedCluster(options, layout, out);
    try {
      cluster.preflight();
    } catch (LauncherException e) {
      System.err.println("salus up: " + e.getMessage());
      cluster.close();
      layout.close();
      if (newDir) {
        deleteTree(layout.root()); // created by this refused run only
      }
      return 2;
    }
    out.println((layout.isFresh() ? "initialising new" : "reopening") + " data directory "
        + layout.root() + " (logs: " + logFile + ")");
    // SIGTERM / Ctrl-C stop the cluster on the main thread *before* the JVM begins its shutdown:
    // HDFS and HBase register JVM shutdown hooks of their own (FileSystem cache, DataNode
    // volumes) that must not run while region servers are still flushing.
    CountDownLatch stopRequested = new CountDownLatch(1);
    StopSignals.install(stopRequested::countDown, new java.io.PrintWriter(System.err, true));
    try {
      cluster.start();
    } catch (LauncherException e) {
      System.err.println("salus up: " + e.getMessage());
      cluster.close();
      layout.close();
      return 2;
    } catch (Exception e) {
      StringBuilder why = new StringBuilder(String.valueOf(e));
      for (Throwable c = e.getCause(); c != null && c != c.getCause(); c = c.getCause()) {
        why.append("\n  caused by: ").append(c);
      }
      System.err.println("salus up: start-up failed: " + why + "\nsee " + logFile);
      cluster.close();
      layout.close();
      return 1;
    }
    Properties endpoints = cluster.endpoints();
    endpoints.setProperty("data", layout.root().toString());
    layout.writeEndpoints(endpoints);
    writeClientConf(layout.root().resolve(ReadinessLine.CLIENT_CONF_DIR), cluster);
    out.println(ReadinessLine.format(endpoints));
    out.flush();
    // the replicas' health after the readiness line, then every HEALTH_EVERY_SECONDS into <data>/replica-health; a
    // failure to count or to write it is reported and never ends 'salus up' (its stop must stay the clean one below)
    List<String> lastDown = null;
    do {
      try {
        ReplicaHealth.Report now = cluster.replicaHealth();
        if (lastDown == null || !now.notRunning().equals(lastDown)) {
          out.println((now.healthy() ? "replicas: " : "replicas: UNHEALTHY: ") + now.line());
          out.flush();
        }
        lastDown = now.notRunning();
        ReplicaHealth.write(layout.root(), now);
      } catch (java.io.IOException | RuntimeException e) {
        out.println("salus up: cannot write the replica health report: " + e);
        out.flush();
      }
    } while (!stopRequested.await(HEALTH_EVERY_SECONDS, java.util.concurrent.TimeUnit.SECONDS));
    out.println("salus: shutting down ...");
    out.flush();
    cluster.close();
    layout.clearEndpoints();
    layout.close();
    out.println("salus: stopped");
    out.flush();
    return 0;
  }

  /** How often {@code salus up} counts the Salus replicas and rewrites {@link ReplicaHealth#FILE}. */
  public static final long HEALTH_EVERY_SECONDS = 30;

  /**
   * {@code DATA/conf/hbase-site.xml}: what a client needs to reach this cluster, so that
   * {@code salus volume … --hbase-conf DATA/conf} and {@code salus nbd} work without a Hadoop or
   * HBase installation.
   */
  private static void writeClientConf(Path dir, EmbeddedCluster cluster) throws java.io.IOException {
    java.nio.file.Files.createDirectories(dir);
    String quorum = cluster.zkQuorum();
    int colon = quorum.lastIndexOf(':');
    org.apache.hadoop.conf.Configuration c = new org.apache.hadoop.conf.Configuration(false);
    c.set("hbase.zookeeper.quorum", quorum.substring(0, colon));
    c.set("hbase.zookeeper.property.clientPort", quorum.substring(colon + 1));
    c.set("zookeeper.znode.parent", "/hbase");
    c.set("fs.defaultFS", cluster.nameNodeUri());
    SalusPlugins.configureClient(c, cluster.keyring()); // the client's keyring file (its signing key)
    Path tmp = dir.resolve("hbase-site.xml.tmp");
    java.nio.file.Files.deleteIfExists(tmp);
    // owner-only: it names the client's keyring file (and carries the test seed of a data directory made before it)
    java.nio.file.Files.createFile(tmp, java.nio.file.attribute.PosixFilePermissions.asFileAttribute(
        java.nio.file.attribute.PosixFilePermissions.fromString("rw-------")));
    try (java.io.OutputStream o = java.nio.file.Files.newOutputStream(tmp)) {
      c.writeXml(o);
    }
    java.nio.file.Files.move(tmp, dir.resolve("hbase-site.xml"),
        java.nio.file.StandardCopyOption.REPLACE_EXISTING,
        java.nio.file.StandardCopyOption.ATOMIC_MOVE);
  }

  private static void deleteTree(Path root) {
    try (java.util.stream.Stream<Path> s = java.nio.file.Files.walk(root)) {
      s.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (java.io.IOException e) {
      System.err.println("salus up: could not remove " + root + ": " + e.getMessage());
    }
  }
}
