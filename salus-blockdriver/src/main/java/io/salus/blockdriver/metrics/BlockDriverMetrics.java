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
  /** Tree nodes (leaf hashes and persisted interior nodes) fetched on a cache miss. */
  public final LongAdder nodeRowsFetched = new LongAdder();
  /** Rows read by mounts (subtree roots and dirty markers; every leaf when it must scan). */
  public final LongAdder mountRowsRead = new LongAdder();

  public Map<String, Long> snapshot() {
    Map<String, Long> m = new TreeMap<>();
    m.put("connections_accepted", connectionsAccepted.sum());
    m.put("connections_rejected", connectionsRejected.sum());
    m.put("handshake_failures", handshakeFailures.sum());
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
    m.put("node_rows_fetched", nodeRowsFetched.sum());
    m.put("mount_rows_read", mountRowsRead.sum());
    return m;
  }

  @Override
  public String toString() {
    return snapshot().toString();
  }
}
