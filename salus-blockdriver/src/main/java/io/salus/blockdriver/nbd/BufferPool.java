package io.salus.blockdriver.nbd;

import java.nio.ByteBuffer;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Pool of direct buffers for request and reply payloads, by power-of-two size class (512 B to
 * 32 MiB), so large transfers do not allocate (and copy through) fresh heap arrays each time.
 *
 * <p>Memory is capped for the whole server: buffers handed out at once never exceed
 * {@code capBytes} (a {@link #get} waits for buffers to come back: back-pressure on the
 * connection asking, which stops reading its socket), and idle pooled buffers never exceed
 * {@link #MAX_POOLED_BYTES}. A request that cannot get memory within the wait, or whose
 * allocation fails with a direct-memory {@link OutOfMemoryError}, gets {@link Exhausted} (the
 * connection answers it with {@code ENOMEM}), never an error that kills the connection.
 */
final class BufferPool {
  private static final int MIN_SHIFT = 9;
  private static final int MAX_SHIFT = 25;
  static final long MAX_POOLED_BYTES = 64L << 20;
  /** Default cap: half the heap limit (the JDK's default direct-memory limit), at most 512 MiB. */
  static final long DEFAULT_CAP = Long.getLong("salus.nbd.maxBufferBytes",
      Math.max(64L << 20, Math.min(512L << 20, Runtime.getRuntime().maxMemory() / 2)));
  static final long DEFAULT_WAIT_MS = Long.getLong("salus.nbd.bufferWaitMs", 30_000);

  /** No buffer memory could be had (cap reached for too long, or direct memory exhausted). */
  static final class Exhausted extends Exception {
    Exhausted(String message) {
      super(message, null, false, false);
    }
  }

  private final ConcurrentLinkedQueue<ByteBuffer>[] free;
  private final AtomicIntegerArray pooledCount;
  private final AtomicLong pooledBytes = new AtomicLong();
  private final long capBytes;
  private final long waitMs;
  /** Permits in KiB of buffers handed out. */
  private final Semaphore budget;
  private final AtomicLong inUse = new AtomicLong();
  private final AtomicLong peakInUse = new AtomicLong();
  private final AtomicInteger exhausted = new AtomicInteger();

  BufferPool() {
    this(DEFAULT_CAP, DEFAULT_WAIT_MS);
  }

  @SuppressWarnings("unchecked")
  BufferPool(long capBytes, long waitMs) {
    if (capBytes < (1L << MAX_SHIFT) || capBytes > (1L << 40)) {
      throw new IllegalArgumentException("NBD buffer cap " + capBytes + " bytes: use 32 MiB"
          + " (the largest request) .. 1 TiB (-Dsalus.nbd.maxBufferBytes)");
    }
    this.capBytes = capBytes;
    this.waitMs = waitMs;
    this.budget = new Semaphore((int) (capBytes >> 10), true);
    free = new ConcurrentLinkedQueue[MAX_SHIFT + 1];
    for (int i = 0; i <= MAX_SHIFT; i++) {
      free[i] = new ConcurrentLinkedQueue<>();
    }
    pooledCount = new AtomicIntegerArray(MAX_SHIFT + 1);
  }

  private static int shift(int len) {
    int s = 32 - Integer.numberOfLeadingZeros(Math.max(1, len) - 1);
    return Math.max(MIN_SHIFT, s);
  }

  private static int permits(int shift) {
    return Math.max(1, (1 << shift) >> 10);
  }

  /**
   * A buffer with position 0 and limit {@code len} (at most 32 MiB); waits while the cap is
   * reached.
   */
  ByteBuffer get(int len) throws Exhausted {
    return get(len, null);
  }

  /**
   * As {@link #get(int)}; {@code beforeWait} (if not null) runs first when the buffer is not to
   * be had at once, before this thread waits for memory (the connection sends the replies it
   * holds back for batching: they must not wait for memory other clients hold).
   */
  ByteBuffer get(int len, Runnable beforeWait) throws Exhausted {
    int s = shift(len);
    if (s > MAX_SHIFT) {
      throw new IllegalArgumentException("buffer of " + len + " bytes exceeds 32 MiB");
    }
    try {
      // a zero wait respects the fair queue (untimed tryAcquire would barge past waiters)
      boolean got = budget.tryAcquire(permits(s), 0, TimeUnit.MILLISECONDS);
      if (!got && beforeWait != null) {
        beforeWait.run();
      }
      if (!got && !budget.tryAcquire(permits(s), waitMs, TimeUnit.MILLISECONDS)) {
        exhausted.incrementAndGet();
        throw new Exhausted("NBD buffer memory cap of " + (capBytes >> 20) + " MiB reached for "
            + waitMs + " ms (clients not reading their replies?); raise"
            + " -Dsalus.nbd.maxBufferBytes or -XX:MaxDirectMemorySize");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new Exhausted("interrupted while waiting for NBD buffer memory");
    }
    ByteBuffer b = free[s].poll();
    if (b == null) {
      try {
        b = ByteBuffer.allocateDirect(1 << s);
      } catch (OutOfMemoryError oom) {
        budget.release(permits(s));
        exhausted.incrementAndGet();
        throw new Exhausted("direct memory exhausted allocating " + (1 << s) + " bytes (" + oom
            .getMessage() + "); lower -Dsalus.nbd.maxBufferBytes (now " + (capBytes >> 20)
            + " MiB) or raise -XX:MaxDirectMemorySize");
      }
    } else {
      pooledCount.decrementAndGet(s);
      pooledBytes.addAndGet(-(1L << s));
    }
    long now = inUse.addAndGet(1L << s);
    peakInUse.accumulateAndGet(now, Math::max);
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
    inUse.addAndGet(-(1L << s));
    budget.release(permits(s));
    if (pooledBytes.get() + (1L << s) <= MAX_POOLED_BYTES) {
      pooledBytes.addAndGet(1L << s);
      pooledCount.incrementAndGet(s);
      free[s].offer(b);
    }
  }

  long capBytes() {
    return capBytes;
  }

  /** Highest number of bytes handed out at once (for tests and metrics). */
  long peakInUseBytes() {
    return peakInUse.get();
  }

  /** Requests refused for lack of memory. */
  int exhaustedCount() {
    return exhausted.get();
  }
}
