package io.exalt.agent.boot;

import java.io.File;
import java.io.FileDescriptor;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Collections;
import java.util.HashMap;
import java.util.Map;
import java.util.WeakHashMap;

/**
 * Entry points called by the advice that the agent inlines into {@code FileOutputStream},
 * {@code FileInputStream}, {@code RandomAccessFile}, {@code FileChannelImpl} and {@code File}. Every method
 * returns "not handled" (null/false) quickly for descriptors that are not under a configured prefix, so the
 * original JDK code runs for them unchanged.
 *
 * <p>The descriptor's own file position is kept equal to the logical position, so native position methods
 * (getFilePointer, skip, available, FileChannel.position) stay correct without hooks.
 */
public final class FileHooks {
    /**
     * Open descriptors under a prefix, each with its file and how it was opened (one lookup per write finds all three;
     * they were three synchronized maps consulted one after the other on every write). Weak keys: a stream dropped
     * without close() does not leak.
     */
    private static final Map<FileDescriptor, Reg> FDS = Collections.synchronizedMap(new WeakHashMap<>());

    /** A descriptor's registration: its file, opened read-only, opened for synchronous writes (see below). */
    private static final class Reg {
        final CompressedFile cf;
        final boolean readOnly;
        final boolean sync;

        Reg(CompressedFile cf, boolean readOnly, boolean sync) {
            this.cf = cf;
            this.readOnly = readOnly;
            this.sync = sync;
        }
    }

    /** Open emulated files by file key (device + inode), shared by all descriptors of the same file. */
    private static final Map<Object, CompressedFile> FILES = new HashMap<>();
    private static volatile int open;
    /*
     * Reg.sync: descriptors opened for synchronous writes (O_DSYNC/O_SYNC: RandomAccessFile "rwd"/"rws", FileChannel
     * DSYNC/SYNC): the agent writes through its own plain descriptor, so after each write of such a descriptor it syncs the
     * file (data, size and the index xattr) before the write returns, as the kernel does for the application's descriptor.
     *
     * Reg.readOnly: descriptors opened read-only (FileInputStream, RandomAccessFile "r", a read-only FileChannel). A
     * FileOutputStream made on one ({@code new FileOutputStream(raf.getFD())}) is not a registration of its own: its writes
     * are left to the JDK, which refuses them (EBADF); before, the agent wrote them through its own read-write handle.
     */

    /** True if the descriptor was opened with O_DSYNC (O_SYNC includes it), from /proc/self/fdinfo. */
    private static boolean syncFlags(FileDescriptor fd) {
        int n = JdkAccess.fdNumber(fd);
        if (n < 0) {
            return false;
        }
        Boolean prev = ExaltRuntime.BYPASS.get();
        ExaltRuntime.BYPASS.set(Boolean.TRUE);
        try {
            for (String l : Files.readAllLines(Paths.get("/proc/self/fdinfo/" + n))) {
                if (l.startsWith("flags:")) {
                    return (Long.parseLong(l.substring(6).trim(), 8) & 010000) != 0; // O_DSYNC
                }
            }
            return false;
        } catch (IOException | RuntimeException e) {
            return false; // no procfs: as before
        } finally {
            ExaltRuntime.BYPASS.set(prev);
        }
    }

    /** After a write of {@code fd} (under the file's lock): a synchronous descriptor's write is on disk when it returns. */
    private static void syncIfAsked(FileDescriptor fd, CompressedFile cf) throws IOException {
        Reg r = FDS.get(fd);
        if (r != null && r.sync) {
            agentSync(cf);
        }
    }

    /** fsyncs of the agent's own descriptors that an application's sync asked for (for tests). */
    private static final java.util.concurrent.atomic.AtomicLong AGENT_SYNCS = new java.util.concurrent.atomic.AtomicLong();

    private static void agentSync(CompressedFile cf) throws IOException {
        cf.force();
        AGENT_SYNCS.incrementAndGet();
    }

