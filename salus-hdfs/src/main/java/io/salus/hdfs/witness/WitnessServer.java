package io.salus.hdfs.witness;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.Closeable;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.salus.core.cert.Certificate;
import io.salus.core.cert.RegionId;
import io.salus.core.cert.Wire;
import io.salus.core.crypto.NodeId;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves a {@link WitnessService} over the {@link WitnessProtocol} on TCP. One thread per
 * connection processes that connection's requests in order; at most {@code maxConnections}
 * connections are served (others get BUSY and are closed) and at most {@code maxInflight} offers
 * wait for fsync at once: a connection over the limit blocks, stops reading its socket, and TCP flow
 * control pushes back on the client. Used unchanged by the DataNode plugin and the standalone daemon.
 */
public final class WitnessServer implements Closeable {
  private static final Logger LOG = LoggerFactory.getLogger(WitnessServer.class);

  /** Server settings. */
  public record Config(String bindHost, int port, int maxConnections, int maxInflight,
      int maxFrameBytes, int idleTimeoutMillis) {
    public static Config loopback(int port) {
      return new Config("127.0.0.1", port, 256, 1024, 1 << 20,
          WitnessNode.Settings.DEFAULT_IDLE_TIMEOUT_MILLIS);
    }

    public Config withBind(String host, int p) {
      return new Config(host, p, maxConnections, maxInflight, maxFrameBytes, idleTimeoutMillis);
    }

    public Config withLimits(int connections, int inflight) {
      return new Config(bindHost, port, connections, inflight, maxFrameBytes, idleTimeoutMillis);
    }

    /** Connections idle (or stuck inside a frame) for this long are closed, freeing their slot. */
    public Config withIdleTimeout(int millis) {
      return new Config(bindHost, port, maxConnections, maxInflight, maxFrameBytes, millis);
    }
  }

  private final WitnessService service;
  private final Config config;
  private final ServerSocket serverSocket;
  private final ThreadPoolExecutor pool;
  private final Semaphore inflight;
  private final Set<Socket> sockets = ConcurrentHashMap.newKeySet();
  /**
   * When each connection's current socket write started (absent while it is not writing). The
   * read timeout does not cover writes: a client that sends requests and never reads replies
   * would block its thread in write, holding a connection slot forever. The watchdog closes a
   * connection whose write has made no progress for the idle timeout.
   */
  private final Map<Socket, Long> writingSince = new ConcurrentHashMap<>();
  private final java.util.concurrent.ScheduledExecutorService watchdog;
  private final Thread acceptor;
  private final AtomicInteger connections = new AtomicInteger();
  private final java.util.concurrent.atomic.AtomicLong idleClosed =
      new java.util.concurrent.atomic.AtomicLong();
  private final WitnessMetrics metrics;
  private volatile boolean closed;

