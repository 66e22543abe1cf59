package io.exalt.runner;

import io.exalt.agent.boot.ExaltRuntime;
import java.io.File;
import java.io.IOException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.server.datanode.DataNode;

/**
 * A real NameNode and N emulated DataNodes in this JVM (MiniDFSCluster), each DataNode with one data directory
 * under an agent prefix and a data-transfer port in the agent's compressed port set.
 */
final class EmulatedHdfs implements AutoCloseable {
    final MiniDFSCluster cluster;
    final Configuration conf;
    final int nnRpcPort;

    private EmulatedHdfs(MiniDFSCluster cluster, Configuration conf) {
        this.cluster = cluster;
        this.conf = conf;
        this.nnRpcPort = cluster.getNameNodePort();
    }

    /** Checks that the agent emulates {@code dataDir} and compresses the DataNode ports; explains the fix if not. */
    static void checkAgent(File dataDir, int portBase, int datanodes) {
        if (dataDir.getAbsolutePath().matches(".*\\s.*")) {
            throw new IllegalArgumentException("cluster directory '" + dataDir.getParentFile() + "' contains whitespace: HDFS"
                    + " DataNodes cannot use such a storage directory (they never register with the NameNode); choose"
                    + " --base-dir without spaces");
        }
        if (!ExaltRuntime.underPrefix(new File(dataDir, "x").getAbsolutePath())) {
            throw new IllegalStateException("DataNode directory " + dataDir + " is not under an Exalt agent prefix (agent prefixes: "
                    + ExaltRuntime.prefixes() + "). Start the runner with exalt-agent/exalt, or add"
                    + " -javaagent:exalt-agent-*-agent.jar=prefix=" + dataDir.getAbsolutePath() + ",ports=" + portBase + "-"
                    + (portBase + datanodes - 1));
        }
        int[] eph = ephemeralPorts();
        if (portBase <= eph[1] && portBase + datanodes - 1 >= eph[0]) {
            throw new IllegalStateException("DataNode ports " + portBase + "-" + (portBase + datanodes - 1) + " overlap this machine's"
                    + " ephemeral port range " + eph[0] + "-" + eph[1] + " (/proc/sys/net/ipv4/ip_local_port_range): outgoing RPC"
                    + " connections could get a compressed local port and hang. Choose --port-base below " + eph[0]
                    + ", e.g. 30000");
        }
        for (int i = 0; i < datanodes; i++) {
            if (!ExaltRuntime.portCompressed(portBase + i)) {
                throw new IllegalStateException("DataNode port " + (portBase + i) + " is not in the agent's ports= set; use"
                        + " ports=" + portBase + "-" + (portBase + datanodes - 1) + " or a smaller --datanodes");
            }
        }
    }

    /** The kernel's ephemeral (outgoing) port range; Linux default 32768-60999. */
    static int[] ephemeralPorts() {
        try {
            String[] f = java.nio.file.Files.readString(java.nio.file.Paths.get("/proc/sys/net/ipv4/ip_local_port_range")).trim()
                    .split("\\s+");
            return new int[] {Integer.parseInt(f[0]), Integer.parseInt(f[1])};
        } catch (IOException | RuntimeException e) {
            return new int[] {32768, 60999};
        }
    }

    static EmulatedHdfs start(File base, int datanodes, int portBase, int handlers, long blockSize, int bytesPerChecksum,
            int replication, java.util.function.IntConsumer progress) throws IOException {
        Configuration conf = new Configuration();
        conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, base.getAbsolutePath());
        conf.set(DFSConfigKeys.DFS_NAMENODE_HTTP_ADDRESS_KEY, "127.0.0.1:0");
        conf.set(DFSConfigKeys.DFS_DATANODE_HTTP_ADDRESS_KEY, "127.0.0.1:0");
        conf.set(DFSConfigKeys.DFS_DATANODE_IPC_ADDRESS_KEY, "127.0.0.1:0");
        conf.setBoolean("dfs.webhdfs.enabled", false);
        conf.setInt(DFSConfigKeys.DFS_NAMENODE_HANDLER_COUNT_KEY, handlers);
        conf.setLong(DFSConfigKeys.DFS_BLOCK_SIZE_KEY, blockSize);
        conf.setLong(DFSConfigKeys.DFS_NAMENODE_MIN_BLOCK_SIZE_KEY, Math.min(blockSize, 1L << 20));
        conf.setInt(DFSConfigKeys.DFS_BYTES_PER_CHECKSUM_KEY, bytesPerChecksum);
        conf.setInt(DFSConfigKeys.DFS_REPLICATION_KEY, replication);
        // many DataNodes in one JVM: keep per-DataNode thread pools small
        conf.setInt(DFSConfigKeys.DFS_DATANODE_HANDLER_COUNT_KEY, 2);
        conf.setInt("dfs.datanode.directoryscan.threads", 1);
        conf.setBoolean(DFSConfigKeys.DFS_NAMENODE_REDUNDANCY_CONSIDERLOAD_KEY, false);
        conf.setInt("dfs.datanode.fsdatasetcache.max.threads.per.volume", 1);
        conf.setLong(DFSConfigKeys.DFS_DATANODE_SCAN_PERIOD_HOURS_KEY, -1); // volume scanner off
        // the in-JVM clients reuse their packet buffers (HDFS's own option for many concurrent writers): without it every
        // 64 KiB packet is a new array, 3/4 of all bytes the runner JVM allocated in the per-core profile (docs/exalt.md)
        conf.setBoolean("dfs.client.write.byte-array-manager.enabled", true);
        MiniDFSCluster c = new MiniDFSCluster.Builder(conf).numDataNodes(0).storagesPerDatanode(1).build();
        try {
            for (int i = 0; i < datanodes; i++) {
                Configuration dn = new Configuration(conf);
                dn.set(DFSConfigKeys.DFS_DATANODE_ADDRESS_KEY, "127.0.0.1:" + (portBase + i));
                c.startDataNodes(dn, 1, true, null, null, null, null, false, true);
                if (progress != null) {
                    progress.accept(i + 1);
                }
            }
            c.waitActive();
        } catch (IOException | RuntimeException e) {
            c.shutdown();
            throw e;
        }
        conf.setInt(DFSConfigKeys.DFS_REPLICATION_KEY, replication);
        return new EmulatedHdfs(c, conf);
    }

    DistributedFileSystem fs() throws IOException {
        return cluster.getFileSystem();
    }

    int liveDataNodes() {
        return cluster.getNamesystem().getNumLiveDataNodes();
    }

    DataNode dataNode(int i) {
        return cluster.getDataNodes().get(i);
    }

    @Override
    public void close() {
        cluster.shutdown(true);
    }
}
