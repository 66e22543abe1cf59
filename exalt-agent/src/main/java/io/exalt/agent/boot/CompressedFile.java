package io.exalt.agent.boot;

import io.exalt.tardis.SegmentSink;
import io.exalt.tardis.TardisCompressor;
import io.exalt.tardis.TardisFormat;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.UserDefinedFileAttributeView;
import java.util.ArrayList;
import java.util.List;

/**
 * One emulated file. The physical file has exactly the logical size and keeps every byte at its logical
 * offset, except Tardis runs: those are never written (the file stays sparse there) and are described by an
 * {@link ExtentIndex} kept in the extended attribute {@value #XATTR}. Because the physical size is the logical
 * size, JDK methods that are native and cannot be hooked ({@code RandomAccessFile.length/setLength/
 * getFilePointer}, {@code File.length}, {@code Files.size}, {@code FileChannel.size/position}) stay correct.
 *
 * <p>An in-place update over a Tardis run replaces the run's extent in the index (the latest version wins); a
 * metadata update is written in place. Disk usage: the metadata bytes, plus one xattr (inside the inode while
 * the index is small).
 */
public final class CompressedFile {
    static final String XATTR = "exalt.index";
    /**
     * Written when the last handle closes: the file's modification time (nanoseconds) if every change was the
     * agent's own, or {@value #TAINTED}. Checked and removed when the file is opened again, so a change made while
     * no agent had the file open is seen too. Never present after a crash (then nothing is checked).
     */
    static final String SEAL = "exalt.sealed";
    static final String TAINTED = "tainted";

    final Object key;
    volatile Path path;
    private RandomAccessFile raw;
    private FileChannel ch;
    private boolean writable;
    private ExtentIndex index;
    private final TardisFormat fmt;
    private final TardisCompressor compressor;
    int refs;
    private boolean xattrPresent;
    /**
     * Modification time of the file after the agent's own last change (null while the index is empty: then
     * nothing can go stale). A different time at the next hooked call means the file was changed by something
     * the agent cannot see (the native {@code RandomAccessFile.setLength} shrinking and re-extending it, a
     * process without the agent): the index may describe bytes that are gone, so the call fails loudly.
     */
    private java.nio.file.attribute.FileTime ownMtime;
    /** A read-write mapping exists: writes through it are invisible by design (the range was materialised). */
    private boolean mappedWritable;
    /** Why the index can no longer be trusted (a change outside the agent), or null. */
    private String tainted;

    CompressedFile(Object key, Path path, boolean writable) throws IOException {
        this(key, path, null, writable);
    }

    /**
     * {@code openVia}: a path that names the application's open file whatever happened to its name since it was
     * opened ({@code /proc/self/fd/N} of the application's descriptor), or null to open {@code path}. The agent's
     * handle must be on the application's inode: a rename or a replaced name between the application's open and
     * this constructor would otherwise send every write of the application's descriptor to another file.
     */
    CompressedFile(Object key, Path path, Path openVia, boolean writable) throws IOException {
        this.key = key;
        this.path = path;
        this.fmt = ExaltRuntime.format();
        this.compressor = new TardisCompressor(fmt, ExaltRuntime.runCheck());
        this.openVia = openVia;
        openRaw(writable);
        this.openVia = null;
        loadIndex();
        noteOwnChange();
        checkSeal();
    }

    private void checkSeal() throws IOException {
        UserDefinedFileAttributeView v = Files.getFileAttributeView(inode(), UserDefinedFileAttributeView.class);
        String seal;
        try {
            ByteBuffer bb = ByteBuffer.allocate(v.size(SEAL));
            v.read(SEAL, bb);
            seal = new String(bb.array(), java.nio.charset.StandardCharsets.US_ASCII);
        } catch (FileSystemException | UnsupportedOperationException e) {
            return; // not sealed: never closed by an agent, or it crashed
        }
        if (writable) {
            v.delete(SEAL); // this session may change the file: the seal is rewritten at close
        }
        java.nio.file.attribute.FileTime now = statMtime();
        if (!index.isEmpty() && ch.size() > 0 && (TAINTED.equals(seal) || now == null
                || !seal.equals(Long.toString(now.to(java.util.concurrent.TimeUnit.NANOSECONDS))))) {
            tainted = TAINTED.equals(seal) ? "it was changed outside the agent while an agent had it open"
                    : "it was modified at " + now + " after the agent last closed it (sealed at " + seal + " ns)";
        }
    }

