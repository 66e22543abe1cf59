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
