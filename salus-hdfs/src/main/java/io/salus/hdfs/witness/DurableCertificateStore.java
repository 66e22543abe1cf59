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
 *
 * <p><b>Interrupts.</b> A {@link FileChannel} is closed, for every thread, when a thread is
 * interrupted inside a read, write or force on it (or enters one with its interrupt flag set). The
 * store's callers include connection threads that an executor's {@code shutdownNow}, a
 * {@code Future.cancel(true)} or an RPC framework may interrupt, so every journal operation goes
 * through {@link #io}: it clears the caller's interrupt flag for the call and restores it after, and
 * if the channel is nevertheless found closed while the store is open and the segment still in use
 * (an interrupt that arrived during the call, on this or another thread) it reopens that segment's
 * file under the write lock and retries. The operations are positional (a write at a known offset,
 * a read, an fsync of the whole file), so a retry is idempotent, and an ack still follows an fsync
 * that covers it: fsync flushes the file, whichever descriptor it is called on. A certificate the
 * store indexes is never answered as "nothing stored" because of a closed channel; only a segment
 * really reclaimed (all its certificates truncated) reads as empty.
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
    /** Replaced (under the write lock) if an interrupt closed it while the store was open. */
    volatile FileChannel channel;
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
  /** Segment channels reopened after an interrupt closed them (see {@link #io}). */
  private final java.util.concurrent.atomic.AtomicLong reopenedChannels =
      new java.util.concurrent.atomic.AtomicLong();
  /** Consecutive closures of one call's channel after which the call fails. */
  private static final int MAX_REOPENS = 64;

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
    boolean interrupted = Thread.interrupted();
    try {
      this.recovery = recover();
    } catch (IOException | RuntimeException e) {
      closeQuietly();
      throw e;
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
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
      Segment seg = new Segment(number, p, ch, 0);
      segments.put(number, seg);
      seg.size = io(seg, FileChannel::size);
      ScanResult r = scan(seg);
      records += r.records;
      if (r.badOffset >= 0) {
        long end = seg.size;
        long bad = r.badOffset;
        if (last && (r.incomplete || allZero(seg, bad, end)
            || tornLastRecord(seg, r, end))) {
          LOG.warn("Witness journal {}: truncating torn tail of {} bytes at offset {} ({})", p,
              end - bad, bad, r.reason);
          io(seg, c -> {
            c.truncate(bad).force(true);
            return null;
          });
          torn += end - bad;
          seg.size = bad;
        } else if (options.repair) {
          Path q = dir.resolve(p.getFileName() + "." + bad + ".corrupt");
          try (FileChannel out = FileChannel.open(q, StandardOpenOption.CREATE_NEW,
              StandardOpenOption.WRITE)) {
            long[] done = {0};
            while (done[0] < end - bad) {
              long n = io(seg, c -> c.transferTo(bad + done[0], end - bad - done[0], out));
              if (n <= 0) {
                throw new IOException("copying the damaged bytes of " + p + " to " + q
                    + " made no progress at " + (bad + done[0]));
              }
              done[0] += n;
            }
            out.force(true);
          }
          io(seg, c -> {
            c.truncate(bad).force(true);
            return null;
          });
          seg.size = bad;
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
  private boolean tornLastRecord(Segment seg, ScanResult r, long end) throws IOException {
    if (r.lastRecord) {
      return true;
    }
    long rest = end - r.badOffset;
    long maxRecord = JournalRecord.HEADER + options.maxRecordBytes + 512L + JournalRecord.TRAILER;
    if (!r.headerDamaged || rest > maxRecord) {
      return false;
    }
    ByteBuffer buf = ByteBuffer.allocate((int) rest);
    readFully(seg, buf, r.badOffset);
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
      readFully(seg, header, pos);
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
      readFully(seg, body, pos + JournalRecord.HEADER);
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

  private boolean allZero(Segment seg, long from, long to) throws IOException {
    ByteBuffer buf = ByteBuffer.allocate(8192);
    long pos = from;
    while (pos < to) {
      buf.clear();
      long at = pos;
      int n = io(seg, c -> c.read(buf, at));
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
    force(current);
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
    boolean interrupted = Thread.interrupted();
    try {
      for (int attempt = 0; ; attempt++) {
        try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
          d.force(true);
          return;
        } catch (java.nio.channels.ClosedChannelException e) {
          // interrupted during the fsync: the directory entry may not be durable yet, so again
          interrupted |= Thread.interrupted();
          if (attempt >= MAX_REOPENS) {
            throw new UncheckedIOException("witness directory fsync of " + dir
                + " kept being interrupted", e);
          }
        } catch (IOException e) {
          LOG.debug("directory fsync not supported for {}: {}", dir, e.toString());
          return;
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** One operation on a segment's channel; it may be run again on a reopened channel. */
  @FunctionalInterface
  private interface ChannelOp<T> {
    T apply(FileChannel ch) throws IOException;
  }

  /**
   * Runs {@code op} on {@code seg}'s channel immune to interrupts: the caller's interrupt flag is
   * cleared for the call and restored after it, and if the channel is found closed while the store
   * is open and {@code seg} still in use (an interrupt arrived during the call, on this thread:
   * ClosedByInterruptException, or on another one: AsynchronousCloseException), the segment's file
   * is reopened and {@code op} runs again. Every {@code op} here is positional or whole-file, so it
   * may run twice. Throws ClosedChannelException only if the store was closed or the segment
   * reclaimed.
   */
  private <T> T io(Segment seg, ChannelOp<T> op) throws IOException {
    boolean interrupted = Thread.interrupted();
    try {
      for (int attempt = 0; ; attempt++) {
        FileChannel ch = seg.channel;
        try {
          return op.apply(ch);
        } catch (java.nio.channels.ClosedChannelException e) {
          interrupted |= Thread.interrupted();
          if (attempt >= MAX_REOPENS || !reopen(seg, ch)) {
            throw e;
          }
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /**
   * Replaces {@code seg}'s channel if it is still {@code failed} and closed, the store is open and
   * the segment not reclaimed. Under the write lock, so it cannot race {@link #reclaim} (which
   * removes a segment from {@code segments} before it closes and deletes it) nor {@link #close}.
   *
   * @return whether the operation should be retried
   */
  private boolean reopen(Segment seg, FileChannel failed) throws IOException {
    writeLock.lock();
    try {
      if (closed || segments.get(seg.number) != seg) {
        return false;
      }
      if (seg.channel != failed) {
        return true; // another thread already reopened it
      }
      if (failed.isOpen()) {
        return false; // closed-channel exception from some other channel (e.g. a transfer target)
      }
      seg.channel = FileChannel.open(seg.path, StandardOpenOption.READ, StandardOpenOption.WRITE);
      long n = reopenedChannels.incrementAndGet();
      LOG.warn("Witness journal {}: {} was closed under the open store (a thread was interrupted"
          + " during its I/O); reopened it and retried ({} reopen(s) since open)", dir,
          seg.path.getFileName(), n);
      return true;
    } finally {
      writeLock.unlock();
    }
  }

  /** Journal channels reopened after an interrupt closed them, since open. */
  public long reopenedChannels() {
    return reopenedChannels.get();
  }

  private void force(Segment seg) throws IOException {
    io(seg, c -> {
      c.force(false);
      return null;
    });
  }

  private void readFully(Segment seg, ByteBuffer buf, long pos) throws IOException {
    io(seg, c -> {
      while (buf.hasRemaining()) {
        int n = c.read(buf, pos + buf.position());
        if (n < 0) {
          throw new IOException("unexpected end of file " + seg.path + " at "
              + (pos + buf.position()));
        }
      }
      return null;
    });
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
      force(current);
      current = createSegment(current.number + 1);
      reclaim();
    }
    return writeAt(rec);
  }

  private Loc writeAt(byte[] rec) throws IOException {
    ByteBuffer b = ByteBuffer.wrap(rec);
    long off = current.size;
    io(current, c -> {
      while (b.hasRemaining()) {
        c.write(b, off + b.position());
      }
      return null;
    });
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
      Segment seg;
      writeLock.lock();
      try {
        ensureOpen();
        upto = written;
        seg = current;
      } finally {
        writeLock.unlock();
      }
      long t0 = System.nanoTime();
      force(seg);
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
      return reclaimed(li, index, loc, null);
    }
    try {
      ByteBuffer buf = ByteBuffer.allocate(loc.length);
      readFully(seg, buf, loc.offset);
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
        throw new UncheckedIOException("witness store " + dir + " is closed", e);
      }
      return reclaimed(li, index, loc, e); // io() reopens a channel closed under an open store
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * The answer for an indexed certificate whose segment is gone: "nothing stored" only if the
   * segment was really reclaimed, i.e. the certificate was truncated by a checkpoint meanwhile; a
   * certificate still indexed is never answered as absent.
   */
  private Optional<byte[]> reclaimed(LogIndex li, long index, Loc loc, IOException cause) {
    if (segments.get(loc.segment) == null && li.entries.get(index) != loc) {
      return Optional.empty(); // truncated and reclaimed concurrently
    }
    throw new UncheckedIOException(new IOException("witness journal " + dir + ": segment "
        + loc.segment + " holding a certificate still indexed (index " + index + ") is "
        + (segments.get(loc.segment) == null ? "missing" : "unreadable"), cause));
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
      force(current);
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