    /**
     * A path that names this file's inode whatever happened to its name since it was opened: {@code /proc/self/fd/N}
     * of the agent's own descriptor (a rename the agent did not see, by another process or an unhooked API, must not
     * make the index, the seal or a re-open go to whatever file now has the old name, or nowhere). Falls back to the
     * path where {@code /proc} is missing.
     */
    private Path inode() {
        if (raw == null && openVia != null) {
            return openVia;
        }
        if (raw != null && PROC_FD) {
            try {
                int n = JdkAccess.fdNumber(raw.getFD());
                if (n >= 0) {
                    return java.nio.file.Paths.get("/proc/self/fd/" + n);
                }
            } catch (IOException e) {
                // closed: use the path
            }
        }
        return path;
    }

    /** Set only while the constructor opens the agent's own handle: see the constructor. */
    private Path openVia;

    private static final Path PROC_FD_DIR = java.nio.file.Paths.get("/proc/self/fd");
    private static final boolean PROC_FD = Files.isDirectory(PROC_FD_DIR);

    private java.nio.file.attribute.FileTime statMtime() {
        int fd = fd();
        if (fd >= 0) { // fstat of the agent's own descriptor: same inode as /proc/self/fd/N, no path lookup
            try {
                java.nio.file.attribute.FileTime[] t = new java.nio.file.attribute.FileTime[1];
                FdOps.fstat(fd, t);
                return t[0];
            } catch (IOException e) {
                return null;
            }
        }
        try {
            return Files.getLastModifiedTime(inode());
        } catch (IOException e) {
            return null; // deleted or renamed without a hook: nothing to compare
        }
    }

    /** The agent's own descriptor number if the descriptor-based calls ({@link FdOps}) can be used, else -1. */
    private int fd() {
        if (raw == null || !FdOps.available()) {
            return -1;
        }
        try {
            return JdkAccess.fdNumber(raw.getFD());
        } catch (IOException e) {
            return -1;
        }
    }

    /** True if this file's metadata calls go through its descriptor (for tests). */
    synchronized boolean usesDescriptorCalls() {
        return fd() >= 0;
    }

    /** The xattr's name as the kernel sees it (the JDK's UserDefinedFileAttributeView adds "user."). */
    private static final byte[] XATTR_NAME = ("user." + XATTR).getBytes(java.nio.charset.StandardCharsets.US_ASCII);
    /** Native memory for fsetxattr of the index (under this object's lock). */
    private ByteBuffer xattrScratch;

    /** Records the file's modification time after a change the agent made itself (see {@link #ownMtime}). */
    private void noteOwnChange() {
        ownMtime = index.isEmpty() ? null : statMtime();
    }

    private void openRaw(boolean rw) throws IOException {
        Boolean prev = ExaltRuntime.BYPASS.get();
        ExaltRuntime.BYPASS.set(Boolean.TRUE);
        try {
            // re-open (read-write after read-only) the same inode, not whatever file has the name now
            RandomAccessFile r = new RandomAccessFile(inode().toFile(), rw ? "rw" : "r");
            if (raw != null) {
                raw.close();
            }
            raw = r;
            ch = r.getChannel();
            JdkAccess.uninterruptible(ch); // an application thread's interrupt must not close the file for every handle
            writable = rw;
        } finally {
            ExaltRuntime.BYPASS.set(prev);
        }
    }

    synchronized void ensureWritable() throws IOException {
        if (!writable) {
            openRaw(true);
            try {
                Files.getFileAttributeView(inode(), UserDefinedFileAttributeView.class).delete(SEAL); // rewritten at close
            } catch (FileSystemException e) {
                // not sealed
            }
        }
    }

