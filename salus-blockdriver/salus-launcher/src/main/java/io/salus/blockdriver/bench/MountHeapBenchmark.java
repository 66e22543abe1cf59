package io.salus.blockdriver.bench;

import io.salus.blockdriver.volume.HBaseVolume;
import io.salus.blockdriver.volume.VolumeCatalog;
import java.io.File;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HBaseTestingUtility;
import org.apache.hadoop.hbase.StartMiniClusterOption;
import org.apache.hadoop.hbase.client.Connection;

/**
 * Measurement (run by hand, not a test): mounts a 1 TiB volume of 4 KiB blocks (2^28 blocks)
 * of the plain-HBase kind on a one-region-server mini cluster in this JVM and reports the heap
 * the volume adds (used heap after full GCs, minus the same before the open; MSLAB off and
 * memstores flushed, so the region server's share is small) and the mount time:
 * empty, after writing one block in each of 4096 subtrees spread over the whole volume (so
 * 4096 subtrees are cached), remounted from the persisted subtree roots (and one 4 KiB read
 * after the remount, a cache miss: rows of its path), and remounted once more as a volume
 * written before nodes were persisted (a scan of every stored block hash). Rows read by each
 * mount are printed.
 *
 * <pre>
 * java -Xmx1g [--add-opens as in the root pom's salus.test.jvm] -cp '...' \
 *   io.salus.blockdriver.bench.MountHeapBenchmark [--out docs/benchmarks]
 * </pre>
 * Writes {@code mount-heap-1tib.csv}.
 */
public final class MountHeapBenchmark {
  private MountHeapBenchmark() {}

  record Row(String step, long blocksWritten, long mountMs, double heapMib, long mountRows,
      long missRows) {}

  static long usedHeap() throws InterruptedException {
    Runtime rt = Runtime.getRuntime();
    for (int i = 0; i < 3; i++) {
      System.gc();
      Thread.sleep(200);
    }
    return rt.totalMemory() - rt.freeMemory();
  }

  public static void main(String[] args) throws Exception {
    File out = new File(args.length == 2 && args[0].equals("--out") ? args[1] : "docs/benchmarks");
    out.mkdirs();
    String loadBefore = NbdBenchmark.machineLoad();
    HBaseTestingUtility util = new HBaseTestingUtility();
    Configuration conf = util.getConfiguration();
    conf.setInt("hbase.master.info.port", -1);
    conf.setInt("hbase.regionserver.info.port", -1);
    conf.setBoolean("hbase.unsafe.stream.capability.enforce", false);
    conf.set("hbase.wal.provider", "filesystem");
    // the region server shares this JVM: no MSLAB chunks (2 MiB per written region), and the
    // memstores are flushed before each measurement, so the heap delta is the client's
    conf.setBoolean("hbase.hregion.memstore.mslab.enabled", false);
    util.startMiniZKCluster();
    util.startMiniHBaseCluster(StartMiniClusterOption.builder().numRegionServers(1).build());
    List<Row> rows = new ArrayList<>();
    try {
      Connection c = util.getConnection();
      long blocks = 1L << 28;
      new VolumeCatalog(c).create("tib", blocks, 4096, "SHA-256", 64);
      long base = usedHeap();
      int n = 4096;
      int dense = 16384;
      long stride = blocks / n;
      long t0 = System.nanoTime();
      try (HBaseVolume v = HBaseVolume.open(c, "tib")) {
        long ms = (System.nanoTime() - t0) / 1_000_000;
        rows.add(new Row("mount-empty", 0, ms, (usedHeap() - base) / 1048576.0,
            v.metrics().mountRowsRead.sum(), 0));
        Random r = new Random(1);
        byte[] b = new byte[4096];
        for (int i = 0; i < n; i++) {
          r.nextBytes(b);
          v.write(i * stride, b, false).join();
        }
        // and one dense GiB-aligned run of 16384 blocks (16 full subtrees): a mount that scans
        // reads each of them, one with persisted nodes reads one root per subtree
        byte[] run = new byte[128 * 4096];
        for (int i = 0; i < dense / 128; i++) {
          r.nextBytes(run);
          v.write((1L << 27) + i * 128L, run, false).join();
        }
        util.flush(VolumeCatalog.dataTable("tib"));
        rows.add(new Row("after-writes", n + dense, 0, (usedHeap() - base) / 1048576.0, 0, 0));
      }
      t0 = System.nanoTime();
      try (HBaseVolume v = HBaseVolume.open(c, "tib")) {
        long ms = (System.nanoTime() - t0) / 1_000_000;
        long heap = usedHeap();
        long before = v.metrics().nodeRowsFetched.sum();
        v.read(17 * stride, 1).join(); // a cache miss: one path
        rows.add(new Row("remount", n + dense, ms, (heap - base) / 1048576.0,
            v.metrics().mountRowsRead.sum(), v.metrics().nodeRowsFetched.sum() - before));
      }
      // the same volume as one written before nodes were persisted: drop the row that says
      // they are complete, so the mount scans every block's hash (and stores the nodes again)
      try (org.apache.hadoop.hbase.client.Table t = c.getTable(VolumeCatalog.dataTable("tib"))) {
        byte[] completeRow = {(byte) 0x80};
        // the driver writes explicit cell versions: delete at the stored cell's version
        long ts = t.get(new org.apache.hadoop.hbase.client.Get(completeRow))
            .getColumnLatestCell(HBaseVolume.FAMILY, HBaseVolume.NODE).getTimestamp();
        t.delete(new org.apache.hadoop.hbase.client.Delete(completeRow, ts));
      }
      t0 = System.nanoTime();
      try (HBaseVolume v = HBaseVolume.open(c, "tib")) {
        long ms = (System.nanoTime() - t0) / 1_000_000;
        rows.add(new Row("remount-scan-old-format", n + dense, ms, (usedHeap() - base) / 1048576.0,
            v.metrics().mountRowsRead.sum(), 0));
      }
    } finally {
      util.shutdownMiniCluster();
    }
    File csv = new File(out, "mount-heap-1tib.csv");
    try (PrintWriter pw = new PrintWriter(csv, StandardCharsets.UTF_8)) {
      pw.println("# 1 TiB plain-HBase volume, 4 KiB blocks (2^28), 64 regions, 1-RS mini cluster"
          + " on local FS in this JVM (-Xmx " + (Runtime.getRuntime().maxMemory() >> 20)
          + " MiB); heap_mib = used heap after full GCs minus the same before the open (MSLAB off, memstores flushed);"
          + " writes: one block per 65536 (4096 subtrees) and 16384 contiguous blocks (16 subtrees);"
          + " mount_rows_read = rows the mount read (persisted subtree roots, or every block hash"
          + " when it scans); miss_rows_fetched = rows one 4 KiB read fetched on a cache miss; " + Instant.now() + "; load before: "
          + loadBefore + "; load after: " + NbdBenchmark.machineLoad());
      pw.println("step,blocks_written,mount_ms,heap_mib,mount_rows_read,miss_rows_fetched");
      for (Row row : rows) {
        pw.printf("%s,%d,%d,%.1f,%d,%d%n", row.step(), row.blocksWritten(), row.mountMs(),
            row.heapMib(), row.mountRows(), row.missRows());
        System.out.printf("%-24s blocks %6d  mount %6d ms  heap +%.1f MiB  mount rows %d"
            + "  miss rows %d%n", row.step(), row.blocksWritten(), row.mountMs(), row.heapMib(),
            row.mountRows(), row.missRows());
      }
    }
    System.out.println("wrote " + csv);
  }
}
