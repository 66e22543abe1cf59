package io.salus.blockdriver.launcher;

import java.util.Properties;

/**
 * The single line {@code salus up} prints once every server answers. Scripts and the
 * integration test wait for its prefix {@value #PREFIX}.
 */
public final class ReadinessLine {
  public static final String PREFIX = "SALUS READY";

  private ReadinessLine() {}

  public static String format(Properties e) {
    StringBuilder sb = new StringBuilder(PREFIX);
    sb.append(" zookeeper=").append(e.getProperty("zookeeper.quorum"));
    sb.append(" namenode=").append(e.getProperty("hdfs.namenode"));
    sb.append(" hbase-master=").append(e.getProperty("hbase.master"));
    String witnesses = e.getProperty("witnesses");
    if (witnesses != null) {
      sb.append(" witnesses=").append(witnesses);
    }
    String nbd = e.getProperty("nbd.uri");
    if (nbd != null) {
      sb.append(" nbd=").append(nbd);
    }
    sb.append(" | try:");
    if (nbd != null) {
      sb.append(" nbdinfo ").append(nbd).append(" ;");
    }
    sb.append(" ./salus status --data ").append(e.getProperty("data"));
    sb.append(" ; hdfs dfs -fs ").append(e.getProperty("hdfs.namenode")).append(" -ls /hbase");
    return sb.toString();
  }
}
