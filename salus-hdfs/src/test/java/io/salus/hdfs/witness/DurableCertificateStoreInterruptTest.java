package io.salus.hdfs.witness;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import io.salus.core.cert.Certificate;
import io.salus.core.cert.RegionId;
import io.salus.core.crypto.SignatureScheme;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A thread interrupted while it calls into the store (an executor's {@code shutdownNow}, a
 * {@code Future.cancel(true)}, an RPC framework stopping its handlers) must not take the journal
 * away from everyone else. A {@code FileChannel} is closed for every thread when one thread is
 * interrupted in (or enters with its interrupt flag set) a read, write or force on it; the store
 * used to be left open on a closed channel: its writes failed, its reads answered "nothing
 * stored" for certificates it had acknowledged, and {@code close()} threw ClosedChannelException
 * (seen in SalusWitnessStoresTest, whose witness closes its server, which interrupted a connection
 * thread in the middle of a fsync).
 */
class DurableCertificateStoreInterruptTest {
  private static final RegionId R = new RegionId("vol", 7);
  private final Certs certs = new Certs(SignatureScheme.WEAK_CRC32C);

  @TempDir
  Path dir;

  private Certificate cert(long index) {
    return certs.logEntry(Certs.entry(R, 1, index));
  }

  /** Runs {@code body} on a fresh thread whose interrupt flag is set; returns what it threw. */
  private static Throwable onInterruptedThread(ThrowingRunnable body, AtomicBoolean flagAfter)
      throws InterruptedException {
    AtomicReference<Throwable> thrown = new AtomicReference<>();
    Thread t = new Thread(() -> {
      Thread.currentThread().interrupt();
      try {
        body.run();
      } catch (Throwable e) {
        thrown.set(e);
      }
      flagAfter.set(Thread.currentThread().isInterrupted());
    }, "interrupted-caller");
    t.start();
    t.join();
    return thrown.get();
  }

  interface ThrowingRunnable {
    void run() throws Exception;
  }

  @Test
  void aWriterWithItsInterruptFlagSetStoresDurablyAndLeavesTheJournalOpen() throws Exception {
    DurableCertificateStore s = DurableCertificateStore.open(dir);
    for (long i = 0; i < 5; i++) {
      s.putIfAbsent(R, 1, i, cert(i));
    }
    AtomicBoolean flag = new AtomicBoolean();
    Throwable e = onInterruptedThread(() -> s.putIfAbsent(R, 1, 5, cert(5)), flag);
    assertEquals(null, e, "an interrupted caller's put failed: " + e);
    assertTrue(flag.get(), "the caller's interrupt flag is kept for it to act on");
    // Everyone else still has the journal.
    s.putIfAbsent(R, 1, 6, cert(6));
    for (long i = 0; i <= 6; i++) {
      assertEquals(Optional.of(cert(i)), s.get(R, 1, i), "index " + i);
    }
    s.close(); // used to throw ClosedChannelException from the final force
    try (DurableCertificateStore again = DurableCertificateStore.open(dir)) {
      for (long i = 0; i <= 6; i++) {
        assertEquals(Optional.of(cert(i)), again.get(R, 1, i), "index " + i + " after reopen");
      }
    }
  }

  @Test
  void aReaderWithItsInterruptFlagSetGetsTheStoredCertificateNotNothingStored() throws Exception {
    try (DurableCertificateStore s = DurableCertificateStore.open(dir)) {
      for (long i = 0; i < 5; i++) {
        s.putIfAbsent(R, 1, i, cert(i));
      }
      AtomicBoolean flag = new AtomicBoolean();
      AtomicReference<Optional<Certificate>> got = new AtomicReference<>();
      Throwable e = onInterruptedThread(() -> got.set(s.get(R, 1, 2)), flag);
      assertEquals(null, e, "an interrupted reader failed: " + e);
      assertEquals(Optional.of(cert(2)), got.get(), "an acknowledged certificate read as nothing stored");
      assertTrue(flag.get(), "the reader's interrupt flag is kept");
      s.putIfAbsent(R, 1, 5, cert(5));
      assertEquals(Optional.of(cert(3)), s.get(R, 1, 3));
      assertEquals(Optional.of(cert(5)), s.get(R, 1, 5));
    }
  }