    /**
     * After the application's {@code FileChannel.force} returned (the JDK's fsync or fdatasync of the application's own
     * descriptor): an emulated file is also fsynced through the agent's descriptor. The application's fdatasync
     * ({@code force(false)}) flushes the inode's data pages, which the agent's writes share, but need not commit the index
     * xattr the agent changed (ext4 commits it with the file's metadata only on a full fsync), so after a crash the runs
     * that xattr describes would read as zeros (review rvx20, "found but not fixed"). Not covered: {@code
     * FileDescriptor.sync()} is a native method in JDK 17 (docs/exalt.md).
     */
    public static void forced(FileDescriptor fd) throws IOException {
        CompressedFile cf = lookup(fd);
        if (cf != null) {
            agentSync(cf);
        }
    }

    /** Number of agent fsyncs an application's force or synchronous write caused (for tests). */
    public static long agentSyncs() {
        return AGENT_SYNCS.get();
    }

    private FileHooks() {
    }

    static CompressedFile lookup(FileDescriptor fd) {
        if (open == 0 || fd == null) {
            return null;
        }
        Reg r = FDS.get(fd);
        return r == null ? null : r.cf;
    }

    /** The descriptor's registration, or null (see {@link #lookup}). */
    private static Reg registration(FileDescriptor fd) {
        if (open == 0 || fd == null) {
            return null;
        }
        return FDS.get(fd);
    }

    // ------------------------------------------------------------------------------------- registration

    /** After a stream/RandomAccessFile/FileChannel constructor opened {@code path} on {@code fd}. */
    public static void opened(FileDescriptor fd, String path, boolean writable) throws IOException {
        if (fd == null || path == null || ExaltRuntime.BYPASS.get() != null) {
            return;
        }
        CompressedFile known = lookup(fd); // a channel of an emulated stream shares the stream's registration
        if (known != null) {
            if (writable) {
                known.ensureWritable();
            }
            return;
        }
        if (!ExaltRuntime.emulated(path)) {
            return;
        }
        Path p = Paths.get(ExaltRuntime.realPath(path)); // a symlink into a prefix names its target
        // The file is identified by the application's descriptor, not by its name: the name may already name another
        // file (renamed or replaced since the application opened it), and the agent's handle, its key and its index
        // must be the descriptor's file, or the application's writes land in another file.
        Path byFd = JdkAccess.procFd(fd);
        BasicFileAttributes at = Files.readAttributes(byFd != null ? byFd : p, BasicFileAttributes.class);
        Object key = at.fileKey();
        if (key == null || !at.isRegularFile()) {
            return; // a FIFO or a device has no offsets: the JDK's own reads and writes are right
        }
        CompressedFile cf;
        synchronized (FILES) {
            cf = FILES.get(key);
            if (cf == null) {
                cf = new CompressedFile(key, p, byFd, writable);
                FILES.put(key, cf);
            } else if (writable) {
                cf.ensureWritable();
            }
            cf.refs++;
        }
        // a truncating open (FileOutputStream without append) leaves size 0: size() drops the old index
        cf.size();
        FDS.put(fd, new Reg(cf, !writable, writable && syncFlags(fd)));
        synchronized (FileHooks.class) {
            open++;
        }
        ExaltRuntime.log("emulating " + p);
    }

    public static void openedFile(FileDescriptor fd, File f, boolean writable) throws IOException {
        if (f != null) {
            opened(fd, f.getPath(), writable);
        }
    }

    /** Before a stream/RandomAccessFile/FileChannel is closed. */
    public static void closed(FileDescriptor fd) throws IOException {
        if (open == 0 || fd == null) {
            return;
        }
        Reg r = FDS.remove(fd);
        if (r == null) {
            return;
        }
        CompressedFile cf = r.cf;
        synchronized (FileHooks.class) {
            open--;
        }
        synchronized (FILES) {
            if (--cf.refs == 0) {
                FILES.remove(cf.key);
                cf.close();
            }
        }
    }

