package io.salus.blockdriver.nbd;

import io.salus.blockdriver.volume.Volume;
import java.util.concurrent.CompletableFuture;

/** Delegates everything to another volume; tests override single methods. */
class ForwardingVolume implements Volume {
  private final Volume d;

  ForwardingVolume(Volume d) {
    this.d = d;
  }

  @Override public String name() { return d.name(); }
  @Override public int blockSize() { return d.blockSize(); }
  @Override public long sizeInBlocks() { return d.sizeInBlocks(); }
  @Override public CompletableFuture<byte[]> read(long f, int c) { return d.read(f, c); }
  @Override public CompletableFuture<Void> write(long f, byte[] b, boolean fua) { return d.write(f, b, fua); }
  @Override public CompletableFuture<Void> flush() { return d.flush(); }
  @Override public CompletableFuture<Void> trim(long f, long c) { return d.trim(f, c); }
  @Override public CompletableFuture<Void> writeZeroes(long f, long c, boolean fua) { return d.writeZeroes(f, c, fua); }
  @Override public void close() {}
}
