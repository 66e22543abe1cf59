package io.salus.it.salus;

import io.salus.blockdriver.volume.HBaseVolume;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.KeyValue;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.coprocessor.ObserverContext;
import org.apache.hadoop.hbase.coprocessor.RegionCoprocessor;
import org.apache.hadoop.hbase.coprocessor.RegionCoprocessorEnvironment;
import org.apache.hadoop.hbase.coprocessor.RegionObserver;
import org.apache.hadoop.hbase.regionserver.InternalScanner;

/**
 * Test-only fault injector for the plain-HBase volume's data table (the fault table's "a region server returns
 * corrupted data" row): on the region servers named in {@link #servers}, every block value a Get or a scan returns
 * has one bit flipped, as a server with corrupted memory would return it. Inert while the set is empty. Attached to
 * the table as a table coprocessor by the test; the mini cluster's region servers run in the test JVM, so the test
 * switches it through the static sets. {@link #refusing} makes a server refuse reads instead.
 */
public final class CorruptReadsObserver implements RegionCoprocessor, RegionObserver {
  public static final Set<String> servers = ConcurrentHashMap.newKeySet();
  /** Region servers that refuse every Get and scan of the table (DoNotRetryIOException: no client retries). */
  public static final Set<String> refusing = ConcurrentHashMap.newKeySet();

  @Override
  public Optional<RegionObserver> getRegionObserver() {
    return Optional.of(this);
  }

  private static boolean faulty(ObserverContext<RegionCoprocessorEnvironment> c) {
    return !servers.isEmpty() && servers.contains(c.getEnvironment().getServerName().toString());
  }

  private static Cell corrupt(Cell cell) {
    if (!CellUtil.matchingQualifier(cell, HBaseVolume.DATA)) {
      return cell;
    }
    byte[] v = CellUtil.cloneValue(cell);
    if (v.length == 0) {
      return cell;
    }
    v[v.length / 2] ^= 1;
    return new KeyValue(CellUtil.cloneRow(cell), CellUtil.cloneFamily(cell), CellUtil.cloneQualifier(cell),
        cell.getTimestamp(), v);
  }

  private static void refuse(ObserverContext<RegionCoprocessorEnvironment> c)
      throws org.apache.hadoop.hbase.DoNotRetryIOException {
    if (!refusing.isEmpty() && refusing.contains(c.getEnvironment().getServerName().toString())) {
      throw new org.apache.hadoop.hbase.DoNotRetryIOException("fault injection: this region server refuses reads");
    }
  }

  /** Region servers that refuse every write to the table (DoNotRetryIOException: no client retries). */
  public static final Set<String> refusingWrites = ConcurrentHashMap.newKeySet();

  @Override
  public void prePut(ObserverContext<RegionCoprocessorEnvironment> c, org.apache.hadoop.hbase.client.Put put,
      org.apache.hadoop.hbase.wal.WALEdit edit) throws java.io.IOException {
    if (!refusingWrites.isEmpty() && refusingWrites.contains(c.getEnvironment().getServerName().toString())) {
      throw new org.apache.hadoop.hbase.DoNotRetryIOException("fault injection: this region server refuses writes");
    }
  }

  /**
   * Region servers that reorder the writes to the table they receive: every other mini-batch of a region there (one
   * write's rows, as one RPC brings them) is held back in preBatchMutate, before it reaches the WAL and the memstore,
   * until the next mini-batch of that region has been applied (the later one first), for at most
   * {@link #REORDER_HOLD_MS}. Each write is still acknowledged only after it is applied.
   */
  public static final Set<String> reorderingWrites = ConcurrentHashMap.newKeySet();
  public static final long REORDER_HOLD_MS = 1000;
  /** Mini-batches held back; of those, applied after a later one (the others waited {@link #REORDER_HOLD_MS}). */
  public static final java.util.concurrent.atomic.AtomicLong writesHeld = new java.util.concurrent.atomic.AtomicLong();
  public static final java.util.concurrent.atomic.AtomicLong writesReordered =
      new java.util.concurrent.atomic.AtomicLong();
  private static final ConcurrentHashMap<String, java.util.concurrent.atomic.AtomicLong> miniBatches =
      new ConcurrentHashMap<>();
  private static final ConcurrentHashMap<String, java.util.concurrent.CountDownLatch> heldBack =
      new ConcurrentHashMap<>();

  @Override
  public void preBatchMutate(ObserverContext<RegionCoprocessorEnvironment> c,
      org.apache.hadoop.hbase.regionserver.MiniBatchOperationInProgress<org.apache.hadoop.hbase.client.Mutation> op) {
    if (reorderingWrites.isEmpty() || !reorderingWrites.contains(c.getEnvironment().getServerName().toString())) {
      return;
    }
    String region = c.getEnvironment().getRegionInfo().getEncodedName();
    java.util.concurrent.CountDownLatch next = new java.util.concurrent.CountDownLatch(1);
    if (miniBatches.computeIfAbsent(region, k -> new java.util.concurrent.atomic.AtomicLong()).getAndIncrement() % 2
        == 0 && heldBack.putIfAbsent(region, next) == null) {
      writesHeld.incrementAndGet();
      try {
        if (next.await(REORDER_HOLD_MS, java.util.concurrent.TimeUnit.MILLISECONDS)) {
          writesReordered.incrementAndGet();
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } finally {
        heldBack.remove(region, next);
      }
    }
  }

  @Override
  public void postBatchMutate(ObserverContext<RegionCoprocessorEnvironment> c,
      org.apache.hadoop.hbase.regionserver.MiniBatchOperationInProgress<org.apache.hadoop.hbase.client.Mutation> op) {
    java.util.concurrent.CountDownLatch l = heldBack.get(c.getEnvironment().getRegionInfo().getEncodedName());
    if (l != null) {
      l.countDown(); // a later mini-batch applied: the held one goes on
    }
  }

  @Override
  public void preGetOp(ObserverContext<RegionCoprocessorEnvironment> c, Get get, List<Cell> result)
      throws java.io.IOException {
    refuse(c);
  }

  @Override
  public void preScannerOpen(ObserverContext<RegionCoprocessorEnvironment> c,
      org.apache.hadoop.hbase.client.Scan scan) throws java.io.IOException {
    refuse(c);
  }

  @Override
  public void postGetOp(ObserverContext<RegionCoprocessorEnvironment> c, Get get, List<Cell> result) {
    if (faulty(c)) {
      result.replaceAll(CorruptReadsObserver::corrupt);
    }
  }

  @Override
  public boolean postScannerNext(ObserverContext<RegionCoprocessorEnvironment> c, InternalScanner s,
      List<Result> result, int limit, boolean hasNext) {
    if (faulty(c)) {
      for (int i = 0; i < result.size(); i++) {
        List<Cell> cells = new ArrayList<>();
        for (Cell cell : result.get(i).rawCells()) {
          cells.add(corrupt(cell));
        }
        result.set(i, Result.create(cells));
      }
    }
    return hasNext;
  }
}
