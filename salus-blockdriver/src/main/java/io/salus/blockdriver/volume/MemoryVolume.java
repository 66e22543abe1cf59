package io.salus.blockdriver.volume;

import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * A sparse in-memory volume used to measure the NBD layer alone. Storage is allocated lazily in
 * 1 MiB chunks; trimming or zeroing a whole chunk frees it. Operations complete synchronously.
 * There is nothing to make durable, so flush is a no-op that trivially covers all connections.
 */
public final class MemoryVolume implements Volume {
  private static final int CHUNK_BYTES = 1 << 20;

  private final String name;
  private final int blockSize;
  private final long sizeInBlocks;
  private final AtomicReferenceArray<byte[]> chunks;
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
      byte[] chunk = chunks.get(ci);
      if (chunk != null) {
        System.arraycopy(chunk, co, out, done, n);
      }
      done += n;
      pos += n;
    }
    return CompletableFuture.completedFuture(out);
  }

  private static final byte[] ZEROS = new byte[CHUNK_BYTES];

  @Override
  public CompletableFuture<Void> readInto(long firstBlock, int count, java.nio.ByteBuffer dst) {
    VolumeException e = check(firstBlock, count);
    if (e != null) {
      return CompletableFuture.failedFuture(e);
    }
    long pos = firstBlock * blockSize;
    long end = pos + (long) count * blockSize;
    while (pos < end) {
      int ci = (int) (pos / CHUNK_BYTES);
      int co = (int) (pos % CHUNK_BYTES);
      int n = (int) Math.min(end - pos, CHUNK_BYTES - co);
      byte[] chunk = chunks.get(ci);
      dst.put(chunk != null ? chunk : ZEROS, chunk != null ? co : 0, n);
      pos += n;
    }
    return CompletableFuture.completedFuture(null);
  }

  @Override
  public CompletableFuture<Void> write(long firstBlock, java.nio.ByteBuffer src, boolean fua) {
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
      src.get(chunk(ci), co, n);
      pos += n;
    }
    return CompletableFuture.completedFuture(null);
  }

  private byte[] chunk(int ci) {
    byte[] chunk = chunks.get(ci);
    if (chunk == null) {
      chunk = new byte[CHUNK_BYTES];
      if (!chunks.compareAndSet(ci, null, chunk)) {
        chunk = chunks.get(ci);
      }
    }
    return chunk;
  }

  @Override
  public CompletableFuture<Void> write(long firstBlock, byte[] data, boolean fua) {
    if (data.length % blockSize != 0) {
      return CompletableFuture.failedFuture(new VolumeException.OutOfRange(
          "write of " + data.length + " bytes is not a multiple of block size " + blockSize));
    }
    VolumeException e = check(firstBlock, data.length / blockSize);
    if (e != null) {
      return CompletableFuture.failedFuture(e);
    }
    long pos = firstBlock * blockSize;
    int done = 0;
    while (done < data.length) {
      int ci = (int) (pos / CHUNK_BYTES);
      int co = (int) (pos % CHUNK_BYTES);
      int n = Math.min(data.length - done, CHUNK_BYTES - co);
      byte[] chunk = chunks.get(ci);
      if (chunk == null) {
        chunk = new byte[CHUNK_BYTES];
        if (!chunks.compareAndSet(ci, null, chunk)) {
          chunk = chunks.get(ci);
        }
      }
      System.arraycopy(data, done, chunk, co, n);
      done += n;
      pos += n;
    }
    return CompletableFuture.completedFuture(null);
  }

  @Override
  public CompletableFuture<Void> flush() {
    return closed
        ? CompletableFuture.failedFuture(new VolumeException.Closed("volume '" + name + "' is closed"))
        : CompletableFuture.completedFuture(null);
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
        byte[] chunk = chunks.get(ci);
        if (chunk != null) {
          Arrays.fill(chunk, co, co + n, (byte) 0);
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
