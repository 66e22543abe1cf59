package io.salus.hdfs.placement;

import java.util.concurrent.atomic.AtomicLong;

import org.apache.hadoop.metrics2.MetricsCollector;
import org.apache.hadoop.metrics2.MetricsSource;
import org.apache.hadoop.metrics2.lib.DefaultMetricsSystem;
import org.apache.hadoop.metrics2.lib.Interns;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Counters of {@link LocationHintPlacementPolicy}, published as the metrics2 source
 * {@code SalusLocationHints} (JMX: {@code Hadoop:service=NameNode,name=SalusLocationHints}).
 */
public final class LocationHintMetrics implements MetricsSource {
  private static final Logger LOG = LoggerFactory.getLogger(LocationHintMetrics.class);
  public static final String SOURCE_NAME = "SalusLocationHints";

  private final AtomicLong hintedRequests = new AtomicLong();
  private final AtomicLong followed = new AtomicLong();
  private final AtomicLong fallbackUtilization = new AtomicLong();
  private final AtomicLong fallbackLoad = new AtomicLong();
  private final AtomicLong fallbackDefaultRejected = new AtomicLong();

  private LocationHintMetrics() {
  }

  static LocationHintMetrics create() {
    LocationHintMetrics m = new LocationHintMetrics();
    try {
      DefaultMetricsSystem.instance().register(SOURCE_NAME, "Salus location-hint placement", m);
    } catch (RuntimeException e) {
      // A second NameNode in the same JVM (tests) or metrics system already holding the name.
      try {
        DefaultMetricsSystem.instance().register(
            SOURCE_NAME + "-" + System.identityHashCode(m), "Salus location-hint placement", m);
      } catch (RuntimeException e2) {
        LOG.warn("Could not register metrics source {}: {}", SOURCE_NAME, e2.toString());
      }
    }
    return m;
  }

  void hintedRequest() {
    hintedRequests.incrementAndGet();
  }

  void followed(int n) {
    followed.addAndGet(n);
  }

  void fallback(LocationHintPlacementPolicy.FallbackReason reason) {
    switch (reason) {
      case UTILIZATION -> fallbackUtilization.incrementAndGet();
      case LOAD -> fallbackLoad.incrementAndGet();
      case DEFAULT_POLICY_REJECTED -> fallbackDefaultRejected.incrementAndGet();
      default -> throw new IllegalStateException(reason.toString());
    }
  }

  /** Block allocations that carried at least one favored node. */
  public long hintedRequests() {
    return hintedRequests.get();
  }

  /** Hinted nodes that received the block. */
  public long followed() {
    return followed.get();
  }

  /** Hinted nodes refused (any reason): the block went where the default policy put it. */
  public long fallbacks() {
    return fallbackUtilization.get() + fallbackLoad.get() + fallbackDefaultRejected.get();
  }

  public long fallbacks(LocationHintPlacementPolicy.FallbackReason reason) {
    return switch (reason) {
      case UTILIZATION -> fallbackUtilization.get();
      case LOAD -> fallbackLoad.get();
      case DEFAULT_POLICY_REJECTED -> fallbackDefaultRejected.get();
    };
  }

  @Override
  public void getMetrics(MetricsCollector collector, boolean all) {
    collector.addRecord(SOURCE_NAME).setContext("dfs")
        .addCounter(Interns.info("HintedRequests", "Block allocations with favored nodes"),
            hintedRequests.get())
        .addCounter(Interns.info("HintsFollowed", "Hinted DataNodes that got the block"),
            followed.get())
        .addCounter(Interns.info("FallbacksUtilization", "Hints refused: node over utilisation"),
            fallbackUtilization.get())
        .addCounter(Interns.info("FallbacksLoad", "Hints refused: node over load threshold"),
            fallbackLoad.get())
        .addCounter(Interns.info("FallbacksDefaultRejected",
            "Hints the default policy rejected (stale, decommissioning, no space)"),
            fallbackDefaultRejected.get())
        .addCounter(Interns.info("Fallbacks", "All refused hints"), fallbacks());
  }

  @Override
  public String toString() {
    return "LocationHintMetrics{hinted=" + hintedRequests + ", followed=" + followed
        + ", utilization=" + fallbackUtilization + ", load=" + fallbackLoad
        + ", defaultRejected=" + fallbackDefaultRejected + "}";
  }
}
