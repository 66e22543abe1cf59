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
        .addGauge(Interns.info("InflightOffers", "Offers waiting for fsync"), server.inflightOffers());
  }
}
