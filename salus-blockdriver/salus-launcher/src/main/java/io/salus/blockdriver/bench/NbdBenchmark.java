package io.salus.blockdriver.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.salus.blockdriver.nbd.NbdExports;
import io.salus.blockdriver.nbd.NbdServer;
import io.salus.blockdriver.nbd.HBaseExports;
import io.salus.blockdriver.volume.MemoryVolume;
import io.salus.blockdriver.volume.VolumeCatalog;
import java.io.File;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HBaseTestingUtility;
import org.apache.hadoop.hbase.StartMiniClusterOption;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;

/**
 * Benchmark (run by hand, not a test): fio over NBD against our server exporting a
 * {@link MemoryVolume} and against {@code nbdkit memory}, in the same run, alternating targets;
 * then the plain-HBase volume on an HBase mini cluster (the Salus baseline).
 *
 * <pre>
 * java -Xmx2g -cp 'salus-blockdriver/target/salus-blockdriver-0.1.0-SNAPSHOT.jar:salus-blockdriver/target/lib/*' \
 *   io.salus.blockdriver.bench.NbdBenchmark [--out docs/benchmarks] [--runtime 8] [--reps 7] [--skip-hbase]
 *   [--skip-memory] [--hdfs]
 * java ... NbdBenchmark --cpu-per-request [--reps 5]   (server CPU per request, see
 *   {@link NbdCpuPerRequest})
 * </pre>
 *
 * Writes {@code nbd-memory-vs-nbdkit.csv/.png} (with a {@code ratio} column = ours / nbdkit,
 * best of the repetitions) and {@code hbase-volume-baseline.csv/.png}.
 */
public final class NbdBenchmark {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** One fio workload; {@code fsync} > 0 sends an NBD FLUSH after every that many writes. */
  record Workload(String name, String rw, String bs, int iodepth, boolean read, int fsync) {
    Workload(String name, String rw, String bs, int iodepth, boolean read) {
      this(name, rw, bs, iodepth, read, 0);
    }
  }

  /** Result of one fio run. */
  record Fio(double mibps, double iops, double latUsec) {}

  static final List<Workload> MEMORY_WORKLOADS = List.of(
      new Workload("seq-write-1M", "write", "1M", 8, false),
      new Workload("rand-write-4k-qd32", "randwrite", "4k", 32, false),
      new Workload("seq-read-1M", "read", "1M", 8, true),
      new Workload("rand-read-4k-qd32", "randread", "4k", 32, true));

  static final List<Workload> HBASE_WORKLOADS = List.of(
      new Workload("seq-write-4k-qd32", "write", "4k", 32, false),
      new Workload("rand-write-4k-qd32", "randwrite", "4k", 32, false),
      new Workload("rand-write-4k-qd32-flush32", "randwrite", "4k", 32, false, 32),
      new Workload("seq-read-4k-qd32", "read", "4k", 32, true),
      new Workload("rand-read-4k-qd32", "randread", "4k", 32, true));

  /** CPU list (taskset -c) for fio, or null: not pinned. */
  static String pinFio;
  /** CPU list for both servers (this JVM, which hosts ours, and nbdkit), or null. */
  static String pinServers;

