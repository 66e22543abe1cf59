package io.salus.hdfs;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.hdfs.MiniDFSCluster;

/** Test helper: configuration for a quiet MiniDFSCluster on 127.0.0.1 with web UIs off. */
public final class MiniDfs {
  private MiniDfs() {
  }

  public static Configuration conf(String name) throws IOException {
    Configuration conf = new HdfsConfiguration();
    File base = Files.createTempDirectory("salus-hdfs-" + name).toFile();
    conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, base.getAbsolutePath());
    conf.set("dfs.namenode.http-address", "127.0.0.1:0");
    conf.set("dfs.namenode.https-address", "127.0.0.1:0");
    conf.set("dfs.datanode.http.address", "127.0.0.1:0");
    conf.set("dfs.datanode.https.address", "127.0.0.1:0");
    conf.set("dfs.datanode.address", "127.0.0.1:0");
    conf.set("dfs.datanode.ipc.address", "127.0.0.1:0");
    conf.setBoolean("dfs.webhdfs.enabled", false);
    conf.setInt("dfs.heartbeat.interval", 1);
    conf.setInt("dfs.namenode.heartbeat.recheck-interval", 3000);
    conf.setLong("dfs.namenode.fs-limits.min-block-size", 1024);
    conf.setInt("dfs.bytes-per-checksum", 512);
    conf.setInt("dfs.datanode.handler.count", 2);
    conf.setInt("dfs.namenode.handler.count", 4);
    conf.setInt("dfs.namenode.service.handler.count", 2);
    return conf;
  }
}
