package io.salus.blockdriver.metrics;

import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * Counters of the block driver: NBD traffic, protocol errors, and end-to-end verification
 * failures. One instance per server or volume; {@link #GLOBAL} aggregates the verification
 * failures of every volume in this JVM. Read them with {@link #snapshot()}.
 */
public final class BlockDriverMetrics {
  public static final BlockDriverMetrics GLOBAL = new BlockDriverMetrics();

  public final LongAdder connectionsAccepted = new LongAdder();
  public final LongAdder connectionsRejected = new LongAdder();
  public final LongAdder handshakeFailures = new LongAdder();
  /**
   * Connections closed because the client stalled a transfer holding pooled buffer memory: a write's
   * payload stopped arriving, or the client stopped reading its replies.
   */
  public final LongAdder stalledConnections = new LongAdder();
  public final LongAdder malformedRequests = new LongAdder();
  public final LongAdder requests = new LongAdder();
  public final LongAdder reads = new LongAdder();
  public final LongAdder writes = new LongAdder();
  public final LongAdder flushes = new LongAdder();
  public final LongAdder trims = new LongAdder();
  public final LongAdder writeZeroes = new LongAdder();
  public final LongAdder bytesRead = new LongAdder();
  public final LongAdder bytesWritten = new LongAdder();
  public final LongAdder readModifyWrites = new LongAdder();
  public final LongAdder errorReplies = new LongAdder();
  public final LongAdder eioReplies = new LongAdder();
  /** Blocks whose stored data did not match the client volume tree (never returned). */
  public final LongAdder verificationFailures = new LongAdder();
  /** Blocks verified against the client volume tree on read. */
  public final LongAdder blocksVerified = new LongAdder();
  /** Region subtrees fetched on demand from storage. */
  public final LongAdder subtreeFetches = new LongAdder();
  /** Requests admitted to a volume and not yet answered. */
  public final LongAdder inFlight = new LongAdder();

  /** The NBD operations whose errors and latency are kept per operation. */
  public enum Op {
    READ("Read"), WRITE("Write"), FLUSH("Flush"), TRIM("Trim"), WRITE_ZEROES("WriteZeroes");

    private final String label;

    Op(String label) {
      this.label = label;
    }

    /** The name used in JMX attribute names (e.g. {@code WriteErrors}). */
    public String label() {
      return label;
    }
  }

  private final LongAdder[] opErrors = adders();
  private final LongAdder[] opLatencyNanos = adders();
  private final LongAdder[] opCompleted = adders();
  private final java.util.concurrent.atomic.AtomicLongArray opMaxNanos =
      new java.util.concurrent.atomic.AtomicLongArray(Op.values().length);

  private static LongAdder[] adders() {
    LongAdder[] a = new LongAdder[Op.values().length];
    for (int i = 0; i < a.length; i++) {
      a[i] = new LongAdder();
    }
    return a;
  }

  /** A request goes to the volume: counts it in flight; returns its start time. */
  public long begin() {
    inFlight.increment();
    return System.nanoTime();
  }

  /** The request begun at {@code startNanos} completed ({@code error} null on success). */
  public void end(Op op, long startNanos, Throwable error) {
    long ns = Math.max(0, System.nanoTime() - startNanos);
    int i = op.ordinal();
    inFlight.decrement();
    opCompleted[i].increment();
    opLatencyNanos[i].add(ns);
    if (ns > opMaxNanos.get(i)) { // a plain read first: no CAS unless this is a new maximum
      opMaxNanos.accumulateAndGet(i, ns, Math::max);
    }
    if (error != null) {
      opErrors[i].increment();
    }
  }

  public long completed(Op op) {
    return opCompleted[op.ordinal()].sum();
  }

  public long errors(Op op) {
    return opErrors[op.ordinal()].sum();
  }

  /** Mean latency of completed requests of {@code op}, in microseconds (0 when none). */
  public double avgLatencyMicros(Op op) {
    long n = completed(op);
    return n == 0 ? 0 : opLatencyNanos[op.ordinal()].sum() / 1000.0 / n;
  }

  public double maxLatencyMicros(Op op) {
    return opMaxNanos.get(op.ordinal()) / 1000.0;
  }

  /** Requests of {@code op} received (before any check). */
  public long requests(Op op) {
    switch (op) {
      case READ: return reads.sum();
      case WRITE: return writes.sum();
      case FLUSH: return flushes.sum();
      case TRIM: return trims.sum();
      default: return writeZeroes.sum();
    }
  }
  /** Tree nodes (leaf hashes and persisted interior nodes) fetched on a cache miss. */
  public final LongAdder nodeRowsFetched = new LongAdder();
  /** Rows read by mounts (subtree roots and dirty markers; every leaf when it must scan). */
  public final LongAdder mountRowsRead = new LongAdder();

  public Map<String, Long> snapshot() {
    Map<String, Long> m = new TreeMap<>();
    m.put("connections_accepted", connectionsAccepted.sum());
    m.put("connections_rejected", connectionsRejected.sum());
    m.put("handshake_failures", handshakeFailures.sum());
    m.put("stalled_connections", stalledConnections.sum());
    m.put("malformed_requests", malformedRequests.sum());
    m.put("requests", requests.sum());
    m.put("reads", reads.sum());
    m.put("writes", writes.sum());
    m.put("flushes", flushes.sum());
    m.put("trims", trims.sum());
    m.put("write_zeroes", writeZeroes.sum());
    m.put("bytes_read", bytesRead.sum());
    m.put("bytes_written", bytesWritten.sum());
    m.put("read_modify_writes", readModifyWrites.sum());
    m.put("error_replies", errorReplies.sum());
    m.put("eio_replies", eioReplies.sum());
    m.put("verification_failures", verificationFailures.sum());
    m.put("blocks_verified", blocksVerified.sum());
    m.put("subtree_fetches", subtreeFetches.sum());
    m.put("in_flight", inFlight.sum());
    for (Op op : Op.values()) {
      m.put(op.name().toLowerCase(java.util.Locale.ROOT) + "_errors", errors(op));
    }
    m.put("node_rows_fetched", nodeRowsFetched.sum());
    m.put("mount_rows_read", mountRowsRead.sum());
    return m;
  }

  @Override
  public String toString() {
    return snapshot().toString();
  }
}
