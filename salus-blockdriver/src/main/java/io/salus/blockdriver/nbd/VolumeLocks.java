package io.salus.blockdriver.nbd;

import io.salus.blockdriver.volume.Volume;
import java.util.Collections;
import java.util.Map;
import java.util.WeakHashMap;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The read-modify-write lock domain of one volume: striped locks shared by every connection
 * (and every server) that writes to the same {@link Volume} instance. The export advertises
 * {@code CAN_MULTI_CONN}, so two connections may write disjoint bytes of one block at once;
 * with locks per connection both would read the old block and the second write would undo the
 * first. Volumes are keyed by identity and held weakly (a closed, unreferenced volume drops
 * its locks).
 */
final class VolumeLocks {
  private static final int STRIPES = 256;
  private static final Map<Volume, VolumeLocks> BY_VOLUME =
      Collections.synchronizedMap(new WeakHashMap<>());

  private final ReentrantLock[] locks = new ReentrantLock[STRIPES];

  private VolumeLocks() {
    for (int i = 0; i < STRIPES; i++) {
      locks[i] = new ReentrantLock();
    }
  }

  /** The one lock domain of {@code volume} (identity: volumes do not override equals). */
  static VolumeLocks of(Volume volume) {
    return BY_VOLUME.computeIfAbsent(volume, v -> new VolumeLocks());
  }

  /** Locks the stripes of blocks {@code first} and {@code last} in a fixed order. */
  Unlock lock(long first, long last) {
    int s1 = stripe(first);
    int s2 = stripe(last);
    ReentrantLock a = locks[Math.min(s1, s2)];
    ReentrantLock b = locks[Math.max(s1, s2)];
    a.lock();
    if (b != a) {
      b.lock();
    }
    return () -> {
      if (b != a) {
        b.unlock();
      }
      a.unlock();
    };
  }

  /** Releases what {@link #lock} took. */
  interface Unlock extends AutoCloseable {
    @Override
    void close();
  }

  private static int stripe(long block) {
    return (int) ((block ^ (block >>> 17)) & (STRIPES - 1));
  }
}
