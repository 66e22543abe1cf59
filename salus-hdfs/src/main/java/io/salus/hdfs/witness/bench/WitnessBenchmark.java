package io.salus.hdfs.witness.bench;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;

import io.salus.core.cert.CertType;
import io.salus.core.cert.Certificate;
import io.salus.core.cert.RegionId;
import io.salus.core.cert.Statement;
import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.NodeKeys;
import io.salus.core.crypto.SignatureScheme;
import io.salus.core.merkle.Hash;
import io.salus.hdfs.witness.DurableCertificateStore;
import io.salus.hdfs.witness.WitnessClient;
import io.salus.hdfs.witness.WitnessNode;
import io.salus.hdfs.witness.WitnessStoreStats;
import io.salus.hdfs.witness.WitnessTrust;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.style.markers.SeriesMarkers;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Witness store benchmark (not a test): durable LOG_ENTRY appends per second and fsync latency for
 * 1..N concurrent logs, in three modes, each measured in the same run:
 *
 * <ul>
 *   <li>{@code baseline}: one journal file, every record written and fsynced on its own (what a
 *       store without group commit does), writers serialised;</li>
 *   <li>{@code store}: {@link DurableCertificateStore} in process (group commit);</li>
 *   <li>{@code tcp}: the full witness over loopback TCP ({@link WitnessClient} -&gt; server -&gt;
 *       store), one connection per log.</li>
 * </ul>
 * Writes {@code witness-benchmark.csv} (with a {@code ratio} column = ops/s over the baseline at
 * the same concurrency) and two PNG plots into the output directory.
 */
@Command(name = "witness-benchmark", mixinStandardHelpOptions = true,
    description = "Measure witness append throughput and fsync latency; writes CSV + PNG.")
public final class WitnessBenchmark implements Callable<Integer> {
  @Option(names = "--out", defaultValue = "docs/benchmarks", description = "Output directory.")
  Path out;

  @Option(names = "--work", description = "Scratch directory for journals (default: temp dir).")
  Path work;

  @Option(names = "--threads", split = ",", defaultValue = "1,4,16,64",
      description = "Concurrent logs to measure. Default: ${DEFAULT-VALUE}.")
  int[] threads;

  @Option(names = "--seconds", defaultValue = "3", description = "Seconds per point.")
  double seconds;

  private record Point(String mode, int threads, long records, double secs, double opsPerSec,
      double mbPerSec, long fsyncs, double fsyncAvgMs, double fsyncP50Ms, double fsyncP99Ms) {
  }

  private final NodeKeys[] replicas = new NodeKeys[3];

  public static void main(String[] args) {
    System.exit(new CommandLine(new WitnessBenchmark()).execute(args));
  }

  private Certificate cert(int log, long index) {
    RegionId r = new RegionId("bench", log);
    byte[] d = new byte[32];
    ByteBuffer.wrap(d).putLong(index).putInt(log);
    Statement.LogEntry st = new Statement.LogEntry(r, 0, index, Hash.of(d), 65536);
    List<Certificate> t = new ArrayList<>();
    for (NodeKeys k : replicas) {
      t.add(Certificate.sign(CertType.TENTATIVE_LOG_ENTRY, st, k.signer()));
    }
    return Certificate.combine(t);
  }

  @Override
  public Integer call() throws Exception {
    for (int i = 0; i < 3; i++) {
      replicas[i] = NodeKeys.deterministic(SignatureScheme.WEAK_CRC32C, NodeId.of("rs" + i), 1);
    }
    Path scratch = work != null ? work : Files.createTempDirectory("witness-bench");
    Files.createDirectories(out);
    List<Point> points = new ArrayList<>();
    int run = 0;
    for (int n : threads) {
      points.add(baseline(scratch.resolve("b" + run), n));
      points.add(store(scratch.resolve("s" + run), n));
      points.add(tcp(scratch.resolve("t" + run), n));
      run++;
      for (Point p : points.subList(points.size() - 3, points.size())) {
        System.out.printf(Locale.ROOT, "%-8s threads=%3d  %9.0f ops/s  %6.2f MB/s  fsyncs=%7d"
            + "  fsync avg %.2f ms p99<=%.2f ms%n", p.mode, p.threads, p.opsPerSec, p.mbPerSec,
            p.fsyncs, p.fsyncAvgMs, p.fsyncP99Ms);
      }
    }
    writeCsv(points);
    plot(points);
    deleteTree(scratch);
    return 0;
  }