    /**
     * Before File.setLastModified / the basic attribute view's setTimes: the open emulated file at {@code path}, whose
     * staleness check pauses until {@link #timesSet(String, Object, boolean)} (the JDK sets the time before the exit hook
     * runs: another thread's read in between took the new time for a change outside the agent and refused the file for
     * good); null if the file is not open here.
     */
    public static Object settingTimes(String path) {
        if (path == null || open == 0 || ExaltRuntime.BYPASS.get() != null || !ExaltRuntime.underPrefix(path)) {
            return null;
        }
        CompressedFile cf = openAt(Paths.get(ExaltRuntime.realPath(path)));
        if (cf != null) {
            cf.beginTimesChange();
        }
        return cf;
    }

    /** After the call {@link #settingTimes} was made for: {@code token} is what it returned, {@code ok} if a time was set. */
    public static void timesSet(String path, Object token, boolean ok) {
        if (token != null) {
            ((CompressedFile) token).endTimesChange();
        } else if (ok) {
            timesSet(path);
        }
    }

    private static CompressedFile openAt(Path p) {
        synchronized (FILES) {
            for (CompressedFile cf : FILES.values()) {
                if (cf.path.equals(p)) {
                    return cf;
                }
            }
        }
        return null;
    }

    /** After File.setLastModified / Files.setLastModifiedTime: a time the agent knows about, not a foreign change. */
    public static void timesSet(String path) {
        if (path == null || ExaltRuntime.BYPASS.get() != null || !ExaltRuntime.underPrefix(path)) {
            return;
        }
        Path p = Paths.get(ExaltRuntime.realPath(path));
        CompressedFile open = null;
        synchronized (FILES) {
            for (CompressedFile cf : FILES.values()) {
                if (cf.path.equals(p)) {
                    open = cf;
                }
            }
        }
        if (open != null) {
            open.timesSet();
        } else {
            CompressedFile.resealAfterTimesSet(p);
        }
    }

    /** After a successful rename (File.renameTo or Files.move): keep the index's path current. */
    public static void renamed(String from, String to) {
        if (from == null || to == null || ExaltRuntime.BYPASS.get() != null) {
            return;
        }
        CompressedFile.resealAfterMove(Paths.get(to));
        if (open == 0) {
            return;
        }
        // open files are known by their real paths (symlinks resolved), so the rename must be too: a rename through
        // a symlinked directory would otherwise leave the index path stale and every later index update unsaved.
        // After the rename "from" no longer exists: its real path is its parent's real path + its name.
        Path f = Paths.get(ExaltRuntime.realPath(from));
        Path t = Paths.get(ExaltRuntime.realPath(to));
        synchronized (FILES) {
            for (CompressedFile cf : FILES.values()) {
                if (cf.path.equals(f)) {
                    cf.path = t;
                } else if (cf.path.startsWith(f)) {
                    cf.path = t.resolve(f.relativize(cf.path));
                }
            }
        }
    }

    // ------------------------------------------------------------------------ streams and RandomAccessFile

    /** write(byte[],int,int) of FileOutputStream/RandomAccessFile. Returns true if handled. */
    public static boolean write(FileDescriptor fd, byte[] b, int off, int len) throws IOException {
        Reg reg = registration(fd);
        if (reg == null || reg.readOnly) {
            return false; // not emulated, or a read-only descriptor: the JDK's write fails as it must
        }
        CompressedFile cf = reg.cf;
        if (off < 0 || len < 0 || len > b.length - off) {
            throw new IndexOutOfBoundsException("off " + off + ", len " + len + ", array " + b.length);
        }
        // position, write and seek under the file's lock: the native write takes its offset (or, in append
        // mode, the end of file) atomically, so concurrent writers on one descriptor, or appenders on several,
        // must never see the same position
        synchronized (cf) {
            long pos = JdkAccess.isAppend(fd) ? cf.size() : JdkAccess.position(fd);
            cf.write(pos, b, off, len);
            if (reg.sync) {
                agentSync(cf);
            }
            JdkAccess.seek(fd, pos + len);
        }
        return true;
    }

