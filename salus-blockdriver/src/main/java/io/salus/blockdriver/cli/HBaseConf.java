package io.salus.blockdriver.cli;

import java.io.File;
import java.io.IOException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;

/** Builds the HBase client configuration for CLI commands from {@code --hbase-conf DIR}. */
final class HBaseConf {
  private HBaseConf() {}

  static Configuration load(File dir) {
    Configuration conf = HBaseConfiguration.create();
    if (dir != null) {
      File site = new File(dir, "hbase-site.xml");
      if (!site.isFile()) {
        throw new IllegalArgumentException("no hbase-site.xml in '" + dir + "': point"
            + " --hbase-conf at the directory holding your cluster's hbase-site.xml");
      }
      conf.addResource(new Path(site.getAbsolutePath()));
    }
    // fail fast instead of retrying for minutes when the cluster is down
    conf.setIfUnset("hbase.client.retries.number", "5");
    conf.setIfUnset("zookeeper.recovery.retry", "1");
    return conf;
  }

  static Connection connect(File dir) throws IOException {
    return ConnectionFactory.createConnection(load(dir));
  }
}
