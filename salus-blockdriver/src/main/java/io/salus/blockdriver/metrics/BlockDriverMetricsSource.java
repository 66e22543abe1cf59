package io.salus.blockdriver.metrics;

import org.apache.hadoop.metrics2.MetricsCollector;
import org.apache.hadoop.metrics2.MetricsRecordBuilder;
import org.apache.hadoop.metrics2.MetricsSource;
import org.apache.hadoop.metrics2.lib.DefaultMetricsSystem;
import org.apache.hadoop.metrics2.lib.Interns;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Hadoop metrics2 source over one {@link BlockDriverMetrics} (as salus-hdfs's witness metrics
 * do), so the block driver's counters are in JMX: {@code Hadoop:service=<metrics system
 * prefix>,name=<name>} (an NBD server registers {@code SalusNbd-<port>}, an HBase volume
 * {@code SalusVolume-<volume>}). Per operation: {@code <Op>Requests}, {@code <Op>Errors},
 * {@code <Op>AvgLatencyMicros}, {@code <Op>MaxLatencyMicros}; plus bytes, in-flight requests,
 * verification failures and the tree's fetch counters.
 */
public final class BlockDriverMetricsSource implements MetricsSource, AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(BlockDriverMetricsSource.class);
  private final String name;
  private final BlockDriverMetrics m;
  private volatile boolean registered;

  private BlockDriverMetricsSource(String name, BlockDriverMetrics m) {
    this.name = name;
    this.m = m;
  }

  /**
   * Registers {@code metrics} under {@code name} with the JVM's metrics system (initialized as
   * "SalusBlockDriver" when nothing else did, e.g. in a DataNode or region server). A failure
   * to register is logged, never fatal: the driver serves without JMX then.
   */
  public static BlockDriverMetricsSource register(String name, BlockDriverMetrics metrics) {
    BlockDriverMetricsSource s = new BlockDriverMetricsSource(name, metrics);
    try {
      // (re)starts the metrics system if nothing runs it (a mini cluster's shutdown stops it);
      // when one runs already this only logs that it is initialized
      DefaultMetricsSystem.initialize("SalusBlockDriver");
      DefaultMetricsSystem.instance().register(name, "Salus block driver", s);
      s.registered = true;
    } catch (RuntimeException e) {
      LOG.warn("metrics source {} not registered: {}", name, e.toString());
    }
    return s;
  }

  public String name() {
    return name;
  }

  @Override
  public void close() {
    if (registered) {
      registered = false;
      try {
        DefaultMetricsSystem.instance().unregisterSource(name);
      } catch (RuntimeException ignored) {
        // shutting down
      }
    }
  }

  @Override
  public void getMetrics(MetricsCollector collector, boolean all) {
    MetricsRecordBuilder r = collector.addRecord("SalusBlockDriver").setContext("salus")
        .addCounter(Interns.info("Requests", "NBD requests received"), m.requests.sum())
        .addCounter(Interns.info("BytesRead", "Bytes read by clients"), m.bytesRead.sum())
        .addCounter(Interns.info("BytesWritten", "Bytes written by clients"),
            m.bytesWritten.sum())
        .addGauge(Interns.info("InFlight", "Requests sent to the volume, not yet answered"),
            m.inFlight.sum())
        .addCounter(Interns.info("ErrorReplies", "Requests answered with an error"),
            m.errorReplies.sum())
        .addCounter(Interns.info("EioReplies", "Requests answered EIO"), m.eioReplies.sum())
        .addCounter(Interns.info("MalformedRequests", "Requests refused as malformed"),
            m.malformedRequests.sum())
        .addCounter(Interns.info("VerificationFailures", "Blocks whose stored data or tree nodes"
            + " did not match the client volume tree (never returned)"),
            m.verificationFailures.sum())
        .addCounter(Interns.info("BlocksVerified", "Blocks verified on read"),
            m.blocksVerified.sum())
        .addCounter(Interns.info("SubtreeFetches", "Cache misses of the volume tree"),
            m.subtreeFetches.sum())
        .addCounter(Interns.info("NodeRowsFetched", "Tree nodes fetched on cache misses"),
            m.nodeRowsFetched.sum())
        .addCounter(Interns.info("MountRowsRead", "Rows read by mounts"), m.mountRowsRead.sum())
        .addCounter(Interns.info("ConnectionsAccepted", "NBD connections accepted"),
            m.connectionsAccepted.sum())
        .addCounter(Interns.info("ConnectionsRejected", "NBD connections refused"),
            m.connectionsRejected.sum())
        .addCounter(Interns.info("HandshakeFailures", "NBD handshakes that failed"),
            m.handshakeFailures.sum())
        .addCounter(Interns.info("ReadModifyWrites", "Sub-block writes"),
            m.readModifyWrites.sum());
    for (BlockDriverMetrics.Op op : BlockDriverMetrics.Op.values()) {
      String l = op.label();
      r.addCounter(Interns.info(l + "Requests", l + " requests received"), m.requests(op))
          .addCounter(Interns.info(l + "Errors", l + " requests that failed in the volume"),
              m.errors(op))
          .addCounter(Interns.info(l + "Completed", l + " requests completed by the volume"),
              m.completed(op))
          .addGauge(Interns.info(l + "AvgLatencyMicros", "Mean " + l + " latency (volume)"),
              m.avgLatencyMicros(op))
          .addGauge(Interns.info(l + "MaxLatencyMicros", "Largest " + l + " latency (volume)"),
              m.maxLatencyMicros(op));
    }
  }
}
