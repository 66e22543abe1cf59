package io.salus.blockdriver.volume;

import java.util.concurrent.CompletableFuture;

/**
 * A virtual disk (§3.1): an array of {@link #sizeInBlocks()} fixed-size blocks of
 * {@link #blockSize()} bytes. All I/O is asynchronous and block aligned; callers may keep many
 * requests outstanding. Byte-granular access (read-modify-write) lives in the NBD layer.
 *
 * <p>Unwritten (or trimmed / zeroed) blocks read as zeros. Futures complete exceptionally with a
 * {@link VolumeException} subclass: {@link BlockCorruptedException} when stored data fails
 * verification (the data is never returned), {@link VolumeException.OutOfRange} for bad block
 * ranges, plain {@link VolumeException} for I/O failures.
 */
public interface Volume extends AutoCloseable {

  String name();

  /** Block size in bytes: a power of two between 512 B and 256 KiB. */
  int blockSize();

  long sizeInBlocks();

  default long sizeInBytes() {
    return sizeInBlocks() * blockSize();
  }

  /** Reads {@code count} blocks starting at {@code firstBlock}. */
  CompletableFuture<byte[]> read(long firstBlock, int count);

  /**
   * Reads {@code count} blocks into {@code dst} at its position (advancing it). The default
   * copies from {@link #read(long, int)}; volumes that can fill the buffer directly override it.
   */
  default CompletableFuture<Void> readInto(long firstBlock, int count, java.nio.ByteBuffer dst) {
    return read(firstBlock, count).thenAccept(dst::put);
  }

  /**
   * Zero-copy read for volumes that keep verified-or-unverifiable data in memory (the
   * {@link MemoryVolume}): read-only views covering {@code count} blocks, or null when the
   * volume does not offer views (the caller then uses {@link #readInto}). Volumes that verify
   * data must return null.
   */
  default java.nio.ByteBuffer[] readViews(long firstBlock, int count) {
    return null;
  }

  /**
   * Writes the blocks in {@code src} (position to limit). The volume consumes the buffer before
   * this method returns, so the caller may reuse it once the call returns.
   */
  default CompletableFuture<Void> write(long firstBlock, java.nio.ByteBuffer src, boolean fua) {
    byte[] b = new byte[src.remaining()];
    src.get(b);
    return write(firstBlock, b, fua);
  }

  /**
   * Writes {@code data.length / blockSize()} blocks at {@code firstBlock}. With {@code fua} the
   * future completes only once the data is durable. The caller must not modify {@code data}
   * until the future completes.
   */
  CompletableFuture<Void> write(long firstBlock, byte[] data, boolean fua);

  /** Makes every write that completed before this call durable. */
  CompletableFuture<Void> flush();

  /** Discards blocks; they read as zeros afterwards and stop using storage. */
  CompletableFuture<Void> trim(long firstBlock, long count);

  /** Makes blocks read as zeros (never allocating storage for them). */
  CompletableFuture<Void> writeZeroes(long firstBlock, long count, boolean fua);

  /** True when a flush issued on any handle covers writes completed on all handles. */
  default boolean flushCoversAllConnections() {
    return true;
  }

  @Override
  void close();

  /** Validates a block-range request, returning a failed future description or null. */
  static VolumeException checkRange(Volume v, long firstBlock, long count) {
    if (firstBlock < 0 || count < 0 || firstBlock > v.sizeInBlocks()
        || count > v.sizeInBlocks() - firstBlock) {
      return new VolumeException.OutOfRange(
          "blocks [" + firstBlock + ", +" + count + ") outside volume '" + v.name() + "' of "
              + v.sizeInBlocks() + " blocks");
    }
    return null;
  }
}
