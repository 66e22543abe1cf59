package io.exalt.it;

import io.exalt.tardis.TardisGenerator;
import java.io.File;
import java.util.Arrays;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.MiniDFSCluster;

/**
 * Child-JVM main (run with the agent, prefix = the DataNodes' data directories): a real MiniDFSCluster with 3
 * emulated DataNodes stores a Tardis file with replication 3, reads it back, and checks every byte.
 * Prints "RESULT ..." lines for {@link EmulatedHdfsTest}.
 */
public final class EmulatedHdfsMain {
    public static void main(String[] a) throws Exception {
        File base = new File(a[0]);
        long len = Long.parseLong(a[1]);
        int basePort = Integer.parseInt(a[2]); // DataNode transfer ports basePort..basePort+2 (compressed by the agent)
        Configuration conf = new Configuration();
        conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, base.getAbsolutePath());
        conf.set(DFSConfigKeys.DFS_NAMENODE_HTTP_ADDRESS_KEY, "127.0.0.1:0");
        conf.set(DFSConfigKeys.DFS_DATANODE_HTTP_ADDRESS_KEY, "127.0.0.1:0");
        conf.setBoolean("dfs.webhdfs.enabled", false);
        conf.setLong(DFSConfigKeys.DFS_BLOCK_SIZE_KEY, 128L << 20);
        conf.setInt(DFSConfigKeys.DFS_REPLICATION_KEY, 3);
        // checksums of Tardis data are not Tardis data: with 512-byte chunks the .meta files are 1/128 of the
        // data and incompressible, so emulation uses 64 KiB checksum chunks (see docs/exalt.md)
        conf.setInt(DFSConfigKeys.DFS_BYTES_PER_CHECKSUM_KEY, 64 * 1024);
        MiniDFSCluster cluster = new MiniDFSCluster.Builder(conf).numDataNodes(0).build();
        try {
            for (int i = 0; i < 3; i++) {
                Configuration dn = new Configuration(conf);
                dn.set(DFSConfigKeys.DFS_DATANODE_ADDRESS_KEY, "127.0.0.1:" + (basePort + i));
                dn.set(DFSConfigKeys.DFS_DATANODE_IPC_ADDRESS_KEY, "127.0.0.1:0");
                cluster.startDataNodes(dn, 1, true, null, null, null, null, false, true);
            }
            cluster.waitActive();
            FileSystem fs = cluster.getFileSystem();
            Path p = new Path("/exalt/client0/file0");
            TardisGenerator g = new TardisGenerator(len);
            byte[] buf = new byte[1 << 20];
            long t0 = System.nanoTime();
            // MiniDFSCluster built with 0 DataNodes lowered the default replication to 0: ask for 3 explicitly
            try (FSDataOutputStream out = fs.create(p, true, 64 << 10, (short) 3, 128L << 20)) {
                for (long pos = 0; pos < len; pos += buf.length) {
                    int n = (int) Math.min(buf.length, len - pos);
                    g.fill(pos, buf, 0, n);
                    out.write(buf, 0, n);
                }
            }
            long t1 = System.nanoTime();
            System.out.println("RESULT written=" + fs.getFileStatus(p).getLen() + " writeSeconds=" + (t1 - t0) / 1e9);
            byte[] exp = new byte[buf.length];
            long verified = 0;
            try (FSDataInputStream in = fs.open(p)) {
                for (long pos = 0; pos < len; pos += buf.length) {
                    int n = (int) Math.min(buf.length, len - pos);
                    in.readFully(buf, 0, n);
                    g.fill(pos, exp, 0, n);
                    if (!Arrays.equals(buf, 0, n, exp, 0, n)) {
                        throw new AssertionError("HDFS returned different bytes at offset " + pos);
                    }
                    verified += n;
                }
                if (in.read() != -1) {
                    throw new AssertionError("file longer than written");
                }
            }
            System.out.println("RESULT verified=" + verified + " readSeconds=" + (System.nanoTime() - t1) / 1e9);
            // positional read of a range inside the second block
            byte[] mid = new byte[100_000];
            try (FSDataInputStream in = fs.open(p)) {
                in.readFully((128L << 20) + 12_345, mid);
            }
            g.fill((128L << 20) + 12_345, exp, 0, mid.length);
            System.out.println("RESULT pread=" + Arrays.equals(mid, 0, mid.length, exp, 0, mid.length));
            int minReplicas = Integer.MAX_VALUE;
            for (org.apache.hadoop.fs.BlockLocation l : fs.getFileBlockLocations(p, 0, len)) {
                minReplicas = Math.min(minReplicas, l.getNames().length);
            }
            System.out.println("RESULT replicas=" + minReplicas);
            System.out.println("RESULT netLogical=" + io.exalt.agent.boot.ExaltRuntime.NET_LOGICAL_BYTES_SENT.get()
                    + " netWire=" + io.exalt.agent.boot.ExaltRuntime.NET_WIRE_BYTES_SENT.get());
        } finally {
            cluster.shutdown();
        }
        System.out.println("RESULT done");
    }
}
