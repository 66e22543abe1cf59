package io.salus.blockdriver.launcher;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.Properties;

/**
 * The on-disk layout of a {@code salus up} data directory.
 *
 * <pre>
 *   DATA/salus-layout.properties   layout version + the ports chosen on first start
 *   DATA/salus.lock                held while a launcher runs on this directory
 *   DATA/zookeeper/                MiniZooKeeperCluster snapshots and txn logs
 *   DATA/dfs/                      MiniDFSCluster name and data directories
 *   DATA/hbase-tmp/                HBase local tmp (the HBase root dir itself lives in HDFS)
 *   DATA/witness-N/                standalone witness stores
 *   DATA/logs/salus.log            all daemon logs
 *   DATA/endpoints.properties      addresses of the running cluster (read by 'salus status')
 * </pre>
 *
 * The ports of ZooKeeper and the NameNode are part of the persistent state: HBase keeps
 * {@code hdfs://host:port} URIs, so a restart reuses the ports recorded on first start.
 */
public final class DataDirLayout implements AutoCloseable {
  public static final int LAYOUT_VERSION = 1;
  static final String LAYOUT_FILE = "salus-layout.properties";
  static final String ENDPOINTS_FILE = "endpoints.properties";

  private final Path root;
  private final Properties layout;
  private final boolean fresh;
  private FileChannel lockChannel;
  private FileLock lock;

  private DataDirLayout(Path root, Properties layout, boolean fresh) {
    this.root = root;
    this.layout = layout;
    this.fresh = fresh;
  }

  /**
   * Opens (or initialises) a data directory and takes its lock.
   *
   * @throws LauncherException if the directory belongs to another program, to an incompatible
   *     layout version, or is already in use by a running launcher
   */
  public static DataDirLayout open(Path dir) throws LauncherException {
    Path root = dir.toAbsolutePath().normalize();
    try {
      if (Files.exists(root) && !Files.isDirectory(root)) {
        throw new LauncherException(
            "data path " + root + " is a file, not a directory; pass --data with a directory path");
      }
      Files.createDirectories(root);
      Path layoutFile = root.resolve(LAYOUT_FILE);
      Properties props = new Properties();
      boolean fresh;
      if (Files.exists(layoutFile)) {
        try (InputStream in = Files.newInputStream(layoutFile)) {
          props.load(in);
        }
        String v = props.getProperty("layout.version");
        if (v == null || !v.equals(Integer.toString(LAYOUT_VERSION))) {
          throw new LauncherException(
              "data directory " + root + " has layout version " + v + " but this salus uses layout "
                  + LAYOUT_VERSION + "; start with another --data directory, or move this one"
                  + " away if its contents are no longer needed");
        }
        fresh = false;
      } else {
        try (var entries = Files.list(root)) {
          if (entries.findAny().isPresent()) {
            throw new LauncherException(
                "directory " + root + " is not empty and is not a salus data directory (no "
                    + LAYOUT_FILE + "); pass --data with an empty or new directory");
          }
        }
        props.setProperty("layout.version", Integer.toString(LAYOUT_VERSION));
        fresh = true;
      }
      DataDirLayout layout = new DataDirLayout(root, props, fresh);
      layout.lock();
      if (fresh) {
        layout.save(); // claim the directory at once, so a failed first start can be retried
      }
      return layout;
    } catch (IOException e) {
      throw new LauncherException(
          "cannot use data directory " + root + ": " + e.getMessage()
              + "; check that it is writable or pass another --data", e);
    }
  }

  private void lock() throws IOException, LauncherException {
    lockChannel =
        FileChannel.open(root.resolve("salus.lock"), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
    try {
      lock = lockChannel.tryLock();
    } catch (OverlappingFileLockException e) {
      lock = null;
    }
    if (lock == null) {
      lockChannel.close();
      throw new LauncherException(
          "data directory " + root + " is in use by another running 'salus up'; stop it first"
              + " (Ctrl-C or kill <pid>), or pass another --data directory");
    }
  }

  public boolean isFresh() {
    return fresh;
  }

  public Path root() {
    return root;
  }

  public File dir(String name) throws IOException {
    Path p = root.resolve(name);
    Files.createDirectories(p);
    return p.toFile();
  }

  /** A port recorded on first start, or {@code fallback} if none was recorded yet. */
  public int port(String key, int fallback) {
    String v = layout.getProperty("port." + key);
    return v == null ? fallback : Integer.parseInt(v);
  }

  public boolean hasPort(String key) {
    return layout.getProperty("port." + key) != null;
  }

  public void recordPort(String key, int port) {
    layout.setProperty("port." + key, Integer.toString(port));
  }

  /** Persists the layout file atomically; called once the cluster has started. */
  public void save() throws IOException {
    writeAtomically(root.resolve(LAYOUT_FILE), layout, "salus data directory layout");
  }

  public void writeEndpoints(Properties endpoints) throws IOException {
    writeAtomically(root.resolve(ENDPOINTS_FILE), endpoints, "endpoints of the running salus cluster");
  }

  public void clearEndpoints() throws IOException {
    Files.deleteIfExists(root.resolve(ENDPOINTS_FILE));
  }

  /** Reads the endpoints a running launcher wrote, without taking the lock. */
  public static Properties readEndpoints(Path dir) throws IOException {
    Path f = dir.toAbsolutePath().resolve(ENDPOINTS_FILE);
    Properties p = new Properties();
    if (Files.exists(f)) {
      try (InputStream in = Files.newInputStream(f)) {
        p.load(in);
      }
    }
    return p;
  }

  private static void writeAtomically(Path target, Properties props, String comment) throws IOException {
    Path tmp = target.resolveSibling(target.getFileName() + ".tmp");
    try (OutputStream out = Files.newOutputStream(tmp)) {
      props.store(out, comment);
    }
    Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
  }

  @Override
  public void close() throws IOException {
    if (lock != null) {
      lock.release();
      lock = null;
    }
    if (lockChannel != null) {
      lockChannel.close();
      lockChannel = null;
    }
  }
}
