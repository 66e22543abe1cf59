package io.salus.blockdriver.nbd;

import java.nio.ByteBuffer;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicIntegerArray;

/**
 * Pool of direct buffers for request and reply payloads, by power-of-two size class (512 B to
 * 32 MiB), so large transfers do not allocate (and copy through) fresh heap arrays each time.
 */
final class BufferPool {
  private static final int MIN_SHIFT = 9;
  private static final int MAX_SHIFT = 25;
  private static final int MAX_POOLED_BYTES_PER_CLASS = 64 << 20;
  private final ConcurrentLinkedQueue<ByteBuffer>[] free;
  private final AtomicIntegerArray pooled;

  @SuppressWarnings("unchecked")
  BufferPool() {
    free = new ConcurrentLinkedQueue[MAX_SHIFT + 1];
    for (int i = 0; i <= MAX_SHIFT; i++) {
      free[i] = new ConcurrentLinkedQueue<>();
    }
    pooled = new AtomicIntegerArray(MAX_SHIFT + 1);
  }

  private static int shift(int len) {
    int s = 32 - Integer.numberOfLeadingZeros(Math.max(1, len) - 1);
    return Math.max(MIN_SHIFT, s);
  }

  /** A buffer with position 0 and limit {@code len}. */
  ByteBuffer get(int len) {
    int s = shift(len);
    if (s > MAX_SHIFT) {
      return ByteBuffer.allocate(len);
    }
    ByteBuffer b = free[s].poll();
    if (b == null) {
      b = ByteBuffer.allocateDirect(1 << s);
    } else {
      pooled.decrementAndGet(s);
    }
    b.clear().limit(len);
    return b;
  }

  void release(ByteBuffer b) {
    if (b == null || !b.isDirect()) {
      return;
    }
    int s = Integer.numberOfTrailingZeros(b.capacity());
    if (s < MIN_SHIFT || s > MAX_SHIFT) {
      return;
    }
    if ((long) (pooled.get(s) + 1) << s <= MAX_POOLED_BYTES_PER_CLASS) {
      pooled.incrementAndGet(s);
      free[s].offer(b);
    }
  }
}