    private void loadIndex() throws IOException {
        UserDefinedFileAttributeView v = Files.getFileAttributeView(inode(), UserDefinedFileAttributeView.class);
        byte[] b = null;
        if (v != null) {
            try {
                int n = v.size(XATTR);
                ByteBuffer bb = ByteBuffer.allocate(n);
                v.read(XATTR, bb);
                b = bb.array();
            } catch (FileSystemException e) {
                b = null; // no attribute: a plain file
            }
        }
        if (b == null) {
            index = new ExtentIndex();
            return;
        }
        long[] flag = new long[1];
        index = ExtentIndex.decode(b, flag);
        xattrPresent = true;
        if (flag[0] != fmt.flag() && !index.isEmpty()) {
            throw new IOException("Exalt: " + path + " was written with Tardis flag 0x" + Long.toHexString(flag[0])
                    + " but this agent uses 0x" + Long.toHexString(fmt.flag()) + "; start the agent with flag=0x"
                    + Long.toHexString(flag[0]));
        }
    }

    synchronized void close() throws IOException {
        try {
            if (!index.isEmpty() && writable) {
                java.nio.file.attribute.FileTime now = statMtime();
                boolean clean = tainted == null && now != null && (mappedWritable || ownMtime == null || now.equals(ownMtime));
                UserDefinedFileAttributeView v = Files.getFileAttributeView(inode(), UserDefinedFileAttributeView.class);
                if (v != null && now != null) {
                    String seal = clean ? Long.toString(now.to(java.util.concurrent.TimeUnit.NANOSECONDS)) : TAINTED;
                    v.write(SEAL, ByteBuffer.wrap(seal.getBytes(java.nio.charset.StandardCharsets.US_ASCII)));
                }
            }
        } catch (IOException e) {
            ExaltRuntime.log("could not seal " + path + ": " + e);
        } finally {
            raw.close();
        }
    }

    /** Logical (= physical) size. Also drops index entries beyond it after an unhooked truncation. */
    synchronized long size() throws IOException {
        int fd = fd();
        java.nio.file.attribute.FileTime[] mt = {null};
        // one fstat gives the size and the modification time (was: FileChannel.size, then a stat of /proc/self/fd/N)
        long s = fd >= 0 ? FdOps.fstat(fd, mt) : ch.size();
        if (tainted == null && ownMtime != null && !mappedWritable && timesChanging == 0 && !index.isEmpty()) {
            java.nio.file.attribute.FileTime now = mt[0] != null ? mt[0] : statMtime();
            if (now != null && !now.equals(ownMtime)) {
                tainted = "modified at " + now + ", the agent's last change was at " + ownMtime;
            }
        }
        if (tainted != null) {
            if (s == 0) {
                // truncated to zero (a truncating open): every extent is gone, whatever happened before
                index.truncate(0);
                persist();
                ownMtime = null;
                tainted = null;
                return 0;
            }
            {
                throw new IOException("Exalt: emulated file " + path + " was changed outside the agent (" + tainted
                        + "; size now " + s + "). Its Tardis extent index"
                        + " may describe bytes that no longer exist, so reading or writing it would return stale data."
                        + " Typical causes: RandomAccessFile.setLength (native, not hooked) shrinking and re-extending the"
                        + " file, or a process without the agent writing it. Fix: truncate with FileChannel.truncate"
                        + " (hooked), and let only agent JVMs touch files under " + ExaltRuntime.prefixes());
            }
        }
        if (index.end() > s && index.truncate(s)) {
            persist();
        }
        return s;
    }

    synchronized boolean hasExtentsIn(long a, long b) {
        return index.overlaps(a, b);
    }

    synchronized int extentCount() {
        return index.size();
    }

    // ------------------------------------------------------------------------------------------------ read

    /** Reads logical bytes [pos, pos+len); returns -1 at end of file, else the count (short only at EOF). */
    synchronized int read(long pos, byte[] dst, int off, int len) throws IOException {
        if (len == 0) {
            return 0;
        }
        long size = size();
        if (pos >= size) {
            return -1;
        }
        int n = (int) Math.min(len, size - pos);
        long end = pos + n;
        long cursor = pos;
        for (ExtentIndex.Extent e : index.overlapping(pos, end)) {
            long s = Math.max(e.start, pos);
            if (s > cursor) {
                preadFully(cursor, dst, off + (int) (cursor - pos), (int) (s - cursor));
            }
            long t = Math.min(e.end(), end);
            e.fill(fmt, s, dst, off + (int) (s - pos), (int) (t - s));
            cursor = t;
        }
        if (cursor < end) {
            preadFully(cursor, dst, off + (int) (cursor - pos), (int) (end - cursor));
        }
        ExaltRuntime.LOGICAL_BYTES_READ.addAndGet(n);
        return n;
    }

