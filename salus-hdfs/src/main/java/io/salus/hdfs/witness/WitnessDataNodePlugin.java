package io.salus.hdfs.witness;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Collection;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.util.ServicePlugin;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs a witness certificate store inside a DataNode (the "three DataNodes store data and
 * certificates" half of §3.3.2). Enable with
 * {@code dfs.datanode.plugins=io.salus.hdfs.witness.WitnessDataNodePlugin}; keys in
 * {@code docs/hdfs.md}. Thin adapter: reads the DataNode's configuration and starts a
 * {@link WitnessNode}.
 */
public final class WitnessDataNodePlugin implements ServicePlugin {
  private static final Logger LOG = LoggerFactory.getLogger(WitnessDataNodePlugin.class);

  public static final String DIR_KEY = "salus.witness.dir";
  public static final String BIND_HOST_KEY = "salus.witness.bind-host";
  public static final String BIND_HOST_DEFAULT = "127.0.0.1";
  public static final String PORT_KEY = "salus.witness.port";
  public static final int PORT_DEFAULT = WitnessDaemon.DEFAULT_PORT;
  public static final String TRUST_FILE_KEY = "salus.witness.trust.file";
  public static final String NODE_ID_KEY = "salus.witness.node-id";
  public static final String KEY_FILE_KEY = "salus.witness.key.file";
  public static final String MAX_CONNECTIONS_KEY = "salus.witness.max-connections";
  public static final String MAX_INFLIGHT_KEY = "salus.witness.max-inflight";
  public static final String SEGMENT_BYTES_KEY = "salus.witness.segment-bytes";
  public static final String REPAIR_KEY = "salus.witness.repair";
  public static final String IDLE_TIMEOUT_KEY = "salus.witness.idle-timeout-ms";

  /** Running plugins of this JVM by DataNode transfer address ("host:port"). */
  private static final Map<String, WitnessNode> RUNNING = new ConcurrentHashMap<>();

  /** Plugins of this JVM whose witness refused to start, by DataNode transfer address. */
  private static final Map<String, String> FAILED = new ConcurrentHashMap<>();

  private static volatile WitnessTrust trustOverride;
  private String failedMetrics;

  private WitnessNode node;
  private String key;

  /**
   * For processes that embed DataNodes (launcher, tests): plugins started from now on in this JVM
   * use this trust instead of {@value #TRUST_FILE_KEY}. Null restores the file.
   */
  public static void setTrustOverride(WitnessTrust trust) {
    trustOverride = trust;
  }

  @Override
  public void start(Object service) {
    if (!(service instanceof DataNode dn)) {
      throw new IllegalArgumentException(getClass().getSimpleName()
          + " is a DataNode plugin (dfs.datanode.plugins), not for " + service.getClass().getName());
    }
    Configuration conf = dn.getConf();
    InetSocketAddress xfer = dn.getXferAddress();
    key = xfer.getAddress().getHostAddress() + ":" + xfer.getPort();
    WitnessNode.Settings s = settings(conf, key);
    WitnessTrust t = trustOverride;
    if (t != null) {
      s = s.withTrust(t);
    }
    String metricsName = "SalusWitness-" + xfer.getPort();
    try {
      node = WitnessNode.start(s, metricsName);
    } catch (IOException | RuntimeException e) {
      // The DataNode only logs a WARN for a plugin that throws and then runs without it. Make the
      // failure loud instead: an ERROR, a metrics source with Healthy=0 (and JournalCorrupt=1 for
      // mid-log corruption), and problem(dataNode) for embedding processes such as the launcher.
      boolean corrupt = e instanceof CorruptWitnessStoreException;
      String problem = "Salus witness of DataNode " + key + " is NOT serving (" + s.dir() + "): "
          + e.getMessage();
      LOG.error("{}", problem, e);
      FAILED.put(key, problem);
      failedMetrics = metricsName;
      WitnessMetrics.registerFailed(metricsName, problem, corrupt);
      return;
    }
    FAILED.remove(key);
    RUNNING.put(key, node);
    LOG.info("Salus witness plugin of DataNode {} listening on {}", key, node.address());
  }

  static WitnessNode.Settings settings(Configuration conf, String dnKey) {
    String dir = conf.getTrimmed(DIR_KEY);
    Path d;
    if (dir != null && !dir.isEmpty()) {
      d = Paths.get(dir);
    } else {
      Collection<String> dataDirs = conf.getTrimmedStringCollection("dfs.datanode.data.dir");
      if (dataDirs.isEmpty()) {
        throw new IllegalArgumentException("set " + DIR_KEY + " (no dfs.datanode.data.dir to derive"
            + " the witness directory from)");
      }
      String first = dataDirs.iterator().next().replaceFirst("^\\[[A-Za-z_]+\\]", "");
      Path p = first.startsWith("file:") ? Paths.get(java.net.URI.create(first)) : Paths.get(first);
      d = p.toAbsolutePath().getParent().resolve("salus-witness-" + p.getFileName());
    }
    WitnessNode.Settings s = WitnessNode.Settings.of(d, conf.getInt(PORT_KEY, PORT_DEFAULT))
        .withBindHost(conf.getTrimmed(BIND_HOST_KEY, BIND_HOST_DEFAULT))
        .withNodeId(conf.getTrimmed(NODE_ID_KEY, "dn-witness@" + dnKey))
        .withLimits(conf.getInt(MAX_CONNECTIONS_KEY, 256), conf.getInt(MAX_INFLIGHT_KEY, 1024))
        .withSegmentBytes(conf.getLong(SEGMENT_BYTES_KEY, 64L << 20))
        .withRepair(conf.getBoolean(REPAIR_KEY, false))
        .withIdleTimeout(conf.getInt(IDLE_TIMEOUT_KEY,
            WitnessNode.Settings.DEFAULT_IDLE_TIMEOUT_MILLIS));
    String trust = conf.getTrimmed(TRUST_FILE_KEY);
    if (trust != null && !trust.isEmpty()) {
      s = s.withTrustFile(Paths.get(trust));
    }
    String keyFile = conf.getTrimmed(KEY_FILE_KEY);
    if (keyFile != null && !keyFile.isEmpty()) {
      s = s.withKeyFile(Paths.get(keyFile));
    }
    return s;
  }

  /** The witness address of the DataNode with this transfer address, if its plugin runs here. */
  public static InetSocketAddress witnessAddress(InetSocketAddress dataNodeXferAddress) {
    WitnessNode n = RUNNING.get(dataNodeXferAddress.getAddress().getHostAddress() + ":"
        + dataNodeXferAddress.getPort());
    return n == null ? null : n.address();
  }

  /** The running witness of a DataNode in this JVM (tests, embedded launcher), or null. */
  public static WitnessNode running(DataNode dn) {
    InetSocketAddress x = dn.getXferAddress();
    return RUNNING.get(x.getAddress().getHostAddress() + ":" + x.getPort());
  }

  /**
   * Why the witness of this DataNode (in this JVM) is not serving, e.g. a corrupt journal with the
   * fix; empty when it serves or no plugin ran.
   */
  public static java.util.Optional<String> problem(DataNode dn) {
    InetSocketAddress x = dn.getXferAddress();
    return java.util.Optional.ofNullable(FAILED.get(x.getAddress().getHostAddress() + ":"
        + x.getPort()));
  }

  @Override
  public void stop() {
    if (failedMetrics != null) {
      WitnessMetrics.unregister(failedMetrics);
      FAILED.remove(key);
      failedMetrics = null;
    }
    if (node != null) {
      RUNNING.remove(key, node);
      try {
        node.close();
      } catch (IOException e) {
        LOG.warn("Salus witness plugin of DataNode {} did not close cleanly: {}", key, e.toString());
      }
      node = null;
    }
  }

  @Override
  public void close() {
    stop();
  }
}
