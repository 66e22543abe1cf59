package io.salus.hdfs.witness;

import java.nio.file.Path;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;

import org.apache.hadoop.metrics2.lib.DefaultMetricsSystem;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The standalone witness node (the two extra metadata replicas of §3.3.2): stores LOG_ENTRY
 * certificates and answers recovery queries. {@code salus witness --dir DIR --port N}.
 *
 * <p>Embedding API (used by the launcher): {@link #start(WitnessNode.Settings)} returns a running
 * {@link WitnessNode}; {@code close()} it to stop. {@link #run(String...)} parses arguments and
 * blocks until the process is told to stop.
 */
@Command(name = "witness", mixinStandardHelpOptions = true,
    description = "Run a Salus witness: a durable store of LOG_ENTRY certificates serving the"
        + " witness protocol (see docs/hdfs.md).")
public final class WitnessDaemon implements Callable<Integer> {
  public static final int DEFAULT_PORT = 9877;

  @Option(names = "--dir", required = true, description = "Directory of the certificate journal.")
  Path dir;

  @Option(names = "--port", defaultValue = "" + DEFAULT_PORT,
      description = "TCP port (0 = ephemeral). Default: ${DEFAULT-VALUE}.")
  int port;

  @Option(names = "--bind", defaultValue = "127.0.0.1",
      description = "Address to listen on. Default: ${DEFAULT-VALUE}.")
  String bind;

  @Option(names = "--trust", description = "Trust file: scheme, replica keys, RRS membership.")
  Path trust;

  @Option(names = "--id", description = "This witness's node id (signs NO_NEXT_ENTRY).")
  String id;

  @Option(names = "--key", description = "Signing key file (default DIR/witness.key; created).")
  Path key;

  @Option(names = "--max-connections", defaultValue = "256", description = "Default: ${DEFAULT-VALUE}.")
  int maxConnections;

  @Option(names = "--max-inflight", defaultValue = "1024",
      description = "Offers waiting for fsync at once before back-pressure. Default: ${DEFAULT-VALUE}.")
  int maxInflight;

  @Option(names = "--idle-timeout-ms", defaultValue = "60000",
      description = "Close a connection that sends nothing for this long (frees its slot)."
          + " Default: ${DEFAULT-VALUE}.")
  int idleTimeoutMillis;

  @Option(names = "--repair",
      description = "Quarantine damaged journal bytes into .corrupt files instead of refusing to start.")
  boolean repair;

  private final CountDownLatch stop = new CountDownLatch(1);

  /** Starts a witness in this JVM and returns at once. */
  public static WitnessNode start(WitnessNode.Settings settings) throws java.io.IOException {
    return WitnessNode.start(settings);
  }

  /** Parses {@code args}, runs until interrupted/terminated; returns the exit code. */
  public static int run(String... args) {
    return new CommandLine(new WitnessDaemon()).execute(args);
  }

  public static void main(String[] args) {
    System.exit(run(args));
  }

  WitnessNode.Settings settings() {
    WitnessNode.Settings s = WitnessNode.Settings.of(dir, port).withBindHost(bind)
        .withLimits(maxConnections, maxInflight).withRepair(repair)
        .withIdleTimeout(idleTimeoutMillis);
    if (trust != null) {
      s = s.withTrustFile(trust);
    }
    if (id != null) {
      s = s.withNodeId(id);
    }
    if (key != null) {
      s = s.withKeyFile(key);
    }
    return s;
  }

  @Override
  public Integer call() throws Exception {
    WitnessNode node;
    try {
      node = WitnessNode.start(settings());
    } catch (CorruptWitnessStoreException e) {
      System.err.println("error: " + e.getMessage());
      return 3;
    } catch (java.io.IOException | IllegalArgumentException e) {
      System.err.println("error: " + e.getMessage());
      return 2;
    }
    // Sources registered before initialisation are picked up when the metrics system starts.
    DefaultMetricsSystem.initialize("SalusWitness");
    DurableCertificateStore.RecoveryReport r = node.store().recoveryReport();
    System.out.println("witness " + node.service().id() + " listening on "
        + node.address().getAddress().getHostAddress() + ":" + node.address().getPort()
        + " dir=" + dir + " records=" + r.records() + " tornBytesTruncated="
        + r.tornBytesTruncated() + (r.quarantined().isEmpty() ? "" : " quarantined="
        + r.quarantined()));
    System.out.flush();
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      try {
        node.close();
      } catch (java.io.IOException e) {
        System.err.println("witness close failed: " + e);
      }
      stop.countDown();
    }, "salus-witness-shutdown"));
    stop.await();
    return 0;
  }
}
