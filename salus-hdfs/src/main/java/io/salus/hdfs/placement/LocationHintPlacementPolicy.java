package io.salus.hdfs.placement;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Set;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.StorageType;
import org.apache.hadoop.hdfs.server.blockmanagement.BlockPlacementPolicyDefault;
import org.apache.hadoop.hdfs.server.blockmanagement.DatanodeDescriptor;
import org.apache.hadoop.hdfs.server.blockmanagement.DatanodeStorageInfo;
import org.apache.hadoop.hdfs.server.blockmanagement.FSClusterStats;
import org.apache.hadoop.hdfs.server.blockmanagement.SalusPlacementPolicyBase;
import org.apache.hadoop.net.Node;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Salus location hints (dissertation §3.3.2): the NameNode places a new block on the DataNode(s)
 * the writer names as favored nodes (a replica's colocated DataNode), unless doing so would break
 * the load-balancing rule. Enable with
 * {@code dfs.block.replicator.classname=io.salus.hdfs.placement.LocationHintPlacementPolicy}.
 *
 * <p>A hinted node is refused, and the block falls back to {@link BlockPlacementPolicyDefault},
 * when its utilisation ({@code 1 - remaining/capacity}) exceeds {@value #MAX_UTILIZATION_KEY}, when
 * its active transfer count exceeds {@value #MAX_XCEIVERS_KEY}, or when it exceeds
 * {@value #MAX_LOAD_FACTOR_KEY} times the cluster's in-service average. A hinted node that passes
 * these checks but that the default policy still rejects (stale, decommissioning, no space for a
 * block) is also counted. Requests without favored nodes (normal files) are untouched: they go
 * straight to the default policy.
 */
public class LocationHintPlacementPolicy extends SalusPlacementPolicyBase {
  private static final Logger LOG = LoggerFactory.getLogger(LocationHintPlacementPolicy.class);

  /** Fraction (0..1] of a DataNode's capacity in use above which a hint to it is not followed. */
  public static final String MAX_UTILIZATION_KEY = "salus.placement.hint.max-utilization";
  public static final double MAX_UTILIZATION_DEFAULT = 0.90;
  /** Absolute active-transfer (xceiver) count above which a hint is not followed; 0 disables. */
  public static final String MAX_XCEIVERS_KEY = "salus.placement.hint.max-xceivers";
  public static final int MAX_XCEIVERS_DEFAULT = 0;
  /** Hint refused when xceivers exceed this factor times the in-service average; 0 disables. */
  public static final String MAX_LOAD_FACTOR_KEY = "salus.placement.hint.max-load-factor";
  public static final double MAX_LOAD_FACTOR_DEFAULT = 3.0;
  /** Average xceiver count under which the relative load rule is not applied (idle clusters). */
  public static final String MIN_AVERAGE_LOAD_KEY = "salus.placement.hint.load-factor-min-average";
  public static final double MIN_AVERAGE_LOAD_DEFAULT = 2.0;

  private volatile double maxUtilization;
  private volatile int maxXceivers;
  private volatile double maxLoadFactor;
  private volatile double minAverageLoad;
  private FSClusterStats clusterStats;
  private final LocationHintMetrics metrics = LocationHintMetrics.create();

  @Override
  protected void configure(Configuration conf, FSClusterStats stats) {
    this.clusterStats = stats;
    this.maxUtilization = conf.getDouble(MAX_UTILIZATION_KEY, MAX_UTILIZATION_DEFAULT);
    this.maxXceivers = conf.getInt(MAX_XCEIVERS_KEY, MAX_XCEIVERS_DEFAULT);
    this.maxLoadFactor = conf.getDouble(MAX_LOAD_FACTOR_KEY, MAX_LOAD_FACTOR_DEFAULT);
    this.minAverageLoad = conf.getDouble(MIN_AVERAGE_LOAD_KEY, MIN_AVERAGE_LOAD_DEFAULT);
    if (!(maxUtilization > 0 && maxUtilization <= 1.0)) {
      throw new IllegalArgumentException(MAX_UTILIZATION_KEY + "=" + maxUtilization
          + " is not a fraction in (0, 1]; set it to e.g. 0.9 (90% of capacity in use)");
    }
    if (maxXceivers < 0 || maxLoadFactor < 0 || minAverageLoad < 0) {
      throw new IllegalArgumentException("negative threshold: " + MAX_XCEIVERS_KEY + "=" + maxXceivers
          + ", " + MAX_LOAD_FACTOR_KEY + "=" + maxLoadFactor + ", " + MIN_AVERAGE_LOAD_KEY + "="
          + minAverageLoad + "; use 0 to disable a rule");
    }
    LOG.info("Salus location-hint placement: max-utilization={} max-xceivers={} max-load-factor={}",
        maxUtilization, maxXceivers, maxLoadFactor);
  }

  /** Why a hinted node was not used. */
  public enum FallbackReason { UTILIZATION, LOAD, DEFAULT_POLICY_REJECTED }

  /**
   * Decides whether a hinted DataNode may take a new block under the Salus thresholds.
   *
   * @return null if it may, otherwise the reason it may not
   */
  FallbackReason check(DatanodeDescriptor node) {
    long capacity = node.getCapacity();
    if (capacity > 0) {
      double used = 1.0 - (double) node.getRemaining() / capacity;
      if (used > maxUtilization) {
        return FallbackReason.UTILIZATION;
      }
    }
    int load = node.getXceiverCount();
    if (maxXceivers > 0 && load > maxXceivers) {
      return FallbackReason.LOAD;
    }
    if (maxLoadFactor > 0 && clusterStats != null) {
      double avg = clusterStats.getInServiceXceiverAverage();
      if (avg >= minAverageLoad && load > maxLoadFactor * avg) {
        return FallbackReason.LOAD;
      }
    }
    return null;
  }

  @Override
  protected void chooseFavouredNodes(String src, int numOfReplicas,
      List<DatanodeDescriptor> favoredNodes, Set<Node> favoriteAndExcludedNodes, long blocksize,
      int maxNodesPerRack, List<DatanodeStorageInfo> results, boolean avoidStaleNodes,
      EnumMap<StorageType, Integer> storageTypes) throws NotEnoughReplicasException {
    metrics.hintedRequest();
    List<DatanodeDescriptor> accepted = new ArrayList<>(favoredNodes.size());
    for (DatanodeDescriptor node : favoredNodes) {
      FallbackReason reason = check(node);
      if (reason == null) {
        accepted.add(node);
      } else {
        // Exclude the over-threshold node so the default policy does not pick it for the remainder.
        favoriteAndExcludedNodes.add(node);
        metrics.fallback(reason);
        LOG.info("Not following location hint {} for {}: {} over threshold; default placement used",
            node, src, reason);
      }
    }
    super.chooseFavouredNodes(src, numOfReplicas, accepted, favoriteAndExcludedNodes, blocksize,
        maxNodesPerRack, results, avoidStaleNodes, storageTypes);
    // Every accepted hint within reach (at most numOfReplicas of them) that did not end up in the
    // results was rejected by the default policy's own checks.
    int placed = 0;
    for (DatanodeDescriptor node : accepted) {
      if (results.stream().anyMatch(s -> s.getDatanodeDescriptor().equals(node))) {
        placed++;
      }
    }
    int rejected = Math.max(0, Math.min(accepted.size(), numOfReplicas) - placed);
    metrics.followed(placed);
    for (int i = 0; i < rejected; i++) {
      metrics.fallback(FallbackReason.DEFAULT_POLICY_REJECTED);
    }
    if (rejected > 0) {
      LOG.info("{} location hint(s) for {} rejected by the default policy (stale, decommissioning, "
          + "no space or no matching storage); default placement used", rejected, src);
    }
  }

  /** The counters of this policy instance (also published through metrics2/JMX). */
  public LocationHintMetrics getMetrics() {
    return metrics;
  }

  /** Changes the utilisation threshold at run time (for operators via tests/tools). */
  public void setMaxUtilization(double fraction) {
    if (!(fraction > 0 && fraction <= 1.0)) {
      throw new IllegalArgumentException("max utilization must be in (0, 1], got " + fraction);
    }
    this.maxUtilization = fraction;
  }

  /** Changes the absolute xceiver threshold at run time; 0 disables it. */
  public void setMaxXceivers(int max) {
    if (max < 0) {
      throw new IllegalArgumentException("max xceivers must be >= 0, got " + max);
    }
    this.maxXceivers = max;
  }
}