    private void preadFully(long pos, byte[] dst, int off, int len) throws IOException {
        ByteBuffer bb = ByteBuffer.wrap(dst, off, len);
        long p = pos;
        while (bb.hasRemaining()) {
            int r = ch.read(bb, p);
            if (r < 0) {
                while (bb.hasRemaining()) {
                    bb.put((byte) 0);
                }
                return;
            }
            p += r;
        }
    }

    // ----------------------------------------------------------------------------------------------- write

    /** Writes logical bytes at {@code pos}: Tardis runs go to the index, everything else to disk in place. */
    synchronized void write(long pos, byte[] src, int off, int len) throws IOException {
        if (len == 0) {
            return;
        }
        if (pos > Long.MAX_VALUE - len) {
            // the kernel refuses it (EINVAL); here the end would wrap negative, the file would not be extended and
            // the bytes would be dropped from the index at the next size check: an acknowledged write lost
            throw new IOException("Exalt: write of " + len + " bytes at position " + pos + " of " + path
                    + " ends beyond the largest file offset (Invalid argument)");
        }
        long[] m = MappedRanges.firstOverlap(key, pos, pos + len);
        if (m != null) {
            // a live mapping shows this range: it must get the bytes on disk (see MappedRanges)
            long a = Math.max(m[0], pos);
            long b = Math.min(m[1], pos + len);
            if (a > pos) {
                write(pos, src, off, (int) (a - pos));
            }
            writePhysical(a, src, off + (int) (a - pos), (int) (b - a));
            if (b < pos + len) {
                write(b, src, off + (int) (b - pos), (int) (pos + len - b));
            }
            return;
        }
        ensureWritable();
        long sizeBefore = size();
        ownMtime = null; // our own change starts: no staleness check until noteOwnChange() at the end
        byte[] buf = src;
        int boff = off;
        int blen = len;
        long base = pos;
        ExtentIndex.Extent pre = index.inlineEndingAt(pos);
        List<long[]> segs = segments(src, off, len); // {kind, offset, len, marker}
        int first = 0;
        long joinedMarker = -1;
        if (pre != null && pre.len < TardisFormat.UNIT) {
            // The partial unit left at the end of the previous write is completed by this one. Usually (HDFS: every
            // packet's data starts inside a unit) this write's bytes up to the completion are metadata to the
            // compressor and a run starts right after them: then the 12 joined bytes are compared with the unit
            // the run's marker says comes before it and the join is one more unit of that run: no copy of the
            // write (it was an allocation and a copy of every disk write). Otherwise the bytes are joined in a
            // copy and compressed again, as before.
            int k = TardisFormat.UNIT - (int) pre.len;
            long[] s0 = segs.get(0);
            long[] s1 = segs.size() > 1 ? segs.get(1) : null;
            if (s0[0] == 0 && s0[1] == off && s0[2] == k && s1 != null && s1[0] == 1 && s1[1] == off + k
                    && s1[3] + TardisFormat.UNIT <= 0xFFFF_FFFFL
                    && isUnit(pre.bytes, src, off, k, s1[3] + TardisFormat.UNIT)) {
                joinedMarker = s1[3] + TardisFormat.UNIT;
                first = 1;
            } else {
                buf = new byte[(int) pre.len + len];
                System.arraycopy(pre.bytes, 0, buf, 0, (int) pre.len);
                System.arraycopy(src, off, buf, (int) pre.len, len);
                boff = 0;
                blen = buf.length;
                base = pre.start;
                segs = segments(buf, boff, blen);
            }
        }
        boolean hasTardis = joinedMarker >= 0;
        for (long[] s : segs) {
            hasTardis |= s[0] == 1;
        }
        long end = pos + len;
        long clearFrom = joinedMarker >= 0 ? pre.start : base;
        boolean changed = !index.isEmpty() && index.overlaps(clearFrom, end);
        // a write that fails (no space left, an I/O error) leaves the index as it was: it has already dropped what it
        // replaces, e.g. the partial unit an earlier, acknowledged write left there (joined into this write's first
        // segment), which would otherwise read back as the hole under it
        List<ExtentIndex.Extent> before = index.copyOf(clearFrom, end);
        try {
            index.clear(clearFrom, end);
            if (joinedMarker >= 0) {
                index.addTardis(pre.start, TardisFormat.UNIT, joinedMarker); // the run below merges with it
                changed = true;
            }
            long physical = 0;
            long physEnd = sizeBefore; // the file's size as the writes below leave it (we hold the lock: nobody else writes)
            for (int i = first; i < segs.size(); i++) {
                long[] s = segs.get(i);
                long at = base + s[1] - boff;
                if (s[0] == 1) {
                    index.addTardis(at, s[2], s[3]);
                    changed = true;
                } else if (s[2] < TardisFormat.UNIT && ((hasTardis || pre != null) && (i == first || i == segs.size() - 1)
                        || i == segs.size() - 1 && end >= sizeBefore)) {
                    // a partial unit at the edge of a run: keep it in the index until the next write completes it
                    byte[] b = new byte[(int) s[2]];
                    System.arraycopy(buf, (int) s[1], b, 0, b.length);
                    index.addInline(at, b);
                    changed = true;
                } else {
                    writeFully(at, buf, (int) s[1], (int) s[2]);
                    physical += s[2];
                    physEnd = Math.max(physEnd, at + s[2]);
                }
            }
            if ((fd() >= 0 ? physEnd : ch.size()) < end) {
                raw.setLength(end); // sparse extension: the Tardis tail is not written
            }
            ExaltRuntime.LOGICAL_BYTES_WRITTEN.addAndGet(len);
            ExaltRuntime.PHYSICAL_BYTES_WRITTEN.addAndGet(physical);
            if (changed) {
                persist(shrinkIfNeeded());
            }
        } catch (IOException | RuntimeException | Error e) {
            index.restore(clearFrom, end, before);
            throw e;
        }
        noteOwnChange();
    }

