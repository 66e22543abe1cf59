package io.salus.blockdriver.nbd;

import io.salus.blockdriver.volume.Volume;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Resolves NBD export names to volumes. One export per volume; every connection to the same
 * export must get the same {@link Volume} instance (so that a flush on one connection covers
 * writes of all of them, and the client volume tree is shared).
 */
public interface NbdExports extends AutoCloseable {

  /** The volume for this export name, or null when there is no such export. */
  Volume resolve(String exportName) throws Exception;

  /** Names listed by NBD_OPT_LIST. */
  Collection<String> names() throws Exception;

  /** Releases volumes this resolver opened (the server calls it on close). */
  @Override
  default void close() {}

  /**
   * A fixed set of already-open volumes; the first one is also the default export (empty name).
   * The caller keeps ownership of the volumes.
   */
  static NbdExports of(Volume... volumes) {
    Map<String, Volume> map = new LinkedHashMap<>();
    for (Volume v : volumes) {
      map.put(v.name(), v);
    }
    Volume first = volumes.length > 0 ? volumes[0] : null;
    return new NbdExports() {
      @Override
      public Volume resolve(String exportName) {
        return exportName.isEmpty() ? first : map.get(exportName);
      }

      @Override
      public Collection<String> names() {
        return List.copyOf(map.keySet());
      }
    };
  }
}