  private interface Op {
    long run(int log, long index) throws Exception;
  }

  /** Runs {@code n} writers for the configured time; returns [records, bytes, elapsedNanos]. */
  private long[] drive(int n, Op op) throws InterruptedException {
    AtomicLong records = new AtomicLong();
    AtomicLong bytes = new AtomicLong();
    long end = System.nanoTime() + (long) (seconds * 1e9);
    ConcurrentLinkedQueue<Throwable> errors = new ConcurrentLinkedQueue<>();
    List<Thread> ts = new ArrayList<>();
    long t0 = System.nanoTime();
    for (int i = 0; i < n; i++) {
      final int log = i;
      Thread t = new Thread(() -> {
        try {
          for (long idx = 0; System.nanoTime() < end; idx++) {
            bytes.addAndGet(op.run(log, idx));
            records.incrementAndGet();
          }
        } catch (Throwable e) {
          errors.add(e);
        }
      });
      t.start();
      ts.add(t);
    }
    for (Thread t : ts) {
      t.join();
    }
    if (!errors.isEmpty()) {
      throw new IllegalStateException("benchmark writer failed", errors.peek());
    }
    return new long[] {records.get(), bytes.get(), System.nanoTime() - t0};
  }

  private Point baseline(Path dir, int n) throws Exception {
    Files.createDirectories(dir);
    long[] lat = new long[1 << 20];
    AtomicLong fs = new AtomicLong();
    try (FileChannel ch = FileChannel.open(dir.resolve("naive.log"), StandardOpenOption.CREATE,
        StandardOpenOption.WRITE, StandardOpenOption.APPEND)) {
      Object lock = new Object();
      long[] r = drive(n, (log, idx) -> {
        byte[] b = cert(log, idx).encode();
        synchronized (lock) {
          ch.write(ByteBuffer.wrap(b));
          long t = System.nanoTime();
          ch.force(false);
          long k = fs.getAndIncrement();
          if (k < lat.length) {
            lat[(int) k] = System.nanoTime() - t;
          }
        }
        return b.length;
      });
      long[] l = Arrays.copyOf(lat, (int) Math.min(fs.get(), lat.length));
      Arrays.sort(l);
      double avg = Arrays.stream(l).average().orElse(0) / 1e6;
      return point("baseline", n, r, fs.get(), avg, pct(l, 0.5), pct(l, 0.99));
    }
  }

  private static double pct(long[] sorted, double q) {
    if (sorted.length == 0) {
      return 0;
    }
    return sorted[(int) Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] / 1e6;
  }

  private Point point(String mode, int n, long[] r, long fsyncs, double avg, double p50,
      double p99) {
    double secs = r[2] / 1e9;
    return new Point(mode, n, r[0], secs, r[0] / secs, r[1] / secs / 1e6, fsyncs, avg, p50, p99);
  }

  private Point store(Path dir, int n) throws Exception {
    try (DurableCertificateStore s = DurableCertificateStore.open(dir)) {
      long[] r = drive(n, (log, idx) -> {
        Certificate c = cert(log, idx);
        s.putIfAbsent(c.statement(Statement.LogEntry.class).region(), 0, idx, c);
        return c.encode().length;
      });
      WitnessStoreStats st = s.stats();
      return point("store", n, r, st.fsyncs(), st.fsyncAvgMillis(), st.fsyncQuantileMillis(0.5),
          st.fsyncQuantileMillis(0.99));
    }
  }

