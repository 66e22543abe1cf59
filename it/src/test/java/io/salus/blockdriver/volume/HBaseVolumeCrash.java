package io.salus.blockdriver.volume;

/** Tests only: reaches {@link HBaseVolume}'s package-private crash seam from the integration tests. */
public final class HBaseVolumeCrash {
  private HBaseVolumeCrash() {
  }

  /** The writer dies abruptly: see {@code HBaseVolume.crashForTest}. */
  public static void crash(HBaseVolume v) {
    v.crashForTest();
  }

  /** The writer sends only part of one write's rows, then dies: see {@code HBaseVolume.writePartlyThenCrashForTest}. */
  public static void writePartlyThenCrash(HBaseVolume v, long firstBlock, byte[] data,
      java.util.function.LongPredicate sent) {
    v.writePartlyThenCrashForTest(firstBlock, data, sent);
  }
}
