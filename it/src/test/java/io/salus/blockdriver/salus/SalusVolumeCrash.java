package io.salus.blockdriver.salus;

/** Tests only: reaches {@link SalusVolume}'s package-private crash seam from the integration tests. */
public final class SalusVolumeCrash {
  private SalusVolumeCrash() {
  }

  /** The writer dies abruptly: see {@code SalusVolume.crashForTest}. */
  public static void crash(SalusVolume v) throws InterruptedException {
    v.crashForTest();
  }

  /** Closes what the crash left open (its idle connection). */
  public static void release(SalusVolume v) {
    v.releaseCrashedForTest();
  }

  /**
   * The writer dies right after sending one batch of {@code writes} to the regions in {@code reached} only: see
   * {@code SalusVolume.crashWithPartialBatchForTest}. Returns the batch id (&gt; 0).
   */
  public static long crashWithPartialBatch(SalusVolume v, java.util.List<io.salus.core.protocol.client.BlockWrite> writes,
      java.util.Set<Integer> reached) throws Exception {
    long id = v.crashWithPartialBatchForTest(writes, reached);
    if (id <= 0) {
      throw new IllegalStateException("the partial batch was not submitted (pipeline full or a GET in flight)");
    }
    return id;
  }

  /**
   * The next {@code SalusVolume.open}s send at most {@code n} recovery messages (-1: no limit) and wait at most
   * {@code waitMillis} for their mount (-1: the default): a writer that dies in the middle of a recovery.
   */
  public static void limitMountRecovery(int n, long waitMillis) {
    SalusVolume.mountRecoverySendsForTest = n;
    SalusVolume.mountWaitMillisForTest = waitMillis;
  }
}
