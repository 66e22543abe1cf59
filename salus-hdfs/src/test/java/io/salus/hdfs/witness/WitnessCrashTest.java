package io.salus.hdfs.witness;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

import io.salus.core.cert.Certificate;
import io.salus.core.cert.RegionId;
import io.salus.core.crypto.SignatureScheme;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Witness durability against a real crash: a standalone witness daemon runs in a child JVM, eight
 * client threads append LOG_ENTRY certificates to eight logs as fast as it acknowledges them, and
 * the child is killed with SIGKILL (Process.destroyForcibly) in the middle. Every acknowledged
 * certificate must be present after restart; then a torn write and a flipped byte are injected.
 */
class WitnessCrashTest {
  private final Certs certs = new Certs(SignatureScheme.WEAK_CRC32C);

  @TempDir
  Path tmp;

  private record Key(int log, long index) {
  }

  @Test
  void everyAcknowledgedCertificateSurvivesSigkill() throws Exception {
    Path dir = tmp.resolve("witness");
    Path trust = tmp.resolve("trust.conf");
    Files.writeString(trust, certs.weakTrustFile());
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    ProcessBuilder pb = new ProcessBuilder(java, "-Xmx256m", "-XX:TieredStopAtLevel=1",
        "-cp", System.getProperty("java.class.path"), WitnessDaemon.class.getName(),
        "--dir", dir.toString(), "--port", "0", "--trust", trust.toString(), "--id", "w-child");
    pb.redirectErrorStream(true);
    Process child = pb.start();
    Map<Key, byte[]> acked = new ConcurrentHashMap<>();
    AtomicInteger ackCount = new AtomicInteger();
    List<Thread> writers = new ArrayList<>();
    try {
      BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(),
          StandardCharsets.UTF_8));
      String line;
      InetSocketAddress addr = null;
      long deadline = System.currentTimeMillis() + 60_000;
      while (addr == null && (line = out.readLine()) != null) {
        if (line.startsWith("witness w-child listening on ")) {
          String hp = line.substring("witness w-child listening on ".length()).split(" ")[0];
          addr = new InetSocketAddress(hp.split(":")[0], Integer.parseInt(hp.split(":")[1]));
        }
        assertTrue(System.currentTimeMillis() < deadline, "child did not start");
      }
      assertTrue(addr != null, "child witness printed no address");
      Thread drain = new Thread(() -> {
        try {
          while (out.readLine() != null) {
            // keep the pipe empty
          }
        } catch (java.io.IOException ignored) {
          // child died
        }
      });
      drain.setDaemon(true);
      drain.start();
      final InetSocketAddress target = addr;
      // Writer threads report every problem here; the test thread asserts on it. Only a transport
      // error after the kill is expected: a witness answer (REJECTED, ERROR, BUSY) or a non-STORED
      // result is a failure, and so is any error before the kill.
      java.util.Queue<Throwable> failures = new java.util.concurrent.ConcurrentLinkedQueue<>();
      java.util.concurrent.atomic.AtomicBoolean killed = new java.util.concurrent.atomic.AtomicBoolean();
      for (int t = 0; t < 8; t++) {
        final int log = t;
        Thread w = new Thread(() -> {
          RegionId r = new RegionId("crash", log);
          try (WitnessClient c = new WitnessClient(target, 20_000)) {
            for (long i = 0; ; i++) {
              byte[] bytes = certs.logEntry(Certs.entry(r, 0, i)).encode();
              WitnessClient.OfferResult res = c.offerBytes(bytes);
              if (res != WitnessClient.OfferResult.STORED) {
                failures.add(new AssertionError("log " + log + " index " + i
                    + ": LOG_ENTRY offer answered " + res + ", not STORED"));
                return;
              }
              acked.put(new Key(log, i), bytes); // acknowledged = durable by contract
              ackCount.incrementAndGet();
            }
          } catch (WitnessClient.WitnessException e) {
            failures.add(new AssertionError("log " + log + ": the witness answered an error: "
                + e.getMessage(), e));
          } catch (java.io.IOException e) {
            if (!killed.get()) {
              failures.add(new AssertionError("log " + log + ": transport error before the kill",
                  e));
            } // else: the witness was killed; in-flight requests fail, acknowledged ones survive
          } catch (RuntimeException | Error e) {
            failures.add(e);
          }
        }, "crash-writer-" + t);
        w.start();
        writers.add(w);
      }
      long until = System.currentTimeMillis() + 30_000;
      while (ackCount.get() < 3000 && System.currentTimeMillis() < until && failures.isEmpty()) {
        Thread.sleep(20);
      }
      assertTrue(failures.isEmpty(), "writer failed before the kill: " + failures);
      assertTrue(ackCount.get() > 100, "too few acknowledgements before the kill: " + ackCount);
      killed.set(true);
      child.destroyForcibly(); // SIGKILL: no close, no shutdown hook
      assertTrue(child.waitFor(30, TimeUnit.SECONDS));
      for (Thread w : writers) {
        w.join(30_000);
        assertTrue(!w.isAlive(), w.getName() + " still running after the witness died");
      }
      if (!failures.isEmpty()) {
        AssertionError all = new AssertionError(failures.size() + " writer failure(s)",
            failures.peek());
        failures.stream().skip(1).forEach(all::addSuppressed);
        throw all;
      }
    } finally {
      child.destroyForcibly();
    }
    int total = acked.size();
    try (DurableCertificateStore s = DurableCertificateStore.open(dir)) {
      for (Map.Entry<Key, byte[]> e : acked.entrySet()) {
        RegionId r = new RegionId("crash", e.getKey().log());
        byte[] got = s.getBytes(r, 0, e.getKey().index()).orElseThrow(
            () -> new AssertionError("acknowledged certificate lost: " + e.getKey()));
        assertArrayEquals(e.getValue(), got);
      }
      assertTrue(s.entryCount() >= total);
    }
    // Reopening after a clean close finds nothing torn: the file ends at the last valid record.
    Path seg;
    long end;
    try (DurableCertificateStore s = DurableCertificateStore.open(dir)) {
      assertEquals(0, s.recoveryReport().tornBytesTruncated());
      seg = lastSegment(dir);
      end = Files.size(seg);
    }
    // A torn write (the kill landing inside a write) leaves a partial record at the end.
    RegionId r0 = new RegionId("crash", 0);
    byte[] partial = new JournalRecord(JournalRecord.PUT, r0, 0, 1_000_000,
        certs.logEntry(Certs.entry(r0, 0, 1_000_000)).encode()).encode();
    try (FileChannel ch = FileChannel.open(seg, StandardOpenOption.APPEND)) {
      ch.write(ByteBuffer.wrap(partial, 0, partial.length - 7));
    }
    try (DurableCertificateStore s = DurableCertificateStore.open(dir)) {
      assertEquals(partial.length - 7, s.recoveryReport().tornBytesTruncated());
      assertEquals(end, Files.size(seg), "torn tail must be gone");
      for (Key k : acked.keySet()) {
        assertTrue(s.get(new RegionId("crash", k.log()), 0, k.index()).isPresent());
      }
    }
    // A byte flipped in the middle of the journal is detected and reported, not skipped.
    Path first = firstSegment(dir);
    DurableCertificateStoreTest.flip(first, Files.size(first) / 2);
    CorruptWitnessStoreException e = assertThrows(CorruptWitnessStoreException.class,
        () -> DurableCertificateStore.open(dir));
    assertTrue(e.offset() <= Files.size(first) / 2 && e.offset() > 0, e.getMessage());
    System.out.println("WitnessCrashTest: " + total + " acknowledged before SIGKILL, all present; "
        + "corruption reported: " + e.getMessage());
  }

  private static Path lastSegment(Path dir) throws java.io.IOException {
    try (Stream<Path> s = Files.list(dir)) {
      return s.filter(p -> p.getFileName().toString().startsWith("journal-")).sorted()
          .reduce((a, b) -> b).orElseThrow();
    }
  }

  private static Path firstSegment(Path dir) throws java.io.IOException {
    try (Stream<Path> s = Files.list(dir)) {
      return s.filter(p -> p.getFileName().toString().startsWith("journal-")).sorted()
          .findFirst().orElseThrow();
    }
  }
}
