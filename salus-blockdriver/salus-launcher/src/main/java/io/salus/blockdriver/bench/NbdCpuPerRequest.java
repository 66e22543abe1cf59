package io.salus.blockdriver.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.salus.blockdriver.bench.NbdBenchmark.Workload;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * CPU time per NBD request of the server process, ours ({@code MemoryNbdMain} in a child JVM)
 * against {@code nbdkit memory}, in the same run: a noise-resistant companion to the wall-clock
 * ratios of {@link NbdBenchmark} on a shared machine. Each measured run is fio (the same jobs as
 * {@link NbdBenchmark#MEMORY_WORKLOADS}) issuing a fixed number of requests ({@code --io_size});
 * the server's utime+stime is read from {@code /proc/<pid>/stat} before and after, divided by
 * the requests fio completed. The JVM is warmed up first (fill + one run per workload, so the
 * JIT is done); JIT and GC threads that still run are counted, as they are part of the cost.
 *
 * <pre>
 * java -cp ... io.salus.blockdriver.bench.NbdBenchmark --cpu-per-request [--out docs/benchmarks]
 *   [--reps 5] [--requests-4k 300000] [--requests-1m 8000] [--workloads NAME,...]
 *   [--server-jvm-arg ARG]...
 * </pre>
 *
 * Writes {@code nbd-cpu-per-request.csv} (medians over the repetitions, microseconds of server
 * CPU per request, and the ratio ours / nbdkit: below 1 means we spend less CPU per request).
 */
final class NbdCpuPerRequest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final long CLK_TCK = 100; // USER_HZ on Linux (getconf CLK_TCK)

  private NbdCpuPerRequest() {}

  /**
   * One measured run: requests fio completed, server CPU ticks (of which in the kernel:
   * stime), fio's IOPS, fio's own CPU (client: fio + libnbd) in microseconds.
   */
  record Run(long requests, long ticks, long sysTicks, double iops, double clientUs) {
    double usPerRequest() {
      return ticks * (1_000_000.0 / CLK_TCK) / requests;
    }

    double sysUsPerRequest() {
      return sysTicks * (1_000_000.0 / CLK_TCK) / requests;
    }

    double clientUsPerRequest() {
      return clientUs / requests;
    }
  }

  static void run(File out, String fileName, int reps, long requests4k, long requests1m,
      List<Workload> workloads, List<String> serverJvmArgs) throws Exception {
    String loadBefore = NbdBenchmark.machineLoad();
    String size = "1G";
    String fioSize = "512M";
    int ourPort = NbdBenchmark.freePort();
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-Xmx2g");
    cmd.addAll(serverJvmArgs);
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add("io.salus.blockdriver.nbd.MemoryNbdMain");
    cmd.addAll(List.of("mem", size, String.valueOf(ourPort)));
    Process ours = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    int kitPort = NbdBenchmark.freePort();
    Process kit = new ProcessBuilder("nbdkit", "-f", "-i", "127.0.0.1", "-p",
        String.valueOf(kitPort), "--exportname=mem", "memory", size)
        .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
    try {
      String ourUri = awaitReady(ours);
      NbdBenchmark.waitForPort(kitPort);
      String kitUri = "nbd://127.0.0.1:" + kitPort + "/mem";
      String version = NbdBenchmark.firstLine(NbdBenchmark.run(30, List.of("nbdkit", "--version")));
      Workload fill = new Workload("fill", "write", "1M", 8, false);
      fio(ourUri, fill, fioSize, 512);
      fio(kitUri, fill, fioSize, 512);
      // warm-up (discarded): JIT-compile every path of our server
      for (Workload w : workloads) {
        long n = requestsFor(w, requests4k, requests1m);
        fio(ourUri, w, fioSize, n);
        fio(ourUri, w, fioSize, n);
        fio(kitUri, w, fioSize, n);
      }
      List<String> rows = new ArrayList<>();
      for (Workload w : workloads) {
        long n = requestsFor(w, requests4k, requests1m);
        List<Run> a = new ArrayList<>();
        List<Run> b = new ArrayList<>();
        for (int r = 0; r < reps; r++) {
          if (r % 2 == 0) {
            a.add(measure(ours.pid(), ourUri, w, fioSize, n));
            b.add(measure(kit.pid(), kitUri, w, fioSize, n));
          } else {
            b.add(measure(kit.pid(), kitUri, w, fioSize, n));
            a.add(measure(ours.pid(), ourUri, w, fioSize, n));
          }
          Run x = a.get(a.size() - 1);
          Run y = b.get(b.size() - 1);
          System.out.printf("%-20s rep %d  ours %6.2f us/req (sys %5.2f, fio %6.2f, %8.0f IOPS)"
              + " | nbdkit %6.2f us/req (sys %5.2f, fio %6.2f, %8.0f IOPS) | cpu ratio %.2f | %s%n",
              w.name(), r, x.usPerRequest(), x.sysUsPerRequest(), x.clientUsPerRequest(), x.iops(),
              y.usPerRequest(), y.sysUsPerRequest(), y.clientUsPerRequest(), y.iops(),
              x.usPerRequest() / y.usPerRequest(), NbdBenchmark.machineLoad());
        }
        double ua = median(a.stream().map(Run::usPerRequest).toList());
        double ub = median(b.stream().map(Run::usPerRequest).toList());
        double ia = median(a.stream().map(Run::iops).toList());
        double ib = median(b.stream().map(Run::iops).toList());
        double minA = a.stream().mapToDouble(Run::usPerRequest).min().orElse(0);
        double minB = b.stream().mapToDouble(Run::usPerRequest).min().orElse(0);
        double ka = median(a.stream().map(Run::sysUsPerRequest).toList());
        double kb = median(b.stream().map(Run::sysUsPerRequest).toList());
        double ca = median(a.stream().map(Run::clientUsPerRequest).toList());
        double cb = median(b.stream().map(Run::clientUsPerRequest).toList());
        rows.add(String.format("%s,%d,%.2f,%.2f,%.2f,%.2f,%.3f,%.2f,%.2f,%.2f,%.2f,%.0f,%.0f,%.3f",
            w.name(), n, ua, minA, ub, minB, ua / ub, ka, kb, ca, cb, ia, ib, ia / ib));
        System.out.println(rows.get(rows.size() - 1));
      }
      File csv = new File(out, fileName);
      try (PrintWriter pw = new PrintWriter(csv, StandardCharsets.UTF_8)) {
        pw.println("# server CPU (utime+stime from /proc/<pid>/stat, " + CLK_TCK
            + " ticks/s) per request: fio --ioengine=nbd, size " + fioSize + " of a " + size
            + " export, a fixed number of requests per run (--io_size), " + reps
            + " runs per server alternating order after fill + warm-up; ours = MemoryNbdMain in a"
            + " child JVM (-Xmx2g " + String.join(" ", serverJvmArgs) + "), nbdkit = " + version
            + " memory; us = median (and min) microseconds of server CPU per request; cpu_ratio"
            + " = ours/nbdkit (< 1: ours cheaper); sys_us = median kernel part (stime) of the"
            + " server CPU per request; fio_cpu_us = median CPU of the client (fio +"
            + " libnbd, from fio's usr_cpu/sys_cpu) per request against each server; iops = median wall-clock IOPS (noisy on a"
            + " shared machine), iops_ratio = ours/nbdkit; " + Instant.now() + "; load before: "
            + loadBefore + "; load after: " + NbdBenchmark.machineLoad());
        pw.println("workload,requests_per_run,salus_cpu_us,salus_cpu_us_min,nbdkit_cpu_us,"
            + "nbdkit_cpu_us_min,cpu_ratio,salus_sys_us,nbdkit_sys_us,salus_fio_cpu_us,nbdkit_fio_cpu_us,salus_iops,nbdkit_iops,iops_ratio");
        rows.forEach(pw::println);
      }
      System.out.println("wrote " + csv);
    } finally {
      kit.destroy();
      ours.destroy();
      kit.waitFor(10, TimeUnit.SECONDS);
      ours.waitFor(10, TimeUnit.SECONDS);
    }
  }

  static long requestsFor(Workload w, long requests4k, long requests1m) {
    return w.bs().equals("1M") ? requests1m : requests4k;
  }

  static Run measure(long pid, String uri, Workload w, String fioSize, long requests)
      throws Exception {
    long[] before = cpuTicks(pid);
    JsonNode job = fio(uri, w, fioSize, requests);
    long[] after = cpuTicks(pid);
    JsonNode side = job.path(w.read() ? "read" : "write");
    double clientUs = (job.path("usr_cpu").asDouble() + job.path("sys_cpu").asDouble()) / 100.0
        * job.path("job_runtime").asDouble() * 1000.0;
    return new Run(side.path("total_ios").asLong(), after[0] + after[1] - before[0] - before[1],
        after[1] - before[1], side.path("iops").asDouble(), clientUs);
  }

  /** {utime, stime} of the whole process (all threads, also exited ones), in clock ticks. */
  static long[] cpuTicks(long pid) throws IOException {
    String s = Files.readString(Path.of("/proc", String.valueOf(pid), "stat"));
    // fields after the ")" closing the command name: state is field 3, utime 14, stime 15
    String[] f = s.substring(s.lastIndexOf(')') + 2).trim().split("\\s+");
    return new long[] {Long.parseLong(f[11]), Long.parseLong(f[12])};
  }

  /** fio issuing {@code requests} requests of the workload; returns the JSON of its job. */
  static JsonNode fio(String uri, Workload w, String fioSize, long requests) throws Exception {
    long bytes = requests * blockBytes(w.bs());
    List<String> cmd = new ArrayList<>(List.of("fio", "--name=" + w.name(), "--ioengine=nbd",
        "--uri=" + uri, "--rw=" + w.rw(), "--bs=" + w.bs(), "--iodepth=" + w.iodepth(),
        "--size=" + fioSize, "--io_size=" + bytes, "--output-format=json", "--randrepeat=0",
        "--norandommap"));
    String json = NbdBenchmark.run(900, cmd);
    JsonNode job = JSON.readTree(json.substring(json.indexOf('{'))).path("jobs").get(0);
    JsonNode side = job.path(w.read() ? "read" : "write");
    long done = side.path("total_ios").asLong();
    if (done != requests) {
      throw new IOException("fio completed " + done + " of " + requests + " requests: " + json);
    }
    return job;
  }

  /** Waits for MemoryNbdMain's READY line; returns its URI. */
  static String awaitReady(Process p) throws Exception {
    BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(),
        StandardCharsets.UTF_8));
    String line;
    while ((line = r.readLine()) != null) {
      if (line.startsWith("READY ")) {
        Thread drain = new Thread(() -> {
          try {
            while (r.readLine() != null) {
              // discard the server's log
            }
          } catch (IOException ignored) {
            // server gone
          }
        }, "server-output");
        drain.setDaemon(true);
        drain.start();
        return line.substring(6).trim();
      }
      System.out.println("server: " + line);
    }
    throw new IOException("MemoryNbdMain exited before READY (exit " + p.waitFor() + ")");
  }

  static double median(List<Double> v) {
    List<Double> s = new ArrayList<>(v);
    s.sort(null);
    int n = s.size();
    return n % 2 == 1 ? s.get(n / 2) : (s.get(n / 2 - 1) + s.get(n / 2)) / 2;
  }

  /** Bytes of a fio block size ("4k", "1M"). */
  static long blockBytes(String bs) {
    char u = Character.toUpperCase(bs.charAt(bs.length() - 1));
    return switch (u) {
      case 'K' -> Long.parseLong(bs.substring(0, bs.length() - 1)) << 10;
      case 'M' -> Long.parseLong(bs.substring(0, bs.length() - 1)) << 20;
      default -> Long.parseLong(bs);
    };
  }
}
