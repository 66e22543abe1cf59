package io.salus.blockdriver.salus;

/** Tests only: reaches {@link SalusVolume}'s package-private crash seam from the integration tests. */
public final class SalusVolumeCrash {
  private SalusVolumeCrash() {
  }

  /** The writer dies abruptly: see {@code SalusVolume.crashForTest}. */
  public static void crash(SalusVolume v) {
    v.crashForTest();
  }
}