    /** The compressor's segments of {@code data[off..off+len)}: {kind (0 meta, 1 Tardis), offset in data, len, marker}. */
    private List<long[]> segments(byte[] data, int off, int len) {
        final List<long[]> segs = new ArrayList<>(4);
        compressor.compress(data, off, len, new SegmentSink() {
            @Override
            public void meta(byte[] d, int o, int l) {
                segs.add(new long[] {0, o, l, 0});
            }

            @Override
            public void tardis(int o, long marker, long l) {
                segs.add(new long[] {1, o, l, marker});
            }
        });
        return segs;
    }

    /** Are {@code head} followed by {@code src[off..off+k)} (12 bytes in all) exactly the unit {@code <flag><marker>}? */
    private boolean isUnit(byte[] head, byte[] src, int off, int k, long marker) {
        byte[] unit = new byte[TardisFormat.UNIT];
        fmt.expand(marker, 0, unit, 0, TardisFormat.UNIT);
        return java.util.Arrays.equals(head, 0, head.length, unit, 0, head.length)
                && java.util.Arrays.equals(src, off, off + k, unit, head.length, TardisFormat.UNIT);
    }

    /** Writes logical bytes at {@code pos} to disk as they are (a mapped range), replacing what the index said. */
    private void writePhysical(long pos, byte[] src, int off, int len) throws IOException {
        ensureWritable();
        size(); // fail loudly if the file was changed outside the agent
        ownMtime = null;
        boolean changed = index.overlaps(pos, pos + len);
        List<ExtentIndex.Extent> before = index.copyOf(pos, pos + len);
        try {
            if (changed) {
                index.clear(pos, pos + len); // runs around the range are split, the range itself is written below
            }
            writeFully(pos, src, off, len);
            ExaltRuntime.LOGICAL_BYTES_WRITTEN.addAndGet(len);
            ExaltRuntime.PHYSICAL_BYTES_WRITTEN.addAndGet(len);
            if (changed) {
                persist();
            }
        } catch (IOException | RuntimeException | Error e) {
            index.restore(pos, pos + len, before); // as in write: a failed write leaves the index as it was
            throw e;
        }
        noteOwnChange();
    }