  private Point tcp(Path dir, int n) throws Exception {
    WitnessTrust trust = new WitnessTrust(SignatureScheme.WEAK_CRC32C);
    for (NodeKeys k : replicas) {
      trust.register(k.id(), k.verificationKey());
    }
    trust.setMembers("*", java.util.Set.of(replicas[0].id(), replicas[1].id(), replicas[2].id()));
    try (WitnessNode node = WitnessNode.start(WitnessNode.Settings.of(dir, 0).withTrust(trust))) {
      List<WitnessClient> clients = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        clients.add(WitnessClient.connect(node.address()));
      }
      try {
        long[] r = drive(n, (log, idx) -> {
          byte[] b = cert(log, idx).encode();
          if (clients.get(log).offerBytes(b) != WitnessClient.OfferResult.STORED) {
            throw new IllegalStateException("offer not stored");
          }
          return b.length;
        });
        WitnessStoreStats st = node.store().stats();
        return point("tcp", n, r, st.fsyncs(), st.fsyncAvgMillis(), st.fsyncQuantileMillis(0.5),
            st.fsyncQuantileMillis(0.99));
      } finally {
        for (WitnessClient c : clients) {
          c.close();
        }
      }
    }
  }

  private void writeCsv(List<Point> points) throws IOException {
    Path csv = out.resolve("witness-benchmark.csv");
    try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(csv, StandardCharsets.UTF_8))) {
      w.println("mode,threads,records,seconds,ops_per_sec,mb_per_sec,fsyncs,records_per_fsync,"
          + "fsync_avg_ms,fsync_p50_ms,fsync_p99_ms,baseline_ops_per_sec,ratio");
      for (Point p : points) {
        double base = points.stream().filter(b -> b.mode.equals("baseline") && b.threads == p.threads)
            .findFirst().orElseThrow().opsPerSec;
        w.printf(Locale.ROOT, "%s,%d,%d,%.3f,%.1f,%.3f,%d,%.2f,%.3f,%.3f,%.3f,%.1f,%.3f%n", p.mode,
            p.threads, p.records, p.secs, p.opsPerSec, p.mbPerSec, p.fsyncs,
            p.fsyncs == 0 ? 0.0 : (double) p.records / p.fsyncs, p.fsyncAvgMs, p.fsyncP50Ms,
            p.fsyncP99Ms, base, p.opsPerSec / base);
        if (!p.mode.equals("baseline")) {
          System.out.printf(Locale.ROOT, "ratio %s/baseline at %d threads: %.2fx%n", p.mode,
              p.threads, p.opsPerSec / base);
        }
      }
    }
    System.out.println("wrote " + csv);
  }

  private void plot(List<Point> points) throws IOException {
    XYChart tp = new XYChartBuilder().width(800).height(500)
        .title("Witness durable appends (shared, noisy 2-core machine)")
        .xAxisTitle("concurrent logs (writer threads)").yAxisTitle("LOG_ENTRY appends / s").build();
    XYChart lat = new XYChartBuilder().width(800).height(500).title("Witness fsync latency")
        .xAxisTitle("concurrent logs (writer threads)").yAxisTitle("ms").build();
    tp.getStyler().setXAxisLogarithmic(true);
    tp.getStyler().setYAxisLogarithmic(true);
    lat.getStyler().setXAxisLogarithmic(true);
    for (String mode : List.of("baseline", "store", "tcp")) {
      List<Point> ps = points.stream().filter(p -> p.mode.equals(mode)).toList();
      double[] x = ps.stream().mapToDouble(p -> p.threads).toArray();
      tp.addSeries(mode, x, ps.stream().mapToDouble(p -> p.opsPerSec).toArray())
          .setMarker(SeriesMarkers.CIRCLE);
      lat.addSeries(mode + " avg", x, ps.stream().mapToDouble(p -> p.fsyncAvgMs).toArray())
          .setMarker(SeriesMarkers.CIRCLE);
      lat.addSeries(mode + " p99", x, ps.stream().mapToDouble(p -> p.fsyncP99Ms).toArray())
          .setMarker(SeriesMarkers.DIAMOND);
    }
    BitmapEncoder.saveBitmap(tp, out.resolve("witness-throughput").toString(),
        BitmapEncoder.BitmapFormat.PNG);
    BitmapEncoder.saveBitmap(lat, out.resolve("witness-fsync-latency").toString(),
        BitmapEncoder.BitmapFormat.PNG);
    System.out.println("wrote " + out.resolve("witness-throughput.png") + " and "
        + out.resolve("witness-fsync-latency.png"));
  }

  private static void deleteTree(Path p) throws IOException {
    try (var s = Files.walk(p)) {
      for (Path q : s.sorted(java.util.Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(q);
      }
    }
  }
}
