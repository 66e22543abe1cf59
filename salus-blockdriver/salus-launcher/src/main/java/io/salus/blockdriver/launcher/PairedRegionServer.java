package io.salus.blockdriver.launcher;

import java.io.IOException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HConstants;
import org.apache.hadoop.hbase.MiniHBaseCluster;

/**
 * A region server of the embedded cluster paired with its own DataNode: before the server starts, its
 * configuration gets {@code salus.favored.datanode} = the transfer address of DataNode {@code i} for region
 * server {@code i}, looked up by the server's port in {@link #PAIR_PREFIX}{@code <port>} (set by
 * {@link EmbeddedCluster}). A stock cluster sets {@code salus.favored.datanode} in each host's own
 * {@code hbase-site.xml}; in one JVM the servers share one configuration, so the pairing travels by port.
 */
public class PairedRegionServer extends MiniHBaseCluster.MiniHBaseClusterRegionServer {
  /** {@code salus.launcher.paired-datanode.<region server port>} = {@code host:xferPort}. */
  static final String PAIR_PREFIX = "salus.launcher.paired-datanode.";

  public PairedRegionServer(Configuration conf) throws IOException, InterruptedException {
    super(pair(conf));
  }

  private static Configuration pair(Configuration conf) {
    int port = conf.getInt(HConstants.REGIONSERVER_PORT, -1);
    String dn = conf.get(PAIR_PREFIX + port);
    if (dn == null) {
      throw new IllegalStateException("region server on port " + port + " has no paired DataNode ("
          + PAIR_PREFIX + port + " unset): the embedded cluster pairs each region server with one DataNode");
    }
    conf.set(io.salus.core.hbase.storage.SalusFavoredNodes.DATANODE_KEY, dn);
    return conf;
  }
}