  private WitnessServer(WitnessService service, Config config, String metricsName)
      throws IOException {
    this.service = service;
    this.config = config;
    this.inflight = new Semaphore(config.maxInflight());
    this.serverSocket = new ServerSocket();
    serverSocket.setReuseAddress(true);
    serverSocket.bind(new InetSocketAddress(InetAddress.getByName(config.bindHost()), config.port()),
        128);
    AtomicInteger n = new AtomicInteger();
    this.pool = new ThreadPoolExecutor(0, config.maxConnections(), 30, TimeUnit.SECONDS,
        new SynchronousQueue<>(), r -> {
          Thread t = new Thread(r, "salus-witness-conn-" + n.incrementAndGet());
          t.setDaemon(true);
          return t;
        });
    this.metrics = WitnessMetrics.register(metricsName == null
        ? "SalusWitness-" + serverSocket.getLocalPort() : metricsName, this);
    this.watchdog = java.util.concurrent.Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "salus-witness-write-watchdog-" + serverSocket.getLocalPort());
      t.setDaemon(true);
      return t;
    });
    long period = Math.max(20, config.idleTimeoutMillis() / 4);
    watchdog.scheduleWithFixedDelay(this::closeStuckWriters, period, period,
        TimeUnit.MILLISECONDS);
    this.acceptor = new Thread(this::acceptLoop, "salus-witness-accept-" + address().getPort());
    acceptor.setDaemon(true);
    acceptor.start();
    LOG.info("Salus witness {} serving {} on {}", service.id(), service.store().directory(),
        address());
  }

  /** Binds and starts serving; the store stays owned by the caller's service. */
  public static WitnessServer start(WitnessService service, Config config) throws IOException {
    return new WitnessServer(service, config, null);
  }

  public static WitnessServer start(WitnessService service, Config config, String metricsName)
      throws IOException {
    return new WitnessServer(service, config, metricsName);
  }

  public InetSocketAddress address() {
    return new InetSocketAddress(serverSocket.getInetAddress(), serverSocket.getLocalPort());
  }

  public WitnessService service() {
    return service;
  }

  int activeConnections() {
    return connections.get();
  }

  /** Connections closed because they stayed idle past the timeout. */
  long idleClosedConnections() {
    return idleClosed.get();
  }

  int inflightOffers() {
    return config.maxInflight() - inflight.availablePermits();
  }

  private void acceptLoop() {
    while (!closed) {
      Socket s;
      try {
        s = serverSocket.accept();
      } catch (IOException e) {
        if (!closed) {
          LOG.warn("witness accept failed: {}", e.toString());
        }
        continue;
      }
      try {
        s.setTcpNoDelay(true);
        // Without a read timeout, maxConnections idle (or slow-loris) connections would hold
        // every slot forever and lock the replicas out.
        s.setSoTimeout(config.idleTimeoutMillis());
        sockets.add(s);
        pool.execute(() -> serve(s));
      } catch (java.util.concurrent.RejectedExecutionException | SocketException e) {
        refuse(s, "witness at its limit of " + config.maxConnections() + " connections; retry later"
            + " or raise salus.witness.max-connections");
      }
    }
  }

  /** Closes connections whose reply write has been blocked for longer than the idle timeout. */
  private void closeStuckWriters() {
    long now = System.nanoTime();
    long limit = TimeUnit.MILLISECONDS.toNanos(config.idleTimeoutMillis());
    for (Map.Entry<Socket, Long> e : writingSince.entrySet()) {
      if (now - e.getValue() > limit) {
        Socket s = e.getKey();
        idleClosed.incrementAndGet();
        LOG.debug("witness connection {} did not read its replies for {} ms: closed",
            s.getRemoteSocketAddress(), config.idleTimeoutMillis());
        try {
          s.close(); // unblocks the write with an exception; serve() then ends
        } catch (IOException ignored) {
          // closing
        }
        writingSince.remove(s);
      }
    }
  }

  /** The socket's output stream, with each write and flush timed by the watchdog. */
  private java.io.OutputStream watched(Socket s) throws IOException {
    java.io.OutputStream raw = s.getOutputStream();
    return new java.io.FilterOutputStream(raw) {
      @Override
      public void write(byte[] b, int off, int len) throws IOException {
        writingSince.put(s, System.nanoTime());
        try {
          raw.write(b, off, len);
        } finally {
          writingSince.remove(s);
        }
      }

      @Override
      public void write(int b) throws IOException {
        write(new byte[] {(byte) b}, 0, 1);
      }

      @Override
      public void flush() throws IOException {
        writingSince.put(s, System.nanoTime());
        try {
          raw.flush();
        } finally {
          writingSince.remove(s);
        }
      }
    };
  }

  private void refuse(Socket s, String why) {
    try (s) {
      DataOutputStream out = new DataOutputStream(s.getOutputStream());
      WitnessProtocol.write(out, WitnessProtocol.ST_BUSY, 0, message(why));
      out.flush();
    } catch (IOException ignored) {
      // best effort
    } finally {
      sockets.remove(s);
    }
  }

  private void serve(Socket s) {
    connections.incrementAndGet();
    try (s) {
      DataInputStream in = new DataInputStream(new BufferedInputStream(s.getInputStream(), 65536));
      DataOutputStream out = new DataOutputStream(new BufferedOutputStream(watched(s), 65536));
      while (!closed) {
        WitnessProtocol.Frame f;
        try {
          f = WitnessProtocol.read(in, config.maxFrameBytes());
        } catch (WitnessProtocol.ProtocolException e) {
          WitnessProtocol.write(out, WitnessProtocol.ST_BAD_REQUEST, 0, message(e.getMessage()));
          out.flush();
          return;
        }
        if (f == null) {
          return;
        }
        handle(f, out);
        if (in.available() == 0) {
          out.flush();
        }
      }
    } catch (java.net.SocketTimeoutException e) {
      idleClosed.incrementAndGet();
      LOG.debug("witness connection {} idle for {} ms: closed", s.getRemoteSocketAddress(),
          config.idleTimeoutMillis());
    } catch (IOException e) {
      if (!closed) {
        LOG.debug("witness connection {} ended: {}", s.getRemoteSocketAddress(), e.toString());
      }
    } finally {
      writingSince.remove(s);
      sockets.remove(s);
      connections.decrementAndGet();
    }
  }

  private void handle(WitnessProtocol.Frame f, DataOutputStream out) throws IOException {
    long id = f.requestId();
    try {
      switch (f.code()) {
        case WitnessProtocol.OP_OFFER -> {
          byte[] cert = new Wire.In(f.body()).blob("certificate");
          inflight.acquireUninterruptibly();
          WitnessService.Outcome o;
          try {
            o = service.offer(cert);
          } finally {
            inflight.release();
          }
          byte[] body = o.storeAck() != null ? new Wire.Out().blob(o.storeAck()).toByteArray()
              : o.reason() == null ? new byte[0] : message(o.reason());
          WitnessProtocol.write(out, o.status(), id, body);
        }
        case WitnessProtocol.OP_QUERY -> {
          Wire.In in = new Wire.In(f.body());
          String vol = in.str8("volume");
          int region = in.i32("region index");
          long gen = in.i64("generation");
          long index = in.i64("index");
          long attempt = in.i64("attempt");
          String signer = in.str8("signer");
          byte[] sig = in.blob("signature");
          in.expectEnd("query");
          RecoveryQuery q = new RecoveryQuery(new RegionId(vol, region), gen, index, attempt);
          if (signer.isEmpty()) {
            java.util.Optional<Certificate> c = service.read(q.region(), gen, index);
            if (c.isPresent()) {
              WitnessProtocol.write(out, WitnessProtocol.ST_CERT, id,
                  new Wire.Out().blob(c.get().encode()).toByteArray());
            } else {
              WitnessProtocol.write(out, WitnessProtocol.ST_NOTHING_STORED, id, new byte[0]);
            }
            return;
          }
          NodeId who = NodeId.of(signer);
          String why = !service.trust().isRecoverer(who)
              ? who + " is not a recoverer in the witness trust file (add `recoverer <id> <hex-key>`)"
              : q.checkSignature(who, sig, service.trust().keys());
          if (why != null) {
            WitnessProtocol.write(out, WitnessProtocol.ST_REJECTED, id, message(why));
            return;
          }
          Certificate c = service.query(q.region(), gen, index);
          WitnessProtocol.write(out, WitnessProtocol.ST_CERT, id, new Wire.Out().blob(c.encode())
              .toByteArray());
        }
        case WitnessProtocol.OP_TRUNCATE -> {
          byte[] cert = new Wire.In(f.body()).blob("checkpoint certificate");
          WitnessService.Outcome o = service.truncate(cert);
          byte[] body = o.storeAck() != null ? new Wire.Out().blob(o.storeAck()).toByteArray()
              : o.reason() == null ? new byte[0] : message(o.reason());
          WitnessProtocol.write(out, o.status(), id, body);
        }
        case WitnessProtocol.OP_IDENTITY -> {
          byte[] key = service.keys().verificationKey();
          WitnessProtocol.write(out, WitnessProtocol.ST_IDENTITY, id, new Wire.Out()
              .str8(service.id().name()).u8(service.keys().scheme().code()).blob(key)
              .toByteArray());
        }
        default -> WitnessProtocol.write(out, WitnessProtocol.ST_BAD_REQUEST, id,
            message("unknown op " + f.code() + " (known: 1 OFFER, 2 QUERY, 3 TRUNCATE, 4 IDENTITY)"));
      }
    } catch (IllegalArgumentException e) { // includes CertificateFormatException
      WitnessProtocol.write(out, WitnessProtocol.ST_BAD_REQUEST, id, message(e.getMessage()));
    } catch (RuntimeException | LinkageError e) {
      LOG.error("witness request {} op {} failed", id, f.code(), e);
      WitnessProtocol.write(out, WitnessProtocol.ST_ERROR, id, message(String.valueOf(e)));
    }
  }

  static byte[] message(String s) {
    byte[] b = s.getBytes(StandardCharsets.UTF_8);
    int n = Math.min(b.length, 65535);
    ByteArrayOutputStream o = new ByteArrayOutputStream(n + 2);
    o.write(n >>> 8);
    o.write(n);
    o.write(b, 0, n);
    return o.toByteArray();
  }

  @Override
  public void close() throws IOException {
    if (closed) {
      return;
    }
    closed = true;
    serverSocket.close();
    watchdog.shutdownNow();
    for (Socket s : sockets) {
      try {
        s.close();
      } catch (IOException ignored) {
        // closing
      }
    }
    // shutdown, not shutdownNow: the sockets closed above end every connection thread, and an
    // interrupt would only reach a thread in the store's journal I/O (where it used to close the
    // journal channel under the open store; the store now shrugs interrupts off, see
    // DurableCertificateStore#io). A thread still in the store finishes its request.
    pool.shutdown();
    try {
      pool.awaitTermination(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    metrics.unregister();
    LOG.info("Salus witness {} on {} stopped", service.id(), address());
  }
}
