package io.salus.blockdriver.volume;

/** Validation of block sizes and volume sizes shared by all volume kinds and the CLI. */
public final class BlockGeometry {
  public static final int DEFAULT_BLOCK_SIZE = 4096;
  public static final int MIN_BLOCK_SIZE = 512;
  public static final int MAX_BLOCK_SIZE = 256 * 1024;
  /** NBD offsets are signed 63-bit in practice; keep byte sizes below 2^62. */
  public static final long MAX_BYTES = 1L << 62;

  private BlockGeometry() {}

  public static void checkBlockSize(int blockSize) {
    if (blockSize < MIN_BLOCK_SIZE || blockSize > MAX_BLOCK_SIZE
        || Integer.bitCount(blockSize) != 1) {
      throw new IllegalArgumentException(
          "bad block size " + blockSize + ": use a power of two from " + MIN_BLOCK_SIZE
              + " to " + MAX_BLOCK_SIZE + " bytes (default " + DEFAULT_BLOCK_SIZE + ")");
    }
  }

  public static void checkSize(long sizeInBlocks, int blockSize) {
    checkBlockSize(blockSize);
    if (sizeInBlocks <= 0 || sizeInBlocks > MAX_BYTES / blockSize) {
      throw new IllegalArgumentException(
          "bad volume size " + sizeInBlocks + " blocks: give a positive number of blocks below "
              + (MAX_BYTES / blockSize) + " (for block size " + blockSize + ")");
    }
  }

  /** Parses "64M", "1G", "4096" (bytes) into bytes. */
  public static long parseBytes(String text) {
    String t = text.trim().toUpperCase(java.util.Locale.ROOT);
    if (t.endsWith("B") && t.length() > 1 && !Character.isDigit(t.charAt(t.length() - 2))) {
      t = t.substring(0, t.length() - 1);
    }
    long mult = 1;
    if (!t.isEmpty()) {
      switch (t.charAt(t.length() - 1)) {
        case 'K': mult = 1L << 10; break;
        case 'M': mult = 1L << 20; break;
        case 'G': mult = 1L << 30; break;
        case 'T': mult = 1L << 40; break;
        default: mult = 1;
      }
    }
    if (mult != 1) {
      t = t.substring(0, t.length() - 1);
    }
    try {
      long n = Long.parseLong(t);
      if (n <= 0) {
        throw new NumberFormatException();
      }
      return Math.multiplyExact(n, mult);
    } catch (NumberFormatException | ArithmeticException e) {
      throw new IllegalArgumentException(
          "bad size '" + text + "': give a positive byte count, optionally with K, M, G or T"
              + " (e.g. 64M, 10G)");
    }
  }

  public static boolean isAllZero(byte[] data, int off, int len) {
    for (int i = off; i < off + len; i++) {
      if (data[i] != 0) {
        return false;
      }
    }
    return true;
  }
}