    private void writeFully(long pos, byte[] b, int off, int len) throws IOException {
        ByteBuffer bb = ByteBuffer.wrap(b, off, len);
        long p = pos;
        while (bb.hasRemaining()) {
            p += ch.write(bb, p);
        }
    }

    /** Keeps the encoded index within the xattr budget by writing the smallest extents out physically. */
    private byte[] shrinkIfNeeded() throws IOException {
        byte[] enc;
        while ((enc = index.encode(fmt.flag())).length > ExaltRuntime.indexLimit()) {
            ExtentIndex.Extent e = index.smallest();
            materialiseExtent(e.start, e.end());
        }
        return enc; // the index as it is now: persist(enc) does not encode it again
    }

    private void materialiseExtent(long a, long b) throws IOException {
        byte[] buf = new byte[(int) Math.min(b - a, 1 << 20)];
        long p = a;
        while (p < b) {
            int n = (int) Math.min(buf.length, b - p);
            int r = read(p, buf, 0, n);
            if (r <= 0) {
                break;
            }
            writeFully(p, buf, 0, r);
            p += r;
        }
        index.clear(a, b);
        ExaltRuntime.MATERIALISED_BYTES.addAndGet(b - a);
    }

    /**
     * Writes the compressed ranges in [a, b) out in full (before a mapping: it shows the physical bytes). A
     * read-write mapping changes the file without the agent, so its file is exempt from the staleness check.
     */
    synchronized void materialise(long a, long b, boolean writableMapping) throws IOException {
        ensureWritable();
        size(); // fail loudly if the file was already changed outside the agent
        mappedWritable |= writableMapping;
        ownMtime = null; // our own change starts (see write)
        List<long[]> ranges = new ArrayList<>();
        for (ExtentIndex.Extent e : index.overlapping(a, b)) {
            ranges.add(new long[] {Math.max(a, e.start), Math.min(b, e.end())});
        }
        for (long[] r : ranges) {
            materialiseExtent(r[0], r[1]);
        }
        if (!ranges.isEmpty()) {
            persist();
        }
        noteOwnChange();
    }

    /** Calls setting this file's times in progress (see FileHooks.settingTimes): no staleness check meanwhile. */
    private int timesChanging;

    synchronized void beginTimesChange() {
        timesChanging++;
    }

    synchronized void endTimesChange() {
        timesChanging--;
        if (tainted == null) {
            noteOwnChange();
        }
    }

    /** After File.setLastModified / Files.setLastModifiedTime on this open file: the new time is the agent's. */
    synchronized void timesSet() {
        if (tainted == null) {
            noteOwnChange();
        }
    }

    /** After File.setLastModified / Files.setLastModifiedTime on a closed, sealed file: reseal with the new time. */
    static void resealAfterTimesSet(Path p) {
        try {
            UserDefinedFileAttributeView v = Files.getFileAttributeView(p, UserDefinedFileAttributeView.class);
            ByteBuffer bb = ByteBuffer.allocate(v.size(SEAL));
            v.read(SEAL, bb);
            if (!TAINTED.equals(new String(bb.array(), java.nio.charset.StandardCharsets.US_ASCII))) {
                long ns = Files.getLastModifiedTime(p).to(java.util.concurrent.TimeUnit.NANOSECONDS);
                v.write(SEAL, ByteBuffer.wrap(Long.toString(ns).getBytes(java.nio.charset.StandardCharsets.US_ASCII)));
            }
        } catch (IOException | UnsupportedOperationException e) {
            // not sealed: nothing to update
        }
    }

