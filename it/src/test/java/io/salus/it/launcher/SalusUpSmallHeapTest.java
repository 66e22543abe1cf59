package io.salus.it.launcher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.salus.it.nbd.Tools;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 27, Done-when: a volume holding more data than the server's whole heap. {@code salus up} runs every server of
 * the stack (ZooKeeper, HDFS, the HBase master and three region servers with their Salus replicas, the NBD export) in
 * one JVM of {@value #HEAP} (the smallest it starts with); {@value #WRITE_MIB} MiB are written to its 2 GiB Salus
 * volume with fio over NBD (1 MiB writes with crc32c verify headers, one FLUSH at the end), so the data is more than
 * the heap, each region server holds ~3x its share of the heap in its replica regions, and every region is
 * checkpointed many times (a checkpoint every 64 log entries: an HBase flush of the region, counted in the log).
 * Then {@code kill -9} of the JVM and {@code salus up} again on the same data directory with the same heap: it must
 * print READY and every replica running, fio must read every byte back and verify it, and neither run may log an
 * {@code OutOfMemoryError} or an uncaught exception. Before issue 27 a checkpoint composed its region's contents in
 * the heap (whole {@code RegionSnapshot}s) and a restart loaded them again: at a few hundred MiB written checkpoint
 * threads died of {@code OutOfMemoryError} in a 3 GiB heap and the restart aborted a region server.
 */
class SalusUpSmallHeapTest {
  /** The smallest heap salus up starts with (Preflight.MIN_HEAP_BYTES). */
  static final String HEAP = "1g";
  static final int WRITE_MIB = 1100;

  @TempDir Path tmp;

  @Test
  void aVolumeHoldingMoreThanTheHeapIsCheckpointedAndReopensAfterKill9WithEveryByteBack() throws Exception {
    Path data = tmp.resolve("salus-data");
    int nbdPort = LauncherProcess.freePort();
    List<String> fill = List.of("fio", "--name=fill", "--ioengine=nbd", "--uri=nbd://127.0.0.1:" + nbdPort,
        "--rw=write", "--bs=1M", "--iodepth=8", "--size=" + WRITE_MIB + "M", "--verify=crc32c", "--randseed=27",
        "--verify_state_save=0", "--output-format=terse");
    try (LauncherProcess up = LauncherProcess.startFullJit(HEAP, "up", "--data", data.toString(),
        "--zk-port", Integer.toString(LauncherProcess.freePort()),
        "--namenode-port", Integer.toString(LauncherProcess.freePort()),
        "--nbd-port", Integer.toString(nbdPort), "--size", "2G")) {
      String ready = up.awaitLine(LauncherProcess.READY, 420, TimeUnit.SECONDS);
      assertEquals("salus", LauncherProcess.field(ready, "kind"), ready);
      List<String> write = new java.util.ArrayList<>(fill);
      write.addAll(List.of("--do_verify=0", "--end_fsync=1"));
      Tools.run(1500, write).requireSuccess("fio writing " + WRITE_MIB + " MiB");
      long checkpoints = checkpointFlushes(data);
      assertTrue(checkpoints >= 12, "every replica region checkpointed while the volume filled: " + checkpoints
          + " checkpoint flushes in the log");
      assertNoMemoryOrThreadDeaths(up, data, "the first run");
      assertEquals(137, up.kill9(60, TimeUnit.SECONDS), up.output());
    }
    try (LauncherProcess up = LauncherProcess.startFullJit(HEAP, "up", "--data", data.toString(),
        "--nbd-port", Integer.toString(nbdPort))) {
      String ready = up.awaitLine(LauncherProcess.READY, 420, TimeUnit.SECONDS);
      assertTrue(up.output().contains("reopening data directory"), up.output());
      String health = up.awaitLine("replicas:", 60, TimeUnit.SECONDS);
      assertTrue(health.matches(".*replicas: \\d+ Salus replicas running.*"), health);
      List<String> verify = new java.util.ArrayList<>(fill);
      verify.addAll(List.of("--verify_only=1", "--verify_fatal=1"));
      Tools.run(1500, verify).requireSuccess("fio reading back and verifying the " + WRITE_MIB + " MiB after kill -9");
      assertNoMemoryOrThreadDeaths(up, data, "the run after kill -9");
      assertEquals(0, up.terminate(240, TimeUnit.SECONDS), up.output());
      assertFalse(ready.isEmpty());
    }
  }

  /** Checkpoint flushes of replica regions in the run's log (the checkpoint writer threads' HBase flushes). */
  private static long checkpointFlushes(Path data) throws IOException {
    try (Stream<String> lines = Files.lines(data.resolve("logs/salus.log"))) {
      return lines.filter(l -> l.contains("[salus-checkpoint-") && l.contains("Flushing")).count();
    }
  }

  /** Fails if the output or a log under {@code data/logs} names an OutOfMemoryError or a thread that died of an exception. */
  private static void assertNoMemoryOrThreadDeaths(LauncherProcess up, Path data, String run) throws IOException {
    assertFalse(up.output().contains("OutOfMemoryError") || up.output().contains("Exception in thread"),
        run + ": " + up.output());
    try (Stream<Path> logs = Files.list(data.resolve("logs"))) {
      for (Path log : logs.toList()) {
        try (Stream<String> lines = Files.lines(log, java.nio.charset.StandardCharsets.ISO_8859_1)) {
          List<String> bad = lines.filter(l -> l.contains("OutOfMemoryError") || l.contains("Exception in thread"))
              .limit(5).toList();
          assertTrue(bad.isEmpty(), run + ": " + log + " has " + bad);
        }
      }
    }
  }
}
