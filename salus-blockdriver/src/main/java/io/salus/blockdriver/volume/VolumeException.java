package io.salus.blockdriver.volume;

/** Failure of a volume operation. */
public class VolumeException extends RuntimeException {
  public VolumeException(String message) {
    super(message);
  }

  public VolumeException(String message, Throwable cause) {
    super(message, cause);
  }

  /** A block range outside the volume, or a buffer that is not a whole number of blocks. */
  public static final class OutOfRange extends VolumeException {
    public OutOfRange(String message) {
      super(message);
    }
  }

  /** The volume was closed. */
  public static final class Closed extends VolumeException {
    public Closed(String message) {
      super(message);
    }
  }

  /** Another writer holds the volume's single-writer lease ({@link VolumeLease}). */
  public static final class InUse extends VolumeException {
    public InUse(String message) {
      super(message);
    }
  }

  /**
   * The volume tree rebuilt from storage at mount does not match the root recorded at the last
   * flush or close: the stored blocks changed outside the block driver (or the last writer
   * crashed after unflushed writes landed). Nothing was mounted and nothing was recorded.
   */
  public static final class RootMismatch extends VolumeException {
    public RootMismatch(String message) {
      super(message);
    }
  }
}
