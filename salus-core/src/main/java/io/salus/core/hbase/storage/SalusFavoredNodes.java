package io.salus.core.hbase.storage;

import java.net.InetSocketAddress;
import java.util.List;
import java.util.Optional;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.coprocessor.CoreCoprocessor;
import org.apache.hadoop.hbase.coprocessor.HasRegionServerServices;
import org.apache.hadoop.hbase.coprocessor.ObserverContext;
import org.apache.hadoop.hbase.coprocessor.RegionCoprocessor;
import org.apache.hadoop.hbase.coprocessor.RegionCoprocessorEnvironment;
import org.apache.hadoop.hbase.coprocessor.RegionObserver;
import org.apache.hadoop.hbase.regionserver.RegionServerServices;
import org.apache.hadoop.hbase.shaded.protobuf.generated.HBaseProtos;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Favored nodes for Salus replica regions (issue 13 item 2): when a replica region opens, its favored
 * node becomes the DataNode on its own region server's host, through the region server's
 * {@code FavoredNodesForRegion} (HBase 2.6.4: {@code updateRegionFavoredNodesMapping}); the region server
 * passes it to HDFS whenever it creates a store file (flush, compaction), so with replication 1 the
 * region's HFiles land on that DataNode. The same address is what the replica's Salus log is created
 * with ({@link #favoredDataNode}, given to {@link HdfsReplicaDisk#forRegion}). A region coprocessor set as
 * a table attribute on the three replica tables (no cluster-wide key), {@link CoreCoprocessor} because only
 * core coprocessors may reach the region server services:
 * <pre>{@code
 * TableDescriptorBuilder.newBuilder(desc).setCoprocessor(SalusFavoredNodes.class.getName())
 * }</pre>
 *
 * <p>Which DataNode: {@value #DATANODE_KEY} ({@code host:port}, the DataNode's transfer address) when the
 * region server's configuration sets it; otherwise the region server's own host name with the port of
 * {@code dfs.datanode.address} (default 9866), i.e. the DataNode on the same machine.
 */
@CoreCoprocessor
public final class SalusFavoredNodes implements RegionCoprocessor, RegionObserver {
    private static final Logger LOG = LoggerFactory.getLogger(SalusFavoredNodes.class);
    /** The colocated DataNode's transfer address, {@code host:port}; default: this host, dfs.datanode.address's port. */
    public static final String DATANODE_KEY = "salus.favored.datanode";

    @Override
    public Optional<RegionObserver> getRegionObserver() {
        return Optional.of(this);
    }

    /** The DataNode a replica on this region server favours (see the class comment). */
    public static InetSocketAddress favoredDataNode(Configuration conf, String regionServerHost) {
        String explicit = conf.getTrimmed(DATANODE_KEY);
        if (explicit != null && !explicit.isEmpty()) {
            int colon = explicit.lastIndexOf(':');
            if (colon <= 0) {
                throw new IllegalArgumentException(DATANODE_KEY + "=" + explicit
                        + " is not host:port (the DataNode's transfer address, e.g. dn1.example.com:9866)");
            }
            return InetSocketAddress.createUnresolved(explicit.substring(0, colon),
                    Integer.parseInt(explicit.substring(colon + 1)));
        }
        String dn = conf.getTrimmed("dfs.datanode.address", "0.0.0.0:9866");
        int port = Integer.parseInt(dn.substring(dn.lastIndexOf(':') + 1));
        return InetSocketAddress.createUnresolved(regionServerHost, port);
    }

    @Override
    public void postOpen(ObserverContext<RegionCoprocessorEnvironment> ctx) {
        RegionCoprocessorEnvironment env = ctx.getEnvironment();
        if (!(env instanceof HasRegionServerServices h)) {
            LOG.warn("{} is not loaded as a core coprocessor; region {} keeps HBase's favored nodes",
                    SalusFavoredNodes.class.getSimpleName(), env.getRegionInfo().getEncodedName());
            return;
        }
        RegionServerServices rss = h.getRegionServerServices();
        if (rss == null) {
            return; // region opened outside a region server (tools)
        }
        InetSocketAddress dn = favoredDataNode(env.getConfiguration(), rss.getServerName().getHostname());
        String encoded = env.getRegionInfo().getEncodedName();
        rss.updateRegionFavoredNodesMapping(encoded, List.of(HBaseProtos.ServerName.newBuilder()
                .setHostName(dn.getHostString()).setPort(dn.getPort()).build()));
        LOG.info("region {}: favored DataNode {}:{}", encoded, dn.getHostString(), dn.getPort());
    }
}
