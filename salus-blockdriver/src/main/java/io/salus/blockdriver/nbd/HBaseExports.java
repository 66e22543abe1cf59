package io.salus.blockdriver.nbd;

import io.salus.blockdriver.volume.HBaseVolume;
import io.salus.blockdriver.volume.Volume;
import io.salus.blockdriver.volume.VolumeCatalog;
import io.salus.blockdriver.volume.VolumeException;
import io.salus.blockdriver.volume.VolumeInfo;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.hadoop.hbase.client.Connection;

/**
 * NBD exports backed by the volume catalog: export name = volume name. Volumes are opened on
 * first use and shared by all connections; {@link #close()} closes them (recording their roots).
 * The empty export name maps to {@code defaultVolume} when one is given. With
 * {@code allowed} non-empty only those volumes are exported.
 */
public final class HBaseExports implements NbdExports {
  private final Connection connection;
  private final String defaultVolume;
  private final List<String> allowed;
  private final Map<String, HBaseVolume> open = new ConcurrentHashMap<>();
  private final boolean acceptCurrentState;
  /** One lock per volume name, held while that volume opens. */
  private final Map<String, Object> opening = new ConcurrentHashMap<>();
  private volatile boolean closed;

  public HBaseExports(Connection connection, String defaultVolume, List<String> allowed) {
    this(connection, defaultVolume, allowed, false);
  }

  /**
   * With {@code acceptCurrentState} the volumes' mounts accept a root that differs from the
   * recorded one (the operator's explicit decision, see {@link HBaseVolume#open(Connection,
   * String, boolean)}); otherwise such a mount fails with {@link VolumeException.RootMismatch}.
   */
  public HBaseExports(Connection connection, String defaultVolume, List<String> allowed,
      boolean acceptCurrentState) {
    this.connection = connection;
    this.defaultVolume = defaultVolume;
    this.allowed = allowed == null ? List.of() : List.copyOf(allowed);
    this.acceptCurrentState = acceptCurrentState;
  }

  /** Exports exactly one volume (also the default export). */
  public static HBaseExports single(Connection connection, String volume) {
    return new HBaseExports(connection, volume, List.of(volume));
  }

  /** Exports exactly one volume, accepting its current stored state at mount if asked to. */
  public static HBaseExports single(Connection connection, String volume,
      boolean acceptCurrentState) {
    return new HBaseExports(connection, volume, List.of(volume), acceptCurrentState);
  }

  /**
   * Resolves an export name, opening the volume on first use. Not one lock for all exports: an
   * open volume is returned without waiting, and a slow mount (a scan, regions in transition)
   * holds up only the handshakes of that same volume, which wait for it on the volume's own
   * lock, never another export's handshake.
   */
  @Override
  public Volume resolve(String exportName) throws IOException {
    String name = exportName.isEmpty() ? defaultVolume : exportName;
    if (name == null || (!allowed.isEmpty() && !allowed.contains(name))) {
      return null;
    }
    try {
      VolumeCatalog.checkName(name);
    } catch (IllegalArgumentException e) {
      return null;
    }
    HBaseVolume v = open.get(name);
    if (v != null) {
      return v;
    }
    synchronized (opening.computeIfAbsent(name, k -> new Object())) {
      if (closed) {
        throw new VolumeException.Closed("the NBD exports are closing; volume '" + name
            + "' is not opened");
      }
      v = open.get(name);
      if (v == null) {
        if (new VolumeCatalog(connection).describe(name).isEmpty()) {
          return null;
        }
        v = HBaseVolume.open(connection, name, acceptCurrentState);
        open.put(name, v);
        if (closed) {
          // close() ran while this volume was opening: it did not see it, so close it here
          open.remove(name);
          v.close();
          throw new VolumeException.Closed("the NBD exports closed while volume '" + name
              + "' was opening");
        }
      }
    }
    return v;
  }

  /** Opens (if needed) and returns a volume, e.g. to warm it up before clients connect. */
  public HBaseVolume volume(String name) throws IOException {
    Volume v = resolve(name);
    if (v == null) {
      new VolumeCatalog(connection).require(name); // throws the message naming the fix
      throw new IllegalArgumentException("volume '" + name + "' is not exported here");
    }
    return (HBaseVolume) v;
  }

  @Override
  public Collection<String> names() throws IOException {
    if (!allowed.isEmpty()) {
      return allowed;
    }
    List<String> names = new ArrayList<>();
    for (VolumeInfo i : new VolumeCatalog(connection).list()) {
      names.add(i.name());
    }
    return names;
  }

  @Override
  public synchronized void close() {
    closed = true;
    for (HBaseVolume v : open.values()) {
      v.close();
    }
    open.clear();
  }
}