    /** RandomAccessFile.writeBytes(String) (low byte of each char) / writeChars(String) (two bytes per char). */
    public static boolean writeString(FileDescriptor fd, String s, boolean chars) throws IOException {
        if (lookup(fd) == null) {
            return false;
        }
        int n = s.length();
        byte[] b = new byte[chars ? 2 * n : n];
        for (int i = 0; i < n; i++) {
            char c = s.charAt(i);
            if (chars) {
                b[2 * i] = (byte) (c >>> 8);
                b[2 * i + 1] = (byte) c;
            } else {
                b[i] = (byte) c;
            }
        }
        return write(fd, b, 0, b.length);
    }

    /** Before AsynchronousFileChannel.open: emulated files cannot be read or written asynchronously. */
    public static void refuseAsynchronous(Path p) throws IOException {
        if (p != null && ExaltRuntime.BYPASS.get() == null && ExaltRuntime.emulated(p.toString())) {
            throw new UnsupportedOperationException("Exalt: AsynchronousFileChannel is not supported on emulated file " + p
                    + " (under prefix " + ExaltRuntime.prefixes() + "): its reads and writes bypass the agent, so Tardis runs"
                    + " would read as zeros and writes would go stale. Use FileChannel, or keep the file outside the prefix.");
        }
    }