    /**
     * After a hooked move: a move to another file system copies the modification time with microsecond precision
     * (utimes), so a sealed file would be refused at its next open. The seal follows when it differs from the new
     * time only below the microsecond; any other difference (a change made while the file was closed) still counts.
     */
    static void resealAfterMove(Path p) {
        Boolean prev = ExaltRuntime.BYPASS.get();
        ExaltRuntime.BYPASS.set(Boolean.TRUE);
        try {
            if (!Files.isRegularFile(p)) {
                return;
            }
            UserDefinedFileAttributeView v = Files.getFileAttributeView(p, UserDefinedFileAttributeView.class);
            if (v == null || !v.list().contains(SEAL)) {
                return;
            }
            ByteBuffer bb = ByteBuffer.allocate(v.size(SEAL));
            v.read(SEAL, bb);
            String seal = new String(bb.array(), java.nio.charset.StandardCharsets.US_ASCII);
            long ns = Files.getLastModifiedTime(p).to(java.util.concurrent.TimeUnit.NANOSECONDS);
            long sealed = TAINTED.equals(seal) ? Long.MIN_VALUE : Long.parseLong(seal);
            if (sealed != ns && sealed != Long.MIN_VALUE && Math.floorDiv(sealed, 1000) == Math.floorDiv(ns, 1000)) {
                v.write(SEAL, ByteBuffer.wrap(Long.toString(ns).getBytes(java.nio.charset.StandardCharsets.US_ASCII)));
            }
        } catch (IOException | RuntimeException e) {
            // no seal or no attribute support: nothing to carry over
        } finally {
            ExaltRuntime.BYPASS.set(prev);
        }
    }

    /**
     * FileChannel.truncate of an emulated file, done here under this file's lock: the kernel's truncation, the index and
     * the recorded modification time change as one step. The JDK's own truncate ran outside the lock and the agent was
     * told afterwards, so a read or write of another thread in between saw a modification time the agent had not
     * recorded and refused the file for good as changed outside the agent. A refused file may still be emptied (as by a
     * truncating open).
     */
    synchronized void truncateByHook(long newSize) throws IOException {
        ensureWritable();
        long s = newSize == 0 ? ch.size() : size();
        if (newSize >= s) {
            return; // as the JDK: a size >= the file's size leaves the file alone
        }
        ownMtime = null; // our own change starts (see write)
        ch.truncate(newSize);
        if (tainted != null) {
            size(); // newSize == 0: size() drops the index and accepts the file again
            return;
        }
        if (index.truncate(newSize)) {
            persist();
        }
        noteOwnChange();
    }

    /** fsync of the agent's own descriptor: the file's data and metadata (size, the index xattr) reach the disk. */
    synchronized void force() throws IOException {
        ch.force(true);
    }

    private void persist() throws IOException {
        persist(null);
    }

    /** Stores the index in the xattr; {@code encoded}: the index's current encoding if the caller has it, else null. */
    private void persist(byte[] encoded) throws IOException {
        int fd = fd();
        if (fd >= 0 && !index.isEmpty()) { // fsetxattr on the agent's own descriptor: always this file, no path
            byte[] enc = encoded != null ? encoded : index.encode(fmt.flag());
            if (xattrScratch == null || xattrScratch.capacity() < enc.length) {
                xattrScratch = ByteBuffer.allocateDirect(Math.max(4096, enc.length));
            }
            FdOps.fsetxattr(fd, XATTR_NAME, enc, xattrScratch);
            xattrPresent = true;
            return;
        }
        Path p = inode();
        try {
            // /proc/self/fd/N of the agent's own descriptor always names this file; only the path fallback can
            // name another one (renamed without a hook), which the file key tells
            if (!p.startsWith(PROC_FD_DIR)) {
                Object k = Files.readAttributes(p, BasicFileAttributes.class).fileKey();
                if (!key.equals(k)) {
                    ExaltRuntime.log("not persisting index: " + p + " no longer names the file (renamed without a hook)");
                    return;
                }
            }
            UserDefinedFileAttributeView v = Files.getFileAttributeView(p, UserDefinedFileAttributeView.class);
            if (index.isEmpty()) {
                if (xattrPresent) {
                    v.delete(XATTR);
                    xattrPresent = false;
                }
                return;
            }
            v.write(XATTR, ByteBuffer.wrap(encoded != null ? encoded : index.encode(fmt.flag())));
            xattrPresent = true;
        } catch (NoSuchFileException e) {
            // deleted while open: the index lives on in memory until the last handle closes
        }
    }
}
