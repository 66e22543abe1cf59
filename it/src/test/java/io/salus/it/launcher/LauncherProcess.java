package io.salus.it.launcher;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Runs {@code salus ...} as a child JVM, the way the {@code ./salus} script does, on the test
 * class path, and collects its output lines.
 */
final class LauncherProcess implements AutoCloseable {
  static final String READY = "SALUS READY";

  private final Process process;
  private final List<String> lines = Collections.synchronizedList(new ArrayList<>());
  private final Thread pump;

  private LauncherProcess(Process process) {
    this.process = process;
    this.pump = new Thread(() -> {
      try (BufferedReader r = new BufferedReader(
          new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
        String line;
        while ((line = r.readLine()) != null) {
          lines.add(line);
        }
      } catch (IOException e) {
        lines.add("<<output closed: " + e + ">>");
      }
    }, "launcher-output");
    pump.setDaemon(true);
    pump.start();
  }

  static LauncherProcess start(String heap, String... args) throws IOException {
    String cp = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    return start(cp, heap, true, args);
  }

  /**
   * As {@link #start(String, String...)}, with the JVM's full tiered compilation (C2) as the ./salus script runs
   * {@code salus up}: for a child that writes a lot (1.2x the fill rate of C1 only: docs/benchmarks/salus-jit-ab.csv).
   */
  static LauncherProcess startFullJit(String heap, String... args) throws IOException {
    String cp = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    return start(cp, heap, false, args);
  }

  /**
   * Runs {@code salus ...} on the client's class path only, as {@code ./salus volume|nbd} does with
   * the client distribution: salus-blockdriver's classes plus its runtime dependencies as the
   * reactor resolved them ({@code salus-blockdriver/target/runtime-classpath.txt}), without the
   * launcher artifact, HBase/HDFS server jars or test-jars.
   */
  static LauncherProcess startClient(String heap, String... args) throws IOException {
    Path root = Path.of(System.getProperty("salus.repo.root", "..")).toAbsolutePath().normalize();
    Path mod = root.resolve("salus-blockdriver");
    String deps = java.nio.file.Files.readString(mod.resolve("target/runtime-classpath.txt")).strip();
    if (deps.contains("hbase-server") || deps.contains("salus-launcher")) {
      throw new IllegalStateException("the client class path carries server jars: " + deps);
    }
    return start(mod.resolve("target/classes") + java.io.File.pathSeparator + deps, heap, true, args);
  }

  private static LauncherProcess start(String cp, String heap, boolean c1Only, String... args) throws IOException {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-Xmx" + heap);
    for (String opt : new String[] {"java.lang", "java.lang.reflect", "java.nio", "sun.nio.ch",
        "java.util", "java.util.concurrent", "jdk.internal.ref"}) {
      cmd.add("--add-opens");
      cmd.add("java.base/" + opt + "=ALL-UNNAMED");
    }
    cmd.add("--add-exports");
    cmd.add("java.base/jdk.internal.misc=ALL-UNNAMED");
    if (c1Only) {
      cmd.add("-XX:TieredStopAtLevel=1");
    }
    cmd.add("-Djava.net.preferIPv4Stack=true");
    cmd.add("-cp");
    cmd.add(cp);
    cmd.add("io.salus.blockdriver.cli.SalusCli");
    cmd.addAll(List.of(args));
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
    return new LauncherProcess(pb.start());
  }

  /** Waits for a line starting with {@code prefix}; fails with the output so far. */
  String awaitLine(String prefix, long timeout, TimeUnit unit) throws InterruptedException {
    long deadline = System.nanoTime() + unit.toNanos(timeout);
    while (System.nanoTime() < deadline) {
      synchronized (lines) {
        for (String l : lines) {
          if (l.startsWith(prefix)) {
            return l;
          }
        }
      }
      if (!process.isAlive()) {
        pump.join(2000);
        synchronized (lines) {
          for (String l : lines) {
            if (l.startsWith(prefix)) {
              return l;
            }
          }
        }
        throw new AssertionError("launcher exited with " + process.exitValue() + " before '"
            + prefix + "'; output:\n" + output() + logTail());
      }
      Thread.sleep(100);
    }
    throw new AssertionError("no '" + prefix + "' within " + timeout + " " + unit + "; output:\n"
        + output() + logTail());
  }

  /**
   * The warnings and errors of the launcher's log file (named on its first output line), so that a
   * failure seen only in CI can be diagnosed after the temporary data directory is gone.
   */
  private String logTail() {
    java.util.regex.Matcher m =
        java.util.regex.Pattern.compile("\\(logs: (.+)\\)").matcher(output());
    if (!m.find()) {
      return "";
    }
    try {
      List<String> all = java.nio.file.Files.readAllLines(Path.of(m.group(1)));
      List<String> picked = new ArrayList<>();
      for (String l : all) {
        if (l.contains(" ERROR ") || l.contains(" WARN ") || l.contains("Exception")
            || l.startsWith("\tat ") || l.startsWith("Caused by")) {
          picked.add(l);
        }
      }
      List<String> tail = picked.subList(Math.max(0, picked.size() - 120), picked.size());
      // a server that died early is named by its abort line, long before the last 120 warnings
      List<String> aborts = new ArrayList<>();
      for (String l : all) {
        if (l.contains("ABORTING") || l.contains(" FATAL ") || l.contains("YouAreDeadException")) {
          aborts.add(l);
        }
      }
      return "\n--- server aborts in " + m.group(1) + " ---\n"
          + String.join("\n", aborts.subList(0, Math.min(20, aborts.size())))
          + "\n--- last warnings/errors of " + m.group(1) + " ---\n" + String.join("\n", tail);
    } catch (IOException | RuntimeException e) {
      return "\n(could not read " + m.group(1) + ": " + e + ")";
    }
  }

  /**
   * Sends SIGTERM with kill(1), as an operator or init system would, and waits for the exit code.
   * (Process.destroy() also sends SIGTERM but closes our end of the output pipe first.)
   */
  int terminate(long timeout, TimeUnit unit) throws InterruptedException, IOException {
    Process kill = new ProcessBuilder("kill", "-TERM", Long.toString(process.pid())).inheritIO().start();
    if (kill.waitFor() != 0) {
      throw new AssertionError("kill -TERM " + process.pid() + " failed");
    }
    if (!process.waitFor(timeout, unit)) {
      process.destroyForcibly();
      throw new AssertionError("launcher did not stop within " + timeout + " " + unit
          + " of SIGTERM; output:\n" + output());
    }
    pump.join(2000);
    return process.exitValue();
  }

  /**
   * Sends SIGKILL with kill(1) to the launcher's JVM (the whole {@code salus up}: every server runs in it): no
   * shutdown hook, no region close, no flush. Returns the exit code (137).
   */
  int kill9(long timeout, TimeUnit unit) throws InterruptedException, IOException {
    Process kill = new ProcessBuilder("kill", "-KILL", Long.toString(process.pid())).inheritIO().start();
    if (kill.waitFor() != 0) {
      throw new AssertionError("kill -KILL " + process.pid() + " failed");
    }
    if (!process.waitFor(timeout, unit)) {
      throw new AssertionError("launcher still alive " + timeout + " " + unit + " after SIGKILL");
    }
    pump.join(2000);
    return process.exitValue();
  }

  int waitForExit(long timeout, TimeUnit unit) throws InterruptedException {
    if (!process.waitFor(timeout, unit)) {
      process.destroyForcibly();
      throw new AssertionError("launcher still running after " + timeout + " " + unit + "; output:\n" + output());
    }
    pump.join(2000);
    return process.exitValue();
  }

  String output() {
    synchronized (lines) {
      return String.join("\n", lines);
    }
  }

  /**
   * A free port the kernel chooses, in its ephemeral range. The launcher chooses the ports a test does not pass
   * (master, region servers, witnesses) below that range ({@link io.salus.blockdriver.launcher.Preflight#freePort}),
   * in its own JVM, before the ports passed to it are bound: had the test chosen from the same range, the two
   * choices could meet (CI of stop 37: a region server failed to bind, "Address already in use").
   */
  static int freePort() throws IOException {
    try (java.net.ServerSocket s = new java.net.ServerSocket()) {
      s.bind(new java.net.InetSocketAddress(java.net.InetAddress.getByName("127.0.0.1"), 0));
      return s.getLocalPort();
    }
  }

  /** Extracts {@code key=value} from the readiness line. */
  static String field(String readyLine, String key) {
    for (String tok : readyLine.split("\\s+")) {
      if (tok.startsWith(key + "=")) {
        return tok.substring(key.length() + 1);
      }
    }
    throw new AssertionError("readiness line has no " + key + ": " + readyLine);
  }

  @Override
  public void close() {
    if (process.isAlive()) {
      process.destroyForcibly();
    }
  }
}
