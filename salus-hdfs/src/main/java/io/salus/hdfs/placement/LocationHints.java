package io.salus.hdfs.placement;

import java.io.IOException;
import java.net.InetSocketAddress;

import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.DistributedFileSystem;

/**
 * Writer side of location hints: create a file whose blocks the NameNode should place on a given
 * DataNode (named by its data-transfer address, {@code host:port} as in {@code dfs.datanode.address}).
 * Used for a replica's Salus log and HFiles (replication 1, colocated DataNode).
 */
public final class LocationHints {
  private LocationHints() {
  }

  public static FSDataOutputStream create(DistributedFileSystem fs, Path path, short replication,
      long blockSize, boolean overwrite, InetSocketAddress... hintedDataNodes) throws IOException {
    if (hintedDataNodes == null || hintedDataNodes.length == 0) {
      throw new IllegalArgumentException("no location hint given for " + path
          + "; pass the DataNode transfer address (host:port) the file should live on");
    }
    int bufferSize = fs.getConf().getInt("io.file.buffer.size", 4096);
    return fs.create(path, FsPermission.getFileDefault(), overwrite, bufferSize, replication,
        blockSize, null, hintedDataNodes);
  }
}
