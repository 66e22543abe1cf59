package io.salus.hdfs.witness;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.stream.Stream;

import io.salus.core.cert.Certificate;
import io.salus.core.cert.RegionId;
import io.salus.core.crypto.SignatureScheme;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The journal on a real local file system: round trip, segments, torn tails, corruption. */
class DurableCertificateStoreTest {
  private static final RegionId R = new RegionId("vol", 3);
  private final Certs certs = new Certs(SignatureScheme.WEAK_CRC32C);

  @TempDir
  Path dir;

  private Certificate cert(long index) {
    return certs.logEntry(Certs.entry(R, 1, index));
  }

  private static List<Path> segments(Path dir) throws IOException {
    try (Stream<Path> s = Files.list(dir)) {
      return s.filter(p -> p.getFileName().toString().startsWith("journal-")).sorted().toList();
    }
  }

  @Test
  void entriesSurviveReopenAcrossSegmentsAndTruncationIsDurable() throws Exception {
    DurableCertificateStore.Options small = DurableCertificateStore.Options.defaults()
        .withSegmentBytes(4096);
    try (DurableCertificateStore s = DurableCertificateStore.open(dir, small)) {
      for (long i = 0; i < 100; i++) {
        s.putIfAbsent(R, 1, i, cert(i));
      }
      s.putIfAbsent(R, 1, 5, cert(77)); // different certificate, slot taken: ignored
      s.truncatePrefix(R, 1, 9);
    }
    assertTrue(segments(dir).size() > 3, "small segments must roll");
    try (DurableCertificateStore s = DurableCertificateStore.open(dir, small)) {
      assertEquals(101, s.recoveryReport().records());
      assertEquals(0, s.recoveryReport().tornBytesTruncated());
      assertFalse(s.get(R, 1, 9).isPresent(), "truncated prefix stays dropped");
      assertEquals(90, s.entryCount());
      for (long i = 10; i < 100; i++) {
        assertEquals(cert(i), s.get(R, 1, i).orElseThrow());
      }
      assertFalse(s.get(R, 2, 10).isPresent(), "other generation is another log");
    }
  }

  @Test
  void segmentsWhollyTruncatedByCheckpointsAreDeletedInOrder() throws Exception {
    RegionId other = new RegionId("vol", 4);
    DurableCertificateStore.Options small = DurableCertificateStore.Options.defaults()
        .withSegmentBytes(4096);
    try (DurableCertificateStore s = DurableCertificateStore.open(dir, small)) {
      s.putIfAbsent(other, 1, 0, certs.logEntry(Certs.entry(other, 1, 0))); // pins segment 1
      for (long i = 0; i < 200; i++) {
        s.putIfAbsent(R, 1, i, cert(i));
      }
      int before = segments(dir).size();
      s.truncatePrefix(R, 1, 150);
      for (long i = 200; i < 260; i++) {
        s.putIfAbsent(R, 1, i, cert(i));
      }
      assertEquals(0, s.reclaimedSegments(), "a live entry in the oldest segment blocks reclaim");
      assertTrue(segments(dir).size() > before);
      s.truncatePrefix(other, 1, 0);
      for (long i = 260; i < 320; i++) {
        s.putIfAbsent(R, 1, i, cert(i));
      }
      assertTrue(s.reclaimedSegments() >= 3, "reclaimed " + s.reclaimedSegments());
    }
    try (DurableCertificateStore s = DurableCertificateStore.open(dir, small)) {
      assertEquals(0, s.recoveryReport().tornBytesTruncated());
      for (long i = 151; i < 320; i++) {
        assertEquals(cert(i), s.get(R, 1, i).orElseThrow(), "entry " + i);
      }
      assertEquals(169, s.entryCount());
      // The truncation points survived the deletion of the segments that recorded them.
      s.putIfAbsent(R, 1, 20, cert(20));
      s.putIfAbsent(other, 1, 0, certs.logEntry(Certs.entry(other, 1, 0)));
      assertFalse(s.get(R, 1, 20).isPresent());
      assertFalse(s.get(other, 1, 0).isPresent());
    }
  }