  public static void main(String[] args) throws Exception {
    File out = new File("docs/benchmarks");
    int runtime = 10;
    int reps = 3;
    boolean hbase = true;
    boolean memory = true;
    List<String> only = null;
    boolean hdfs = false;
    boolean cpu = false;
    long requests4k = 300_000;
    long requests1m = 8_000;
    String cpuCsv = "nbd-cpu-per-request.csv";
    List<String> serverJvmArgs = new ArrayList<>();
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--out": out = new File(args[++i]); break;
        case "--runtime": runtime = Integer.parseInt(args[++i]); break;
        case "--reps": reps = Integer.parseInt(args[++i]); break;
        case "--skip-hbase": hbase = false; break;
        case "--skip-memory": memory = false; break;
        case "--workloads": only = List.of(args[++i].split(",")); break;
        case "--hdfs": hdfs = true; break;
        case "--cpu-per-request": cpu = true; break;
        case "--requests-4k": requests4k = Long.parseLong(args[++i]); break;
        case "--requests-1m": requests1m = Long.parseLong(args[++i]); break;
        case "--cpu-csv": cpuCsv = args[++i]; break;
        case "--server-jvm-arg": serverJvmArgs.add(args[++i]); break;
        case "--pin-fio": pinFio = args[++i]; break;
        case "--pin-servers": pinServers = args[++i]; break;
        default:
          System.err.println("usage: NbdBenchmark [--out DIR] [--runtime S] [--reps N]"
              + " [--skip-hbase] [--skip-memory] [--workloads NAME,...] [--hdfs]"
              + " [--pin-fio CPUS --pin-servers CPUS]"
              + " | --cpu-per-request [--out DIR] [--reps N] [--requests-4k N] [--requests-1m N]"
              + " [--workloads NAME,...] [--cpu-csv FILE] [--server-jvm-arg ARG]...");
          System.exit(2);
      }
    }
    out.mkdirs();
    if ((pinFio == null) != (pinServers == null)) {
      System.err.println("--pin-fio and --pin-servers go together (e.g. --pin-fio 0 --pin-servers 1)");
      System.exit(2);
    }
    if (pinServers != null) {
      // every thread of this JVM (ours is in-process), and the threads it starts later
      run(30, List.of("taskset", "-a", "-p", "-c", pinServers,
          String.valueOf(ProcessHandle.current().pid())));
    }
    List<Workload> workloads = MEMORY_WORKLOADS;
    if (only != null) {
      final List<String> names = only;
      workloads = MEMORY_WORKLOADS.stream().filter(w -> names.contains(w.name())).toList();
    }
    if (cpu) {
      NbdCpuPerRequest.run(out, cpuCsv, reps, requests4k, requests1m, workloads, serverJvmArgs);
      return;
    }
    if (memory) {
      memoryVsNbdkit(out, runtime, reps, workloads);
    }
    if (hbase) {
      hbaseBaseline(out, Math.max(runtime, 15), hdfs);
    }
  }

  static void memoryVsNbdkit(File out, int runtime, int reps, List<Workload> workloads)
      throws Exception {
    String loadBefore = machineLoad();
    long size = 1L << 30;
    String fioSize = "512M";
    MemoryVolume vol = new MemoryVolume("mem", size / 4096, 4096);
    int kitPort = freePort();
    List<String> kitCmd = new ArrayList<>(List.of("nbdkit", "-f", "-i", "127.0.0.1", "-p",
        String.valueOf(kitPort), "--exportname=mem", "memory", String.valueOf(size)));
    if (pinServers != null) {
      kitCmd.addAll(0, List.of("taskset", "-c", pinServers));
    }
    Process kit = new ProcessBuilder(kitCmd)
        .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
    try (NbdServer server = new NbdServer(InetAddress.getLoopbackAddress(), 0,
        NbdExports.of(vol)).start()) {
      waitForPort(kitPort);
      String ours = server.uri("mem");
      String theirs = "nbd://127.0.0.1:" + kitPort + "/";
      String version = firstLine(run(30, List.of("nbdkit", "--version")));
      Map<String, Fio[]> best = new LinkedHashMap<>();
      Map<String, Double> medianRatio = new LinkedHashMap<>();
      // warm up the JVM and allocate both memory disks fully (fill)
      fio(ours, new Workload("fill", "write", "1M", 8, false), fioSize, 0);
      fio(theirs, new Workload("fill", "write", "1M", 8, false), fioSize, 0);
      // warm-up (discarded): let the JIT compile every path before measuring
      for (Workload w : workloads) {
        fio(ours, w, fioSize, 4);
        fio(theirs, w, fioSize, 4);
      }
      for (Workload w : workloads) {
        Fio bo = null;
        Fio bt = null;
        List<Double> ratios = new ArrayList<>();
        for (int r = 0; r < reps; r++) {
          // alternate the order to spread machine noise over both targets
          Fio a;
          Fio b;
          if (r % 2 == 0) {
            a = fio(ours, w, fioSize, runtime);
            b = fio(theirs, w, fioSize, runtime);
          } else {
            b = fio(theirs, w, fioSize, runtime);
            a = fio(ours, w, fioSize, runtime);
          }
          System.out.printf("%-20s rep %d  ours %9.1f MiB/s %9.0f IOPS | nbdkit %9.1f MiB/s %9.0f"
              + " IOPS | ratio %.2f%n", w.name(), r, a.mibps(), a.iops(), b.mibps(), b.iops(),
              a.mibps() / b.mibps());
          ratios.add(a.mibps() / b.mibps());
          bo = bo == null || a.mibps() > bo.mibps() ? a : bo;
          bt = bt == null || b.mibps() > bt.mibps() ? b : bt;
        }
        best.put(w.name(), new Fio[] {bo, bt});
        ratios.sort(null);
        medianRatio.put(w.name(), ratios.size() % 2 == 1 ? ratios.get(ratios.size() / 2)
            : (ratios.get(ratios.size() / 2 - 1) + ratios.get(ratios.size() / 2)) / 2);
      }
      File csv = new File(out, "nbd-memory-vs-nbdkit.csv");
      try (PrintWriter pw = new PrintWriter(csv, StandardCharsets.UTF_8)) {
        pw.println("# fio --ioengine=nbd, size " + fioSize + ", runtime " + runtime + " s, "
            + reps + " back-to-back pairs (order alternating) after a discarded warm-up; throughput columns = best run,"
            + " ratio = median of the per-pair ratios ours/nbdkit, ratio_best = best/best; "
            + version + "; " + (pinFio == null ? "not pinned" : "fio pinned to CPU " + pinFio
                + ", both servers to CPU " + pinServers) + "; " + Instant.now() + "; load before: " + loadBefore + "; load after: "
            + machineLoad());
        pw.println("workload,salus_mibps,salus_iops,salus_lat_usec,nbdkit_mibps,nbdkit_iops,"
            + "nbdkit_lat_usec,ratio,ratio_best");
        for (Map.Entry<String, Fio[]> e : best.entrySet()) {
          Fio a = e.getValue()[0];
          Fio b = e.getValue()[1];
          pw.printf("%s,%.1f,%.0f,%.1f,%.1f,%.0f,%.1f,%.3f,%.3f%n", e.getKey(), a.mibps(),
              a.iops(), a.latUsec(), b.mibps(), b.iops(), b.latUsec(),
              medianRatio.get(e.getKey()), a.mibps() / b.mibps());
        }
      }
      System.out.println("wrote " + csv);
      List<String> names = new ArrayList<>(best.keySet());
      List<Double> ratios = new ArrayList<>(medianRatio.values());
      CategoryChart chart = new CategoryChartBuilder().width(900).height(500)
          .title("NBD server on MemoryVolume vs nbdkit memory (median throughput ratio)")
          .xAxisTitle("fio workload").yAxisTitle("ours / nbdkit").build();
      chart.addSeries("ratio", names, ratios);
      chart.addSeries("parity", names, names.stream().map(n -> 1.0).toList());
      BitmapEncoder.saveBitmap(chart, new File(out, "nbd-memory-vs-nbdkit").getPath(),
          BitmapEncoder.BitmapFormat.PNG);
    } finally {
      kit.destroy();
      kit.waitFor(10, TimeUnit.SECONDS);
      vol.close();
    }
  }

  /**
   * The plain-HBase volume over NBD. Local file system + FSHLog by default; with {@code hdfs}
   * on a one-DataNode MiniDFSCluster with HBase's default async FS WAL, where FLUSH (and FUA)
   * mean a DataNode fsync, so the FLUSH workload shows what durability costs.
   */
  static void hbaseBaseline(File out, int runtime, boolean hdfs) throws Exception {
    String loadBefore = machineLoad();
    HBaseTestingUtility util = new HBaseTestingUtility();
    Configuration conf = util.getConfiguration();
    conf.setInt("hbase.master.info.port", -1);
    conf.setInt("hbase.regionserver.info.port", -1);
    conf.setInt("hbase.regionserver.handler.count", 32);
    if (hdfs) {
      util.startMiniCluster(StartMiniClusterOption.builder()
          .numRegionServers(1).numDataNodes(1).build());
    } else {
      conf.setBoolean("hbase.unsafe.stream.capability.enforce", false);
      conf.set("hbase.wal.provider", "filesystem");
      util.startMiniZKCluster();
      util.startMiniHBaseCluster(StartMiniClusterOption.builder().numRegionServers(1).build());
    }
    try {
      VolumeCatalog catalog = new VolumeCatalog(util.getConnection());
      catalog.create("bench", (1L << 30) / 4096, 4096, "SHA-256", 4);
      Map<String, Fio> results = new LinkedHashMap<>();
      try (NbdServer server = new NbdServer(InetAddress.getLoopbackAddress(), 0,
          HBaseExports.single(util.getConnection(), "bench")).start()) {
        String uri = server.uri("bench");
        for (Workload w : HBASE_WORKLOADS) {
          Fio f = fio(uri, w, "256M", runtime);
          System.out.printf("HBaseVolume %-20s %8.1f MiB/s %8.0f IOPS  mean lat %8.0f us%n",
              w.name(), f.mibps(), f.iops(), f.latUsec());
          results.put(w.name(), f);
        }
      }
      String name = hdfs ? "hbase-volume-baseline-hdfs" : "hbase-volume-baseline";
      File csv = new File(out, name + ".csv");
      try (PrintWriter pw = new PrintWriter(csv, StandardCharsets.UTF_8)) {
        pw.println("# plain-HBase volume (Salus baseline) over NBD: 1 RS mini cluster "
            + (hdfs ? "on a 1-DataNode MiniDFSCluster with the async FS WAL"
                : "on local FS with FSHLog WAL")
            + ", in the benchmark JVM; fio size 256M, runtime " + runtime
            + " s; flush32 = NBD FLUSH after every 32 writes (fio --fsync=32); " + Instant.now()
            + "; load before: " + loadBefore + "; load after: " + machineLoad());
        pw.println("workload,mibps,iops,mean_lat_usec");
        for (Map.Entry<String, Fio> e : results.entrySet()) {
          pw.printf("%s,%.2f,%.0f,%.0f%n", e.getKey(), e.getValue().mibps(), e.getValue().iops(),
              e.getValue().latUsec());
        }
      }
      System.out.println("wrote " + csv);
      CategoryChart chart = new CategoryChartBuilder().width(900).height(500)
          .title("Plain-HBase volume over NBD (Salus baseline), 4 KiB requests, iodepth 32")
          .xAxisTitle("fio workload").yAxisTitle("IOPS").build();
      chart.addSeries("IOPS", new ArrayList<>(results.keySet()),
          results.values().stream().map(Fio::iops).toList());
      BitmapEncoder.saveBitmap(chart, new File(out, name).getPath(),
          BitmapEncoder.BitmapFormat.PNG);
    } finally {
      util.shutdownMiniCluster();
    }
  }

  static Fio fio(String uri, Workload w, String size, int runtime) throws Exception {
    List<String> cmd = new ArrayList<>(List.of("fio", "--name=" + w.name(), "--ioengine=nbd",
        "--uri=" + uri, "--rw=" + w.rw(), "--bs=" + w.bs(), "--iodepth=" + w.iodepth(),
        "--size=" + size, "--output-format=json", "--randrepeat=0", "--norandommap"));
    if (w.fsync() > 0) {
      cmd.add("--fsync=" + w.fsync());
    }
    if (pinFio != null) {
      cmd.addAll(0, List.of("taskset", "-c", pinFio));
    }
    if (runtime > 0) {
      cmd.add("--time_based");
      cmd.add("--runtime=" + runtime);
      cmd.add("--ramp_time=1");
    }
    String json = run(runtime + 600, cmd);
    JsonNode job = JSON.readTree(json.substring(json.indexOf('{'))).path("jobs").get(0);
    JsonNode side = job.path(w.read() ? "read" : "write");
    double kib = side.path("bw").asDouble();
    return new Fio(kib / 1024.0, side.path("iops").asDouble(),
        side.path("lat_ns").path("mean").asDouble() / 1000.0);
  }

  static String run(long timeoutSeconds, List<String> cmd) throws Exception {
    File log = File.createTempFile("bench", ".out");
    try {
      Process p = new ProcessBuilder(cmd).redirectErrorStream(false)
          .redirectOutput(log).redirectError(ProcessBuilder.Redirect.INHERIT).start();
      if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new IOException(String.join(" ", cmd) + " timed out");
      }
      String s = Files.readString(log.toPath());
      if (p.exitValue() != 0) {
        throw new IOException(String.join(" ", cmd) + " failed: " + s);
      }
      return s;
    } finally {
      log.delete();
    }
  }

  /**
   * The machine's load as measured now (1/5/15-minute load averages from /proc/loadavg and the
   * CPU count), written into each CSV instead of a fixed remark.
   */
  static String machineLoad() {
    try {
      String[] f = Files.readString(java.nio.file.Path.of("/proc/loadavg")).trim().split("\\s+");
      return "load average " + f[0] + " " + f[1] + " " + f[2] + " on "
          + Runtime.getRuntime().availableProcessors() + " CPUs";
    } catch (IOException e) {
      return "load average unknown (" + e.getMessage() + ") on "
          + Runtime.getRuntime().availableProcessors() + " CPUs";
    }
  }

  static String firstLine(String s) {
    int i = s.indexOf('\n');
    return (i < 0 ? s : s.substring(0, i)).trim();
  }

  static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  static void waitForPort(int port) throws Exception {
    long deadline = System.currentTimeMillis() + 10_000;
    while (System.currentTimeMillis() < deadline) {
      try (java.net.Socket s = new java.net.Socket("127.0.0.1", port)) {
        return;
      } catch (IOException e) {
        Thread.sleep(100);
      }
    }
    throw new IOException("nbdkit did not start on port " + port);
  }
}
