package io.salus.hdfs.witness;

import org.apache.hadoop.metrics2.MetricsCollector;
import org.apache.hadoop.metrics2.MetricsSource;
import org.apache.hadoop.metrics2.lib.DefaultMetricsSystem;
import org.apache.hadoop.metrics2.lib.Interns;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * metrics2 source of one witness server (JMX: {@code Hadoop:service=<DataNode|SalusWitness>,
 * name=SalusWitness-<port>}): records, bytes, fsync count and latency, offers, connections.
 */
final class WitnessMetrics implements MetricsSource {
  private static final Logger LOG = LoggerFactory.getLogger(WitnessMetrics.class);
  private final String name;
  private final WitnessServer server;
  private volatile boolean registered;

  private WitnessMetrics(String name, WitnessServer server) {
    this.name = name;
    this.server = server;
  }

  static WitnessMetrics register(String name, WitnessServer server) {
    WitnessMetrics m = new WitnessMetrics(name, server);
    try {
      DefaultMetricsSystem.instance().register(name, "Salus witness certificate store", m);
      m.registered = true;
    } catch (RuntimeException e) {
      LOG.warn("metrics source {} not registered: {}", name, e.toString());
    }
    return m;
  }

  void unregister() {
    if (registered) {
      try {
        DefaultMetricsSystem.instance().unregisterSource(name);
      } catch (RuntimeException ignored) {
        // shutting down
      }
      registered = false;
    }
  }

  String name() {
    return name;
  }

  @Override
  public void getMetrics(MetricsCollector collector, boolean all) {
    WitnessService s = server.service();
    WitnessStoreStats st = s.store().stats();
    collector.addRecord("SalusWitness").setContext("salus")
        .addCounter(Interns.info("Records", "Certificates appended"), st.records())
        .addCounter(Interns.info("Bytes", "Certificate bytes appended"), st.bytes())
        .addCounter(Interns.info("Fsyncs", "fsync calls (group commits)"), st.fsyncs())
        .addGauge(Interns.info("FsyncAvgMillis", "Average fsync latency"), st.fsyncAvgMillis())
        .addGauge(Interns.info("FsyncP99Millis", "99th percentile fsync latency (bucket bound)"),
            st.fsyncQuantileMillis(0.99))
        .addGauge(Interns.info("FsyncMaxMillis", "Maximum fsync latency"), st.fsyncMaxMillis())
        .addCounter(Interns.info("OffersStored", "Offers answered STORED"), s.offersStored.get())
        .addCounter(Interns.info("OffersPending", "Offers answered PENDING"), s.offersPending.get())
        .addCounter(Interns.info("OffersRejected", "Offers rejected"), s.offersRejected.get())
        .addCounter(Interns.info("Queries", "Recovery queries"), s.queries.get())
        .addGauge(Interns.info("Entries", "Certificates held"), s.store().entryCount())
        .addGauge(Interns.info("Connections", "Open client connections"), server.activeConnections())
        .addGauge(Interns.info("InflightOffers", "Offers waiting for fsync"), server.inflightOffers())
        .addGauge(Interns.info("Healthy", "1 when the witness serves, 0 when its journal refused to"
            + " open"), 1)
        .addGauge(Interns.info("JournalCorrupt", "1 when the journal holds mid-log corruption"), 0)
        .addCounter(Interns.info("TornBytesTruncated", "Torn-tail bytes truncated at open"),
            s.store().recoveryReport().tornBytesTruncated());
  }

  /**
   * The metrics source of a witness that could not start because its journal is corrupt (or for
   * another reason): {@code Healthy} 0, {@code JournalCorrupt} 1 if that was the cause, and the
   * problem (with its fix) as the tag {@code Problem}, so monitoring sees the failure, not only a
   * log line.
   */
  static void registerFailed(String name, String problem, boolean corrupt) {
    MetricsSource failed = (collector, all) -> collector.addRecord("SalusWitness")
        .setContext("salus")
        .tag(Interns.info("Problem", "Why the witness is not serving, and the fix"), problem)
        .addGauge(Interns.info("Healthy", "1 when the witness serves, 0 when it refused to start"), 0)
        .addGauge(Interns.info("JournalCorrupt", "1 when the journal holds mid-log corruption"),
            corrupt ? 1 : 0);
    try {
      DefaultMetricsSystem.instance().register(name, "Salus witness (not serving)", failed);
    } catch (RuntimeException e) {
      LOG.warn("metrics source {} not registered: {}", name, e.toString());
    }
  }

  static void unregister(String name) {
    try {
      DefaultMetricsSystem.instance().unregisterSource(name);
    } catch (RuntimeException ignored) {
      // not registered
    }
  }
}
