package io.salus.blockdriver.bench;

import io.salus.hdfs.placement.LocationHintMetrics;
import io.salus.hdfs.placement.LocationHintPlacementPolicy;
import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.hbase.MiniHBaseCluster;
import org.apache.hadoop.hbase.regionserver.HRegionServer;
import org.apache.hadoop.hbase.util.JVMClusterUtil;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.server.blockmanagement.BlockPlacementPolicy;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.hdfs.server.datanode.metrics.DataNodeMetrics;
import org.apache.hadoop.metrics2.lib.MutableCounterLong;
import org.apache.hadoop.metrics2.lib.MutableFastCounter;

/**
 * The servers' own byte counters, read in-process from a mini cluster: for the HBase master and every region
 * server the RPC server's {@code receivedBytes} / {@code sentBytes} (metrics2 source {@code IPC}, JMX
 * {@code Hadoop:service=HBase,name=RegionServer,sub=IPC}: every request byte a server reads off its RPC sockets
 * and every response byte it writes), and for every DataNode {@code BytesWritten} / {@code BytesRead}
 * ({@code DataNodeActivity}: every block byte a DataNode receives through the data transfer protocol, from a
 * client or from the previous DataNode of a write pipeline, and every block byte it sends to a reader), plus the
 * NameNode's location-hint counters (followed / fallbacks) of salus-hdfs's placement policy.
 *
 * <p>The counters are private fields of HBase's and Hadoop's metrics classes (the same objects JMX publishes);
 * they are read by reflection because both expose them only through the JVM-wide metrics system, where three
 * region servers of one JVM share names.
 */
final class ServerByteCounters {
  /** One server's counters at one moment. */
  record Server(String name, String kind, long received, long sent) {}

  /** All servers at one moment. */
  record Snapshot(List<Server> servers, long hintsFollowed, long hintFallbacks) {
    long rpcBytes() {
      return servers.stream().filter(s -> s.kind().equals("hbase-rpc")).mapToLong(s -> s.received() + s.sent())
          .sum();
    }

    long dataNodeWritten() {
      return servers.stream().filter(s -> s.kind().equals("datanode")).mapToLong(Server::received).sum();
    }

    long dataNodeRead() {
      return servers.stream().filter(s -> s.kind().equals("datanode")).mapToLong(Server::sent).sum();
    }

    /** This snapshot minus an earlier one of the same cluster, server by server. */
    Snapshot minus(Snapshot before) {
      List<Server> d = new ArrayList<>();
      for (Server s : servers) {
        Server b = before.servers.stream().filter(x -> x.name().equals(s.name()) && x.kind().equals(s.kind()))
            .findFirst().orElse(new Server(s.name(), s.kind(), 0, 0));
        d.add(new Server(s.name(), s.kind(), s.received() - b.received(), s.sent() - b.sent()));
      }
      return new Snapshot(d, hintsFollowed - before.hintsFollowed, hintFallbacks - before.hintFallbacks);
    }
  }

  private ServerByteCounters() {}

  static Snapshot take(MiniHBaseCluster hbase, MiniDFSCluster dfs) {
    List<Server> out = new ArrayList<>();
    // several servers of one JVM share one IPC metrics source (HBase keys them by name; in a mini cluster the
    // three region servers do): count each source once and name every server it covers
    Map<Object, List<String>> sources = new IdentityHashMap<>();
    List<Object> order = new ArrayList<>();
    List<HRegionServer> servers = new ArrayList<>();
    servers.add(hbase.getMaster()); // HMaster is an HRegionServer in HBase 2.x: its RPC server takes reports
    for (JVMClusterUtil.RegionServerThread t : hbase.getLiveRegionServerThreads()) {
      servers.add(t.getRegionServer());
    }
    for (HRegionServer rs : servers) {
      Object src = rs.getRpcServer().getMetrics().getMetricsSource();
      if (!sources.containsKey(src)) {
        order.add(src);
      }
      sources.computeIfAbsent(src, k -> new ArrayList<>())
          .add((rs == hbase.getMaster() ? "master:" : "rs:") + rs.getServerName().getPort());
    }
    for (Object src : order) {
      out.add(new Server(String.join("+", sources.get(src)), "hbase-rpc", fastCounter(src, "receivedBytes"),
          fastCounter(src, "sentBytes")));
    }
    for (DataNode dn : dfs.getDataNodes()) {
      DataNodeMetrics m = dn.getMetrics();
      out.add(new Server("dn:" + dn.getXferAddress().getPort(), "datanode", counterLong(m, "bytesWritten"),
          counterLong(m, "bytesRead")));
    }
    long followed = -1;
    long fallbacks = -1;
    BlockPlacementPolicy p = dfs.getNamesystem().getBlockManager().getBlockPlacementPolicy();
    if (p instanceof LocationHintPlacementPolicy lh) {
      LocationHintMetrics m = lh.getMetrics();
      followed = m.followed();
      fallbacks = m.fallbacks();
    }
    return new Snapshot(out, followed, fallbacks);
  }

  private static long fastCounter(Object owner, String field) {
    return ((MutableFastCounter) read(owner, field)).value();
  }

  private static long counterLong(Object owner, String field) {
    return ((MutableCounterLong) read(owner, field)).value();
  }

  private static Object read(Object owner, String field) {
    for (Class<?> c = owner.getClass(); c != null; c = c.getSuperclass()) {
      try {
        Field f = c.getDeclaredField(field);
        f.setAccessible(true);
        return f.get(owner);
      } catch (NoSuchFieldException e) {
        // look in the superclass
      } catch (IllegalAccessException e) {
        throw new IllegalStateException("cannot read " + c.getName() + "." + field, e);
      }
    }
    throw new IllegalStateException(owner.getClass().getName() + " has no counter '" + field
        + "': the HBase/Hadoop version changed its metrics; update ServerByteCounters");
  }
}
