package org.apache.hadoop.hdfs.server.blockmanagement;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.net.NetworkTopology;

/**
 * Thin shim, the only Salus class in a Hadoop package: {@link BlockPlacementPolicyDefault#initialize}
 * names the package-private {@code Host2NodesMap}, so a subclass in another package cannot override
 * it. This class overrides it and hands the configuration to {@link #configure}. All Salus logic
 * lives in {@code io.salus.hdfs.placement.LocationHintPlacementPolicy}.
 */
public abstract class SalusPlacementPolicyBase extends BlockPlacementPolicyDefault {
  @Override
  public void initialize(Configuration conf, FSClusterStats stats, NetworkTopology clusterMap,
      Host2NodesMap host2datanodeMap) {
    super.initialize(conf, stats, clusterMap, host2datanodeMap);
    configure(conf, stats);
  }

  /** Called once, after the default policy is initialised. */
  protected abstract void configure(Configuration conf, FSClusterStats stats);
}
