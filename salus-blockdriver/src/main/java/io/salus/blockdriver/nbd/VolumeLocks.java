package io.salus.blockdriver.nbd;

import io.salus.blockdriver.volume.Volume;
import java.util.Collections;
import java.util.Map;
import java.util.WeakHashMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;

/**
 * The read-modify-write lock domain of one volume: striped locks shared by every connection
 * (and every server) that writes to the same {@link Volume} instance. The export advertises
 * {@code CAN_MULTI_CONN}, so two connections may write disjoint bytes of one block at once;
 * with locks per connection both would read the old block and the second write would undo the
 * first. Volumes are keyed by identity and held weakly (a closed, unreferenced volume drops
 * its locks).
 *
 * <p>Whole-block writes (aligned WRITE, WRITE_ZEROES, TRIM) take part too (review rvw21-1): one
 * that started after a read-modify-write read its edge block and completed before it wrote the
 * block back was undone by that write-back (the block's old bytes outside the sub-block range
 * over the acknowledged whole-block write). A whole-block write now starts only while no
 * read-modify-write holds its blocks' stripes ({@link #wholeBlocks}), and a read-modify-write
 * reads only once the whole-block writes in flight on its stripes completed
 * ({@link #awaitWholeBlockWrites}).
 */
final class VolumeLocks {
  private static final int STRIPES = 256;
  private static final Map<Volume, VolumeLocks> BY_VOLUME =
      Collections.synchronizedMap(new WeakHashMap<>());

  private final ReentrantLock[] locks = new ReentrantLock[STRIPES];
  /** Whole-block writes started and not completed, per stripe; guarded by itself. */
  private final int[] wholeInFlight = new int[STRIPES];

  private VolumeLocks() {
    for (int i = 0; i < STRIPES; i++) {
      locks[i] = new ReentrantLock();
    }
  }

  /** The one lock domain of {@code volume} (identity: volumes do not override equals). */
  static VolumeLocks of(Volume volume) {
    return BY_VOLUME.computeIfAbsent(volume, v -> new VolumeLocks());
  }

  /**
   * Locks the stripes of every block {@code first..last} in a fixed order (ascending). Every block a
   * read-modify-write writes back, not only the edge blocks it reads: a sub-block write inside one
   * of its middle blocks read that block before it and wrote the old bytes back over it (review
   * rvw21-1).
   */
  Unlock lock(long first, long last) {
    int[] stripes = stripes(first, last - first + 1);
    for (int s : stripes) {
      locks[s].lock();
    }
    return () -> {
      for (int i = stripes.length - 1; i >= 0; i--) {
        locks[stripes[i]].unlock();
      }
    };
  }

  /**
   * Starts a whole-block write of blocks {@code [first, first + count)}: waits until no
   * read-modify-write holds one of their stripes, counts the write in flight on them while
   * {@code start} submits it, and uncounts it when its future completes.
   */
  <T> CompletableFuture<T> wholeBlocks(long first, long count, Supplier<CompletableFuture<T>> start) {
    int[] stripes = stripes(first, count);
    CompletableFuture<T> f;
    try (Unlock u = lock(first, first + count - 1)) {
      synchronized (wholeInFlight) {
        for (int s : stripes) {
          wholeInFlight[s]++;
        }
      }
      try {
        f = start.get();
      } catch (RuntimeException | Error e) {
        completed(stripes);
        throw e;
      }
    }
    f.whenComplete((r, t) -> completed(stripes));
    return f;
  }

  private void completed(int[] stripes) {
    synchronized (wholeInFlight) {
      for (int s : stripes) {
        wholeInFlight[s]--;
      }
      wholeInFlight.notifyAll();
    }
  }

  /**
   * With the stripes of blocks {@code first..last} locked ({@link #lock}): waits until the
   * whole-block writes in flight on them completed (none can start meanwhile), so the
   * read-modify-write reads what they wrote.
   */
  void awaitWholeBlockWrites(long first, long last) {
    int[] stripes = stripes(first, last - first + 1);
    boolean interrupted = false;
    synchronized (wholeInFlight) {
      while (anyInFlight(stripes)) {
        try {
          wholeInFlight.wait();
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  private boolean anyInFlight(int[] stripes) {
    for (int s : stripes) {
      if (wholeInFlight[s] > 0) {
        return true;
      }
    }
    return false;
  }

  /** The distinct stripes of blocks {@code [first, first + count)}, ascending (the lock order). */
  private static int[] stripes(long first, long count) {
    if (count >= STRIPES) {
      int[] all = new int[STRIPES];
      for (int i = 0; i < STRIPES; i++) {
        all[i] = i;
      }
      return all;
    }
    java.util.BitSet set = new java.util.BitSet(STRIPES);
    for (long b = first; b < first + count; b++) {
      set.set(stripe(b));
    }
    return set.stream().toArray();
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
