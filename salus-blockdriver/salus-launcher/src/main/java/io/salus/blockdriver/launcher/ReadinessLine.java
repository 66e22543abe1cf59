package io.salus.blockdriver.launcher;

import java.util.Properties;

/**
 * The single line {@code salus up} prints once every server answers. Scripts and the
 * integration test wait for its prefix {@value #PREFIX}.
 */
public final class ReadinessLine {
  public static final String PREFIX = "SALUS READY";
  /** Where {@code salus up} writes the client's hbase-site.xml, under the data directory. */
  public static final String CLIENT_CONF_DIR = "conf";

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
    String kind = e.getProperty("volume.kind");
    if (kind != null) {
      sb.append(" kind=").append(kind); // salus = a SalusVolume, hbase = the plain-HBase baseline
    }
    sb.append(" | try:");
    if (nbd != null) {
      sb.append(" nbdinfo ").append(nbd).append(" ;");
    }
    sb.append(" ./salus status --data ").append(e.getProperty("data"));
    // A salus subcommand, not 'hdfs dfs …': nobody installed a Hadoop client to try Salus.
    sb.append(" ; ./salus volume list --hbase-conf ").append(e.getProperty("data")).append('/')
        .append(CLIENT_CONF_DIR);
    return sb.toString();
  }
}
