import java.io.File;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.HConstants;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.*;
import org.apache.hadoop.hbase.testing.TestingHBaseCluster;
import org.apache.hadoop.hbase.testing.TestingHBaseClusterOption;
import org.apache.hadoop.hbase.util.Bytes;
import org.apache.hadoop.hbase.zookeeper.MiniZooKeeperCluster;
import org.apache.hadoop.hdfs.MiniDFSCluster;

/**
 * Does HBase 2.6's TestingHBaseCluster reopen HBase state on the same HDFS + ZooKeeper? Not part of
 * the build (hbase-testing-util has no 2.6.4-hadoop3 artifact); run by hand, see docs/launcher.md
 * "Why not TestingHBaseCluster". Argument: a scratch directory.
 */
public class TryTestingHBaseCluster {
  public static void main(String[] a) throws Exception {
    File base = new File(a[0]);
    Configuration c = HBaseConfiguration.create();
    MiniZooKeeperCluster zk = new MiniZooKeeperCluster(c);
    int zkPort = zk.startup(new File(base, "zk"));
    MiniDFSCluster dfs = new MiniDFSCluster.Builder(new Configuration(), new File(base, "dfs")).numDataNodes(1).build();
    String dfsUri = dfs.getURI().toString();
    TableName t = TableName.valueOf("probe");
    for (int run = 1; run <= 2; run++) {
      Configuration hc = HBaseConfiguration.create();
      hc.setInt("hbase.master.info.port", -1);
      hc.setInt("hbase.regionserver.info.port", -1);
      TestingHBaseCluster cl = TestingHBaseCluster.create(TestingHBaseClusterOption.builder().conf(hc)
          .numMasters(1).numRegionServers(1).useExternalDfs(dfsUri)
          .useExternalZooKeeper("127.0.0.1:" + zkPort).build());
      cl.start();
      Configuration cc = cl.getConf();
      System.out.println("RUN " + run + " hbase.rootdir=" + cc.get(HConstants.HBASE_DIR)
          + " zookeeper.znode.parent=" + cc.get(HConstants.ZOOKEEPER_ZNODE_PARENT));
      try (Connection conn = ConnectionFactory.createConnection(cc); Admin admin = conn.getAdmin()) {
        boolean exists = admin.tableExists(t);
        System.out.println("RUN " + run + " table 'probe' exists at start: " + exists);
        if (!exists) {
          admin.createTable(TableDescriptorBuilder.newBuilder(t)
              .setColumnFamily(ColumnFamilyDescriptorBuilder.of("f")).build());
        }
        try (Table tb = conn.getTable(t)) {
          tb.put(new Put(Bytes.toBytes("r")).addColumn(Bytes.toBytes("f"), Bytes.toBytes("q"), Bytes.toBytes("v" + run)));
        }
      }
      cl.stop();
      System.out.println("RUN " + run + " stopped; root dir still on HDFS: "
          + dfs.getFileSystem().exists(new org.apache.hadoop.fs.Path(cc.get(HConstants.HBASE_DIR))));
    }
    dfs.shutdown();
    zk.shutdown();
    System.exit(0);
  }
}
