package io.exalt.agent;

import io.exalt.tardis.TardisGenerator;
import java.io.File;
import java.io.FileOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.RandomAccessFile;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Runs inside a child JVM started with the agent (see {@link AgentReviewIT}): cases found in review, each printed
 * as {@code OK name} or {@code FAIL name: reason} (via {@link ChildHostile#run}).
 * Arguments: {@code DIR OUTSIDE PORT} (DIR is under the agent's prefix, PORT is a compressed port).
 */
public final class ChildReview {
    static final int RECORD = 4096;
    static final int RECORDS_PER_WRITER = 200;

    /** One record: a 16-byte header naming it, then Tardis data (compressed by the agent). */
    static byte[] record(int id) {
        byte[] r = new byte[RECORD];
        new TardisGenerator(1 << 20).fill(0, r, 0, RECORD);
        for (int i = 0; i < 16; i += 4) {
            r[i] = (byte) (id >>> 24);
            r[i + 1] = (byte) (id >>> 16);
            r[i + 2] = (byte) (id >>> 8);
            r[i + 3] = (byte) id;
        }
        return r;
    }

    /** True if {@code f} holds exactly the records {@code t * 1000 + i} of every writer, each whole, in any order. */
    static boolean allRecordsOnce(File f, int writers) throws Exception {
        byte[] got = Files.readAllBytes(f.toPath());
        if (got.length != writers * RECORDS_PER_WRITER * RECORD) {
            System.out.println(f.getName() + ": size " + got.length + ", expected " + writers * RECORDS_PER_WRITER * RECORD);
            return false;
        }
        BitSet seen = new BitSet();
        for (int p = 0; p < got.length; p += RECORD) {
            int id = ((got[p] & 0xFF) << 24) | ((got[p + 1] & 0xFF) << 16) | ((got[p + 2] & 0xFF) << 8) | (got[p + 3] & 0xFF);
            if (id < 0 || id % 1000 >= RECORDS_PER_WRITER || id / 1000 >= writers
                    || !Arrays.equals(got, p, p + RECORD, record(id), 0, RECORD) || seen.get(id)) {
                System.out.println(f.getName() + ": bad or repeated record at " + p);
                return false;
            }
            seen.set(id);
        }
        return true;
    }

    interface Writer {
        void write(int thread, int i) throws Exception;
    }

    /** Runs {@code writers} threads that start together, each writing its records. */
    static void concurrently(int writers, Writer w) throws Exception {
        ExecutorService ex = Executors.newFixedThreadPool(writers);
        CyclicBarrier start = new CyclicBarrier(writers);
        List<Future<?>> fs = new ArrayList<>();
        for (int t = 0; t < writers; t++) {
            int tt = t;
            fs.add(ex.submit(() -> {
                start.await();
                for (int i = 0; i < RECORDS_PER_WRITER; i++) {
                    w.write(tt, i);
                }
                return null;
            }));
        }
        for (Future<?> x : fs) {
            x.get();
        }
        ex.shutdown();
    }

    static byte[] bytes(java.nio.MappedByteBuffer m, int at, int n) {
        byte[] b = new byte[n];
        m.get(at, b);
        return b;
    }

    /** Bytes the file system allocated for {@code f} (stat %b x 512). */
    static long allocatedBytes(File f) throws Exception {
        Process p = new ProcessBuilder("stat", "-c", "%b", f.getPath()).start();
        String out = new String(p.getInputStream().readAllBytes()).trim();
        p.waitFor();
        return Long.parseLong(out) * 512;
    }

    /** Waits (like Hadoop's SocketIOWithTimeout) until the channel is ready for {@code op}, at most 60 s. */
    static void await(java.nio.channels.SocketChannel ch, int op) throws Exception {
        try (java.nio.channels.Selector sel = java.nio.channels.Selector.open()) {
            java.nio.channels.SelectionKey k = ch.register(sel, op);
            if (sel.select(60_000) == 0) {
                throw new java.net.SocketTimeoutException("not ready for " + op + " in 60 s");
            }
            k.cancel();
            sel.selectNow();
        }
    }

    /**
     * A non-blocking writer that gets partial writes, with a peer that reads only when told to. Checks the four
     * ways the rest of a frame the agent holds (its frame is committed, the application was told it was written)
     * must still reach the peer: (1) the writer stops writing and waits for a reply (the agent's flusher), (2) the
     * writer switches to blocking mode, (3) the writer closes right after its last write, and in between (4) the
     * writer's own select/retry loop. The peer receives exactly the bytes the writes reported, in order.
     */
    static boolean nonBlockingPartialFramesArrive(int port) throws Exception {
        Random rnd = new Random(11);
        byte[] tardis = new byte[8 << 20];
        new TardisGenerator(1L << 30).fill(0, tardis, 0, tardis.length);
        Digest sent = new Digest();
        Digest got = new Digest();
        java.util.concurrent.Semaphore readGate = new java.util.concurrent.Semaphore(0);
        java.util.concurrent.atomic.AtomicLong toRead = new java.util.concurrent.atomic.AtomicLong();
        try (java.nio.channels.ServerSocketChannel ssc = java.nio.channels.ServerSocketChannel.open()) {
            ssc.bind(new java.net.InetSocketAddress(InetAddress.getLoopbackAddress(), port));
            java.nio.channels.SocketChannel w = java.nio.channels.SocketChannel.open(ssc.getLocalAddress());
            java.nio.channels.SocketChannel peer = ssc.accept();
            Thread reader = new Thread(() -> {
                try {
                    ByteBuffer buf = ByteBuffer.allocate(1 << 16);
                    // phase 1: read exactly what the writer reported, then reply one byte
                    readGate.acquire();
                    long need = toRead.get();
                    while (need > 0) {
                        buf.clear().limit((int) Math.min(buf.capacity(), need));
                        int r = peer.read(buf);
                        if (r < 0) {
                            throw new java.io.EOFException("phase 1: end of stream with " + need + " bytes missing");
                        }
                        got.write(buf.array(), 0, r);
                        need -= r;
                    }
                    peer.write(ByteBuffer.wrap(new byte[] {42}));
                    // phase 2: read everything until the writer closes
                    readGate.acquire();
                    for (int r; (r = peer.read(buf.clear())) >= 0;) {
                        got.write(buf.array(), 0, r);
                    }
                    peer.close();
                } catch (Exception e) {
                    System.out.println("reader: " + e);
                }
            });
            reader.setDaemon(true);
            reader.start();
            w.configureBlocking(false);
            // (1) write until a write returns 0: part of a frame is now held by the agent; then wait for a reply only
            int zeros = 0;
            for (int i = 0; zeros == 0; i++) {
                byte[] chunk = chunk(rnd, tardis, i);
                ByteBuffer bb = ByteBuffer.wrap(chunk);
                int n = w.write(bb);
                sent.write(chunk, 0, n);
                zeros += n == 0 ? 1 : 0;
            }
            toRead.set(sent.size());
            readGate.release();
            await(w, java.nio.channels.SelectionKey.OP_READ);
            ByteBuffer reply = ByteBuffer.allocate(1);
            if (w.read(reply) != 1 || reply.get(0) != 42) {
                System.out.println("no reply after phase 1");
                return false;
            }
            boolean phase1 = got.equals(sent);
            System.out.println("phase 1 (writer waits for a reply, the agent's flusher sends the rest): " + sent.size()
                    + " bytes, received " + (phase1 ? "exactly" : "DIFFERENT bytes"));
            // (2) the peer does not read again yet: fill the buffers until a write returns 0, switch to blocking mode
            zeros = 0;
            for (int i = 100; zeros == 0; i++) {
                byte[] chunk = chunk(rnd, tardis, i);
                int n = w.write(ByteBuffer.wrap(chunk));
                sent.write(chunk, 0, n);
                zeros += n == 0 ? 1 : 0;
            }
            readGate.release();
            w.configureBlocking(true);
            byte[] c = chunk(rnd, tardis, 7);
            w.write(ByteBuffer.wrap(c));
            sent.write(c, 0, c.length);
            // (4) back to non-blocking with a select/retry loop, then (3) close right after the last write
            w.configureBlocking(false);
            for (int i = 200; i < 208; i++) {
                byte[] chunk = chunk(rnd, tardis, i);
                ByteBuffer bb = ByteBuffer.wrap(chunk);
                while (bb.hasRemaining()) {
                    if (w.write(bb) == 0) {
                        await(w, java.nio.channels.SelectionKey.OP_WRITE);
                    }
                }
                sent.write(chunk, 0, chunk.length);
            }
            w.close();
            reader.join(60_000);
            boolean all = got.equals(sent);
            System.out.println("phases 2-4 (blocking switch, select loop, close after the last write): " + sent.size()
                    + " bytes sent, " + got.size() + " received, " + (all ? "identical" : "DIFFERENT"));
            return phase1 && all;
        }
    }

    /** Count and SHA-256 of a byte stream (the test streams are too large to keep). */
    static final class Digest {
        final java.security.MessageDigest md;
        long size;

        Digest() throws Exception {
            md = java.security.MessageDigest.getInstance("SHA-256");
        }

        synchronized void write(byte[] b, int off, int n) {
            md.update(b, off, n);
            size += n;
        }

        synchronized long size() {
            return size;
        }

        synchronized boolean equals(Digest o) throws Exception {
            return size == o.size() && Arrays.equals(((java.security.MessageDigest) md.clone()).digest(), o.hash());
        }

        synchronized byte[] hash() throws Exception {
            return ((java.security.MessageDigest) md.clone()).digest();
        }
    }

    /** 1-4 MiB: random bytes (incompressible, fills the kernel buffers) or Tardis data with a random header. */
    static byte[] chunk(Random rnd, byte[] tardis, int i) {
        byte[] c = new byte[(1 + rnd.nextInt(4)) << 20];
        if (i % 2 == 0) {
            rnd.nextBytes(c);
        } else {
            int at = rnd.nextInt(tardis.length - c.length);
            System.arraycopy(tardis, at, c, 0, c.length);
            for (int k = 0; k < 100; k++) {
                c[k] = (byte) rnd.nextInt();
            }
        }
        return c;
    }

    public static void main(String[] a) throws Exception {
        File dir = new File(a[0]);
        File outside = new File(a[1]);
        int port = Integer.parseInt(a[2]);
        // a non-blocking writer whose peer stops reading: SocketChannel.write must return (partially), so that the
        // application's own select/timeout logic (Hadoop's SocketIOWithTimeout, dfs.datanode.socket.write.timeout) runs
        if (a.length > 3 && a[3].equals("nonblocking-writer")) {
            ChildHostile.run("nonblocking-writer-peer-not-reading", () -> {
                try (java.nio.channels.ServerSocketChannel ssc = java.nio.channels.ServerSocketChannel.open()) {
                    ssc.bind(new java.net.InetSocketAddress(InetAddress.getLoopbackAddress(), port));
                    java.nio.channels.SocketChannel w = java.nio.channels.SocketChannel.open(ssc.getLocalAddress());
                    java.nio.channels.SocketChannel peer = ssc.accept(); // never reads
                    w.configureBlocking(false);
                    byte[] d = new byte[32 << 20];
                    new Random(3).nextBytes(d);
                    long[] written = {0, -1};
                    Thread th = new Thread(() -> {
                        try {
                            // write until the kernel buffers are full: a write returns 0 instead of waiting
                            ByteBuffer rest = ByteBuffer.wrap(d);
                            for (int n; rest.hasRemaining() && (n = w.write(rest)) > 0;) {
                                written[0] += n;
                            }
                            // every later write must return 0 too (its pending frame bytes do not fit)
                            long more = 0;
                            for (int i = 0; i < 50; i++) {
                                more += w.write(rest);
                            }
                            written[1] = more;
                        } catch (Exception e) {
                            System.out.println("writer: " + e);
                        }
                    });
                    th.setDaemon(true);
                    th.start();
                    th.join(10_000);
                    boolean returned = !th.isAlive();
                    System.out.println("non-blocking write of 32 MiB to a peer that does not read: "
                            + (returned ? "took " + written[0] + " bytes, then 50 more writes took " + written[1]
                                    : "still blocked after 10 s"));
                    peer.close(); // unblocks the writer; its pending bytes fail fast (connection reset), close() does not wait
                    w.close();
                    return returned && written[0] > 0 && written[0] < d.length && written[1] == 0;
                }
            });
            ChildHostile.run("nonblocking-partial-frames-arrive", () -> nonBlockingPartialFramesArrive(port));
            System.exit(0);
        }
        byte[] t = new byte[ChildHostile.MIB];
        new TardisGenerator(ChildHostile.MIB).fill(0, t, 0, t.length);

        // four appenders (O_APPEND): each native write lands at the end of file, none over another
        ChildHostile.run("concurrent-appenders", () -> {
            File f = new File(dir, "appenders");
            FileOutputStream[] outs = new FileOutputStream[4];
            for (int i = 0; i < outs.length; i++) {
                outs[i] = new FileOutputStream(f, true);
            }
            concurrently(outs.length, (th, i) -> outs[th].write(record(th * 1000 + i)));
            for (FileOutputStream o : outs) {
                o.close();
            }
            return allRecordsOnce(f, outs.length);
        });
        // Files.write(APPEND) from four threads: the same through channels
        ChildHostile.run("concurrent-files-write-append", () -> {
            Path f = new File(dir, "files-append").toPath();
            Files.createFile(f);
            concurrently(4, (th, i) -> Files.write(f, record(th * 1000 + i), StandardOpenOption.APPEND));
            return allRecordsOnce(f.toFile(), 4);
        });
        // one FileChannel shared by two threads: FileChannel.write is atomic with respect to the position
        ChildHostile.run("shared-channel-two-writers", () -> {
            File f = new File(dir, "shared-channel");
            try (FileChannel ch = FileChannel.open(f.toPath(), StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
                concurrently(2, (th, i) -> ch.write(ByteBuffer.wrap(record(th * 1000 + i))));
            }
            return allRecordsOnce(f, 2);
        });
        // one FileOutputStream shared by two threads (as a log shared by threads): each write() is one native write
        ChildHostile.run("shared-stream-two-writers", () -> {
            File f = new File(dir, "shared-stream");
            try (FileOutputStream o = new FileOutputStream(f)) {
                concurrently(2, (th, i) -> o.write(record(th * 1000 + i)));
            }
            return allRecordsOnce(f, 2);
        });
        // a rename through a symlinked directory while the file is open: later index updates must still be saved
        ChildHostile.run("rename-through-symlinked-dir", () -> {
            Path link = Files.createSymbolicLink(new File(outside, "dir-link-rename").toPath(), dir.toPath());
            File f = link.resolve("before-rename").toFile();
            try (RandomAccessFile r = new RandomAccessFile(f, "rw")) {
                r.write(t, 0, t.length / 2);
                if (!f.renameTo(link.resolve("after-rename").toFile())) {
                    throw new AssertionError("rename failed");
                }
                r.write(t, t.length / 2, t.length / 2);
                r.seek(1000);
                r.write("HELLO".getBytes()); // an in-place change over a run: only the index knows it
            }
            byte[] exp = t.clone();
            System.arraycopy("HELLO".getBytes(), 0, exp, 1000, 5);
            return Arrays.equals(Files.readAllBytes(new File(dir, "after-rename").toPath()), exp);
        });
        // renames the agent cannot see while the file is open: the file system provider directly, and another process
        ChildHostile.run("unhooked-rename-provider-move", () -> {
            File f = new File(dir, "provider-before");
            try (RandomAccessFile r = new RandomAccessFile(f, "rw")) {
                r.write(t, 0, t.length / 2);
                java.nio.file.FileSystems.getDefault().provider().move(f.toPath(), new File(dir, "provider-after").toPath());
                r.write(t, t.length / 2, t.length / 2);
                r.seek(1000);
                r.write("HELLO".getBytes());
            }
            byte[] exp = t.clone();
            System.arraycopy("HELLO".getBytes(), 0, exp, 1000, 5);
            return Arrays.equals(Files.readAllBytes(new File(dir, "provider-after").toPath()), exp);
        });
        ChildHostile.run("unhooked-rename-other-process", () -> {
            File f = new File(dir, "mv-before");
            File g = new File(dir, "mv-after");
            try (RandomAccessFile r = new RandomAccessFile(f, "rw")) {
                r.write(t, 0, t.length / 2);
                if (new ProcessBuilder("mv", f.getPath(), g.getPath()).inheritIO().start().waitFor() != 0) {
                    throw new AssertionError("mv failed");
                }
                r.write(t, t.length / 2, t.length / 2);
            }
            return Arrays.equals(Files.readAllBytes(g.toPath()), t);
        });
        // read-only open, renamed by another process, a new file created under the old name, then the renamed file
        // opened for writing: the agent re-opened "its" file read-write by the old name, i.e. the new file
        ChildHostile.run("reopen-after-unhooked-rename", () -> {
            File f = new File(dir, "reopen-before");
            File g = new File(dir, "reopen-after");
            try (FileOutputStream o = new FileOutputStream(f)) {
                o.write(t);
            }
            try (java.io.FileInputStream in = new java.io.FileInputStream(f)) {
                if (new ProcessBuilder("mv", f.getPath(), g.getPath()).inheritIO().start().waitFor() != 0) {
                    throw new AssertionError("mv failed");
                }
                try (FileOutputStream o = new FileOutputStream(f)) {
                    o.write("a new file under the old name".getBytes());
                }
                try (FileOutputStream o = new FileOutputStream(g, true)) {
                    o.write(t, 0, 4096);
                }
            }
            byte[] exp = Arrays.copyOf(t, t.length + 4096);
            System.arraycopy(t, 0, exp, t.length, 4096);
            return Arrays.equals(Files.readAllBytes(g.toPath()), exp)
                    && Arrays.equals(Files.readAllBytes(f.toPath()), "a new file under the old name".getBytes());
        });
        // ".." after a symlink: the kernel resolves it from the link's target, so this path names a file in DIR
        ChildHostile.run("dotdot-after-symlink", () -> {
            File f = new File(dir, "dotdot");
            try (FileOutputStream o = new FileOutputStream(f)) {
                o.write(t);
            }
            Files.createDirectories(dir.toPath().resolve("sub"));
            Path link = Files.createSymbolicLink(new File(outside, "sub-link").toPath(), dir.toPath().resolve("sub"));
            Path via = Paths.get(link + "/../dotdot");
            boolean readVia = Arrays.equals(Files.readAllBytes(via), t);
            try (RandomAccessFile r = new RandomAccessFile(via.toFile(), "rw")) {
                r.seek(100);
                r.write("XYZ".getBytes());
            }
            byte[] exp = t.clone();
            System.arraycopy("XYZ".getBytes(), 0, exp, 100, 3);
            return readVia && Arrays.equals(Files.readAllBytes(via), exp) && Arrays.equals(Files.readAllBytes(f.toPath()), exp);
        });
        // one write larger than the 64 MiB frame limit of the reader, of bytes that do not compress
        ChildHostile.run("socket-write-over-64mib", () -> {
            byte[] d = new byte[72 << 20];
            new Random(7).nextBytes(d);
            try (ServerSocket ss = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
                Thread w = new Thread(() -> {
                    try (Socket s = new Socket(InetAddress.getLoopbackAddress(), port); OutputStream o = s.getOutputStream()) {
                        o.write(d);
                    } catch (Exception e) {
                        System.out.println("writer: " + e);
                    }
                });
                w.start();
                byte[] got;
                try (Socket s = ss.accept(); InputStream in = s.getInputStream()) {
                    got = in.readAllBytes();
                }
                w.join();
                return Arrays.equals(got, d);
            }
        });
        // available() of a compressed socket stream: a reader that polls it must see data arrive, and after a partial
        // read it must count the bytes already received (plain Socket and the stream of a channel socket)
        for (boolean channel : new boolean[] {false, true}) {
            ChildHostile.run(channel ? "channel-socket-available" : "socket-available", () -> {
                byte[] d = new byte[100];
                System.arraycopy(t, 0, d, 0, 100);
                java.nio.channels.ServerSocketChannel ssc = channel ? java.nio.channels.ServerSocketChannel.open() : null;
                ServerSocket ss = channel ? null : new ServerSocket(port, 1, InetAddress.getLoopbackAddress());
                if (channel) {
                    ssc.bind(new java.net.InetSocketAddress(InetAddress.getLoopbackAddress(), port));
                }
                try (Socket w = new Socket(InetAddress.getLoopbackAddress(), port);
                        Socket s = channel ? ssc.accept().socket() : ss.accept()) {
                    w.getOutputStream().write(d);
                    InputStream in = s.getInputStream();
                    long deadline = System.nanoTime() + 5_000_000_000L;
                    while (in.available() == 0) {
                        if (System.nanoTime() > deadline) {
                            System.out.println("available() stayed 0 for 5 s with 100 bytes sent");
                            return false;
                        }
                        Thread.sleep(5);
                    }
                    byte[] got = new byte[100];
                    if (in.read(got, 0, 10) != 10) {
                        return false;
                    }
                    int avail = in.available();
                    if (avail != 90) {
                        System.out.println("available() after reading 10 of 100 bytes: " + avail);
                        return false;
                    }
                    return in.readNBytes(got, 10, 90) == 90 && Arrays.equals(got, d);
                } finally {
                    if (ss != null) {
                        ss.close();
                    }
                    if (ssc != null) {
                        ssc.close();
                    }
                }
            });
        }
        // a hard link outside the prefix names the same emulated inode
        ChildHostile.run("hardlink-outside-prefix", () -> {
            File f = new File(dir, "hardlinked");
            try (FileOutputStream o = new FileOutputStream(f)) {
                o.write(t);
            }
            Path hl = Files.createLink(new File(outside, "hardlink").toPath(), f.toPath());
            return Arrays.equals(Files.readAllBytes(hl), t);
        });
        // renamed out of every prefix: the holes and the index travel with the inode, so must the emulation
        ChildHostile.run("renamed-out-of-prefix", () -> {
            File f = new File(dir, "leaving");
            try (FileOutputStream o = new FileOutputStream(f)) {
                o.write(t);
            }
            File g = new File(outside, "left");
            if (!f.renameTo(g)) {
                throw new AssertionError("rename failed");
            }
            return Arrays.equals(Files.readAllBytes(g.toPath()), t);
        });
        // Files.move to another file system (/dev/shm): the JDK copies the holes and the extended attributes
        ChildHostile.run("moved-to-another-file-system", () -> {
            Path shm = Paths.get("/dev/shm");
            if (!Files.isDirectory(shm) || Files.getFileStore(shm).equals(Files.getFileStore(dir.toPath()))) {
                System.out.println("no second file system at /dev/shm: case not applicable");
                return true;
            }
            File f = new File(dir, "moving");
            try (FileOutputStream o = new FileOutputStream(f)) {
                o.write(t);
            }
            Path g = Files.createTempDirectory(shm, "exalt-review").resolve("moved");
            try {
                Files.move(f.toPath(), g);
                return Arrays.equals(Files.readAllBytes(g), t);
            } finally {
                Files.deleteIfExists(g);
                Files.deleteIfExists(g.getParent());
            }
        });
        // a read-only mapping is MAP_SHARED: a later write through the channel is visible through it
        ChildHostile.run("readonly-map-sees-later-writes", () -> {
            File f = new File(dir, "mapped");
            try (FileOutputStream o = new FileOutputStream(f)) {
                o.write(t);
            }
            byte[] other = new byte[1 << 16]; // Tardis bytes of another position: a run, and different from t there
            new TardisGenerator(1L << 30).fill(12345, other, 0, other.length);
            try (FileChannel ch = FileChannel.open(f.toPath(), StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                java.nio.MappedByteBuffer m = ch.map(FileChannel.MapMode.READ_ONLY, 0, t.length);
                boolean before = Arrays.equals(bytes(m, 0, t.length), t);
                ch.write(ByteBuffer.wrap("HELLO".getBytes()), 1000);
                byte[] got = bytes(m, 1000, 5);
                System.out.println("read-only mapping after a channel write shows: " + new String(got, "ISO-8859-1"));
                ch.write(ByteBuffer.wrap(other), 4096);
                try (RandomAccessFile r = new RandomAccessFile(f, "rw")) { // another handle on the same file
                    r.seek(200_000);
                    r.write(other);
                }
                boolean tardisShows = Arrays.equals(bytes(m, 4096, other.length), other)
                        && Arrays.equals(bytes(m, 200_000, other.length), other);
                System.out.println("read-only mapping shows later Tardis writes (channel, RandomAccessFile): " + tardisShows);
                byte[] exp = t.clone();
                System.arraycopy("HELLO".getBytes(), 0, exp, 1000, 5);
                System.arraycopy(other, 0, exp, 4096, other.length);
                System.arraycopy(other, 0, exp, 200_000, other.length);
                return before && Arrays.equals(got, "HELLO".getBytes()) && tardisShows
                        && Arrays.equals(Files.readAllBytes(f.toPath()), exp) && Arrays.equals(bytes(m, 0, t.length), exp);
            }
        });
        // a read-write mapping: later Tardis writes through the channel went into the index, the mapping kept old bytes
        ChildHostile.run("readwrite-map-sees-later-tardis-writes", () -> {
            File f = new File(dir, "mapped-rw");
            try (FileOutputStream o = new FileOutputStream(f)) {
                o.write(t);
            }
            byte[] other = new byte[1 << 16];
            new TardisGenerator(1L << 30).fill(777, other, 0, other.length);
            try (FileChannel ch = FileChannel.open(f.toPath(), StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                java.nio.MappedByteBuffer m = ch.map(FileChannel.MapMode.READ_WRITE, 0, t.length);
                ch.write(ByteBuffer.wrap(other), 8192);
                boolean shows = Arrays.equals(bytes(m, 8192, other.length), other);
                m.put(50_000, (byte) 7); // a write through the mapping shows in reads
                byte[] one = new byte[1];
                ch.read(ByteBuffer.wrap(one), 50_000);
                System.out.println("read-write mapping shows a later Tardis channel write: " + shows + "; a read sees the"
                        + " mapping's write: " + (one[0] == 7));
                byte[] exp = t.clone();
                System.arraycopy(other, 0, exp, 8192, other.length);
                exp[50_000] = 7;
                return shows && one[0] == 7 && Arrays.equals(bytes(m, 0, t.length), exp)
                        && Arrays.equals(Files.readAllBytes(f.toPath()), exp);
            }
        });
        // outside a live mapping writes compress again: the mapped range is the only one left uncompressed
        ChildHostile.run("map-keeps-other-ranges-compressed", () -> {
            File f = new File(dir, "mapped-part");
            try (FileOutputStream o = new FileOutputStream(f)) {
                o.write(t);
            }
            try (FileChannel ch = FileChannel.open(f.toPath(), StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                java.nio.MappedByteBuffer m = ch.map(FileChannel.MapMode.READ_ONLY, 0, 4096);
                ch.write(ByteBuffer.wrap(t), t.length); // append 1 MiB of Tardis data after the mapped range
                long blocks = allocatedBytes(f);
                System.out.println("mapped 4 KiB of a 2 MiB Tardis file: " + blocks + " bytes allocated on disk");
                return m.get(0) == t[0] && blocks < 256 << 10 && Arrays.equals(Arrays.copyOfRange(
                        Files.readAllBytes(f.toPath()), t.length, 2 * t.length), t);
            }
        });
        System.exit(0);
    }
}
