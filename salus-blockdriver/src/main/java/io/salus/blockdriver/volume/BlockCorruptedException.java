package io.salus.blockdriver.volume;

/**
 * Stored data of a block does not match the client volume tree (§3.3.3). The data is never
 * returned to the caller; the NBD layer turns this into EIO.
 */
public final class BlockCorruptedException extends VolumeException {
  private final long block;

  public BlockCorruptedException(String volume, long block, String detail) {
    super("volume '" + volume + "' block " + block + " failed end-to-end verification: " + detail);
    this.block = block;
  }

  public long block() {
    return block;
  }
}
