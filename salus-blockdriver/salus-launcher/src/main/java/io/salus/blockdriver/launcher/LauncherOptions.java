package io.salus.blockdriver.launcher;

import java.nio.file.Path;

/**
 * What {@code salus up} starts. Ports of 0 mean "choose a free one", {@link #UNSET} means "not
 * given on the command line". ZooKeeper, NameNode and HBase ports chosen on first start are
 * recorded in the data directory and reused on restart.
 */
public record LauncherOptions(
    Path dataDir,
    String host,
    int zkPort,
    int nameNodePort,
    int nbdPort,
    int dataNodes,
    int regionServers,
    String volumeName,
    long volumeSizeBytes,
    boolean skipMemoryCheck) {

  public static final int UNSET = -1;
  public static final int DEFAULT_ZK_PORT = 2181;
  public static final int DEFAULT_NAMENODE_PORT = 8020;

  public LauncherOptions {
    if (dataNodes < 3) {
      throw new IllegalArgumentException("--datanodes must be at least 3 (one per replica of an RRS), got " + dataNodes);
    }
    if (regionServers < 3) {
      throw new IllegalArgumentException("--regionservers must be at least 3 (one per replica of an RRS), got " + regionServers);
    }
  }
}
