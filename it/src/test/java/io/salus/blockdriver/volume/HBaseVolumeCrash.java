package io.salus.blockdriver.volume;

/** Tests only: reaches {@link HBaseVolume}'s package-private crash seam from the integration tests. */
public final class HBaseVolumeCrash {
  private HBaseVolumeCrash() {
  }

  /** The writer dies abruptly: see {@code HBaseVolume.crashForTest}. */
  public static void crash(HBaseVolume v) {
    v.crashForTest();
  }
}
