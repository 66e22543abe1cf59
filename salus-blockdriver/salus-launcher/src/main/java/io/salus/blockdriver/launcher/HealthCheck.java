package io.salus.blockdriver.launcher;

import java.io.DataInputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.FsStatus;
import org.apache.hadoop.hbase.ClusterMetrics;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.HConstants;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.protocol.HdfsConstants;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;

/** Probes each endpoint that a running {@code salus up} recorded, with short time-outs. */
public final class HealthCheck {
  /** One probe result. */
  public record Result(String component, boolean healthy, String detail) {}

  private HealthCheck() {}

  public static List<Result> probe(Properties e) {
    List<Result> results = new ArrayList<>();
    results.add(process(e.getProperty("pid")));
    results.add(zookeeper(e.getProperty("zookeeper.quorum")));
    results.add(hdfs(e.getProperty("hdfs.namenode")));
    results.add(hbase(e.getProperty("zookeeper.quorum")));
    String nbd = e.getProperty("nbd.uri");
    if (nbd != null) {
      results.add(nbd(nbd));
    }
    String witnesses = e.getProperty("witnesses");
    if (witnesses != null && !witnesses.isEmpty()) {
      results.add(witnesses(witnesses.split(",")));
    }
    return results;
  }

  static Result process(String pid) {
    if (pid == null) {
      return new Result("launcher", false, "no pid recorded");
    }
    boolean alive = ProcessHandle.of(Long.parseLong(pid)).map(ProcessHandle::isAlive).orElse(false);
    return new Result("launcher", alive, "pid " + pid + (alive ? " running" : " not running"));
  }

  static Result zookeeper(String quorum) {
    CountDownLatch connected = new CountDownLatch(1);
    try {
      ZooKeeper zk = new ZooKeeper(quorum, 5000, ev -> {
        if (ev.getState() == Watcher.Event.KeeperState.SyncConnected) {
          connected.countDown();
        }
      });
      try {
        if (!connected.await(5, TimeUnit.SECONDS)) {
          return new Result("zookeeper", false, quorum + " did not answer within 5 s");
        }
        int children = zk.getChildren("/", false).size();
        return new Result("zookeeper", true, quorum + " serving, " + children + " top-level znodes");
      } finally {
        zk.close();
      }
    } catch (Exception ex) {
      return new Result("zookeeper", false, quorum + ": " + ex.getMessage());
    }
  }

  static Result hdfs(String nameNode) {
    Configuration c = new Configuration();
    c.setInt("ipc.client.connect.max.retries", 1);
    c.setInt("ipc.client.connect.timeout", 3000);
    c.setBoolean("fs.hdfs.impl.disable.cache", true);
    try (FileSystem fs = FileSystem.get(URI.create(nameNode), c)) {
      FsStatus st = fs.getStatus();
      String extra = "";
      if (fs instanceof DistributedFileSystem dfs) {
        int live = dfs.getDataNodeStats(HdfsConstants.DatanodeReportType.LIVE).length;
        boolean safe = dfs.isInSafeMode();
        extra = ", " + live + " live DataNodes" + (safe ? ", IN SAFE MODE" : "");
        if (safe || live < 3) {
          return new Result("hdfs", false, nameNode + extra);
        }
      }
      return new Result("hdfs", true, nameNode + extra + ", " + (st.getUsed() >> 20) + " MiB used");
    } catch (IOException | RuntimeException ex) {
      return new Result("hdfs", false, nameNode + ": " + ex.getMessage());
    }
  }

  static Result hbase(String quorum) {
    Configuration c = HBaseConfiguration.create();
    int colon = quorum.lastIndexOf(':');
    c.set(HConstants.ZOOKEEPER_QUORUM, quorum.substring(0, colon));
    c.set(HConstants.ZOOKEEPER_CLIENT_PORT, quorum.substring(colon + 1));
    c.setInt("hbase.client.retries.number", 2);
    c.setInt("hbase.client.operation.timeout", 10000);
    c.setInt("hbase.rpc.timeout", 5000);
    c.setInt("zookeeper.recovery.retry", 1);
    try (Connection conn = ConnectionFactory.createConnection(c); Admin admin = conn.getAdmin()) {
      ClusterMetrics m = admin.getClusterMetrics();
      int live = m.getLiveServerMetrics().size();
      int tables = admin.listTableNames().length;
      return new Result("hbase", live >= 1,
          "master " + m.getMasterName() + ", " + live + " live region servers, " + tables + " tables");
    } catch (IOException | RuntimeException ex) {
      return new Result("hbase", false, ex.getMessage());
    }
  }

  /** Every witness (DataNode plugins and standalone) accepts a TCP connection. */
  static Result witnesses(String[] addresses) {
    int up = 0;
    StringBuilder down = new StringBuilder();
    for (String a : addresses) {
      int colon = a.lastIndexOf(':');
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress(a.substring(0, colon), Integer.parseInt(a.substring(colon + 1))), 3000);
        up++;
      } catch (IOException | RuntimeException ex) {
        down.append(' ').append(a);
      }
    }
    return new Result("witnesses", up == addresses.length,
        up + "/" + addresses.length + " listening" + (down.length() > 0 ? ", down:" + down : ""));
  }

  static Result nbd(String uri) {
    URI u = URI.create(uri);
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress(u.getHost(), u.getPort()), 3000);
      s.setSoTimeout(3000);
      byte[] magic = new byte[8];
      new DataInputStream(s.getInputStream()).readFully(magic);
      boolean ok = "NBDMAGIC".equals(new String(magic, java.nio.charset.StandardCharsets.US_ASCII));
      return new Result("nbd", ok, uri + (ok ? " answers the NBD handshake" : " sent no NBD greeting"));
    } catch (IOException ex) {
      return new Result("nbd", false, uri + ": " + ex.getMessage());
    }
  }
}
