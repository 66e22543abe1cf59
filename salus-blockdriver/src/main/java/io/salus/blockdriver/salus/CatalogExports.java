package io.salus.blockdriver.salus;

import io.salus.blockdriver.nbd.HBaseExports;
import io.salus.blockdriver.nbd.NbdExports;
import io.salus.blockdriver.volume.Volume;
import io.salus.blockdriver.volume.VolumeCatalog;
import io.salus.blockdriver.volume.VolumeInfo;
import java.io.IOException;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.hadoop.hbase.client.Connection;

/**
 * NBD exports of catalog volumes that pick the {@link Volume} by the kind recorded in the catalog: a
 * {@link VolumeCatalog#KIND_SALUS} volume is a {@link SalusVolume}, a {@link VolumeCatalog#KIND_HBASE} volume an
 * {@code HBaseVolume} (through {@link HBaseExports}). Volumes open on first use and are shared by all
 * connections; {@link #close()} closes them.
 */
public final class CatalogExports implements NbdExports {
  private final Connection connection;
  private final String volume;
  private final HBaseExports hbase;
  private final Map<String, SalusVolume> salus = new ConcurrentHashMap<>();

  /** Exports exactly one volume (also the default export). */
  public CatalogExports(Connection connection, String volume, boolean acceptCurrentState) {
    this.connection = connection;
    this.volume = volume;
    this.hbase = HBaseExports.single(connection, volume, acceptCurrentState);
  }

  @Override
  public synchronized Volume resolve(String exportName) throws IOException {
    String name = exportName.isEmpty() ? volume : exportName;
    if (!name.equals(volume)) {
      return null;
    }
    SalusVolume s = salus.get(name);
    if (s != null) {
      return s;
    }
    Optional<VolumeInfo> info = new VolumeCatalog(connection).describe(name);
    if (info.isEmpty()) {
      return null;
    }
    if (VolumeCatalog.KIND_SALUS.equals(info.get().kind())) {
      s = SalusVolume.openFromCatalog(connection, name);
      salus.put(name, s);
      return s;
    }
    return hbase.resolve(name);
  }

  /** Opens (if needed) and returns the exported volume; fails naming the fix when there is none. */
  public Volume volume() throws IOException {
    Volume v = resolve(volume);
    if (v == null) {
      new VolumeCatalog(connection).require(volume); // throws the message naming the fix
      throw new IllegalArgumentException("volume '" + volume + "' is not exported here");
    }
    return v;
  }

  @Override
  public Collection<String> names() {
    return List.of(volume);
  }

  @Override
  public synchronized void close() {
    salus.values().forEach(SalusVolume::close);
    salus.clear();
    hbase.close();
  }
}
