package io.salus.hdfs.witness;

import java.io.Closeable;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.NodeKeys;
import io.salus.core.crypto.SignatureScheme;

/**
 * A running witness: durable store + protocol logic + TCP server, started and stopped as one. This
 * is what both the standalone daemon ({@link WitnessDaemon}) and the DataNode plugin
 * ({@link WitnessDataNodePlugin}) run. After start, the bound address is also written to
 * {@code <dir>/witness.address} ("host:port").
 */
public final class WitnessNode implements Closeable {
  /** Everything needed to start a witness. {@code trust} null means: load {@code trustFile}, or an
   *  empty Ed25519 trust (every offer rejected until membership is configured). */
  public record Settings(Path dir, String bindHost, int port, String nodeId, Path trustFile,
      WitnessTrust trust, Path keyFile, int maxConnections, int maxInflight, int maxFrameBytes,
      long segmentBytes, boolean repair, int idleTimeoutMillis) {
    /** Default idle/read timeout of a witness connection: 60 s. */
    public static final int DEFAULT_IDLE_TIMEOUT_MILLIS = 60_000;

    public static Settings of(Path dir, int port) {
      return new Settings(dir, "127.0.0.1", port, null, null, null, null, 256, 1024, 1 << 20,
          64L << 20, false, DEFAULT_IDLE_TIMEOUT_MILLIS);
    }

    /** A connection that sends nothing (or only part of a frame) for this long is closed. */
    public Settings withIdleTimeout(int millis) {
      if (millis <= 0) {
        throw new IllegalArgumentException("witness idle timeout must be > 0 ms, got " + millis);
      }
      return new Settings(dir, bindHost, port, nodeId, trustFile, trust, keyFile, maxConnections,
          maxInflight, maxFrameBytes, segmentBytes, repair, millis);
    }

    public Settings withTrust(WitnessTrust t) {
      return new Settings(dir, bindHost, port, nodeId, trustFile, t, keyFile, maxConnections,
          maxInflight, maxFrameBytes, segmentBytes, repair, idleTimeoutMillis);
    }

    public Settings withTrustFile(Path f) {
      return new Settings(dir, bindHost, port, nodeId, f, trust, keyFile, maxConnections,
          maxInflight, maxFrameBytes, segmentBytes, repair, idleTimeoutMillis);
    }

    public Settings withNodeId(String id) {
      return new Settings(dir, bindHost, port, id, trustFile, trust, keyFile, maxConnections,
          maxInflight, maxFrameBytes, segmentBytes, repair, idleTimeoutMillis);
    }

    public Settings withBindHost(String h) {
      return new Settings(dir, h, port, nodeId, trustFile, trust, keyFile, maxConnections,
          maxInflight, maxFrameBytes, segmentBytes, repair, idleTimeoutMillis);
    }

    public Settings withKeyFile(Path k) {
      return new Settings(dir, bindHost, port, nodeId, trustFile, trust, k, maxConnections,
          maxInflight, maxFrameBytes, segmentBytes, repair, idleTimeoutMillis);
    }

    public Settings withLimits(int connections, int inflight) {
      return new Settings(dir, bindHost, port, nodeId, trustFile, trust, keyFile, connections,
          inflight, maxFrameBytes, segmentBytes, repair, idleTimeoutMillis);
    }

    public Settings withSegmentBytes(long s) {
      return new Settings(dir, bindHost, port, nodeId, trustFile, trust, keyFile, maxConnections,
          maxInflight, maxFrameBytes, s, repair, idleTimeoutMillis);
    }

    public Settings withRepair(boolean r) {
      return new Settings(dir, bindHost, port, nodeId, trustFile, trust, keyFile, maxConnections,
          maxInflight, maxFrameBytes, segmentBytes, r, idleTimeoutMillis);
    }
  }

  private final DurableCertificateStore store;
  private final WitnessServer server;

  private WitnessNode(DurableCertificateStore store, WitnessServer server) {
    this.store = store;
    this.server = server;
  }

  /** Opens (recovering) the store, binds the port and serves. */
  public static WitnessNode start(Settings s) throws IOException {
    return start(s, null);
  }

  public static WitnessNode start(Settings s, String metricsName) throws IOException {
    if (s.dir() == null) {
      throw new IllegalArgumentException("a witness needs a directory (--dir / salus.witness.dir)");
    }
    if (s.port() < 0 || s.port() > 65535) {
      throw new IllegalArgumentException("witness port " + s.port() + " is not in 0..65535");
    }
    WitnessTrust trust = s.trust();
    if (trust == null) {
      trust = s.trustFile() != null ? WitnessTrust.load(s.trustFile())
          : new WitnessTrust(WitnessTrust.DEFAULT_SCHEME);
    }
    DurableCertificateStore store = DurableCertificateStore.open(s.dir(),
        new DurableCertificateStore.Options(s.segmentBytes(), s.maxFrameBytes(), s.repair()));
    try {
      String id = s.nodeId() != null ? s.nodeId()
          : "witness@" + s.bindHost() + ":" + s.port() + ":" + s.dir().getFileName();
      Path keyFile = s.keyFile() != null ? s.keyFile() : s.dir().resolve("witness.key");
      NodeKeys keys = WitnessIdentity.loadOrCreate(NodeId.of(id), trust.scheme(), keyFile);
      WitnessService service = new WitnessService(store, trust, keys);
      WitnessServer server = WitnessServer.start(service,
          new WitnessServer.Config(s.bindHost(), s.port(), s.maxConnections(), s.maxInflight(),
              s.maxFrameBytes() + 4096, s.idleTimeoutMillis()), metricsName);
      InetSocketAddress a = server.address();
      Files.writeString(s.dir().resolve("witness.address"),
          a.getAddress().getHostAddress() + ":" + a.getPort() + "\n", StandardCharsets.UTF_8);
      return new WitnessNode(store, server);
    } catch (IOException | RuntimeException e) {
      store.close();
      throw e;
    }
  }

  public InetSocketAddress address() {
    return server.address();
  }

  public WitnessService service() {
    return server.service();
  }

  public DurableCertificateStore store() {
    return store;
  }

  @Override
  public void close() throws IOException {
    try {
      server.close();
    } finally {
      store.close();
    }
  }
}
