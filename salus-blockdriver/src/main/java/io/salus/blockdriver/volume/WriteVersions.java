package io.salus.blockdriver.volume;

/**
 * Explicit HBase cell versions for the blocks of one volume, so that a delete never hides a
 * later write. With server-assigned timestamps a zeroing (a {@code Delete}) and a following
 * write in the same millisecond get the same timestamp, and the delete marker masks the write
 * (it is acknowledged, then reads as "block missing" and a major compaction purges it); after
 * a region move to a server whose clock is behind, a later write gets an earlier timestamp and
 * is hidden by the earlier cell.
 *
 * <p>Versions here come from the single writer, not from any clock: {@code (epoch << 41) |
 * counter}, where {@code epoch} is the writer epoch incremented in the catalog at every open
 * (under the single-writer lease) and {@code counter} counts mutations of this open. So every
 * mutation of an open is newer than every mutation of all earlier opens, and within an open
 * versions grow in the order batches are sent (overlapping batches are sent one after the
 * other). A delete at version v masks only versions up to v. Epoch 1 starts at 2^41 (a
 * millisecond time in 2039), above the server-assigned timestamps of tables written before
 * this scheme.
 */
final class WriteVersions {
  static final int COUNTER_BITS = 41;
  private static final long COUNTER_MASK = (1L << COUNTER_BITS) - 1;
  private static final long MAX_EPOCH = (Long.MAX_VALUE >>> COUNTER_BITS) - 1;

  private final long base;
  private long counter;

  WriteVersions(long epoch) {
    if (epoch < 1 || epoch > MAX_EPOCH) {
      throw new IllegalStateException("writer epoch " + epoch + " is out of range 1.."
          + MAX_EPOCH);
    }
    this.base = epoch << COUNTER_BITS;
  }

  /** The next version (strictly greater than every version handed out before). */
  synchronized long next() {
    if (counter == COUNTER_MASK) {
      throw new IllegalStateException("2^41 mutations in one open; reopen the volume");
    }
    return base | ++counter;
  }
}