  @Test
  void tornTailIsTruncatedAndAcknowledgedEntriesKept() throws Exception {
    try (DurableCertificateStore s = DurableCertificateStore.open(dir)) {
      for (long i = 0; i < 20; i++) {
        s.putIfAbsent(R, 1, i, cert(i));
      }
    }
    Path seg = segments(dir).get(0);
    long good = Files.size(seg);
    // A crash in the middle of writing record 20: only part of it reached the file.
    byte[] rec = new JournalRecord(JournalRecord.PUT, R, 1, 20, cert(20).encode()).encode();
    try (FileChannel ch = FileChannel.open(seg, StandardOpenOption.APPEND)) {
      ch.write(ByteBuffer.wrap(rec, 0, rec.length / 2));
    }
    try (DurableCertificateStore s = DurableCertificateStore.open(dir)) {
      assertEquals(rec.length / 2, s.recoveryReport().tornBytesTruncated());
      assertEquals(good, Files.size(seg), "torn tail must be gone from the file");
      assertEquals(20, s.entryCount());
      assertFalse(s.get(R, 1, 20).isPresent());
      s.putIfAbsent(R, 1, 20, cert(20)); // appending continues cleanly after the cut
    }
    // Trailing zeros (file extended, data never written) are a torn tail too.
    try (FileChannel ch = FileChannel.open(seg, StandardOpenOption.APPEND)) {
      ch.write(ByteBuffer.allocate(300));
    }
    try (DurableCertificateStore s = DurableCertificateStore.open(dir)) {
      assertEquals(300, s.recoveryReport().tornBytesTruncated());
      assertEquals(21, s.entryCount());
      assertEquals(cert(20), s.get(R, 1, 20).orElseThrow());
    }
  }

  @Test
  void flippedByteInTheMiddleIsRefusedLoudlyThenRepairable() throws Exception {
    long[] offsets = new long[30];
    try (DurableCertificateStore s = DurableCertificateStore.open(dir)) {
      for (int i = 0; i < 30; i++) {
        offsets[i] = s.writePosition();
        s.putIfAbsent(R, 1, i, cert(i));
      }
    }
    Path seg = segments(dir).get(0);
    long victim = offsets[12] + JournalRecord.HEADER + 20; // inside record 12's body
    flip(seg, victim);
    CorruptWitnessStoreException e = assertThrows(CorruptWitnessStoreException.class,
        () -> DurableCertificateStore.open(dir));
    assertEquals(offsets[12], e.offset(), e.getMessage());
    assertEquals(seg, e.segment());
    assertTrue(e.getMessage().contains("CRC") && e.getMessage().contains("--repair"),
        e.getMessage());
    // Nothing was modified by the refused open.
    assertEquals(offsets[29] + (offsets[29] - offsets[28]), Files.size(seg));
    try (DurableCertificateStore s = DurableCertificateStore.open(dir,
        DurableCertificateStore.Options.defaults().withRepair(true))) {
      assertEquals(1, s.recoveryReport().quarantined().size());
      assertEquals(12, s.entryCount(), "entries before the damage are served");
    }
  }

  @Test
  void fullLengthLastRecordWithBadCrcIsATornTailAndTruncated() throws Exception {
    long[] offsets = new long[6];
    try (DurableCertificateStore s = DurableCertificateStore.open(dir)) {
      for (int i = 0; i < 5; i++) {
        offsets[i] = s.writePosition();
        s.putIfAbsent(R, 1, i, cert(i));
      }
      offsets[5] = s.writePosition();
    }
    Path seg = segments(dir).get(0);
    // The usual torn page: the file has the last record's full length, but one page of it (here:
    // a byte of its body) never reached the disk.
    flip(seg, offsets[5] - 6);
    try (DurableCertificateStore s = DurableCertificateStore.open(dir)) {
      assertEquals(offsets[5] - offsets[4], s.recoveryReport().tornBytesTruncated());
      assertEquals(offsets[4], Files.size(seg), "the torn record is cut off the file");
      assertEquals(4, s.entryCount());
      assertFalse(s.get(R, 1, 4).isPresent());
      s.putIfAbsent(R, 1, 4, cert(4)); // appending continues cleanly after the cut
    }
    // Same with the last record's header torn (nothing intact follows it).
    flip(seg, offsets[4] + 2);
    try (DurableCertificateStore s = DurableCertificateStore.open(dir)) {
      assertEquals(offsets[5] - offsets[4], s.recoveryReport().tornBytesTruncated());
      assertEquals(4, s.entryCount());
      assertEquals(cert(3), s.get(R, 1, 3).orElseThrow());
    }
  }

