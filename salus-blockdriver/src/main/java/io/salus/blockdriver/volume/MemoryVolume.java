package io.salus.blockdriver.volume;

import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * A sparse in-memory volume used to measure the NBD layer alone. Storage is allocated lazily in
 * 1 MiB off-heap chunks; trimming or zeroing a whole chunk frees it. Operations complete
 * synchronously. There is nothing to make durable, so flush is a no-op that trivially covers all
 * connections. Reads can be served as zero-copy views ({@link #readViews}).
 */
public final class MemoryVolume implements Volume {
  private static final int CHUNK_BYTES = 1 << 20;
  private static final ByteBuffer ZERO_CHUNK =
      ByteBuffer.allocateDirect(CHUNK_BYTES).asReadOnlyBuffer();
  private static final byte[] ZEROS = new byte[CHUNK_BYTES];
  /** The result of every successful write and flush (complete; callers only chain on it). */
  private static final CompletableFuture<Void> DONE = CompletableFuture.completedFuture(null);

  private final String name;
  private final int blockSize;
  private final long sizeInBlocks;
  private final AtomicReferenceArray<ByteBuffer> chunks;
  private volatile boolean closed;

  public MemoryVolume(String name, long sizeInBlocks, int blockSize) {
    BlockGeometry.checkSize(sizeInBlocks, blockSize);
    long bytes = sizeInBlocks * blockSize;
    long nChunks = (bytes + CHUNK_BYTES - 1) / CHUNK_BYTES;
    if (nChunks > Integer.MAX_VALUE - 8) {
      throw new IllegalArgumentException("memory volume of " + bytes + " bytes is too large");
    }
    this.name = name;
    this.blockSize = blockSize;
    this.sizeInBlocks = sizeInBlocks;
    this.chunks = new AtomicReferenceArray<>((int) nChunks);
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public int blockSize() {
    return blockSize;
  }

  @Override
  public long sizeInBlocks() {
    return sizeInBlocks;
  }

  private VolumeException check(long firstBlock, long count) {
    if (closed) {
      return new VolumeException.Closed("volume '" + name + "' is closed");
    }
    return Volume.checkRange(this, firstBlock, count);
  }

  private ByteBuffer chunk(int ci) {
    ByteBuffer c = chunks.get(ci);
    if (c == null) {
      c = ByteBuffer.allocateDirect(CHUNK_BYTES);
      if (!chunks.compareAndSet(ci, null, c)) {
        c = chunks.get(ci);
      }
    }
    return c;
  }

  /** A view of {@code n} bytes of chunk {@code ci} at {@code co} (zeros when unallocated). */
  private ByteBuffer view(int ci, int co, int n) {
    ByteBuffer c = chunks.get(ci);
    ByteBuffer v = (c == null ? ZERO_CHUNK : c).duplicate();
    v.limit(co + n).position(co);
    return v;
  }

  @Override
  public CompletableFuture<byte[]> read(long firstBlock, int count) {
    VolumeException e = check(firstBlock, count);
    if (e != null) {
      return CompletableFuture.failedFuture(e);
    }
    byte[] out = new byte[Math.multiplyExact(count, blockSize)];
    long pos = firstBlock * blockSize;
    int done = 0;
    while (done < out.length) {
      int ci = (int) (pos / CHUNK_BYTES);
      int co = (int) (pos % CHUNK_BYTES);
      int n = Math.min(out.length - done, CHUNK_BYTES - co);
      if (chunks.get(ci) != null) {
        view(ci, co, n).get(out, done, n);
      }
      done += n;
      pos += n;
    }
    return CompletableFuture.completedFuture(out);
  }

  @Override
  public CompletableFuture<Void> readInto(long firstBlock, int count, ByteBuffer dst) {
    VolumeException e = check(firstBlock, count);
    if (e != null) {
      return CompletableFuture.failedFuture(e);
    }
    for (ByteBuffer v : views(firstBlock, count)) {
      dst.put(v);
    }
    return CompletableFuture.completedFuture(null);
  }

  /**
   * Zero-copy read: views of the stored bytes (read-only; a concurrent overlapping write may
   * show through, which NBD allows for overlapping requests in flight).
   */
  @Override
  public ByteBuffer[] readViews(long firstBlock, int count) {
    if (check(firstBlock, count) != null) {
      return null;
    }
    return views(firstBlock, count);
  }

  private ByteBuffer[] views(long firstBlock, int count) {
    long pos = firstBlock * blockSize;
    long end = pos + (long) count * blockSize;
    int first = (int) (pos / CHUNK_BYTES);
    int last = (int) ((end - 1) / CHUNK_BYTES);
    ByteBuffer[] out = new ByteBuffer[last - first + 1];
    for (int i = 0; i < out.length; i++) {
      int ci = first + i;
      int co = (int) (pos % CHUNK_BYTES);
      int n = (int) Math.min(end - pos, CHUNK_BYTES - co);
      out[i] = view(ci, co, n);
      pos += n;
    }
    return out;
  }

  @Override
  public CompletableFuture<Void> write(long firstBlock, ByteBuffer src, boolean fua) {
    int len = src.remaining();
    if (len % blockSize != 0) {
      return CompletableFuture.failedFuture(new VolumeException.OutOfRange(
          "write of " + len + " bytes is not a multiple of block size " + blockSize));
    }
    VolumeException e = check(firstBlock, len / blockSize);
    if (e != null) {
      return CompletableFuture.failedFuture(e);
    }
    long pos = firstBlock * blockSize;
    while (src.hasRemaining()) {
      int ci = (int) (pos / CHUNK_BYTES);
      int co = (int) (pos % CHUNK_BYTES);
      int n = Math.min(src.remaining(), CHUNK_BYTES - co);
      // absolute bulk put: leaves the shared chunk's position alone, allocates no views
      chunk(ci).put(co, src, src.position(), n);
      src.position(src.position() + n);
      pos += n;
    }
    return DONE;
  }

  @Override
  public CompletableFuture<Void> write(long firstBlock, byte[] data, boolean fua) {
    return write(firstBlock, ByteBuffer.wrap(data), fua);
  }

  @Override
  public CompletableFuture<Void> flush() {
    return closed
        ? CompletableFuture.failedFuture(new VolumeException.Closed("volume '" + name + "' is closed"))
        : DONE;
  }

  @Override
  public CompletableFuture<Void> trim(long firstBlock, long count) {
    return writeZeroes(firstBlock, count, false);
  }

  @Override
  public CompletableFuture<Void> writeZeroes(long firstBlock, long count, boolean fua) {
    VolumeException e = check(firstBlock, count);
    if (e != null) {
      return CompletableFuture.failedFuture(e);
    }
    long pos = firstBlock * blockSize;
    long end = pos + count * blockSize;
    while (pos < end) {
      int ci = (int) (pos / CHUNK_BYTES);
      int co = (int) (pos % CHUNK_BYTES);
      int n = (int) Math.min(end - pos, CHUNK_BYTES - co);
      if (co == 0 && n == CHUNK_BYTES) {
        chunks.set(ci, null);
      } else {
        ByteBuffer c = chunks.get(ci);
        if (c != null) {
          ByteBuffer d = c.duplicate();
          d.position(co);
          d.put(ZEROS, 0, n);
        }
      }
      pos += n;
    }
    return CompletableFuture.completedFuture(null);
  }

  /** Bytes of storage currently allocated (for tests of sparseness). */
  public long allocatedBytes() {
    long n = 0;
    for (int i = 0; i < chunks.length(); i++) {
      if (chunks.get(i) != null) {
        n += CHUNK_BYTES;
      }
    }
    return n;
  }

  @Override
  public void close() {
    closed = true;
  }
}
