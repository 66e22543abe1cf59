package io.salus.blockdriver.nbd;

import io.salus.blockdriver.metrics.BlockDriverMetrics;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * NBD server (fixed newstyle) exporting volumes by name. Binds 127.0.0.1 unless told otherwise;
 * port 0 picks an ephemeral port (see {@link #port()}). One thread per connection reads requests;
 * requests run asynchronously on the volume and replies go out in completion order.
 *
 * <pre>
 *   try (NbdServer s = new NbdServer(InetAddress.getLoopbackAddress(), 0, NbdExports.of(vol))) {
 *     s.start();
 *     ... nbd://127.0.0.1:s.port()/volName ...
 *   }
 * </pre>
 */
public final class NbdServer implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(NbdServer.class);
  public static final int DEFAULT_MAX_CONNECTIONS = 64;

  private final InetAddress bindAddress;
  private final int requestedPort;
  private final NbdExports exports;
  private final BlockDriverMetrics metrics;
  /** The metrics in JMX ({@code SalusNbd-<port>}) while serving. */
  private io.salus.blockdriver.metrics.BlockDriverMetricsSource jmx;
  private final int maxConnections;
  private final Set<NbdConnection> connections = ConcurrentHashMap.newKeySet();
  private final AtomicInteger connectionIds = new AtomicInteger();
  private final ExecutorService rmwExecutor;
  private final BufferPool pool;
  private ServerSocketChannel serverSocket;
  private Thread acceptor;
  private volatile boolean closed;
  /** Tests: runs on the acceptor thread after each accept, before the connection is registered. */
  static volatile Runnable afterAcceptForTest;

  public NbdServer(InetAddress bindAddress, int port, NbdExports exports) {
    this(bindAddress, port, exports, new BlockDriverMetrics(), DEFAULT_MAX_CONNECTIONS);
  }

  public NbdServer(InetAddress bindAddress, int port, NbdExports exports,
      BlockDriverMetrics metrics, int maxConnections) {
    this(bindAddress, port, exports, metrics, maxConnections, BufferPool.DEFAULT_CAP,
        BufferPool.DEFAULT_WAIT_MS);
  }

  /**
   * With a cap on the payload buffers of all connections together ({@code bufferCapBytes},
   * default {@code -Dsalus.nbd.maxBufferBytes} or half the heap limit, at most 512 MiB): a
   * request waits up to {@code bufferWaitMs} for memory, then is refused with ENOMEM.
   */
  public NbdServer(InetAddress bindAddress, int port, NbdExports exports,
      BlockDriverMetrics metrics, int maxConnections, long bufferCapBytes, long bufferWaitMs) {
    this.pool = new BufferPool(bufferCapBytes, bufferWaitMs);
    this.bindAddress = bindAddress == null ? InetAddress.getLoopbackAddress() : bindAddress;
    this.requestedPort = port;
    this.exports = exports;
    this.metrics = metrics;
    this.maxConnections = maxConnections;
    AtomicInteger n = new AtomicInteger();
    this.rmwExecutor = Executors.newCachedThreadPool(r -> {
      Thread t = new Thread(r, "nbd-rmw-" + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    });
  }

  public synchronized NbdServer start() throws IOException {
    if (serverSocket != null) {
      return this;
    }
    return start(bind(bindAddress, requestedPort));
  }

  /**
   * Opens the listening socket without serving yet, so that a caller that starts other services
   * first (the embedded launcher) holds its port and no ephemeral socket of theirs can take it.
   */
  public static ServerSocketChannel bind(InetAddress address, int port) throws IOException {
    ServerSocketChannel ss = ServerSocketChannel.open();
    try {
      ss.socket().setReuseAddress(true);
      ss.bind(new InetSocketAddress(
          address == null ? InetAddress.getLoopbackAddress() : address, port), 64);
      return ss;
    } catch (IOException e) {
      ss.close();
      throw e;
    }
  }

  /** Serves on a socket opened earlier with {@link #bind}; the server owns it from now on. */
  public synchronized NbdServer start(ServerSocketChannel bound) throws IOException {
    if (serverSocket != null) {
      throw new IllegalStateException("NBD server already started");
    }
    serverSocket = bound;
    acceptor = new Thread(this::acceptLoop, "nbd-accept-" + port());
    acceptor.setDaemon(true);
    acceptor.start();
    jmx = io.salus.blockdriver.metrics.BlockDriverMetricsSource.register("SalusNbd-" + port(),
        metrics);
    LOG.info("NBD server listening on {}:{}", bindAddress.getHostAddress(), port());
    return this;
  }

  /** The bound port (after {@link #start()}). */
  public int port() {
    return serverSocket.socket().getLocalPort();
  }

  public InetAddress bindAddress() {
    return bindAddress;
  }

  /** URI for an export, e.g. {@code nbd://127.0.0.1:10809/vol}. */
  public String uri(String exportName) {
    return "nbd://" + bindAddress.getHostAddress() + ":" + port() + "/" + exportName;
  }

  public BlockDriverMetrics metrics() {
    return metrics;
  }

  /** Most payload buffer bytes in use at once so far (never above the cap). */
  public long peakBufferBytes() {
    return pool.peakInUseBytes();
  }

  public int activeConnections() {
    return connections.size();
  }

  private void acceptLoop() {
    while (!closed) {
      SocketChannel s;
      try {
        s = serverSocket.accept();
      } catch (IOException e) {
        if (!closed) {
          LOG.warn("NBD accept failed", e);
          try {
            Thread.sleep(10);
          } catch (InterruptedException ie) {
            return;
          }
        }
        continue;
      }
      if (connections.size() >= maxConnections) {
        metrics.connectionsRejected.increment();
        try {
          s.close();
        } catch (IOException ignored) {
          // rejected
        }
        continue;
      }
      metrics.connectionsAccepted.increment();
      Runnable hook = afterAcceptForTest;
      if (hook != null) {
        hook.run();
      }
      NbdConnection[] holder = new NbdConnection[1];
      NbdConnection c = new NbdConnection(s, exports, rmwExecutor, pool, metrics,
          () -> connections.remove(holder[0]));
      holder[0] = c;
      connections.add(c);
      if (closed) {
        // close() set the flag before it closed the connections it found: this one was added
        // after that, so it is closed here (its thread ends at once) instead of being served by
        // exports that are closing
        c.closeQuietly();
      }
      Thread t = new Thread(c, "nbd-conn-" + connectionIds.incrementAndGet());
      t.setDaemon(true);
      t.start();
    }
  }

  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    try {
      if (serverSocket != null) {
        serverSocket.close();
      }
    } catch (IOException ignored) {
      // closing
    }
    for (NbdConnection c : connections) {
      c.closeQuietly();
    }
    if (acceptor != null) {
      try {
        acceptor.join(5000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!connections.isEmpty() && System.nanoTime() < deadline) {
      try {
        Thread.sleep(10);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    rmwExecutor.shutdown();
    exports.close();
    if (jmx != null) {
      jmx.close();
    }
    LOG.info("NBD server closed; metrics {}", metrics);
  }
}
