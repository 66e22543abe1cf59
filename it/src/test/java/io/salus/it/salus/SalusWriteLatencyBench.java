package io.salus.it.salus;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.salus.blockdriver.salus.SalusVolume;
import io.salus.core.hbase.VolumeGeometry;
import io.salus.core.protocol.LatencyTrace;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Write-latency harness (issue 13, task lat13): on the {@link SalusMiniCluster} (three region servers, the Salus log
 * on a mini HDFS, the interim in-region witness holders), N sequential single-block writes, N pipelined single-block
 * writes (all issued at once, distinct blocks), and N sequential read-modify-writes (a GET of a block, then a write
 * of it: what the NBD layer does for a sub-block write). With {@link LatencyTrace} on it records, per batch, when
 * each stage of the write path happened relative to the client's submit, and the messages and RPCs per batch.
 * No timing is asserted (other tests share the machine); it checks only that the data reads back.
 *
 * <p>Each mode runs once per label, one right after the other: with {@link LatencyTrace#legacy} set (the write path
 * as before task lat13: label "before"), with {@link LatencyTrace#inlineDisk} set (as after lat13 and grp13, the
 * replicas' log appends and commit marks on their event loops: "after") and as now ("tput17"), so all see the same
 * machine load ({@code -Dsalus.bench.labels}, {@code -Dsalus.bench.modes} choose). Mode {@code qd} (task tput17) is
 * fio's 4k sequential write at a queue depth ({@code -Dsalus.bench.qd}, 32; {@code -Dsalus.bench.qd.writes}, 400)
 * on a volume opened once per group-commit coalesce depth ({@code -Dsalus.bench.depths}, e.g. 2,4,8) and per
 * replica disk mode ({@code -Dsalus.bench.disk}: inline, offloop). Writes one CSV row per (label, mode,
 * stage) to {@code -Dsalus.bench.out} (default {@code target/salus-write-latency.csv}, appended), with /proc/loadavg
 * at the start and end of the mode. Run from the repository root:
 * {@code mvn -B -o verify -pl it -am -DskipITs -Dtest=SalusWriteLatencyBench -Dsurefire.failIfNoSpecifiedTests=false
 * -Dsalus.bench.out=$PWD/docs/benchmarks/salus-write-latency.csv}
 */
class SalusWriteLatencyBench {
  static final int BLOCK = 4096;
  static final long PER_REGION = 64;
  static final int REGIONS = 4;
  static final int N = Integer.getInteger("salus.bench.n", 100);
  /** Modes to run: sequential, pipelined, rmw (each with the labels below) and qd (per coalesce depth). */
  static final List<String> MODES = List.of(System.getProperty("salus.bench.modes", "sequential,pipelined,rmw")
      .split(","));
  /**
   * before: the write path as before lat13 ({@link LatencyTrace#legacy}); after: as after lat13 and grp13, with the
   * replicas' log appends and commit marks on their event loops ({@link LatencyTrace#inlineDisk}); tput17: as now.
   */
  static final List<String> LABELS = List.of(System.getProperty("salus.bench.labels", "before,after,tput17")
      .split(","));
  /**
   * Mode qd, per depth: the replicas' log appends and commit marks written on their event loops ("inline", as before
   * task tput17) and/or off them with group commit ("offloop", now).
   */
  static final List<String> DISKS = List.of(System.getProperty("salus.bench.disk", "inline,offloop").split(","));
  /** Mode qd: writes kept in flight (fio's iodepth) ... */
  static final int QD = Integer.getInteger("salus.bench.qd", 32);
  /** ... and total writes, sequential 4 KiB blocks (wrapping around the volume) ... */
  static final int QD_WRITES = Integer.getInteger("salus.bench.qd.writes", 400);
  /** ... once per group-commit coalesce depth ({@code salus.volume.coalesce-depth}). */
  static final List<Integer> DEPTHS = java.util.Arrays.stream(System.getProperty("salus.bench.depths", "2")
      .split(",")).map(String::trim).map(Integer::valueOf).toList();
  static SalusMiniCluster cluster;

  @BeforeAll
  static void start() throws Exception {
    cluster = new SalusMiniCluster();
  }

  @AfterAll
  static void stop() throws Exception {
    LatencyTrace.enable(false);
    if (cluster != null) {
      cluster.close();
    }
  }

  static <T> T await(CompletableFuture<T> f) throws Exception {
    return f.get(SalusMiniCluster.DEADLINE_MS, TimeUnit.MILLISECONDS);
  }

  @Test
  void writeLatencyByStage() throws Exception {
    VolumeGeometry g = new VolumeGeometry("lat", REGIONS * PER_REGION * BLOCK, BLOCK, PER_REGION);
    cluster.createVolume(g);
    Path out = Path.of(System.getProperty("salus.bench.out", "target/salus-write-latency.csv"));
    int rounds = Integer.getInteger("salus.bench.rounds", 1);
    Random rnd = new Random(13);
    byte[] reference = new byte[(int) (g.numBlocks() * BLOCK)];
    List<String> rows = new ArrayList<>();
    try (SalusVolume v = SalusVolume.open(cluster.connection(), "lat")) {
      // warm-up: connections, regions located, HDFS pipelines open
      for (int i = 0; i < 10; i++) {
        byte[] d = block(rnd);
        await(v.write(i, d, false));
        System.arraycopy(d, 0, reference, i * BLOCK, BLOCK);
      }
      LatencyTrace.enable(true);
      // each mode runs with the write path as before lat13 (LatencyTrace.legacy) and as now, one right after the
      // other, so both see the same machine load (other tests share the machine: the ratio is what counts)
      for (int round = 0; round < rounds; round++) {
        for (String mode : MODES) {
          if (mode.equals("qd")) {
            continue; // below, on volumes opened with each coalesce depth
          }
          for (String label : LABELS) {
            LatencyTrace.legacy(label.equals("before"));
            LatencyTrace.inlineDisk(label.equals("after"));
            rows.addAll(run(v, g, mode, label, rnd, reference));
          }
        }
      }
      LatencyTrace.legacy(false);
      LatencyTrace.inlineDisk(false);
      LatencyTrace.enable(false);
      assertArrayEquals(reference, await(v.read(0, (int) g.numBlocks())), "the volume reads back");
    } finally {
      LatencyTrace.legacy(false);
      LatencyTrace.inlineDisk(false);
    }
    if (MODES.contains("qd")) {
      // fio's 4k sequential write at a queue depth (the Salus-vs-HBase workload): QD writes in flight, the next one
      // issued when one completes, once per coalesce depth (the group-commit knob, read when a volume opens), the
      // depths one right after the other in this JVM, so they see the same machine load
      String saved = System.getProperty("salus.volume.coalesce-depth");
      try {
        for (int round = 0; round < rounds; round++) {
          for (int depth : DEPTHS) {
            for (String disk : DISKS) {
              System.setProperty("salus.volume.coalesce-depth", Integer.toString(depth));
              // inline: log appends and commit marks on the replicas' event loops, as before task tput17
              LatencyTrace.inlineDisk(disk.equals("inline"));
              try (SalusVolume v = SalusVolume.open(cluster.connection(), "lat")) {
                LatencyTrace.enable(true);
                rows.addAll(runQueueDepth(v, g, disk + "-d" + depth, rnd, reference));
                LatencyTrace.enable(false);
                assertArrayEquals(reference, await(v.read(0, (int) g.numBlocks())), "the volume reads back");
              }
            }
          }
        }
      } finally {
        LatencyTrace.enable(false);
        LatencyTrace.inlineDisk(false);
        if (saved == null) {
          System.clearProperty("salus.volume.coalesce-depth");
        } else {
          System.setProperty("salus.volume.coalesce-depth", saved);
        }
      }
    }
    boolean fresh = !Files.exists(out);
    StringBuilder sb = new StringBuilder();
    if (fresh) {
      sb.append("label,mode,stage,median_ms,p90_ms,n,loadavg_start,loadavg_end\n");
    }
    rows.forEach(r -> sb.append(r).append('\n'));
    Files.createDirectories(out.toAbsolutePath().getParent());
    Files.writeString(out, sb.toString(), StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    System.out.println("LATENCY CSV (" + out + "):\n" + sb);
    assertEquals(false, rows.isEmpty());
  }

  private static List<String> run(SalusVolume v, VolumeGeometry g, String mode, String label, Random rnd,
                                  byte[] reference) throws Exception {
    String load0 = loadavg();
    LatencyTrace.reset();
    List<Double> wall = new ArrayList<>();
    List<String> rows = new ArrayList<>();
    if (mode.equals("sequential")) {
      // one write at a time, blocks spread over the regions
      for (int i = 0; i < N; i++) {
        long b = (i * 37L) % g.numBlocks();
        byte[] d = block(rnd);
        long t0 = System.nanoTime();
        await(v.write(b, d, false));
        wall.add((System.nanoTime() - t0) / 1e6);
        System.arraycopy(d, 0, reference, (int) b * BLOCK, BLOCK);
      }
      rows.addAll(report(label, mode, wall, load0, loadavg()));
    } else if (mode.equals("pipelined")) {
      // N single-block writes to distinct blocks issued at once (the pipeline holds 32)
      List<CompletableFuture<Void>> fs = new ArrayList<>();
      long t0 = System.nanoTime();
      long[] done = new long[N];
      for (int i = 0; i < N; i++) {
        long b = (i * 7L + 3) % g.numBlocks();
        byte[] d = block(rnd);
        int k = i;
        fs.add(v.write(b, d, false).thenRun(() -> done[k] = System.nanoTime()));
        System.arraycopy(d, 0, reference, (int) b * BLOCK, BLOCK);
      }
      await(CompletableFuture.allOf(fs.toArray(CompletableFuture[]::new)));
      double total = (System.nanoTime() - t0) / 1e6;
      for (long d : done) {
        wall.add((d - t0) / 1e6);
      }
      rows.addAll(report(label, mode, wall, load0, loadavg()));
      rows.add(label + "," + mode + ",total_ms," + fmt(total) + "," + fmt(total) + "," + N + ",\"" + load0 + "\",\""
          + loadavg() + "\"");
    } else {
      // read-modify-write: GET a block, then write it (the NBD layer's sub-block write), one at a time
      List<Double> reads = new ArrayList<>();
      for (int i = 0; i < N; i++) {
        long b = (i * 11L + 5) % g.numBlocks();
        long r0 = System.nanoTime();
        byte[] old = await(v.read(b, 1));
        reads.add((System.nanoTime() - r0) / 1e6);
        assertArrayEquals(Arrays.copyOfRange(reference, (int) b * BLOCK, (int) (b + 1) * BLOCK), old);
        byte[] d = old.clone();
        byte[] half = new byte[512];
        rnd.nextBytes(half);
        System.arraycopy(half, 0, d, 0, half.length);
        d[0] ^= 1;
        long w0 = System.nanoTime();
        await(v.write(b, d, false));
        wall.add((System.nanoTime() - w0) / 1e6);
        System.arraycopy(d, 0, reference, (int) b * BLOCK, BLOCK);
      }
      rows.addAll(report(label, mode, wall, load0, loadavg()));
      rows.add(row(label, mode, "get_wall_ms", reads, load0, loadavg()));
    }
    return rows;
  }

  /**
   * fio's sequential write at queue depth {@link #QD}: {@link #QD_WRITES} single-block writes to consecutive blocks,
   * at most QD in flight, the next issued when one completes. Rows: write_wall_ms per write, the stages per batch,
   * and iops, batches and blocks per batch.
   */
  private static List<String> runQueueDepth(SalusVolume v, VolumeGeometry g, String label, Random rnd,
                                            byte[] reference) throws Exception {
    String mode = "qd" + QD;
    String load0 = loadavg();
    LatencyTrace.reset();
    Map<String, Long> c0 = v.counters();
    java.util.concurrent.Semaphore slots = new java.util.concurrent.Semaphore(QD);
    double[] wall = new double[QD_WRITES];
    List<CompletableFuture<Void>> fs = new ArrayList<>();
    long t0 = System.nanoTime();
    for (int i = 0; i < QD_WRITES; i++) {
      slots.acquire();
      long b = i % g.numBlocks();
      byte[] d = block(rnd);
      System.arraycopy(d, 0, reference, (int) b * BLOCK, BLOCK);
      int k = i;
      long w0 = System.nanoTime();
      fs.add(v.write(b, d, false).whenComplete((r, t) -> {
        wall[k] = (System.nanoTime() - w0) / 1e6;
        slots.release();
      }));
    }
    await(CompletableFuture.allOf(fs.toArray(CompletableFuture[]::new)));
    double total = (System.nanoTime() - t0) / 1e6;
    String load1 = loadavg();
    Map<String, Long> c1 = v.counters();
    List<Double> ws = new ArrayList<>();
    for (double w : wall) {
      ws.add(w);
    }
    List<String> rows = new ArrayList<>(report(label, mode, ws, load0, load1));
    long batches = c1.get("batches") - c0.get("batches");
    long blocks = c1.get("batchedBlocks") - c0.get("batchedBlocks");
    String tail = "," + QD_WRITES + ",\"" + load0 + "\",\"" + load1 + "\"";
    rows.add(label + "," + mode + ",total_ms," + fmt(total) + "," + fmt(total) + tail);
    rows.add(label + "," + mode + ",iops," + fmt(QD_WRITES * 1000.0 / total) + "," + fmt(QD_WRITES * 1000.0 / total)
        + tail);
    rows.add(label + "," + mode + ",batches," + batches + "," + batches + tail);
    rows.add(label + "," + mode + ",blocks_per_batch," + fmt(blocks / (double) Math.max(1, batches)) + ","
        + fmt(blocks / (double) Math.max(1, batches)) + tail);
    return rows;
  }

  private static byte[] block(Random rnd) {
    byte[] d = new byte[BLOCK];
    rnd.nextBytes(d);
    return d;
  }

  /**
   * Rows for one mode: the client-side wall time of each write, then per stage the time from the client's submit to
   * the first and the last node reaching it (median, p90 over the batches), then messages and RPCs per batch.
   */
  private static List<String> report(String label, String mode, List<Double> wall, String load0, String load1) {
    List<String> rows = new ArrayList<>();
    rows.add(row(label, mode, "write_wall_ms", wall, load0, load1));
    Map<Long, Map<String, long[]>> st = LatencyTrace.stages();
    Map<String, List<Double>> byStage = new TreeMap<>();
    int batches = 0;
    for (Map<String, long[]> m : st.values()) {
      long[] sub = m.get("submit");
      if (sub == null || m.get("done") == null) {
        continue;
      }
      batches++;
      m.forEach((k, t) -> {
        byStage.computeIfAbsent(k + ".first", x -> new ArrayList<>()).add((t[0] - sub[0]) / 1e6);
        byStage.computeIfAbsent(k + ".last", x -> new ArrayList<>()).add((t[1] - sub[0]) / 1e6);
      });
    }
    List<Map.Entry<String, List<Double>>> ordered = new ArrayList<>(byStage.entrySet());
    ordered.sort((a, b) -> Double.compare(median(a.getValue()), median(b.getValue())));
    for (Map.Entry<String, List<Double>> e : ordered) {
      rows.add(row(label, mode, "stage:" + e.getKey(), e.getValue(), load0, load1));
    }
    int nb = Math.max(1, batches);
    for (Map.Entry<String, Long> c : LatencyTrace.counts().entrySet()) {
      String k = c.getKey();
      if (k.startsWith("us:")) {
        long n = LatencyTrace.counts().getOrDefault("n:" + k.substring(3), 1L);
        String v = fmt(c.getValue() / 1000.0 / Math.max(1, n));
        rows.add(label + "," + mode + ",mean_ms:" + k.substring(3) + "," + v + "," + v + "," + n + ",\"" + load0
            + "\",\"" + load1 + "\"");
        // the time summed over every node per batch (e.g. how long the replicas' event loops ran per batch)
        String t = fmt(c.getValue() / 1000.0 / nb);
        rows.add(label + "," + mode + ",total_ms_per_batch:" + k.substring(3) + "," + t + "," + t + "," + batches
            + ",\"" + load0 + "\",\"" + load1 + "\"");
      } else if (!k.startsWith("n:")) {
        String v = fmt(c.getValue() / (double) nb);
        rows.add(label + "," + mode + ",per_batch:" + k + "," + v + "," + v + "," + batches + ",\"" + load0 + "\",\""
            + load1 + "\"");
      }
    }
    return rows;
  }

  private static String row(String label, String mode, String stage, List<Double> xs, String load0, String load1) {
    return label + "," + mode + "," + stage + "," + fmt(median(xs)) + "," + fmt(pct(xs, 0.9)) + "," + xs.size() + ",\""
        + load0 + "\",\"" + load1 + "\"";
  }

  private static double median(List<Double> xs) {
    return pct(xs, 0.5);
  }

  private static double pct(List<Double> xs, double p) {
    if (xs.isEmpty()) {
      return Double.NaN;
    }
    List<Double> s = new ArrayList<>(xs);
    s.sort(null);
    return s.get(Math.min(s.size() - 1, (int) Math.ceil(p * s.size()) - 1 < 0 ? 0 : (int) Math.ceil(p * s.size()) - 1));
  }

  private static String fmt(double d) {
    return String.format(java.util.Locale.ROOT, "%.1f", d);
  }

  private static String loadavg() {
    try {
      String[] f = Files.readString(Path.of("/proc/loadavg")).trim().split("\\s+");
      return f[0] + " " + f[1] + " " + f[2];
    } catch (IOException e) {
      return "?";
    }
  }
}
