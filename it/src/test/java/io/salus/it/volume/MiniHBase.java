package io.salus.it.volume;

import io.salus.blockdriver.volume.HBaseVolume;
import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HBaseTestingUtility;
import org.apache.hadoop.hbase.StartMiniClusterOption;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.util.Bytes;
import org.apache.log4j.Level;
import org.apache.log4j.LogManager;

/**
 * One HBase mini cluster (1 master, 1 region server, mini ZooKeeper) on the local file system
 * with the standard (FSHLog) write-ahead log; web UIs off. Shared by all tests of one class.
 */
public final class MiniHBase implements AutoCloseable {
  private final HBaseTestingUtility util;
  private final Connection connection;

  public MiniHBase() throws Exception {
    LogManager.getRootLogger().setLevel(Level.WARN);
    util = new HBaseTestingUtility();
    Configuration conf = util.getConfiguration();
    conf.setInt("hbase.master.info.port", -1);
    conf.setInt("hbase.regionserver.info.port", -1);
    conf.setBoolean("hbase.unsafe.stream.capability.enforce", false);
    conf.set("hbase.wal.provider", "filesystem");
    conf.setInt("hbase.regionserver.handler.count", 16);
    conf.setInt("hbase.client.retries.number", 10);
    util.startMiniZKCluster();
    util.startMiniHBaseCluster(StartMiniClusterOption.builder()
        .numMasters(1).numRegionServers(1).build());
    connection = util.getConnection();
  }

  public Connection connection() {
    return connection;
  }

  public Configuration conf() {
    return util.getConfiguration();
  }

  public HBaseTestingUtility util() {
    return util;
  }

  /** Writes the client configuration as {@code dir/hbase-site.xml} (for CLI tests). */
  public File writeSiteXml(File dir) throws IOException {
    dir.mkdirs();
    File f = new File(dir, "hbase-site.xml");
    Configuration c = new Configuration(false);
    c.set("hbase.zookeeper.quorum", conf().get("hbase.zookeeper.quorum"));
    c.set("hbase.zookeeper.property.clientPort", conf().get("hbase.zookeeper.property.clientPort"));
    c.set("zookeeper.znode.parent", conf().get("zookeeper.znode.parent", "/hbase"));
    try (OutputStream o = new FileOutputStream(f)) {
      c.writeXml(o);
    }
    return f;
  }

  /**
   * The version a tamperer uses to replace a block behind the driver's back: one newer than the
   * stored cell (the driver writes explicit versions, see WriteVersions).
   */
  public static long newerVersion(Table t, long block) throws IOException {
    Result r = t.get(new Get(Bytes.toBytes(block)));
    return r.getColumnLatestCell(HBaseVolume.FAMILY, HBaseVolume.DATA).getTimestamp() + 1;
  }

  @Override
  public void close() throws Exception {
    util.shutdownMiniCluster();
  }
}
