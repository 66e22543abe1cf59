package io.salus.blockdriver.nbd;

import io.salus.blockdriver.volume.Volume;
import io.salus.blockdriver.volume.VolumeException;
import io.salus.blockdriver.metrics.BlockDriverMetrics;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;

/**
 * Byte-granular access to a block {@link Volume}. Aligned requests go straight to the volume;
 * requests that start or end inside a block are served by read-modify-write of the edge blocks.
 * Read-modify-writes of the same block are serialized per volume ({@link VolumeLocks}, shared by
 * all connections to the volume), so two concurrent unaligned writes to disjoint bytes of one
 * block both survive, also when they arrive on different connections.
 */
public final class ByteRangeIo {
  private final Volume volume;
  private final int bs;
  private final ExecutorService rmwExecutor;
  private final BlockDriverMetrics metrics;
  private final VolumeLocks locks;

  public ByteRangeIo(Volume volume, ExecutorService rmwExecutor, BlockDriverMetrics metrics) {
    this.volume = volume;
    this.bs = volume.blockSize();
    this.rmwExecutor = rmwExecutor;
    this.metrics = metrics;
    this.locks = VolumeLocks.of(volume);
  }

  public Volume volume() {
    return volume;
  }

  public CompletableFuture<byte[]> read(long offset, int length) {
    long first = offset / bs;
    long last = (offset + length - 1) / bs;
    int count = (int) (last - first + 1);
    if (offset % bs == 0 && length % bs == 0) {
      return volume.read(first, count);
    }
    int skip = (int) (offset - first * bs);
    return volume.read(first, count).thenApply(all -> {
      byte[] out = new byte[length];
      System.arraycopy(all, skip, out, 0, length);
      return out;
    });
  }

  /** Reads into {@code dst} (advancing its position by {@code length}). */
  public CompletableFuture<Void> readInto(long offset, int length, java.nio.ByteBuffer dst) {
    if (offset % bs == 0 && length % bs == 0) {
      return volume.readInto(offset / bs, length / bs, dst);
    }
    return read(offset, length).thenAccept(dst::put);
  }

  /** Writes {@code data} (position to limit); the buffer is consumed before this returns. */
  public CompletableFuture<Void> write(long offset, java.nio.ByteBuffer data, boolean fua) {
    if (offset % bs == 0 && data.remaining() % bs == 0) {
      return locks.wholeBlocks(offset / bs, data.remaining() / bs, () -> volume.write(offset / bs, data, fua));
    }
    byte[] b = new byte[data.remaining()];
    data.get(b);
    return write(offset, b, fua);
  }

  public CompletableFuture<Void> write(long offset, byte[] data, boolean fua) {
    if (offset % bs == 0 && data.length % bs == 0) {
      return locks.wholeBlocks(offset / bs, data.length / bs, () -> volume.write(offset / bs, data, fua));
    }
    metrics.readModifyWrites.increment();
    return CompletableFuture.runAsync(() -> rmw(offset, data, data.length, fua), rmwExecutor);
  }

  /** Writes zeros; whole blocks use the volume's write-zeroes, edges use read-modify-write. */
  public CompletableFuture<Void> writeZeroes(long offset, long length, boolean fua) {
    long firstFull = (offset + bs - 1) / bs;
    long endFull = (offset + length) / bs; // exclusive
    CompletableFuture<Void> f = CompletableFuture.completedFuture(null);
    if (endFull <= firstFull) {
      // entirely inside one or two partial blocks
      return zeroBytes(offset, (int) length, fua);
    }
    f = locks.wholeBlocks(firstFull, endFull - firstFull,
        () -> volume.writeZeroes(firstFull, endFull - firstFull, fua));
    long headLen = firstFull * bs - offset;
    if (headLen > 0) {
      f = f.thenCombine(zeroBytes(offset, (int) headLen, fua), (a, b) -> null);
    }
    long tailStart = endFull * bs;
    long tailLen = offset + length - tailStart;
    if (tailLen > 0) {
      f = f.thenCombine(zeroBytes(tailStart, (int) tailLen, fua), (a, b) -> null);
    }
    return f;
  }

  private CompletableFuture<Void> zeroBytes(long offset, int length, boolean fua) {
    return write(offset, new byte[length], fua);
  }

  /** Discards whole blocks inside the range; partial blocks at the edges are left alone. */
  public CompletableFuture<Void> trim(long offset, long length) {
    long firstFull = (offset + bs - 1) / bs;
    long endFull = (offset + length) / bs;
    if (endFull <= firstFull) {
      return CompletableFuture.completedFuture(null);
    }
    return locks.wholeBlocks(firstFull, endFull - firstFull, () -> volume.trim(firstFull, endFull - firstFull));
  }

  private void rmw(long offset, byte[] data, int length, boolean fua) {
    long first = offset / bs;
    long last = (offset + length - 1) / bs;
    int count = (int) (last - first + 1);
    boolean headPartial = offset % bs != 0;
    boolean tailPartial = (offset + length) % bs != 0;
    try (VolumeLocks.Unlock held = locks.lock(first, last)) {
      locks.awaitWholeBlockWrites(first, last); // a whole-block write acknowledged after our read is not undone
      byte[] buf = new byte[count * bs];
      if (headPartial) {
        System.arraycopy(volume.read(first, 1).join(), 0, buf, 0, bs);
      }
      if (tailPartial && (last != first || !headPartial)) {
        System.arraycopy(volume.read(last, 1).join(), 0, buf, (count - 1) * bs, bs);
      }
      System.arraycopy(data, 0, buf, (int) (offset - first * bs), length);
      volume.write(first, buf, fua).join();
    } catch (CompletionException e) {
      throw e.getCause() instanceof VolumeException ? (VolumeException) e.getCause() : e;
    }
  }
}
