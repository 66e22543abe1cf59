package io.salus.hdfs.witness;

import java.io.Closeable;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.locks.ReentrantLock;
import java.util.stream.Stream;

import io.salus.core.cert.Certificate;
import io.salus.core.cert.RegionId;
import io.salus.core.protocol.witness.CertificateStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The durable, append-only certificate store of a witness (DataNode plugin or standalone daemon).
 * Certificates are keyed by (region, log generation, logical index) and stored as their salus-core
 * encoding, unchanged, inside CRC32C-protected {@link JournalRecord}s appended to segment files
 * {@code journal-NNNNNNNNNNNNNNNNNNNN.log} in one directory.
 *
 * <p><b>Durability.</b> {@link #putIfAbsent} returns only after the record is on disk (fsync). Writers
 * that only need the record written, e.g. because they hold a lock, use {@link #write} and later
 * {@link #awaitDurable}; concurrent writers share one fsync (group commit), so many logs append in
 * parallel at the cost of roughly one fsync per group.
 *
 * <p><b>Recovery.</b> On open every segment is scanned. A torn tail of the newest segment — a
 * record cut short, trailing zero bytes, or a full-length last record whose CRC fails (a page of it
 * never reached the disk) with nothing intact after it — is a write that was never acknowledged: it
 * is truncated and reported. A damaged record with intact records after it, or damage in an older
 * segment, makes {@link #open} throw {@link CorruptWitnessStoreException}, unless the store is
 * opened with {@code repair}, which moves the damaged bytes to a {@code .corrupt} file.
 */
public final class DurableCertificateStore implements CertificateStore, Closeable {
  private static final Logger LOG = LoggerFactory.getLogger(DurableCertificateStore.class);
  static final String PREFIX = "journal-";
  static final String SUFFIX = ".log";

  /**
   * Where a stored certificate lives; {@code end} is the logical write position after it (0 for
   * records recovered at open): it may be read only once {@code durable >= end}.
   */
  private record Loc(int segment, long offset, int length, long end) {
  }

  /** A log: one region's log generation. */
  public record LogKey(RegionId region, long generation) {
  }

  private static final class LogIndex {
    final ConcurrentSkipListMap<Long, Loc> entries = new ConcurrentSkipListMap<>();
    volatile long truncatedThrough = -1;
  }

  private static final class Segment {
    final int number;
    final Path path;
    final FileChannel channel;
    long size;

    Segment(int number, Path path, FileChannel channel, long size) {
      this.number = number;
      this.path = path;
      this.channel = channel;
      this.size = size;
    }
  }

  /** What recovery found when the store was opened. */
  public record RecoveryReport(int segments, long records, long tornBytesTruncated,
      List<String> quarantined) {
  }

  /** Open-time options. */
  public record Options(long segmentBytes, int maxRecordBytes, boolean repair) {
    public static Options defaults() {
      return new Options(64L << 20, 1 << 20, false);
    }

    public Options withRepair(boolean r) {
      return new Options(segmentBytes, maxRecordBytes, r);
    }

    public Options withSegmentBytes(long s) {
      return new Options(s, maxRecordBytes, repair);
    }
  }

  private final Path dir;
  private final Options options;
  private final FileChannel lockChannel;
  private final FileLock lock;
  private final Map<LogKey, LogIndex> logs = new ConcurrentHashMap<>();
  private final Map<Integer, Segment> segments = new ConcurrentHashMap<>();
  /** Live (not truncated) certificates per segment; a prefix of empty segments is deleted. */
  private final Map<Integer, java.util.concurrent.atomic.AtomicInteger> live =
      new ConcurrentHashMap<>();
  private long reclaimedSegments;
  private final ReentrantLock writeLock = new ReentrantLock();
  private final ReentrantLock syncLock = new ReentrantLock();
  private Segment current;
  private volatile long written; // logical bytes written since open
  private volatile long durable; // logical bytes known fsynced
  private final RecoveryReport recovery;
  private final WitnessStoreStats stats = new WitnessStoreStats();
  private volatile boolean closed;

  private DurableCertificateStore(Path dir, Options options) throws IOException {
    this.dir = dir;
    this.options = options;
    Files.createDirectories(dir);
    this.lockChannel = FileChannel.open(dir.resolve("LOCK"), StandardOpenOption.CREATE,
        StandardOpenOption.WRITE);
    FileLock l;
    try {
      l = lockChannel.tryLock();
    } catch (OverlappingFileLockException e) {
      l = null;
    }
    if (l == null) {
      lockChannel.close();
      throw new IOException("witness directory " + dir + " is in use by another witness store"
          + " (LOCK held); stop the other process or give this one its own --dir");
    }
    this.lock = l;
    try {
      this.recovery = recover();
    } catch (IOException | RuntimeException e) {
      closeQuietly();
      throw e;
    }
  }

  /** Opens (creating if needed) the store in {@code dir}, recovering from a crash. */
  public static DurableCertificateStore open(Path dir, Options options) throws IOException {
    return new DurableCertificateStore(dir, options);
  }

  public static DurableCertificateStore open(Path dir) throws IOException {
    return open(dir, Options.defaults());
  }

  public Path directory() {
    return dir;
  }

  public RecoveryReport recoveryReport() {
    return recovery;
  }

  public WitnessStoreStats stats() {
    return stats;
  }

  // ------------------------------------------------------------------ recovery

  private RecoveryReport recover() throws IOException {
    List<Path> files;
    try (Stream<Path> s = Files.list(dir)) {
      files = s.filter(p -> {
        String n = p.getFileName().toString();
        return n.startsWith(PREFIX) && n.endsWith(SUFFIX);
      }).sorted().toList();
    }
    long records = 0;
    long torn = 0;
    List<String> quarantined = new ArrayList<>();
    for (int i = 0; i < files.size(); i++) {
      Path p = files.get(i);
      int number = segmentNumber(p);
      boolean last = i == files.size() - 1;
      FileChannel ch = FileChannel.open(p, StandardOpenOption.READ, StandardOpenOption.WRITE);
      Segment seg = new Segment(number, p, ch, ch.size());
      segments.put(number, seg);
      ScanResult r = scan(seg);
      records += r.records;
      if (r.badOffset >= 0) {
        long end = seg.size;
        if (last && (r.incomplete || allZero(ch, r.badOffset, end)
            || tornLastRecord(ch, r, end))) {
          LOG.warn("Witness journal {}: truncating torn tail of {} bytes at offset {} ({})", p,
              end - r.badOffset, r.badOffset, r.reason);
          ch.truncate(r.badOffset);
          ch.force(true);
          torn += end - r.badOffset;
          seg.size = r.badOffset;
        } else if (options.repair) {
          Path q = dir.resolve(p.getFileName() + "." + r.badOffset + ".corrupt");
          try (FileChannel out = FileChannel.open(q, StandardOpenOption.CREATE_NEW,
              StandardOpenOption.WRITE)) {
            ch.transferTo(r.badOffset, end - r.badOffset, out);
            out.force(true);
          }
          ch.truncate(r.badOffset);
          ch.force(true);
          seg.size = r.badOffset;
          quarantined.add(q + " (" + (end - r.badOffset) + " bytes: " + r.reason + ")");
          LOG.error("Witness journal {}: REPAIR moved {} damaged bytes at offset {} to {} ({})", p,
              end - r.badOffset, r.badOffset, q, r.reason);
        } else {
          throw new CorruptWitnessStoreException(p, r.badOffset, r.reason);
        }
      }
    }
    if (segments.isEmpty()) {
      current = createSegment(1);
    } else {
      current = segments.get(segmentNumber(files.get(files.size() - 1)));
    }
    LOG.info("Witness store {} opened: {} segments, {} records, {} torn bytes truncated", dir,
        segments.size(), records, torn);
    return new RecoveryReport(segments.size(), records, torn, List.copyOf(quarantined));
  }

  private static final class ScanResult {
    long records;
    long badOffset = -1;
    boolean incomplete;
    /** The damaged record's header is intact and it ends exactly at the end of the file. */
    boolean lastRecord;
    /** The damaged record's header (magic, header CRC or length) is what failed. */
    boolean headerDamaged;
    String reason;
  }

  /**
   * A damaged record at the end of the newest segment is a torn write (a page of the last,
   * unacknowledged record did not reach the disk before the crash) when nothing valid follows it:
   * either its header is intact and it ends exactly at the end of the file, or its header is
   * damaged, the rest of the file is no longer than one record, and no intact record header starts
   * anywhere in it. Anything else is mid-log corruption.
   */
  private boolean tornLastRecord(FileChannel ch, ScanResult r, long end) throws IOException {
    if (r.lastRecord) {
      return true;
    }
    long rest = end - r.badOffset;
    long maxRecord = JournalRecord.HEADER + options.maxRecordBytes + 512L + JournalRecord.TRAILER;
    if (!r.headerDamaged || rest > maxRecord) {
      return false;
    }
    ByteBuffer buf = ByteBuffer.allocate((int) rest);
    readFully(ch, buf, r.badOffset);
    byte[] b = buf.array();
    for (int i = 1; i + JournalRecord.HEADER <= b.length; i++) {
      ByteBuffer hb = ByteBuffer.wrap(b, i, JournalRecord.HEADER);
      if (hb.getInt() == JournalRecord.MAGIC) {
        hb.position(i + 9);
        if (hb.getInt() == JournalRecord.crc(b, i, 9)) {
          return false; // an intact record follows the damage
        }
      }
    }
    return true;
  }

  private ScanResult scan(Segment seg) throws IOException {
    ScanResult r = new ScanResult();
    long pos = 0;
    long size = seg.size;
    ByteBuffer header = ByteBuffer.allocate(JournalRecord.HEADER);
    while (pos < size) {
      if (size - pos < JournalRecord.HEADER) {
        r.badOffset = pos;
        r.incomplete = true;
        r.reason = "record header cut short (" + (size - pos) + " bytes)";
        return r;
      }
      header.clear();
      readFully(seg.channel, header, pos);
      byte[] h = header.array();
      ByteBuffer hb = ByteBuffer.wrap(h);
      int magic = hb.getInt();
      byte type = hb.get();
      int bodyLen = hb.getInt();
      int hcrc = hb.getInt();
      if (magic != JournalRecord.MAGIC || hcrc != JournalRecord.crc(h, 0, 9)) {
        r.badOffset = pos;
        r.headerDamaged = true;
        r.reason = magic != JournalRecord.MAGIC ? "bad record magic" : "record header CRC mismatch";
        return r;
      }
      if (bodyLen < 22 || bodyLen > options.maxRecordBytes + 512) {
        r.badOffset = pos;
        r.headerDamaged = true;
        r.reason = "implausible record length " + bodyLen;
        return r;
      }
      long end = pos + JournalRecord.HEADER + bodyLen + JournalRecord.TRAILER;
      if (end > size) {
        r.badOffset = pos;
        r.incomplete = true;
        r.reason = "record of " + bodyLen + " bytes cut short by end of file";
        return r;
      }
      ByteBuffer body = ByteBuffer.allocate(bodyLen + JournalRecord.TRAILER);
      readFully(seg.channel, body, pos + JournalRecord.HEADER);
      byte[] b = body.array();
      int bcrc = ByteBuffer.wrap(b, bodyLen, 4).getInt();
      if (bcrc != JournalRecord.crc(b, 0, bodyLen)) {
        r.badOffset = pos;
        r.lastRecord = end == size;
        r.reason = "record body CRC mismatch";
        return r;
      }
      JournalRecord rec;
      try {
        rec = JournalRecord.parseBody(type, java.util.Arrays.copyOf(b, bodyLen));
      } catch (RuntimeException e) {
        r.badOffset = pos;
        r.reason = "undecodable record body: " + e.getMessage();
        return r;
      }
      apply(rec, seg.number, pos, (int) (end - pos));
      r.records++;
      pos = end;
    }
    return r;
  }

  private static boolean allZero(FileChannel ch, long from, long to) throws IOException {
    ByteBuffer buf = ByteBuffer.allocate(8192);
    long pos = from;
    while (pos < to) {
      buf.clear();
      int n = ch.read(buf, pos);
      if (n <= 0) {
        break;
      }
      for (int i = 0; i < n; i++) {
        if (buf.get(i) != 0) {
          return false;
        }
      }
      pos += n;
    }
    return true;
  }

  private void apply(JournalRecord rec, int segment, long offset, int length) {
    LogIndex li = logs.computeIfAbsent(new LogKey(rec.region(), rec.generation()), k -> new LogIndex());
    if (rec.type() == JournalRecord.PUT) {
      if (rec.index() > li.truncatedThrough) {
        Loc loc = new Loc(segment, offset, length, 0);
        if (li.entries.putIfAbsent(rec.index(), loc) == null) {
          liveCount(segment).incrementAndGet();
        }
      }
    } else {
      li.truncatedThrough = Math.max(li.truncatedThrough, rec.index());
      dropPrefix(li, rec.index());
    }
  }

  private java.util.concurrent.atomic.AtomicInteger liveCount(int segment) {
    return live.computeIfAbsent(segment, k -> new java.util.concurrent.atomic.AtomicInteger());
  }

  private void dropPrefix(LogIndex li, long through) {
    NavigableMap<Long, Loc> head = li.entries.headMap(through, true);
    for (Loc loc : head.values()) {
      liveCount(loc.segment).decrementAndGet();
    }
    head.clear();
  }

  /**
   * Deletes the oldest segments that hold no live certificate (all truncated by checkpoints).
   * Truncation markers are first re-written into the current segment and fsynced, so that the
   * truncation points survive the deletion. Called under the write lock, right after a roll.
   */
  private void reclaim() throws IOException {
    List<Integer> numbers = new ArrayList<>(segments.keySet());
    java.util.Collections.sort(numbers);
    List<Segment> dead = new ArrayList<>();
    for (int n : numbers) {
      if (n == current.number || liveCount(n).get() > 0) {
        break;
      }
      dead.add(segments.get(n));
    }
    if (dead.isEmpty()) {
      return;
    }
    for (Map.Entry<LogKey, LogIndex> e : logs.entrySet()) {
      if (e.getValue().truncatedThrough >= 0) {
        byte[] rec = new JournalRecord(JournalRecord.TRUNCATE, e.getKey().region(),
            e.getKey().generation(), e.getValue().truncatedThrough, null).encode();
        writeAt(rec);
      }
    }
    current.channel.force(false);
    for (Segment d : dead) {
      segments.remove(d.number);
      live.remove(d.number);
      d.channel.close();
      Files.deleteIfExists(d.path);
      reclaimedSegments++;
      LOG.info("Witness journal {}: deleted {} (all its certificates truncated by checkpoints)",
          dir, d.path.getFileName());
    }
    fsyncDirectory();
  }

  /** Segments deleted by {@link #reclaim} since open. */
  public long reclaimedSegments() {
    return reclaimedSegments;
  }

  private static int segmentNumber(Path p) {
    String n = p.getFileName().toString();
    return Integer.parseInt(n.substring(PREFIX.length(), n.length() - SUFFIX.length()));
  }

  private Segment createSegment(int number) throws IOException {
    Path p = dir.resolve(String.format("%s%020d%s", PREFIX, number, SUFFIX));
    FileChannel ch = FileChannel.open(p, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
        StandardOpenOption.WRITE);
    fsyncDirectory();
    Segment s = new Segment(number, p, ch, 0);
    segments.put(number, s);
    return s;
  }

  private void fsyncDirectory() {
    try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
      d.force(true);
    } catch (IOException e) {
      LOG.debug("directory fsync not supported for {}: {}", dir, e.toString());
    }
  }

  private static void readFully(FileChannel ch, ByteBuffer buf, long pos) throws IOException {
    while (buf.hasRemaining()) {
      int n = ch.read(buf, pos + buf.position());
      if (n < 0) {
        throw new IOException("unexpected end of file " + ch + " at " + (pos + buf.position()));
      }
    }
  }

  // ------------------------------------------------------------------ writing

  /**
   * Appends the certificate unless the slot is taken or truncated, without waiting for fsync.
   *
   * @return the position to pass to {@link #awaitDurable}; entries already present also return
   *     the current write position (they may still be in flight from another writer)
   */
  public long write(RegionId region, long generation, long index, byte[] certBytes) {
    if (certBytes == null || certBytes.length == 0) {
      throw new IllegalArgumentException("empty certificate for " + region + "/" + generation + "/"
          + index);
    }
    if (certBytes.length > options.maxRecordBytes) {
      throw new IllegalArgumentException("certificate of " + certBytes.length + " bytes exceeds the"
          + " witness record limit of " + options.maxRecordBytes + " bytes");
    }
    writeLock.lock();
    try {
      ensureOpen();
      LogIndex li = logs.computeIfAbsent(new LogKey(region, generation), k -> new LogIndex());
      if (li.entries.containsKey(index) || index <= li.truncatedThrough) {
        return written;
      }
      byte[] rec = new JournalRecord(JournalRecord.PUT, region, generation, index, certBytes).encode();
      Loc loc = append(rec);
      li.entries.put(index, loc);
      liveCount(loc.segment).incrementAndGet();
      stats.appended(certBytes.length);
      return written;
    } catch (IOException e) {
      throw new UncheckedIOException("witness journal write failed in " + dir, e);
    } finally {
      writeLock.unlock();
    }
  }

  private Loc append(byte[] rec) throws IOException {
    if (current.size > 0 && current.size + rec.length > options.segmentBytes) {
      current.channel.force(false);
      current = createSegment(current.number + 1);
      reclaim();
    }
    return writeAt(rec);
  }

  private Loc writeAt(byte[] rec) throws IOException {
    ByteBuffer b = ByteBuffer.wrap(rec);
    long off = current.size;
    while (b.hasRemaining()) {
      current.channel.write(b, off + b.position());
    }
    current.size += rec.length;
    written += rec.length;
    return new Loc(current.number, off, rec.length, written);
  }

  /** The highest index of the log truncated by a CHECKPOINT, or -1 if none. */
  public long truncatedThrough(RegionId region, long generation) {
    LogIndex li = logs.get(new LogKey(region, generation));
    return li == null ? -1 : li.truncatedThrough;
  }

  /** Logical write position known to be fsynced. */
  public long durablePosition() {
    return durable;
  }

  /** Current logical write position (bytes written since open). */
  public long writePosition() {
    return written;
  }

  /** Blocks until everything written up to {@code position} is fsynced (group commit). */
  public void awaitDurable(long position) {
    if (durable >= position) {
      return;
    }
    syncLock.lock();
    try {
      if (durable >= position) {
        return;
      }
      long upto;
      FileChannel ch;
      writeLock.lock();
      try {
        ensureOpen();
        upto = written;
        ch = current.channel;
      } finally {
        writeLock.unlock();
      }
      long t0 = System.nanoTime();
      ch.force(false);
      stats.fsynced(System.nanoTime() - t0);
      durable = upto;
    } catch (IOException e) {
      throw new UncheckedIOException("witness journal fsync failed in " + dir, e);
    } finally {
      syncLock.unlock();
    }
  }

  @Override
  public void putIfAbsent(RegionId region, long generation, long index, Certificate logEntry) {
    awaitDurable(write(region, generation, index, logEntry.encode()));
  }

  /** Stores raw certificate bytes durably (no decoding; used by tests and tools). */
  public void putBytesIfAbsent(RegionId region, long generation, long index, byte[] cert) {
    awaitDurable(write(region, generation, index, cert));
  }

  @Override
  public void truncatePrefix(RegionId region, long generation, long throughIndex) {
    long pos;
    writeLock.lock();
    try {
      ensureOpen();
      LogIndex li = logs.computeIfAbsent(new LogKey(region, generation), k -> new LogIndex());
      if (throughIndex <= li.truncatedThrough) {
        return;
      }
      append(new JournalRecord(JournalRecord.TRUNCATE, region, generation, throughIndex, null)
          .encode());
      li.truncatedThrough = throughIndex;
      dropPrefix(li, throughIndex);
      pos = written;
    } catch (IOException e) {
      throw new UncheckedIOException("witness journal write failed in " + dir, e);
    } finally {
      writeLock.unlock();
    }
    awaitDurable(pos);
  }

  // ------------------------------------------------------------------ reading

  @Override
  public Optional<Certificate> get(RegionId region, long generation, long index) {
    return getBytes(region, generation, index).map(Certificate::decode);
  }

  /**
   * The stored certificate bytes, re-checked against their CRC. Only fsynced certificates are
   * returned: one written but still waiting for its group commit is returned after that fsync.
   *
   * @throws UncheckedIOException wrapping {@link CorruptWitnessStoreException} if the record
   *     rotted on disk since it was written
   */
  public Optional<byte[]> getBytes(RegionId region, long generation, long index) {
    LogIndex li = logs.get(new LogKey(region, generation));
    if (li == null) {
      return Optional.empty();
    }
    Loc loc = li.entries.get(index);
    if (loc == null) {
      return Optional.empty();
    }
    if (loc.end > durable) {
      // Written but not yet fsynced: a query must never answer with (or act on) a certificate that
      // a crash could still take back, so it waits for the group commit that covers it.
      awaitDurable(loc.end);
    }
    Segment seg = segments.get(loc.segment);
    if (seg == null) {
      return Optional.empty(); // truncated and reclaimed concurrently
    }
    try {
      ByteBuffer buf = ByteBuffer.allocate(loc.length);
      readFully(seg.channel, buf, loc.offset);
      byte[] r = buf.array();
      int bodyLen = r.length - JournalRecord.HEADER - JournalRecord.TRAILER;
      int crc = ByteBuffer.wrap(r, r.length - 4, 4).getInt();
      if (crc != JournalRecord.crc(r, JournalRecord.HEADER, bodyLen)) {
        throw new CorruptWitnessStoreException(seg.path, loc.offset,
            "stored certificate " + region + "/" + generation + "/" + index + " fails its CRC on read");
      }
      byte[] body = java.util.Arrays.copyOfRange(r, JournalRecord.HEADER, JournalRecord.HEADER + bodyLen);
      return Optional.of(JournalRecord.parseBody(JournalRecord.PUT, body).cert());
    } catch (java.nio.channels.ClosedChannelException e) {
      if (closed) {
        throw new UncheckedIOException(e);
      }
      return Optional.empty(); // truncated and reclaimed concurrently
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The logs this store holds entries for. */
  public List<LogKey> logs() {
    return logs.entrySet().stream().filter(e -> !e.getValue().entries.isEmpty())
        .map(Map.Entry::getKey).toList();
  }

  /** The indexes stored for one log, ascending. */
  public NavigableMap<Long, ?> indexes(RegionId region, long generation) {
    LogIndex li = logs.get(new LogKey(region, generation));
    return li == null ? new ConcurrentSkipListMap<Long, Object>()
        : java.util.Collections.unmodifiableNavigableMap(li.entries);
  }

  public long entryCount() {
    return logs.values().stream().mapToLong(l -> l.entries.size()).sum();
  }

  private void ensureOpen() throws IOException {
    if (closed) {
      throw new IOException("witness store " + dir + " is closed");
    }
  }

  @Override
  public void close() throws IOException {
    writeLock.lock();
    try {
      if (closed) {
        return;
      }
      current.channel.force(false);
      durable = written;
      closed = true;
    } finally {
      writeLock.unlock();
    }
    closeQuietly();
  }

  private void closeQuietly() {
    for (Segment s : segments.values()) {
      try {
        s.channel.close();
      } catch (IOException ignored) {
        // closing
      }
    }
    try {
      lock.release();
    } catch (IOException | RuntimeException ignored) {
      // closing
    }
    try {
      lockChannel.close();
    } catch (IOException ignored) {
      // closing
    }
  }
}
