package io.salus.blockdriver.launcher;

import java.io.IOException;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.ServerName;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.Hbck;
import org.apache.hadoop.hbase.master.RegionState;
import org.apache.hadoop.hbase.zookeeper.MetaTableLocator;
import org.apache.hadoop.hbase.zookeeper.ZKUtil;
import org.apache.hadoop.hbase.zookeeper.ZKWatcher;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reopening a cluster that was stopped cleanly: ZooKeeper still records hbase:meta as open on
 * the previous incarnation of a region server, and since that server archived its WAL directory
 * on close, nothing tells the new master that it is gone; the master then waits forever ("meta
 * is NOT online ... in holding-pattern"). An operator fixes this with HBCK2
 * {@code scheduleRecoveries}; this watcher does the same, once, while the master starts: when
 * every region server has registered and meta's recorded server is not one of them, it asks the
 * master (through the {@link Hbck} client API) to run a ServerCrashProcedure for that server,
 * which reassigns meta. No data is at stake: meta was flushed when it closed.
 */
final class StaleMetaRecovery implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(StaleMetaRecovery.class);

  private final Configuration conf;
  private final int expectedServers;
  private final Thread thread;
  private volatile boolean closed;
  private volatile ServerName recovered;

  StaleMetaRecovery(Configuration conf, int expectedServers) {
    this.conf = conf;
    this.expectedServers = expectedServers;
    this.thread = new Thread(this::run, "salus-stale-meta-recovery");
    this.thread.setDaemon(true);
  }

  void start() {
    thread.start();
  }

  /** The stale server a recovery was scheduled for, or null. */
  ServerName recovered() {
    return recovered;
  }

  private void run() {
    try (ZKWatcher zkw = new ZKWatcher(conf, "salus-stale-meta-recovery", null)) {
      ServerName suspect = null;
      while (!closed) {
        Thread.sleep(1000);
        RegionState meta = MetaTableLocator.getMetaRegionState(zkw);
        List<String> live = ZKUtil.listChildrenNoWatch(zkw, zkw.getZNodePaths().rsZNode);
        if (meta == null || meta.getServerName() == null || live == null
            || live.size() < expectedServers) {
          continue;
        }
        ServerName sn = meta.getServerName();
        if (live.contains(sn.toString())) {
          return; // meta is (being) served by a live server: nothing to repair
        }
        if (!sn.equals(suspect)) {
          suspect = sn; // seen stale once; confirm on the next round before acting
          continue;
        }
        try (Connection c = ConnectionFactory.createConnection(conf); Hbck hbck = c.getHbck()) {
          hbck.scheduleServerCrashProcedures(List.of(sn));
          LOG.info("hbase:meta was recorded on {} which is not live; scheduled its recovery", sn);
          recovered = sn;
          return;
        } catch (IOException e) {
          // The master's procedure executor may not be up yet: try again next round.
          LOG.debug("scheduling recovery of {} failed, retrying: {}", sn, e.toString());
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (Exception e) {
      LOG.warn("stale meta recovery failed; if start-up hangs, run HBCK2 scheduleRecoveries", e);
    }
  }

  @Override
  public void close() {
    closed = true;
    thread.interrupt();
  }
}
