package io.salus.blockdriver.cli;

import io.salus.blockdriver.nbd.NbdServer;
import io.salus.blockdriver.salus.CatalogExports;
import io.salus.blockdriver.salus.SalusVolume;
import io.salus.blockdriver.volume.HBaseVolume;
import io.salus.blockdriver.volume.Volume;
import io.salus.blockdriver.volume.VolumeLease;
import io.salus.blockdriver.volume.VolumeCatalog;
import io.salus.blockdriver.volume.VolumeException;
import java.io.File;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.BindException;
import java.net.InetAddress;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import org.apache.hadoop.hbase.client.Connection;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code salus nbd --volume NAME}: serves a volume of a running cluster over NBD. The volume's kind in the
 * catalog picks the implementation: {@code salus} a {@link SalusVolume}, {@code hbase} an {@link HBaseVolume}.
 */
@Command(name = "nbd", mixinStandardHelpOptions = true,
    description = "Export a volume over NBD until interrupted (Ctrl-C).")
public final class NbdCommand implements Callable<Integer> {
  @Option(names = "--volume", required = true, paramLabel = "NAME", description = "Volume.")
  String volume;

  @Option(names = "--port", defaultValue = "10809",
      description = "TCP port (default ${DEFAULT-VALUE}; 0 = any free port).")
  int port;

  @Option(names = "--bind", defaultValue = "127.0.0.1",
      description = "Address to listen on (default ${DEFAULT-VALUE}).")
  String bind;

  @Option(names = "--hbase-conf", paramLabel = "DIR",
      description = "Directory with the cluster's hbase-site.xml (default: classpath).")
  File hbaseConf;

  @Option(names = "--accept-current-state",
      description = "Mount even if the volume tree rebuilt from storage differs from the root"
          + " recorded at the last flush/close, and trust what is stored now (an operator"
          + " decision after inspecting the volume; default: refuse to mount).")
  boolean acceptCurrentState;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  /** A running export: the server, the volume it serves and the HBase connection. */
  public static final class Running implements AutoCloseable {
    public final NbdServer server;
    public final Volume volume;
    private final Connection connection;

    Running(NbdServer server, Volume volume, Connection connection) {
      this.server = server;
      this.volume = volume;
      this.connection = connection;
    }

    /** The volume's kind: {@code salus} or {@code hbase}. */
    public String kind() {
      return volume instanceof SalusVolume ? VolumeCatalog.KIND_SALUS : VolumeCatalog.KIND_HBASE;
    }

    /** The writer lease the exported volume holds. */
    public VolumeLease lease() {
      return volume instanceof SalusVolume s ? s.lease() : ((HBaseVolume) volume).lease();
    }

    @Override
    public void close() {
      server.close(); // also closes the exported volume (records its root)
      try {
        connection.close();
      } catch (IOException ignored) {
        // closing
      }
    }
  }

  /**
   * Connects to the cluster, mounts the volume and starts the NBD server. Throws
   * IllegalArgumentException (bad name, unknown volume, bad port, missing hbase-site.xml) or
   * BindException (address in use) with messages naming the fix.
   */
  public static Running serve(String volume, String bind, int port, File hbaseConf)
      throws IOException {
    return serve(volume, bind, port, hbaseConf, false);
  }

  /** Like {@link #serve(String, String, int, File)}, optionally accepting the current state. */
  public static Running serve(String volume, String bind, int port, File hbaseConf,
      boolean acceptCurrentState) throws IOException {
    if (port < 0 || port > 65535) {
      throw new IllegalArgumentException("bad port " + port + ": use 0..65535");
    }
    VolumeCatalog.checkName(volume);
    Connection c = HBaseConf.connect(hbaseConf);
    CatalogExports exports = null;
    try {
      exports = new CatalogExports(c, volume, acceptCurrentState);
      Volume v = exports.volume();
      NbdServer server;
      try {
        server = new NbdServer(InetAddress.getByName(bind), port, exports).start();
      } catch (IOException e) {
        throw new BindException("cannot listen on " + bind + ":" + port + " (" + e.getMessage()
            + "): pick another --port or --bind address");
      }
      return new Running(server, v, c);
    } catch (IOException | RuntimeException e) {
      if (exports != null) {
        exports.close();
      }
      c.close();
      throw e;
    }
  }

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    Running r;
    try {
      r = serve(volume, bind, port, hbaseConf, acceptCurrentState);
    } catch (IllegalArgumentException | IllegalStateException | BindException
        | VolumeException.InUse | VolumeException.RootMismatch e) {
      err.println("error: " + e.getMessage());
      err.flush();
      return 2;
    } catch (HBaseConf.ClusterUnreachableException e) {
      err.println("error: " + e.getMessage());
      err.flush();
      return 1;
    } catch (Exception e) {
      err.println("error: " + e + " (is the cluster up? check --hbase-conf)");
      err.flush();
      return 1;
    }
    String uri = r.server.uri(r.volume.name());
    out.println("serving " + r.kind() + " volume " + r.volume.name() + " ("
        + r.volume.sizeInBytes() + " bytes) at " + uri);
    out.println("attach: nbdfuse DIR " + uri + "   or   nbd-client -N " + r.volume.name() + " "
        + bind + " " + r.server.port() + " /dev/nbd0");
    out.flush();
    CountDownLatch stop = new CountDownLatch(1);
    StopSignals.install(stop::countDown, err);
    Thread hook = new Thread(r::close, "salus-nbd-shutdown"); // other ways the JVM may end
    Runtime.getRuntime().addShutdownHook(hook);
    int code = awaitEnd(r.volume.name(), r.lease(), stop, r::close, err);
    try {
      Runtime.getRuntime().removeShutdownHook(hook);
    } catch (IllegalStateException shuttingDown) {
      // the hook runs anyway
    }
    return code;
  }

  /** Exit code of an export stopped because its volume was fenced (lease lost). */
  public static final int EXIT_FENCED = 3;

  /**
   * Serves until {@code stop} opens (SIGTERM/SIGINT) or the volume's writer lease is lost for good;
   * then closes the export. A fenced export says so and returns {@link #EXIT_FENCED}: it can no
   * longer acknowledge writes, and answering every request with an error forever would hide that.
   */
  static int awaitEnd(String volume, io.salus.blockdriver.volume.VolumeLease lease,
      CountDownLatch stop, Runnable close, PrintWriter err) throws InterruptedException {
    java.util.concurrent.atomic.AtomicBoolean fenced = new java.util.concurrent.atomic.AtomicBoolean();
    lease.onLost(() -> {
      fenced.set(true);
      stop.countDown();
    });
    stop.await();
    close.run();
    if (fenced.get()) {
      err.println("error: volume '" + volume + "' is fenced: its single-writer lease was lost"
          + " (ZooKeeper session expired or the lease znode is gone), so another writer may own it"
          + " now and no further write can be acknowledged. The export stopped. Start"
          + " 'salus nbd --volume " + volume + "' again once the cluster's ZooKeeper is reachable.");
      err.flush();
      return EXIT_FENCED;
    }
    return 0;
  }
}
