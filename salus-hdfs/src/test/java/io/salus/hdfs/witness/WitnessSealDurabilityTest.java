package io.salus.hdfs.witness;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.stream.Stream;

import io.salus.core.cert.CertType;
import io.salus.core.cert.Certificate;
import io.salus.core.cert.RegionId;
import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.NodeKeys;
import io.salus.core.crypto.SignatureScheme;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Review rvw21b (guard, passes): a recovery QUERY's NO_NEXT_ENTRY is the seal of its slot (rule 15): once this witness
 * signed "no entry at index i" it must never store a LOG_ENTRY there, also after a power loss. For a region with a
 * WitnessLog (every live region) WitnessLog.query writes the seal through the {@code deferred} store (no fsync) and
 * the answer is durable only because its final {@code store.get} waits for the fsync of the record it reads; these
 * tests pin that (a machine crash simulated by cutting the journal to its fsynced length).
 */
class WitnessSealDurabilityTest {
  private static final RegionId R = new RegionId("vol", 0);
  private final Certs certs = new Certs(SignatureScheme.WEAK_CRC32C);
  private final NodeKeys witnessKeys = NodeKeys.deterministic(SignatureScheme.WEAK_CRC32C, NodeId.of("w0"), 9);

  @TempDir
  Path dir;
  @TempDir
  Path afterPowerLoss;

  private static List<Path> segments(Path d) throws IOException {
    try (Stream<Path> s = Files.list(d)) {
      return s.filter(p -> p.getFileName().toString().startsWith(DurableCertificateStore.PREFIX)).sorted().toList();
    }
  }

  /** What the disk holds after a power loss now: every file, the newest segment cut to what was fsynced. */
  private static void powerLossCopy(DurableCertificateStore s, Path from, Path to) throws IOException {
    long unsynced = s.writePosition() - s.durablePosition();
    List<Path> segs = segments(from);
    for (Path p : segs) {
      Path q = to.resolve(p.getFileName());
      Files.copy(p, q);
      if (p.equals(segs.get(segs.size() - 1))) {
        try (FileChannel c = FileChannel.open(q, StandardOpenOption.WRITE)) {
          c.truncate(c.size() - unsynced);
        }
      }
    }
  }

  @Test
  void aNoNextEntryAnsweredForALiveRegionIsDurableBeforeItIsAnswered() throws Exception {
    DurableCertificateStore store = DurableCertificateStore.open(dir);
    try {
      WitnessService w = new WitnessService(store, certs.trust(), witnessKeys);
      // the region is live here: its entry 0 was offered and stored (a WitnessLog exists)
      assertEquals(WitnessProtocol.ST_STORED, w.offer(certs.logEntry(Certs.entry(R, 1, 0)).encode()).status());
      Certificate seal = w.query(R, 1, 1); // the recoverer's authorised query: "no entry at index 1"
      assertEquals(CertType.NO_NEXT_ENTRY, seal.type());
      long unsynced = store.writePosition() - store.durablePosition();
      powerLossCopy(store, dir, afterPowerLoss);
      assertEquals(0, unsynced, "the NO_NEXT_ENTRY was answered with " + unsynced + " journal bytes not fsynced");
    } finally {
      store.close();
    }
  }

  @Test
  void afterAPowerLossRightAfterTheAnswerTheSealedSlotStillRefusesALogEntry() throws Exception {
    DurableCertificateStore store = DurableCertificateStore.open(dir);
    try {
      WitnessService w = new WitnessService(store, certs.trust(), witnessKeys);
      assertEquals(WitnessProtocol.ST_STORED, w.offer(certs.logEntry(Certs.entry(R, 1, 0)).encode()).status());
      assertEquals(CertType.NO_NEXT_ENTRY, w.query(R, 1, 1).type());
      powerLossCopy(store, dir, afterPowerLoss);
    } finally {
      store.close();
    }
    try (DurableCertificateStore again = DurableCertificateStore.open(afterPowerLoss)) {
      WitnessService w = new WitnessService(again, certs.trust(), witnessKeys);
      WitnessService.Outcome o = w.offer(certs.logEntry(Certs.entry(R, 1, 1)).encode());
      assertNotEquals(WitnessProtocol.ST_STORED, o.status(),
          "the witness signed NO_NEXT_ENTRY at index 1, lost it in a power loss and then stored a LOG_ENTRY there");
      assertTrue(again.get(R, 1, 1).map(c -> c.type() == CertType.NO_NEXT_ENTRY).orElse(false),
          "the slot holds the seal");
    }
  }
}
