package io.salus.blockdriver.launcher;

import io.salus.hdfs.placement.LocationHintPlacementPolicy;
import io.salus.hdfs.witness.WitnessDataNodePlugin;
import org.apache.hadoop.conf.Configuration;

/**
 * The Salus plugins the embedded cluster loads into stock HDFS and HBase, in one place so that
 * the README's configuration reference and the launcher cannot drift apart.
 */
final class SalusPlugins {
  private SalusPlugins() {}

  /**
   * HDFS side (salus-hdfs): the location-hint placement policy on the NameNode, and a witness
   * certificate store inside every DataNode. Each DataNode's witness keeps its journal next to
   * that DataNode's data directories, listens on an ephemeral loopback port and trusts the
   * replicas named in {@code trustFile} ({@link LauncherTrust}).
   */
  static void configureHdfs(Configuration conf, java.nio.file.Path trustFile) {
    conf.set(WitnessDataNodePlugin.TRUST_FILE_KEY, trustFile.toString());
    conf.set("dfs.block.replicator.classname", LocationHintPlacementPolicy.class.getName());
    conf.set("dfs.datanode.plugins", WitnessDataNodePlugin.class.getName());
    conf.setInt(WitnessDataNodePlugin.PORT_KEY, 0);
    conf.set(WitnessDataNodePlugin.BIND_HOST_KEY, "127.0.0.1");
  }

  /** HBase side: coprocessors and balancer (salus-core's HBase adapters, not built yet). */
  static void configureHBase(Configuration conf) {
    // Nothing yet: the Salus region-server coprocessors are a later issue.
  }
}
