package io.salus.hdfs.witness;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * Counters of one witness store: records, bytes, fsyncs and an fsync latency histogram
 * (power-of-two microsecond buckets) from which percentiles are estimated.
 */
public final class WitnessStoreStats {
  private static final int BUCKETS = 40;
  private final AtomicLong records = new AtomicLong();
  private final AtomicLong bytes = new AtomicLong();
  private final AtomicLong fsyncs = new AtomicLong();
  private final AtomicLong fsyncNanos = new AtomicLong();
  private final AtomicLong fsyncMaxNanos = new AtomicLong();
  private final AtomicLongArray histogram = new AtomicLongArray(BUCKETS);

  void appended(int certBytes) {
    records.incrementAndGet();
    bytes.addAndGet(certBytes);
  }

  void fsynced(long nanos) {
    fsyncs.incrementAndGet();
    fsyncNanos.addAndGet(nanos);
    fsyncMaxNanos.accumulateAndGet(nanos, Math::max);
    long micros = Math.max(1, nanos / 1000);
    int b = Math.min(BUCKETS - 1, 63 - Long.numberOfLeadingZeros(micros));
    histogram.incrementAndGet(b);
  }

  public long records() {
    return records.get();
  }

  public long bytes() {
    return bytes.get();
  }

  public long fsyncs() {
    return fsyncs.get();
  }

  public double fsyncAvgMillis() {
    long n = fsyncs.get();
    return n == 0 ? 0 : fsyncNanos.get() / 1e6 / n;
  }

  public double fsyncMaxMillis() {
    return fsyncMaxNanos.get() / 1e6;
  }

  /** Upper bound of the histogram bucket holding quantile {@code q} (0..1), in milliseconds. */
  public double fsyncQuantileMillis(double q) {
    long total = 0;
    for (int i = 0; i < BUCKETS; i++) {
      total += histogram.get(i);
    }
    if (total == 0) {
      return 0;
    }
    long target = (long) Math.ceil(q * total);
    long seen = 0;
    for (int i = 0; i < BUCKETS; i++) {
      seen += histogram.get(i);
      if (seen >= target) {
        return (1L << (i + 1)) / 1000.0;
      }
    }
    return fsyncMaxMillis();
  }
}
