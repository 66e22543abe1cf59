package io.salus.blockdriver.launcher;

import java.nio.file.Path;

/**
 * What {@code salus up} starts. Ports of 0 mean "choose a free one", {@link #UNSET} means "not
 * given on the command line". ZooKeeper, NameNode and HBase ports chosen on first start are
 * recorded in the data directory and reused on restart. {@code volumeKind} is null when {@code --kind} was not
 * given: the catalog's kind for an existing volume, {@link #KIND_SALUS} for a new one.
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
    String volumeKind,
    boolean skipMemoryCheck) {

  public static final int UNSET = -1;
  public static final int DEFAULT_ZK_PORT = 2181;
  public static final int DEFAULT_NAMENODE_PORT = 8020;
  /** {@code --kind salus}: a SalusVolume (the replica endpoints), the default for a new volume. */
  public static final String KIND_SALUS = "salus";
  /** {@code --kind hbase}: the plain-HBase baseline volume ({@code HBaseVolume}). */
  public static final String KIND_HBASE = "hbase";

  public LauncherOptions {
    if (dataNodes < 3) {
      throw new IllegalArgumentException("--datanodes must be at least 3 (one per replica of an RRS), got " + dataNodes);
    }
    if (regionServers < 3) {
      throw new IllegalArgumentException("--regionservers must be at least 3 (one per replica of an RRS), got " + regionServers);
    }
    if (volumeKind != null && !KIND_SALUS.equals(volumeKind) && !KIND_HBASE.equals(volumeKind)) {
      throw new IllegalArgumentException("bad --kind '" + volumeKind + "': use salus (a SalusVolume, the default)"
          + " or hbase (the plain-HBase baseline)");
    }
  }
}
