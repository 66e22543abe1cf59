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
 * <p>Each mode runs twice in a row: with {@link LatencyTrace#legacy} set (the write path as before task lat13:
 * label "before") and as now ("after"), so both see the same machine load. Writes one CSV row per (label, mode,
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
        for (String mode : List.of("sequential", "pipelined", "rmw")) {
          for (boolean legacy : new boolean[] {true, false}) {
            LatencyTrace.legacy(legacy);
            rows.addAll(run(v, g, mode, legacy ? "before" : "after", rnd, reference));
          }
        }
      }
      LatencyTrace.legacy(false);
      LatencyTrace.enable(false);
      assertArrayEquals(reference, await(v.read(0, (int) g.numBlocks())), "the volume reads back");
    } finally {
      LatencyTrace.legacy(false);
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
