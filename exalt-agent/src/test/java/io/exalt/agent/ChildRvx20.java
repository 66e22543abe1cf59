package io.exalt.agent;

import static io.exalt.agent.ChildHostile.run;

import io.exalt.tardis.TardisGenerator;
import java.io.File;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.RandomAccessFile;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.NonWritableChannelException;
import java.nio.channels.Pipe;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributeView;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Runs inside a child JVM started with the agent (see {@link AgentRvx20IT}): review rvx20 findings, each printed as
 * {@code OK name} or {@code FAIL name: reason}. Arguments: {@code DIR OUTSIDE PORT} (DIR under the prefix, PORT
 * compressed).
 */
public final class ChildRvx20 {
    static final InetAddress LO = InetAddress.getLoopbackAddress();

    /** Tardis data with a few metadata ranges written over it in place (they are stored physically). */
    static byte[] mixed(int n, long seed) {
        byte[] d = new byte[n];
        new TardisGenerator(1L << 30).fill(0, d, 0, n);
        Random r = new Random(seed);
        for (int i = 0; i < 8; i++) {
            byte[] x = new byte[20 + r.nextInt(200)];
            r.nextBytes(x);
            System.arraycopy(x, 0, d, r.nextInt(n - x.length), x.length);
        }
        return d;
    }

    /** A compressed plain-Socket pair on PORT: {client, server}. */
    static Socket[] socketPair(int port) throws IOException {
        try (ServerSocket ss = new ServerSocket()) {
            ss.setReuseAddress(true);
            ss.bind(new InetSocketAddress(LO, port));
            Socket c = new Socket(LO, port);
            Socket s = ss.accept();
            s.setSoTimeout(20_000);
            return new Socket[] {c, s};
        }
    }

    /** A python3 process (no agent) that connects to PORT {@code count} times and sends {@code hex} on each. */
    static Process rawPeer(int port, int count, String hex) throws IOException {
        String py = "import socket,sys\n"
                + "l=[]\n"
                + "for i in range(" + count + "):\n"
                + "    s=socket.create_connection(('127.0.0.1'," + port + "))\n"
                + "    s.sendall(bytes.fromhex('" + hex + "'))\n"
                + "    l.append(s)\n"
                + "sys.stdout.write('sent\\n'); sys.stdout.flush()\n"
                + "sys.stdin.read()\n";
        return new ProcessBuilder("python3", "-c", py).redirectErrorStream(true).start();
    }