  @Test
  void aTruncationByAnInterruptedThreadIsDurableAndTheJournalStaysOpen() throws Exception {
    try (DurableCertificateStore s = DurableCertificateStore.open(dir)) {
      for (long i = 0; i < 8; i++) {
        s.putIfAbsent(R, 1, i, cert(i));
      }
      AtomicBoolean flag = new AtomicBoolean();
      Throwable e = onInterruptedThread(() -> s.truncatePrefix(R, 1, 3), flag);
      assertEquals(null, e, "an interrupted truncation failed: " + e);
      assertEquals(3, s.truncatedThrough(R, 1));
      assertEquals(Optional.of(cert(4)), s.get(R, 1, 4));
      s.putIfAbsent(R, 1, 8, cert(8));
    }
    try (DurableCertificateStore again = DurableCertificateStore.open(dir)) {
      assertEquals(3, again.truncatedThrough(R, 1));
      assertEquals(Optional.of(cert(8)), again.get(R, 1, 8));
    }
  }

  /**
   * Hostile: writers and readers are interrupted at random moments, also in the middle of a
   * write, a fsync or a read. No call fails, every acknowledged certificate is read back (by the
   * interrupted readers too) and is still there after a reopen, and close succeeds.
   */
  @Test
  void interruptsInTheMiddleOfIoNeverLoseAnAcknowledgedCertificate() throws Exception {
    DurableCertificateStore.Options small = DurableCertificateStore.Options.defaults()
        .withSegmentBytes(16 << 10); // rolls segments too
    DurableCertificateStore s = DurableCertificateStore.open(dir, small);
    int writers = 3;
    int perWriter = 150;
    Set<Long> acked = ConcurrentHashMap.newKeySet();
    List<Throwable> failures = new CopyOnWriteArrayList<>();
    List<String> lost = new CopyOnWriteArrayList<>();
    AtomicBoolean done = new AtomicBoolean();
    List<Thread> threads = new ArrayList<>();
    for (int w = 0; w < writers; w++) {
      int base = w * perWriter;
      threads.add(new Thread(() -> {
        for (long i = base; i < base + perWriter; i++) {
          try {
            s.putIfAbsent(R, 1, i, cert(i));
            acked.add(i);
          } catch (Throwable e) {
            failures.add(e);
          }
          Thread.interrupted(); // a caller that handles its interrupt and goes on
        }
      }, "writer-" + w));
    }
    for (int r = 0; r < 2; r++) {
      threads.add(new Thread(() -> {
        while (!done.get()) {
          for (Long i : acked) {
            try {
              if (s.get(R, 1, i).isEmpty()) {
                lost.add("index " + i + " acknowledged but read as nothing stored");
              }
            } catch (Throwable e) {
              failures.add(e);
            }
            Thread.interrupted();
          }
        }
      }, "reader-" + r));
    }
    threads.forEach(Thread::start);
    Thread interrupter = new Thread(() -> {
      java.util.Random rnd = new java.util.Random(1);
      while (!done.get()) {
        threads.get(rnd.nextInt(threads.size())).interrupt();
        java.util.concurrent.locks.LockSupport.parkNanos(20_000 + rnd.nextInt(200_000));
      }
    }, "interrupter");
    interrupter.start();
    for (int w = 0; w < writers; w++) {
      threads.get(w).join();
    }
    done.set(true);
    interrupter.join();
    for (Thread t : threads) {
      t.join();
    }
    assertEquals(List.of(), failures.stream().limit(3).map(String::valueOf).toList(),
        failures.size() + " store calls failed");
    assertEquals(List.of(), lost.stream().limit(3).toList(), lost.size() + " reads lost");
    assertEquals(writers * perWriter, acked.size());
    for (long i : acked) {
      assertArrayEquals(cert(i).encode(), s.getBytes(R, 1, i).orElseThrow(), "index " + i);
    }
    s.close();
    try (DurableCertificateStore again = DurableCertificateStore.open(dir, small)) {
      assertEquals(0, again.recoveryReport().tornBytesTruncated());
      for (long i : acked) {
        assertEquals(Optional.of(cert(i)), again.get(R, 1, i), "index " + i + " after reopen");
      }
    }
  }
}