    /**
     * Files.copy(Path, Path, CopyOption...) of a regular file under a prefix: copied through the hooked streams,
     * so the copy has the logical bytes (compressed again if the target is under a prefix, in full otherwise).
     * The native copy would see the Tardis runs as holes. Returns null when not handled.
     */
    public static Path copy(Path src, Path dst, java.nio.file.CopyOption[] options) throws IOException {
        if (src == null || dst == null || ExaltRuntime.BYPASS.get() != null || !ExaltRuntime.emulated(src.toString())) {
            return null;
        }
        boolean replace = false;
        boolean noFollow = false;
        boolean copyAttributes = false;
        for (java.nio.file.CopyOption o : options) {
            replace |= o == java.nio.file.StandardCopyOption.REPLACE_EXISTING;
            noFollow |= o == java.nio.file.LinkOption.NOFOLLOW_LINKS;
            copyAttributes |= o == java.nio.file.StandardCopyOption.COPY_ATTRIBUTES;
        }
        java.nio.file.LinkOption[] lo = noFollow ? new java.nio.file.LinkOption[] {java.nio.file.LinkOption.NOFOLLOW_LINKS}
                : new java.nio.file.LinkOption[0];
        if (!Files.isRegularFile(src, lo)) {
            return null; // directories and symlinks (NOFOLLOW_LINKS) hold no emulated bytes
        }
        if (Files.exists(dst, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
            if (!replace) {
                throw new java.nio.file.FileAlreadyExistsException(dst.toString());
            }
            if (Files.isSameFile(src, dst)) {
                return dst;
            }
            Files.delete(dst);
        }
        boolean created = false;
        boolean complete = false;
        try (java.io.InputStream in = Files.newInputStream(src)) {
            try (java.io.OutputStream out = Files.newOutputStream(dst, java.nio.file.StandardOpenOption.CREATE_NEW,
                    java.nio.file.StandardOpenOption.WRITE)) {
                created = true;
                byte[] buf = new byte[1 << 20];
                int n;
                while ((n = in.read(buf)) > 0) {
                    out.write(buf, 0, n);
                }
            }
            if (copyAttributes) {
                Files.setLastModifiedTime(dst, Files.getLastModifiedTime(src));
            }
            complete = true;
        } finally {
            if (created && !complete) {
                // as the JDK's copy: a copy that failed (no space left, a read error) removes its target, never leaving a
                // truncated file under the target's name as if the copy had been made
                try {
                    Files.deleteIfExists(dst);
                } catch (IOException ignore) {
                    // the copy's own exception is the one to report
                }
            }
        }
        ExaltRuntime.log("copied emulated " + src + " -> " + dst + " logically");
        return dst;
    }

    public static boolean write1(FileDescriptor fd, int b) throws IOException {
        if (lookup(fd) == null) {
            return false;
        }
        return write(fd, new byte[] {(byte) b}, 0, 1);
    }

    /** read(byte[],int,int); null if not handled, else the count or -1. */
    public static Integer read(FileDescriptor fd, byte[] b, int off, int len) throws IOException {
        CompressedFile cf = lookup(fd);
        if (cf == null) {
            return null;
        }
        if (off < 0 || len < 0 || len > b.length - off) {
            throw new IndexOutOfBoundsException("off " + off + ", len " + len + ", array " + b.length);
        }
        if (len == 0) {
            return 0;
        }
        synchronized (cf) { // as in write: two readers of one descriptor must not read the same bytes
            long pos = JdkAccess.position(fd);
            int n = cf.read(pos, b, off, len);
            if (n > 0) {
                JdkAccess.seek(fd, pos + n);
            }
            return n;
        }
    }

    public static Integer read1(FileDescriptor fd) throws IOException {
        if (lookup(fd) == null) {
            return null;
        }
        byte[] one = new byte[1];
        Integer n = read(fd, one, 0, 1);
        return n == -1 ? -1 : one[0] & 0xFF;
    }

    /** FileInputStream.readNBytes(int) / readAllBytes() (len = -1). */
    public static byte[] readN(FileDescriptor fd, int len) throws IOException {
        CompressedFile cf = lookup(fd);
        if (cf == null) {
            return null;
        }
        if (len < -1) {
            throw new IllegalArgumentException("len < 0");
        }
        synchronized (cf) {
            return readN(cf, fd, len);
        }
    }

    private static byte[] readN(CompressedFile cf, FileDescriptor fd, int len) throws IOException {
        long pos = JdkAccess.position(fd);
        long avail = Math.max(0, cf.size() - pos);
        long want = len == -1 ? avail : Math.min(len, avail);
        if (want > Integer.MAX_VALUE - 8) {
            throw new OutOfMemoryError("Required array size too large");
        }
        byte[] out = new byte[(int) want];
        int done = 0;
        while (done < out.length) {
            int n = cf.read(pos + done, out, done, out.length - done);
            if (n <= 0) {
                break;
            }
            done += n;
        }
        JdkAccess.seek(fd, pos + done);
        return done == out.length ? out : java.util.Arrays.copyOf(out, done);
    }

    // ------------------------------------------------------------------------------------------ channels

    /** FileChannel.read(ByteBuffer[, position]); {@code position} -1 means the channel position. */
    public static Integer chRead(FileDescriptor fd, ByteBuffer dst, long position) throws IOException {
        CompressedFile cf = lookup(fd);
        if (cf == null) {
            return null;
        }
        if (position < -1) {
            throw new IllegalArgumentException("Negative position");
        }
        if (dst.remaining() == 0) {
            return 0;
        }
        synchronized (cf) { // position, read and seek as one step (FileChannel reads are atomic w.r.t. the position)
            return chRead(cf, fd, dst, position);
        }
    }

    private static int chRead(CompressedFile cf, FileDescriptor fd, ByteBuffer dst, long position) throws IOException {
        long pos = position == -1 ? JdkAccess.position(fd) : position;
        int want = dst.remaining();
        int n;
        if (dst.hasArray()) {
            n = cf.read(pos, dst.array(), dst.arrayOffset() + dst.position(), want);
            if (n > 0) {
                dst.position(dst.position() + n);
            }
        } else {
            byte[] tmp = new byte[Math.min(want, 1 << 20)];
            n = cf.read(pos, tmp, 0, tmp.length);
            if (n > 0) {
                dst.put(tmp, 0, n);
            }
        }
        if (position == -1 && n > 0) {
            JdkAccess.seek(fd, pos + n);
        }
        return n;
    }

    public static Long chReadV(FileDescriptor fd, ByteBuffer[] dsts, int offset, int length) throws IOException {
        CompressedFile cf = lookup(fd);
        if (cf == null) {
            return null;
        }
        synchronized (cf) { // a scattering read is one read: no other read or write in between
            return chReadV(cf, fd, dsts, offset, length);
        }
    }

    private static long chReadV(CompressedFile cf, FileDescriptor fd, ByteBuffer[] dsts, int offset, int length) throws IOException {
        long total = 0;
        for (int i = offset; i < offset + length; i++) {
            if (!dsts[i].hasRemaining()) {
                continue;
            }
            int want = dsts[i].remaining();
            int n = chRead(fd, dsts[i], -1);
            if (n < 0) {
                return total == 0 ? -1L : total;
            }
            total += n;
            if (n < want) {
                break;
            }
        }
        return total;
    }

    /** FileChannel.write(ByteBuffer[, position]); {@code position} -1 means the channel position. */
    public static Integer chWrite(FileDescriptor fd, ByteBuffer src, long position) throws IOException {
        CompressedFile cf = lookup(fd);
        if (cf == null) {
            return null;
        }
        if (position < -1) {
            throw new IllegalArgumentException("Negative position");
        }
        if (src.remaining() == 0) {
            return 0;
        }
        synchronized (cf) { // position (or end of file), write and seek as one step, as the native write does
            return chWrite(cf, fd, src, position);
        }
    }

    private static int chWrite(CompressedFile cf, FileDescriptor fd, ByteBuffer src, long position) throws IOException {
        boolean usePos = position == -1;
        long pos = usePos ? (JdkAccess.isAppend(fd) ? cf.size() : JdkAccess.position(fd)) : position;
        int n = src.remaining();
        if (src.hasArray()) {
            cf.write(pos, src.array(), src.arrayOffset() + src.position(), n);
            src.position(src.position() + n);
        } else {
            // a direct (or mapped, or read-only) buffer is copied in pieces of at most 8 MiB, each written before the
            // next (under the file's lock: one write for every other reader and writer); one copy of the whole buffer
            // needed a heap of its size (a 100 MiB mapping: OutOfMemoryError in a 64 MiB heap)
            byte[] tmp = new byte[Math.min(n, DIRECT_CHUNK)];
            int done = 0;
            while (done < n) {
                int k = Math.min(tmp.length, n - done);
                src.get(tmp, 0, k);
                cf.write(pos + done, tmp, 0, k);
                done += k;
            }
        }
        syncIfAsked(fd, cf);
        if (usePos) {
            JdkAccess.seek(fd, pos + n);
        }
        return n;
    }

    /** Piece size of a direct-buffer write (see chWrite). */
    static final int DIRECT_CHUNK = 8 << 20;

    public static Long chWriteV(FileDescriptor fd, ByteBuffer[] srcs, int offset, int length) throws IOException {
        CompressedFile cf = lookup(fd);
        if (cf == null) {
            return null;
        }
        long total = 0;
        synchronized (cf) { // a gathering write is one write: its buffers stay contiguous in the file
            for (int i = offset; i < offset + length; i++) {
                total += chWrite(fd, srcs[i], -1);
            }
        }
        return total;
    }

    /** FileChannel.transferTo: handled if the source or the target is emulated. */
    public static Long transferTo(FileChannel self, FileDescriptor fd, long position, long count, WritableByteChannel target)
            throws IOException {
        if ((open == 0 || (lookup(fd) == null && lookup(JdkAccess.fdOf(target)) == null)) && !SocketHooks.isCompressed(target)) {
            return null; // sendfile to a compressed socket would put raw bytes on the wire
        }
        if (position < 0 || count < 0) {
            throw new IllegalArgumentException("negative position or count");
        }
        long size = self.size();
        long n = Math.max(0, Math.min(count, size - position));
        long done = 0;
        ByteBuffer buf = ByteBuffer.allocate((int) Math.min(n, 256 << 10));
        while (done < n) {
            buf.clear();
            buf.limit((int) Math.min(buf.capacity(), n - done));
            int r = self.read(buf, position + done);
            if (r <= 0) {
                break;
            }
            buf.flip();
            while (buf.hasRemaining()) {
                int w = target.write(buf);
                if (w == 0) {
                    // non-blocking target is full: report what went out
                    return done + (buf.position());
                }
            }
            done += r;
        }
        return done;
    }

    /** FileChannel.transferFrom: handled if this channel or the source channel is emulated. */
    public static Long transferFrom(FileChannel self, FileDescriptor fd, ReadableByteChannel src, long position, long count)
            throws IOException {
        if (open == 0 || (lookup(fd) == null && lookup(JdkAccess.fdOf(src)) == null)) {
            return null;
        }
        if (position < 0 || count < 0) {
            throw new IllegalArgumentException("negative position or count");
        }
        if (position > self.size()) {
            return 0L; // as the JDK: "no bytes are transferred" (writing there would extend the file with a hole)
        }
        long done = 0;
        ByteBuffer buf = ByteBuffer.allocate((int) Math.min(Math.max(count, 1), 256 << 10));
        while (done < count) {
            buf.clear();
            buf.limit((int) Math.min(buf.capacity(), count - done));
            int r = src.read(buf);
            if (r <= 0) {
                break;
            }
            buf.flip();
            while (buf.hasRemaining()) {
                self.write(buf, position + done + buf.position());
            }
            done += r;
        }
        return done;
    }

    /**
     * FileChannel.map (entered): the JDK's mapping is shared with the file in every mode, so the compressed ranges
     * in it are written out in full first and the range is recorded in {@link MappedRanges}: while the mapping lives,
     * writes into it go to disk too, so the mapping shows later writes and reads show writes through a read-write
     * mapping. Then the real mapping is made. A read-only channel on a file the agent cannot open for writing cannot
     * be mapped where it has Tardis runs: that fails with an IOException naming the file and the fix.
     */
    public static void mapping(FileDescriptor fd, FileChannel.MapMode mode, long position, long size) throws IOException {
        CompressedFile cf = lookup(fd);
        if (cf == null || position < 0 || size < 0) {
            return; // not emulated (or the JDK rejects the arguments)
        }
        MappedRanges.entering(cf.key, position, position + size);
        if (mode == FileChannel.MapMode.READ_ONLY && !cf.hasExtentsIn(position, position + size)) {
            return; // nothing compressed in range: the real mapping shows the right bytes
        }
        try {
            cf.materialise(position, position + size, mode != FileChannel.MapMode.READ_ONLY);
        } catch (IOException e) {
            MappedRanges.returned(null);
            throw new IOException("Exalt: cannot map " + cf.path + " [" + position + ", " + (position + size) + "): a"
                    + " mapping shows the file's physical bytes, so the agent must first write the Tardis runs in that range"
                    + " out in full, and that failed (" + e.getMessage() + "). Fix: make the file writable for this"
                    + " process, or read it with FileChannel.read instead of map", e);
        }
        ExaltRuntime.log(mode + " mmap of " + cf.path + " [" + position + ", " + (position + size)
                + "): compressed ranges written out in full; writes into it stay uncompressed while it is mapped");
    }

    /** FileChannel.map returned {@code b} (null if it threw). */
    public static void mapped(MappedByteBuffer b) {
        MappedRanges.returned(b);
    }

    /**
     * FileChannel.truncate(newSize) of a writable channel: for an emulated file the truncation is done by the agent under
     * the file's lock (see {@link CompressedFile#truncateByHook}) and the channel's position follows as in the JDK (set to
     * newSize if it was beyond). Returns false when not handled (not emulated: the JDK's own truncate runs).
     */
    public static boolean truncate(FileDescriptor fd, long newSize) throws IOException {
        CompressedFile cf = lookup(fd);
        if (cf == null || newSize < 0) {
            return false; // not emulated, or the JDK's IllegalArgumentException
        }
        synchronized (cf) {
            cf.truncateByHook(newSize);
            long p = JdkAccess.position(fd);
            if (p > newSize) {
                JdkAccess.seek(fd, newSize);
            }
        }
        return true;
    }

    // ----------------------------------------------------------------------------------- introspection

    /** Number of index extents of an open emulated file at {@code path}, or -1 (for tests and the self-check). */
    public static int extentsOf(FileDescriptor fd) {
        CompressedFile cf = lookup(fd);
        return cf == null ? -1 : cf.extentCount();
    }

    public static boolean isEmulated(FileDescriptor fd) {
        return lookup(fd) != null;
    }

    static void initAccess() throws ReflectiveOperationException {
        JdkAccess.init();
    }

    /** Called once by the agent after it opened the needed JDK packages. */
    public static void init() throws ReflectiveOperationException {
        JdkAccess.init();
    }
}
