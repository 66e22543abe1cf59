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
}