    /** Dirty plus writeback page-cache pages of the file (cachestat(2), by a python3 process), or -1 if unavailable. */
    static long dirtyPages(File f) throws Exception {
        String py = "import ctypes,os,sys\n"
                + "libc=ctypes.CDLL(None,use_errno=True)\n"
                + "r=(ctypes.c_uint64*2)(0,0); c=(ctypes.c_uint64*5)()\n"
                + "fd=os.open(sys.argv[1],os.O_RDONLY)\n"
                + "rc=libc.syscall(451,fd,ctypes.byref(r),ctypes.byref(c),0)\n"
                + "print(-1 if rc!=0 else c[1]+c[2])\n";
        Process p = new ProcessBuilder("python3", "-c", py, f.getPath()).redirectErrorStream(true).start();
        String o = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8).trim();
        p.waitFor();
        try {
            return Long.parseLong(o);
        } catch (NumberFormatException e) {
            throw new IOException("cachestat helper: " + o);
        }
    }

    public static void main(String[] a) throws Exception {
        File dir = new File(a[0]);
        int port = Integer.parseInt(a[2]);
        if (a.length > 3 && a[3].equals("small-heap")) {
            // FileChannel.write of a direct buffer (here a 100 MiB mapping of another file) into an emulated file copied the
            // whole buffer into one heap array first: OutOfMemoryError in a 64 MiB heap, where the JDK writes it as it is.
            run("a-large-direct-buffer-write-needs-no-heap-of-its-size", () -> {
                File plain = new File(a[1], "sparse-source");
                int size = 100 << 20;
                try (RandomAccessFile r = new RandomAccessFile(plain, "rw")) {
                    r.setLength(size); // a hole: reads as zeros, no disk blocks
                }
                File f = new File(dir, "from-mapping");
                try (FileChannel in = FileChannel.open(plain.toPath(), StandardOpenOption.READ);
                        FileChannel out = FileChannel.open(f.toPath(), StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
                    java.nio.MappedByteBuffer m = in.map(FileChannel.MapMode.READ_ONLY, 0, size);
                    while (m.hasRemaining()) {
                        out.write(m);
                    }
                } finally {
                    plain.delete();
                }
                boolean ok = f.length() == size;
                try (FileChannel c = FileChannel.open(f.toPath(), StandardOpenOption.READ)) {
                    ByteBuffer b = ByteBuffer.allocate(1 << 20);
                    long p = 0;
                    while (ok && p < size) {
                        b.clear();
                        int n = c.read(b, p);
                        for (int i = 0; i < n && ok; i++) {
                            ok = b.get(i) == 0;
                        }
                        p += n;
                    }
                }
                f.delete();
                return ok;
            });
            return;
        }
        if (a.length > 3 && a[3].equals("enospc")) {
            // DIR is a small tmpfs (mounted by AgentRvx20IT). A write that failed with "No space left on device" had
            // already removed the partial unit an earlier, acknowledged write left in the index (the write joins it):
            // the failed write threw, but those bytes then read back as zeros, without an error.
            run("a-write-failing-for-lack-of-space-keeps-acknowledged-bytes", () -> {
                File f = new File(dir, "data");
                byte[] d = new byte[100_001]; // ends 5 bytes into a unit (inside its flag): kept in the index until the next write
                new TardisGenerator(1L << 30).fill(0, d, 0, d.length);
                try (RandomAccessFile r = new RandomAccessFile(f, "rw")) {
                    r.write(d);
                    File filler = new File(dir, "filler");
                    byte[] junk = new byte[4096];
                    new Random(12).nextBytes(junk);
                    try (FileOutputStream o = new FileOutputStream(filler)) {
                        while (true) {
                            o.write(junk);
                        }
                    } catch (IOException full) {
                        // the file system is full
                    }
                    byte[] meta = new byte[100];
                    new Random(13).nextBytes(meta);
                    try {
                        r.write(meta);
                        System.out.println("the write on a full file system succeeded");
                    } catch (IOException expected) {
                        // No space left on device
                    }
                    Files.delete(filler.toPath());
                    byte[] got = new byte[d.length];
                    r.seek(0);
                    r.readFully(got);
                    if (!Arrays.equals(got, d)) {
                        System.out.println("after the failed write, bytes from " + Arrays.mismatch(got, d) + " differ");
                        return false;
                    }
                }
                return true;
            });
            // Files.copy of an emulated file is done by the agent through streams; when it failed midway (here: no space
            // left) the partial copy stayed, where the JDK's copy removes its target: a truncated copy under the target's
            // name, as if the copy had been made.
            run("a-failed-copy-leaves-no-partial-target", () -> {
                File src = new File(dir, "copy-src");
                byte[] d = mixed(200_000, 14);
                byte[] meta = new byte[150_000];
                new Random(15).nextBytes(meta);
                System.arraycopy(meta, 0, d, 20_000, meta.length); // 150 KB stored physically
                Files.write(src.toPath(), d);
                File filler = new File(dir, "filler2");
                byte[] junk = new byte[4096];
                new Random(16).nextBytes(junk);
                long free = dir.getUsableSpace();
                try (FileOutputStream o = new FileOutputStream(filler)) {
                    for (long n = 0; n + 100_000 < free; n += junk.length) {
                        o.write(junk); // leave about 100 KB: the copy needs 150 KB
                    }
                }
                File dst = new File(dir, "copy-dst");
                try {
                    Files.copy(src.toPath(), dst.toPath());
                    System.out.println("the copy on a full file system succeeded");
                    return false;
                } catch (IOException expected) {
                    // No space left on device
                } finally {
                    Files.delete(filler.toPath());
                }
                if (dst.exists()) {
                    System.out.println("a partial copy of " + dst.length() + " bytes was left");
                    return false;
                }
                return true;
            });
            return;
        }

        // --------------------------------------------------------------------------------------------- sockets

        // A zero-length write on a compressed socket stream (the JDK: nothing happens) sent an empty frame; the reader
        // then asked the kernel for -1 bytes of it (IndexOutOfBoundsException) and the connection was unusable.
        run("zero-length-socket-stream-write", () -> {
            byte[] d = mixed(50_000, 1);
            Socket[] p = socketPair(port);
            try (Socket c = p[0]; Socket s = p[1]) {
                OutputStream o = c.getOutputStream();
                o.write(new byte[0]);
                o.write(d, 10, 0);
                o.write(d);
                return Arrays.equals(s.getInputStream().readNBytes(d.length), d);
            }
        });
        run("zero-length-socket-stream-write-channel-adaptor", () -> {
            byte[] d = mixed(50_000, 2);
            try (java.nio.channels.ServerSocketChannel ss = java.nio.channels.ServerSocketChannel.open()) {
                ss.setOption(java.net.StandardSocketOptions.SO_REUSEADDR, true);
                ss.bind(new InetSocketAddress(LO, port));
                try (SocketChannel c = SocketChannel.open(new InetSocketAddress(LO, port)); SocketChannel s = ss.accept()) {
                    OutputStream o = c.socket().getOutputStream();
                    o.write(new byte[0]);
                    o.write(d);
                    ByteBuffer bb = ByteBuffer.allocate(d.length);
                    while (bb.hasRemaining() && s.read(bb) >= 0) {
                        // until full
                    }
                    return Arrays.equals(bb.array(), d);
                }
            }
        });
        // A write with a negative length (the JDK: IndexOutOfBoundsException, nothing sent) was acknowledged and sent an
        // empty frame, which broke the reader as above.
        run("negative-length-socket-stream-write-is-refused", () -> {
            byte[] d = mixed(50_000, 3);
            Socket[] p = socketPair(port);
            try (Socket c = p[0]; Socket s = p[1]) {
                OutputStream o = c.getOutputStream();
                try {
                    o.write(d, 0, -1);
                    System.out.println("write(b, 0, -1) returned normally");
                    return false;
                } catch (IndexOutOfBoundsException expected) {
                    // as the JDK
                }
                o.write(d);
                return Arrays.equals(s.getInputStream().readNBytes(d.length), d);
            }
        });
        // A peer (no agent, or a bad one) that sends an encoding the decoder refuses: the read threw the decoder's
        // IllegalArgumentException, a RuntimeException no socket read throws (servers handle IOException per connection).
        run("corrupt-frame-is-an-IOException", () -> {
            try (ServerSocket ss = new ServerSocket()) {
                ss.setReuseAddress(true);
                ss.bind(new InetSocketAddress(LO, port));
                Process py = rawPeer(port, 1, "00000005" + "0700000000"); // frame of 5 bytes: tag 7 is no segment
                try (Socket s = ss.accept()) {
                    s.setSoTimeout(20_000);
                    try {
                        int n = s.getInputStream().read(new byte[100]);
                        System.out.println("corrupt frame read returned " + n);
                        return false;
                    } catch (IOException expected) {
                        return true;
                    } catch (RuntimeException e) {
                        System.out.println("corrupt frame: read threw " + e);
                        return false;
                    }
                } finally {
                    py.getOutputStream().close();
                    py.waitFor();
                }
            }
        });

        // ------------------------------------------------------------------------------------------------ files

        // The agent reads and writes through its own FileChannel, which is interruptible: an application thread with
        // its interrupt status set (FileOutputStream/RandomAccessFile I/O ignores it in the JDK) got a
        // ClosedByInterruptException, and the agent's channel, shared by every handle of the file, was closed: every
        // other handle's reads and writes failed until the last one was closed.
        run("interrupted-thread-file-io-works-as-the-jdk", () -> {
            File f = new File(dir, "interrupted");
            byte[] d = mixed(200_000, 4);
            byte[] meta = new byte[300];
            new Random(5).nextBytes(meta);
            byte[] expected = Arrays.copyOf(d, d.length + meta.length);
            System.arraycopy(meta, 0, expected, d.length, meta.length);
            try (FileOutputStream o = new FileOutputStream(f); RandomAccessFile other = new RandomAccessFile(f, "r")) {
                o.write(d);
                Thread.currentThread().interrupt();
                try {
                    o.write(meta); // the JDK's FileOutputStream.write does not look at the interrupt status
                    byte[] got = new byte[expected.length];
                    try (FileInputStream in = new FileInputStream(f)) {
                        if (in.readNBytes(got, 0, got.length) != got.length || !Arrays.equals(got, expected)) {
                            System.out.println("interrupted: read by the interrupted thread differs");
                            return false;
                        }
                    }
                } finally {
                    Thread.interrupted();
                }
                byte[] got = new byte[expected.length];
                other.readFully(got); // another handle of the same file
                if (!Arrays.equals(got, expected)) {
                    System.out.println("interrupted: read by another handle differs");
                    return false;
                }
            }
            return Arrays.equals(Files.readAllBytes(f.toPath()), expected);
        });

        // FileChannel.truncate ran the JDK's ftruncate outside the file's lock and told the agent afterwards: a read or
        // write of another thread in between saw the file's modification time change and took it for a change outside
        // the agent: the file was refused for good (every read and write threw, and the seal said "tainted").
        run("truncate-racing-with-a-read-of-another-handle", () -> {
            byte[] big = new byte[48 << 20];
            new TardisGenerator(1L << 30).fill(0, big, 0, big.length);
            byte[] hold = new byte[big.length];
            for (int round = 0; round < 12; round++) {
                File f = new File(dir, "trunc-race" + round);
                try (FileChannel w = FileChannel.open(f.toPath(), StandardOpenOption.CREATE, StandardOpenOption.READ,
                        StandardOpenOption.WRITE); FileChannel rd = FileChannel.open(f.toPath(), StandardOpenOption.READ)) {
                    byte[] meta = new byte[100];
                    new Random(round).nextBytes(meta);
                    w.write(ByteBuffer.wrap(big));
                    w.write(ByteBuffer.wrap(meta));
                    Thread.sleep(2);
                    AtomicReference<Throwable> err = new AtomicReference<>();
                    Thread holder = new Thread(() -> { // one long read holds the file's lock
                        try {
                            rd.read(ByteBuffer.wrap(hold), 0);
                        } catch (Throwable t) {
                            err.compareAndSet(null, t);
                        }
                    });
                    Thread truncater = new Thread(() -> {
                        try {
                            w.truncate(big.length + 50L);
                        } catch (Throwable t) {
                            err.compareAndSet(null, t);
                        }
                    });
                    holder.start();
                    Thread.sleep(3);
                    truncater.start();
                    Thread.sleep(3);
                    ByteBuffer small = ByteBuffer.allocate(64);
                    try {
                        rd.read(small, big.length); // waits for the holder; must not take the truncation for a foreign change
                    } catch (IOException e) {
                        System.out.println("round " + round + ": " + e.getMessage());
                        return false;
                    } finally {
                        holder.join();
                        truncater.join();
                    }
                    if (err.get() != null) {
                        System.out.println("round " + round + ": " + err.get());
                        return false;
                    }
                    byte[] got = new byte[64];
                    ByteBuffer g = ByteBuffer.wrap(got);
                    rd.read(g, big.length);
                    if (!Arrays.equals(got, 0, 50, meta, 0, 50) || g.position() != 50 || w.size() != big.length + 50L) {
                        System.out.println("round " + round + ": wrong bytes after the truncation");
                        return false;
                    }
                }
                f.delete();
            }
            return true;
        });

        // A FileOutputStream on the descriptor of a read-only handle (RandomAccessFile "r", FileInputStream): the JDK's
        // write fails (EBADF); the agent wrote the file through its own read-write handle.
        run("write-through-the-descriptor-of-a-read-only-handle-fails", () -> {
            File f = new File(dir, "ro-fd");
            byte[] d = mixed(10_000, 11);
            Files.write(f.toPath(), d);
            try (RandomAccessFile r = new RandomAccessFile(f, "r"); FileInputStream in = new FileInputStream(f)) {
                for (java.io.FileDescriptor fd : new java.io.FileDescriptor[] {r.getFD(), in.getFD()}) {
                    try {
                        new FileOutputStream(fd).write(new byte[100]); // not closed: that would close the handle's descriptor
                        System.out.println("a write through a read-only descriptor succeeded");
                        return false;
                    } catch (IOException expected) {
                        // as the JDK: Bad file descriptor
                    }
                }
            }
            return Arrays.equals(Files.readAllBytes(f.toPath()), d);
        });

        // The same race with File.setLastModified / BasicFileAttributeView.setTimes: the JDK sets the time, then the hook
        // tells the agent; a read of another thread in between refused the file for good.
        run("setLastModified-racing-with-a-read-of-another-handle", () -> {
            byte[] big = new byte[48 << 20];
            new TardisGenerator(1L << 30).fill(0, big, 0, big.length);
            byte[] hold = new byte[big.length];
            for (int round = 0; round < 12; round++) {
                File f = new File(dir, "times-race" + round);
                try (FileChannel w = FileChannel.open(f.toPath(), StandardOpenOption.CREATE, StandardOpenOption.READ,
                        StandardOpenOption.WRITE); FileChannel rd = FileChannel.open(f.toPath(), StandardOpenOption.READ)) {
                    w.write(ByteBuffer.wrap(big));
                    Thread.sleep(2);
                    AtomicReference<Throwable> err = new AtomicReference<>();
                    Thread holder = new Thread(() -> {
                        try {
                            rd.read(ByteBuffer.wrap(hold), 0);
                        } catch (Throwable t) {
                            err.compareAndSet(null, t);
                        }
                    });
                    long t0 = 1_500_000_000_000L + round * 1000L;
                    boolean viaView = round % 2 == 1;
                    Thread setter = new Thread(() -> {
                        try {
                            if (viaView) {
                                Files.getFileAttributeView(f.toPath(), BasicFileAttributeView.class).setTimes(
                                        FileTime.fromMillis(t0), null, null);
                            } else if (!f.setLastModified(t0)) {
                                throw new IOException("setLastModified failed");
                            }
                        } catch (Throwable t) {
                            err.compareAndSet(null, t);
                        }
                    });
                    holder.start();
                    Thread.sleep(3);
                    setter.start();
                    Thread.sleep(3);
                    try {
                        rd.read(ByteBuffer.allocate(64), 1000);
                    } catch (IOException e) {
                        System.out.println("round " + round + ": " + e.getMessage());
                        return false;
                    } finally {
                        holder.join();
                        setter.join();
                    }
                    if (err.get() != null) {
                        System.out.println("round " + round + ": " + err.get());
                        return false;
                    }
                    ByteBuffer all = ByteBuffer.wrap(hold);
                    while (all.hasRemaining() && rd.read(all, all.position()) > 0) {
                        // until full
                    }
                    if (!Arrays.equals(hold, big) || f.lastModified() != t0) {
                        System.out.println("round " + round + ": wrong bytes or time after setting the time");
                        return false;
                    }
                }
                f.delete();
            }
            return true;
        });

        // transferFrom into a channel opened read-only: the JDK throws NonWritableChannelException before reading
        // anything; the agent read up to 256 KiB from the source first (a socket's or a pipe's bytes were gone).
        run("transferFrom-into-a-read-only-channel-consumes-nothing", () -> {
            File f = new File(dir, "ro-target");
            Files.write(f.toPath(), mixed(10_000, 6));
            Pipe pipe = Pipe.open();
            byte[] d = new byte[100];
            new Random(7).nextBytes(d);
            pipe.sink().write(ByteBuffer.wrap(d));
            try (FileChannel ro = FileChannel.open(f.toPath(), StandardOpenOption.READ)) {
                ro.transferFrom(pipe.source(), 0, d.length);
                System.out.println("transferFrom into a read-only channel returned normally");
                return false;
            } catch (NonWritableChannelException expected) {
                // as the JDK
            }
            pipe.source().configureBlocking(false);
            ByteBuffer left = ByteBuffer.allocate(200);
            pipe.source().read(left);
            if (left.position() != d.length) {
                System.out.println("the pipe holds " + left.position() + " of the " + d.length + " bytes");
                return false;
            }
            return true;
        });

        // BasicFileAttributeView.setTimes / Files.setAttribute("lastModifiedTime") change the modification time like the
        // hooked Files.setLastModifiedTime, but were not hooked: the file was refused as changed outside the agent, while
        // open and at every later open (the seal no longer matched).
        run("setTimes-through-the-attribute-view-is-the-agents-own-change", () -> {
            File f = new File(dir, "set-times");
            byte[] d = mixed(100_000, 8);
            Path p = f.toPath();
            try (FileOutputStream o = new FileOutputStream(f)) {
                o.write(d);
                Files.getFileAttributeView(p, BasicFileAttributeView.class).setTimes(FileTime.fromMillis(1_500_000_000_000L),
                        null, null);
                if (!Arrays.equals(Files.readAllBytes(p), d)) {
                    return false;
                }
            }
            Files.setAttribute(p, "basic:lastModifiedTime", FileTime.fromMillis(1_600_000_000_000L));
            return Arrays.equals(Files.readAllBytes(p), d);
        });

        // A RandomAccessFile opened "rwd"/"rws" or a FileChannel opened with DSYNC/SYNC promises that each write is on the
        // device when it returns; the agent wrote through its own plain "rw" handle (and the index xattr is never synced),
        // so the acknowledged bytes sat dirty in the page cache: a power loss would lose them. Measured with cachestat(2)
        // (Linux >= 6.5): dirty or writeback pages of the file right after the write returned.
        run("synchronous-writes-are-on-disk-when-they-return", () -> {
            byte[] d = mixed(1 << 20, 9);
            String[] modes = {"rwd", "rws", "DSYNC", "SYNC"};
            for (String mode : modes) {
                File f = new File(dir, "sync-" + mode);
                Files.deleteIfExists(f.toPath());
                if (mode.startsWith("rw")) {
                    try (RandomAccessFile r = new RandomAccessFile(f, mode)) {
                        r.write(d);
                        long dirty = dirtyPages(f);
                        if (dirty != 0) {
                            System.out.println(mode + ": " + dirty + " dirty/writeback pages after the write returned");
                            return false;
                        }
                    }
                } else {
                    try (FileChannel c = FileChannel.open(f.toPath(), StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                            StandardOpenOption.valueOf(mode))) {
                        c.write(ByteBuffer.wrap(d));
                        long dirty = dirtyPages(f);
                        if (dirty != 0) {
                            System.out.println(mode + ": " + dirty + " dirty/writeback pages after the write returned");
                            return false;
                        }
                    }
                }
                if (!Arrays.equals(Files.readAllBytes(f.toPath()), d)) {
                    return false;
                }
            }
            return true;
        });

        // FileChannel.force(false) is the JDK's fdatasync of the application's descriptor: it flushes the data pages the
        // agent's writes share, but need not commit the index xattr the agent changed (ext4 commits it only with a full
        // fsync); after a crash the runs the xattr describes would read as zeros. The agent now fsyncs its own descriptor
        // after an application's force of an emulated file (and not of a file outside its prefix).
        run("an-applications-force-fsyncs-the-agents-own-descriptor", () -> {
            byte[] d = mixed(1 << 20, 11);
            File f = new File(dir, "forced");
            File plain = new File(a[1], "forced-outside");
            boolean ok = true;
            try (FileChannel c = FileChannel.open(f.toPath(), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
                    FileChannel o = FileChannel.open(plain.toPath(), StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
                c.write(ByteBuffer.wrap(d));
                for (boolean meta : new boolean[] {false, true}) {
                    long before = io.exalt.agent.boot.FileHooks.agentSyncs();
                    c.force(meta);
                    long after = io.exalt.agent.boot.FileHooks.agentSyncs();
                    if (after != before + 1) {
                        System.out.println("force(" + meta + ") of an emulated file: " + (after - before) + " agent fsyncs");
                        ok = false;
                    }
                }
                o.write(ByteBuffer.wrap(d));
                long before = io.exalt.agent.boot.FileHooks.agentSyncs();
                o.force(false);
                if (io.exalt.agent.boot.FileHooks.agentSyncs() != before) {
                    System.out.println("force of a file outside the prefix made an agent fsync");
                    ok = false;
                }
            } finally {
                plain.delete();
            }
            return ok && Arrays.equals(Files.readAllBytes(f.toPath()), d);
        });

        // One large write on a compressed socket was encoded whole before anything was sent: a copy of the input (direct
        // or gathering buffers) plus every frame of it in a growing ByteArrayOutputStream and its copy: about three times
        // the write in heap. A 256 MiB write of incompressible bytes (the JDK sends it from the caller's buffer) failed with
        // OutOfMemoryError in a 512 MiB heap, through the Socket stream and a blocking SocketChannel with a direct buffer.
        run("large-socket-writes-are-sent-in-frames-as-they-are-encoded", () -> {
            byte[] block = new byte[1 << 20];
            new Random(10).nextBytes(block);
            int size = 256 << 20;
            java.util.zip.CRC32 want = new java.util.zip.CRC32();
            for (int i = 0; i < size / block.length; i++) {
                want.update(block);
            }
            for (String how : new String[] {"stream", "channel-direct"}) {
                try (java.nio.channels.ServerSocketChannel ss = java.nio.channels.ServerSocketChannel.open()) {
                    ss.setOption(java.net.StandardSocketOptions.SO_REUSEADDR, true);
                    ss.bind(new InetSocketAddress(LO, port));
                    try (SocketChannel c = SocketChannel.open(new InetSocketAddress(LO, port)); SocketChannel s = ss.accept()) {
                        AtomicReference<Throwable> err = new AtomicReference<>();
                        long[] got = {0, 0};
                        Thread reader = new Thread(() -> {
                            java.util.zip.CRC32 crc = new java.util.zip.CRC32();
                            ByteBuffer bb = ByteBuffer.allocate(1 << 20);
                            try {
                                while (got[0] < size) {
                                    bb.clear();
                                    int n = s.read(bb);
                                    if (n < 0) {
                                        break;
                                    }
                                    crc.update(bb.array(), 0, n);
                                    got[0] += n;
                                }
                            } catch (Throwable t) {
                                err.compareAndSet(null, t);
                            }
                            got[1] = crc.getValue();
                        });
                        reader.start();
                        try {
                            if (how.equals("stream")) {
                                byte[] d = new byte[size];
                                for (int i = 0; i < size; i += block.length) {
                                    System.arraycopy(block, 0, d, i, block.length);
                                }
                                c.socket().getOutputStream().write(d);
                            } else {
                                ByteBuffer d = ByteBuffer.allocateDirect(size);
                                while (d.hasRemaining()) {
                                    d.put(block);
                                }
                                d.flip();
                                while (d.hasRemaining()) {
                                    c.write(d);
                                }
                            }
                        } catch (Throwable t) {
                            err.compareAndSet(null, t);
                            c.close();
                        }
                        reader.join();
                        if (err.get() != null || got[0] != size || got[1] != want.getValue()) {
                            System.out.println(how + ": " + err.get() + ", read " + got[0] + " of " + size + " bytes");
                            return false;
                        }
                    }
                }
                System.gc();
            }
            return true;
        });

        // Last (it may exhaust the heap on the code before the fix): every frame header made the reader allocate the
        // whole frame (up to 64 MiB) before any of it arrived, so a few connections of a peer that sends only headers
        // exhausted the heap of the server (OutOfMemoryError in its reader threads).
        run("frame-headers-alone-do-not-allocate-whole-frames", () -> {
            int n = 16;
            try (ServerSocket ss = new ServerSocket()) {
                ss.setReuseAddress(true);
                ss.bind(new InetSocketAddress(LO, port), 64);
                Process py = rawPeer(port, n, "04000000" + "00".repeat(16)); // 64 MiB frames, 16 bytes of each
                List<Socket> accepted = new ArrayList<>();
                List<Thread> readers = new ArrayList<>();
                AtomicReference<Throwable> bad = new AtomicReference<>();
                try {
                    for (int i = 0; i < n; i++) {
                        Socket s = ss.accept();
                        s.setSoTimeout(3000);
                        accepted.add(s);
                        Thread t = new Thread(() -> {
                            try {
                                InputStream in = s.getInputStream();
                                in.read(new byte[100]);
                            } catch (SocketTimeoutException expected) {
                                // the rest of the frame never comes
                            } catch (Throwable e) {
                                bad.compareAndSet(null, e);
                            }
                        });
                        t.start();
                        readers.add(t);
                    }
                    for (Thread t : readers) {
                        t.join();
                    }
                } finally {
                    py.getOutputStream().close();
                    py.waitFor();
                    for (Socket s : accepted) {
                        s.close();
                    }
                }
                if (bad.get() != null) {
                    System.out.println("a reader failed: " + bad.get());
                    return false;
                }
                return true;
            }
        });
    }
}