  @Test
  void damagedRecordFollowedByIntactOnesIsRefusedEvenAtTheEnd() throws Exception {
    long[] offsets = new long[5];
    try (DurableCertificateStore s = DurableCertificateStore.open(dir)) {
      for (int i = 0; i < 5; i++) {
        offsets[i] = s.writePosition();
        s.putIfAbsent(R, 1, i, cert(i));
      }
    }
    Path seg = segments(dir).get(0);
    long size = Files.size(seg);
    flip(seg, offsets[3] + JournalRecord.HEADER + 20); // second to last: real mid-log corruption
    CorruptWitnessStoreException e = assertThrows(CorruptWitnessStoreException.class,
        () -> DurableCertificateStore.open(dir));
    assertEquals(offsets[3], e.offset());
    assertEquals(size, Files.size(seg), "a refused open modifies nothing");
    flip(seg, offsets[3] + JournalRecord.HEADER + 20);
    flip(seg, offsets[3] + 1); // a damaged header with an intact record after it
    assertThrows(CorruptWitnessStoreException.class, () -> DurableCertificateStore.open(dir));
  }

  @Test
  void damagedLastRecordOfAnOlderSegmentIsRefused() throws Exception {
    DurableCertificateStore.Options small = DurableCertificateStore.Options.defaults()
        .withSegmentBytes(4096);
    try (DurableCertificateStore s = DurableCertificateStore.open(dir, small)) {
      for (long i = 0; i < 60; i++) {
        s.putIfAbsent(R, 1, i, cert(i));
      }
    }
    List<Path> segs = segments(dir);
    assertTrue(segs.size() > 1);
    flip(segs.get(0), Files.size(segs.get(0)) - 6);
    assertThrows(CorruptWitnessStoreException.class, () -> DurableCertificateStore.open(dir, small));
  }

  @Test
  void aWrittenEntryIsReadOnlyOnceItIsFsynced() throws Exception {
    try (DurableCertificateStore s = DurableCertificateStore.open(dir)) {
      s.putIfAbsent(R, 1, 0, cert(0));
      long pos = s.write(R, 1, 1, cert(1).encode()); // written, its fsync not awaited
      assertTrue(s.durablePosition() < pos, "nothing fsynced the second record yet");
      // A query (WitnessLog.query reads the store) must not answer with a record a crash could
      // still take back: it gets the certificate only once it is on disk.
      assertEquals(cert(1), s.get(R, 1, 1).orElseThrow());
      assertTrue(s.durablePosition() >= pos, "read an entry before it was fsynced");
    }
  }

  @Test
  void bitRotAfterOpenIsDetectedOnRead() throws Exception {
    try (DurableCertificateStore s = DurableCertificateStore.open(dir)) {
      s.putIfAbsent(R, 1, 0, cert(0));
      flip(segments(dir).get(0), JournalRecord.HEADER + 30);
      Exception e = assertThrows(java.io.UncheckedIOException.class, () -> s.get(R, 1, 0));
      assertTrue(e.getCause() instanceof CorruptWitnessStoreException, e.toString());
    }
  }

  @Test
  void secondStoreOnTheSameDirectoryIsRefused() throws Exception {
    try (DurableCertificateStore s = DurableCertificateStore.open(dir)) {
      IOException e = assertThrows(IOException.class, () -> DurableCertificateStore.open(dir));
      assertTrue(e.getMessage().contains("in use"), e.getMessage());
      s.putBytesIfAbsent(R, 1, 0, cert(0).encode());
      assertArrayEquals(cert(0).encode(), s.getBytes(R, 1, 0).orElseThrow());
    }
  }

  static void flip(Path file, long offset) throws IOException {
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
      ByteBuffer b = ByteBuffer.allocate(1);
      ch.read(b, offset);
      b.put(0, (byte) (b.get(0) ^ 0x10));
      b.rewind();
      ch.write(b, offset);
    }
  }
}
