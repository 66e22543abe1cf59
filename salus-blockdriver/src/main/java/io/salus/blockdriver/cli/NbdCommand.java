package io.salus.blockdriver.cli;

import io.salus.blockdriver.nbd.NbdServer;
import io.salus.blockdriver.volume.HBaseExports;
import io.salus.blockdriver.volume.HBaseVolume;
import io.salus.blockdriver.volume.VolumeCatalog;
import java.io.File;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import org.apache.hadoop.hbase.client.Connection;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code salus nbd --volume NAME}: serves a volume of a running cluster over NBD. */
@Command(name = "nbd", mixinStandardHelpOptions = true,
    description = "Export a volume over NBD until interrupted (Ctrl-C).")
public final class NbdCommand implements Callable<Integer> {
  @Option(names = "--volume", required = true, paramLabel = "NAME", description = "Volume.")
  String volume;

  @Option(names = "--port", defaultValue = "10809", description = "TCP port (default ${DEFAULT-VALUE}).")
  int port;

  @Option(names = "--bind", defaultValue = "127.0.0.1",
      description = "Address to listen on (default ${DEFAULT-VALUE}).")
  String bind;

  @Option(names = "--hbase-conf", paramLabel = "DIR",
      description = "Directory with the cluster's hbase-site.xml (default: classpath).")
  File hbaseConf;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    if (port < 0 || port > 65535) {
      err.println("error: bad port " + port + ": use 0..65535");
      return 2;
    }
    Connection c = null;
    HBaseExports exports = null;
    try {
      VolumeCatalog.checkName(volume);
      c = HBaseConf.connect(hbaseConf);
      exports = HBaseExports.single(c, volume);
      HBaseVolume v = exports.volume(volume);
      NbdServer server;
      try {
        server = new NbdServer(InetAddress.getByName(bind), port, exports).start();
      } catch (java.io.IOException e) {
        throw new java.net.BindException(e.getMessage());
      }
      final Connection conn = c;
      out.println("serving volume " + v.name() + " (" + v.sizeInBytes() + " bytes) at "
          + server.uri(v.name()));
      out.println("attach: nbdfuse DIR " + server.uri(v.name())
          + "   or   nbd-client -N " + v.name() + " " + bind + " " + server.port()
          + " /dev/nbd0");
      out.flush();
      CountDownLatch done = new CountDownLatch(1);
      Runtime.getRuntime().addShutdownHook(new Thread(() -> {
        server.close();
        try {
          conn.close();
        } catch (Exception ignored) {
          // exiting
        }
        done.countDown();
      }));
      done.await();
      return 0;
    } catch (IllegalArgumentException e) {
      cleanup(exports, c);
      err.println("error: " + e.getMessage());
      return 2;
    } catch (java.net.BindException e) {
      cleanup(exports, c);
      err.println("error: cannot listen on " + bind + ":" + port + " (" + e.getMessage()
          + "): pick another --port or --bind address");
      return 2;
    } catch (Exception e) {
      cleanup(exports, c);
      err.println("error: " + e + " (is the cluster up? check --hbase-conf)");
      return 1;
    } finally {
      err.flush();
    }
  }

  private static void cleanup(HBaseExports exports, Connection c) {
    if (exports != null) {
      exports.close();
    }
    if (c != null) {
      try {
        c.close();
      } catch (Exception ignored) {
        // exiting
      }
    }
  }
}
