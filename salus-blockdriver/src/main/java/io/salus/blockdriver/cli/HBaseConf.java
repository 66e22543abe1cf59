package io.salus.blockdriver.cli;

import java.io.File;
import java.io.IOException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.ClusterMetrics;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.zookeeper.ZKConfig;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.EnumSet;

/** Builds the HBase client configuration for CLI commands from {@code --hbase-conf DIR}. */
final class HBaseConf {
  private HBaseConf() {}

  static Configuration load(File dir) {
    Configuration conf = HBaseConfiguration.create();
    if (dir != null) {
      File site = new File(dir, "hbase-site.xml");
      if (!site.isFile()) {
        throw new IllegalArgumentException("no hbase-site.xml in '" + dir + "': point"
            + " --hbase-conf at the directory holding your cluster's hbase-site.xml");
      }
      conf.addResource(new Path(site.getAbsolutePath()));
    }
    // fail fast instead of retrying for minutes when the cluster is down
    conf.setIfUnset("hbase.client.retries.number", "5");
    conf.setIfUnset("zookeeper.recovery.retry", "1");
    return conf;
  }

  /**
   * Connects after checking, with short timeouts, that the cluster answers: a down cluster is
   * reported as "cannot reach the cluster at …" within about ten seconds instead of after minutes
   * of retries ending in a stack trace.
   */
  static Connection connect(File dir) throws IOException {
    Configuration conf = load(dir);
    checkReachable(conf, dir);
    return ConnectionFactory.createConnection(conf);
  }

  /** The cluster did not answer; the message names where it was looked for and the fix. */
  static final class ClusterUnreachableException extends IOException {
    ClusterUnreachableException(String message, Throwable cause) {
      super(message, cause);
    }
  }

  static void checkReachable(Configuration conf, File dir) throws ClusterUnreachableException {
    String quorum = ZKConfig.getZKQuorumServersString(conf);
    String where = "cannot reach the cluster at ZooKeeper " + quorum + " (from "
        + (dir == null ? "the hbase-site.xml on the classpath, or the defaults" : dir
            + "/hbase-site.xml") + ")";
    String fix = "; is the cluster running ('./salus up', or check it with 'salus status'), and"
        + " does --hbase-conf point at the directory with its hbase-site.xml?";
    IOException last = null;
    boolean zkAnswers = false;
    for (String hp : quorum.split(",")) {
      int colon = hp.lastIndexOf(':');
      String host = colon > 0 ? hp.substring(0, colon) : hp;
      int port = colon > 0 ? Integer.parseInt(hp.substring(colon + 1)) : 2181;
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress(host, port), 3000);
        zkAnswers = true;
        break;
      } catch (IOException e) {
        last = e;
      }
    }
    if (!zkAnswers) {
      throw new ClusterUnreachableException(where + ": no ZooKeeper server accepts connections ("
          + last.getMessage() + ")" + fix, last);
    }
    Configuration probe = new Configuration(conf);
    probe.setInt("hbase.client.retries.number", 1);
    probe.setInt("hbase.client.pause", 100);
    probe.setInt("hbase.rpc.timeout", 4000);
    probe.setInt("hbase.client.operation.timeout", 8000);
    probe.setInt("hbase.client.meta.operation.timeout", 8000);
    probe.setInt("zookeeper.recovery.retry", 0);
    try (Connection c = ConnectionFactory.createConnection(probe); Admin admin = c.getAdmin()) {
      admin.getClusterMetrics(EnumSet.of(ClusterMetrics.Option.MASTER));
    } catch (IOException | RuntimeException e) {
      String why = String.valueOf(e.getMessage()).lines().findFirst().orElse(e.toString());
      throw new ClusterUnreachableException(where + ": ZooKeeper answers but the HBase master"
          + " does not (" + why + ")" + fix, e);
    }
  }
}
