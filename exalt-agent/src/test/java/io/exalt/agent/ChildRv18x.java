package io.exalt.agent;

import static io.exalt.agent.ChildHostile.run;

import io.exalt.tardis.TardisGenerator;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.Random;

/**
 * Runs inside a child JVM started with the agent (see {@link AgentRv18xIT}): review rv18x findings, each printed as
 * {@code OK name} or {@code FAIL name: reason}. Arguments: {@code DIR OUTSIDE PORT} (DIR under the prefix, PORT
 * compressed). Needs {@code --add-opens java.base/java.io=ALL-UNNAMED} (descriptor numbers).
 */
public final class ChildRv18x {
    static byte[] tardis(int n) {
        byte[] d = new byte[n];
        new TardisGenerator(1L << 30).fill(0, d, 0, n);
        return d;
    }

    static final TardisGenerator GEN = new TardisGenerator(1L << 32);

    /**
     * Seeded model check through the real agent: RandomAccessFile, FileChannel (heap, direct, gathering, positional),
     * an append-mode FileOutputStream and single-byte writes of Tardis slices at any phase, the Tardis bytes of their
     * own offset with a few mutated, metadata; hooked truncations, read-write mappings written through, transferFrom,
     * re-opens of every handle; reads of random ranges through three APIs, compared with a plain array.
     */
    static boolean fileFuzz(File dir, int seeds) throws Exception {
        for (int seed = 0; seed < seeds; seed++) {
            Random r = new Random(seed);
            File f = new File(dir, "fuzz" + seed);
            Path p = f.toPath();
            byte[][] model = {new byte[0]};
            java.util.function.BiConsumer<Long, byte[]> put = (pos, d) -> {
                if (pos + d.length > model[0].length) {
                    model[0] = Arrays.copyOf(model[0], (int) (pos + d.length));
                }
                System.arraycopy(d, 0, model[0], (int) (long) pos, d.length);
            };
            RandomAccessFile raf = new RandomAccessFile(f, "rw");
            FileChannel ch = FileChannel.open(p, StandardOpenOption.READ, StandardOpenOption.WRITE);
            FileOutputStream app = new FileOutputStream(f, true);
            java.util.List<java.nio.MappedByteBuffer> maps = new java.util.ArrayList<>();
            for (int op = 0; op < 400; op++) {
                int kind = r.nextInt(14);
                String what = "seed " + seed + " op " + op + " kind " + kind;
                int size = model[0].length;
                long pos = r.nextInt(4) == 0 ? size : r.nextInt(size + 50);
                byte[] d;
                switch (r.nextInt(5)) {
                    case 0:
                    case 1:
                        d = new byte[1 + r.nextInt(r.nextBoolean() ? 30 : 20_000)];
                        GEN.fill(r.nextInt(1 << 20), d, 0, d.length);
                        break;
                    case 2:
                        d = new byte[1 + r.nextInt(5000)];
                        GEN.fill(pos, d, 0, d.length);
                        for (int i = r.nextInt(3); i > 0; i--) {
                            d[r.nextInt(d.length)] ^= (byte) (1 + r.nextInt(255));
                        }
                        break;
                    case 3:
                        d = new byte[1 + r.nextInt(40)];
                        r.nextBytes(d);
                        break;
                    default:
                        d = new byte[1 + r.nextInt(13)];
                        GEN.fill(pos, d, 0, d.length);
                }
                switch (kind) {
                    case 0:
                        raf.seek(pos);
                        raf.write(d);
                        put.accept(pos, d);
                        break;
                    case 1:
                        ch.write(ByteBuffer.wrap(d), pos);
                        put.accept(pos, d);
                        break;
                    case 2: {
                        ByteBuffer bb = ByteBuffer.allocateDirect(d.length);
                        bb.put(d).flip();
                        ch.position(pos);
                        ch.write(bb);
                        put.accept(pos, d);
                        break;
                    }
                    case 3:
                        app.write(d);
                        put.accept((long) model[0].length, d);
                        break;
                    case 4: {
                        int k = r.nextInt(d.length + 1);
                        ch.position(pos);
                        ch.write(new ByteBuffer[] {ByteBuffer.wrap(d, 0, k), ByteBuffer.wrap(d, k, d.length - k)});
                        put.accept(pos, d);
                        break;
                    }
                    case 5: {
                        int n = model[0].length == 0 ? 0 : r.nextInt(model[0].length + 1);
                        ch.truncate(n);
                        model[0] = Arrays.copyOf(model[0], Math.min(n, model[0].length));
                        break;
                    }
                    case 6:
                        if (model[0].length > 0 && r.nextInt(4) == 0) {
                            int a0 = r.nextInt(model[0].length);
                            int n = 1 + r.nextInt(Math.min(model[0].length - a0, 9000));
                            java.nio.MappedByteBuffer m = ch.map(FileChannel.MapMode.READ_WRITE, a0, n);
                            if (r.nextBoolean()) {
                                byte[] x = new byte[1 + r.nextInt(n)];
                                r.nextBytes(x);
                                int at = r.nextInt(n - x.length + 1);
                                m.put(at, x);
                                put.accept((long) a0 + at, x);
                            }
                            maps.add(m);
                        }
                        break;
                    case 7:
                        if (!maps.isEmpty() && r.nextBoolean()) {
                            maps.remove(0);
                            System.gc();
                        }
                        break;
                    case 8: { // transferFrom a plain file (beyond the end: nothing, as the JDK)
                        File src = new File(dir.getParentFile(), "fuzz-src-" + seed);
                        Files.write(src.toPath(), d);
                        try (FileChannel sc = FileChannel.open(src.toPath())) {
                            ch.transferFrom(sc, pos, d.length);
                        }
                        if (pos <= model[0].length) {
                            put.accept(pos, d);
                        }
                        break;
                    }
                    case 9:
                        raf.close();
                        ch.close();
                        app.close();
                        raf = new RandomAccessFile(f, "rw");
                        ch = FileChannel.open(p, StandardOpenOption.READ, StandardOpenOption.WRITE);
                        app = new FileOutputStream(f, true);
                        break;
                    case 10: {
                        byte[] few = Arrays.copyOf(d, Math.min(d.length, 30));
                        raf.seek(pos);
                        for (byte b : few) {
                            raf.write(b);
                        }
                        put.accept(pos, few);
                        break;
                    }
                    default: {
                        if (model[0].length == 0) {
                            break;
                        }
                        int a0 = r.nextInt(model[0].length);
                        int n = 1 + r.nextInt(Math.min(model[0].length - a0, 30_000));
                        byte[] got = new byte[n];
                        int how = r.nextInt(3);
                        if (how == 0) {
                            raf.seek(a0);
                            raf.readFully(got);
                        } else {
                            ByteBuffer bb = how == 1 ? ByteBuffer.wrap(got) : ByteBuffer.allocateDirect(n);
                            while (bb.hasRemaining() && ch.read(bb, a0 + bb.position()) >= 0) {
                                // until full
                            }
                            if (how == 2) {
                                bb.flip().get(got);
                            }
                        }
                        if (!Arrays.equals(got, 0, n, model[0], a0, a0 + n)) {
                            System.out.println("file fuzz: " + what + " read [" + a0 + ", " + (a0 + n) + ") differs at "
                                    + (a0 + Arrays.mismatch(got, 0, n, model[0], a0, a0 + n)));
                            return false;
                        }
                    }
                }
                if (ch.size() != model[0].length) {
                    System.out.println("file fuzz: " + what + " size " + ch.size() + ", expected " + model[0].length);
                    return false;
                }
            }
            raf.close();
            ch.close();
            app.close();
            maps.clear();
            if (!Arrays.equals(Files.readAllBytes(p), model[0])) {
                System.out.println("file fuzz: seed " + seed + " differs after close");
                return false;
            }
        }
        return true;
    }

    /**
     * Socket writes at random sizes through the socket stream and blocking heap, direct and gathering channel writes,
     * and non-blocking writes with a select when they return 0, against reads at random sizes through the stream,
     * direct, scattering and single-byte reads, with small socket buffers; Tardis data with in-place mutations.
     */
    static boolean socketFuzz(int port, int seeds) throws Exception {
        for (int seed = 0; seed < seeds; seed++) {
            Random r = new Random(seed);
            byte[] data = new byte[4 << 20];
            GEN.fill(r.nextInt(1000), data, 0, data.length);
            for (int i = 0; i < 200; i++) {
                byte[] x = new byte[1 + r.nextInt(30)];
                r.nextBytes(x);
                System.arraycopy(x, 0, data, r.nextInt(data.length - 40), x.length);
            }
            try (ServerSocketChannel ss = ServerSocketChannel.open()) {
                ss.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
                SocketChannel c = SocketChannel.open(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
                SocketChannel s = ss.accept();
                if (r.nextBoolean()) {
                    c.setOption(StandardSocketOptions.SO_SNDBUF, 4096 + r.nextInt(60000));
                }
                if (r.nextBoolean()) {
                    s.setOption(StandardSocketOptions.SO_RCVBUF, 4096 + r.nextInt(60000));
                }
                Random wr = new Random(seed * 31L + 1);
                java.util.concurrent.atomic.AtomicReference<Exception> failed = new java.util.concurrent.atomic.AtomicReference<>();
                Thread w = new Thread(() -> {
                    try (java.nio.channels.Selector sel = java.nio.channels.Selector.open()) {
                        int p = 0;
                        while (p < data.length) {
                            int n = Math.min(data.length - p, 1 + wr.nextInt(wr.nextBoolean() ? 50 : 300_000));
                            int mode = wr.nextInt(5);
                            if (mode < 3) {
                                c.configureBlocking(true);
                            }
                            if (mode == 0) {
                                c.socket().getOutputStream().write(data, p, n);
                            } else if (mode == 1) {
                                ByteBuffer bb = ByteBuffer.allocateDirect(n);
                                bb.put(data, p, n).flip();
                                while (bb.hasRemaining()) {
                                    c.write(bb);
                                }
                            } else if (mode == 2) {
                                int k = wr.nextInt(n + 1);
                                ByteBuffer[] bs = {ByteBuffer.wrap(data, p, k), ByteBuffer.wrap(data, p + k, n - k)};
                                for (long t = 0; t < n;) {
                                    t += c.write(bs);
                                }
                            } else {
                                c.configureBlocking(false);
                                n = c.write(ByteBuffer.wrap(data, p, n));
                                if (n == 0) {
                                    java.nio.channels.SelectionKey key = c.register(sel, java.nio.channels.SelectionKey.OP_WRITE);
                                    sel.select(2000);
                                    key.cancel();
                                    sel.selectNow();
                                }
                            }
                            p += n;
                        }
                        if (wr.nextBoolean()) {
                            c.shutdownOutput();
                        }
                        c.close();
                    } catch (Exception e) {
                        failed.set(e);
                    }
                });
                w.start();
                ByteArrayOutputStream got = new ByteArrayOutputStream();
                Random rr = new Random(seed * 17L + 3);
                java.io.InputStream in = s.socket().getInputStream();
                for (int k = 0; k >= 0;) {
                    int n = 1 + rr.nextInt(rr.nextBoolean() ? 20 : 200_000);
                    switch (rr.nextInt(4)) {
                        case 0: {
                            byte[] b = new byte[n];
                            k = in.read(b);
                            got.write(b, 0, Math.max(k, 0));
                            break;
                        }
                        case 1: {
                            ByteBuffer bb = ByteBuffer.allocateDirect(n);
                            k = s.read(bb);
                            byte[] b = new byte[Math.max(k, 0)];
                            bb.flip().get(b);
                            got.write(b);
                            break;
                        }
                        case 2: {
                            int a0 = rr.nextInt(n + 1);
                            ByteBuffer[] bs = {ByteBuffer.allocate(a0), ByteBuffer.allocate(n - a0 + 1)};
                            k = (int) s.read(bs);
                            got.write(bs[0].array(), 0, bs[0].position());
                            got.write(bs[1].array(), 0, bs[1].position());
                            break;
                        }
                        default:
                            k = in.read();
                            if (k >= 0) {
                                got.write(k);
                            }
                    }
                }
                w.join();
                s.close();
                if (failed.get() != null) {
                    throw failed.get();
                }
                byte[] g = got.toByteArray();
                if (!Arrays.equals(g, data)) {
                    System.out.println("socket fuzz: seed " + seed + " read " + g.length + " bytes, first difference at "
                            + Arrays.mismatch(g, data));
                    return false;
                }
            }
        }
        return true;
    }

    /**
     * Tardis of a 9 GiB stream written at odd sizes by RandomAccessFile over [4 GiB - 8 MiB, 4 GiB + 8 MiB) and by
     * positional channel writes across the edge of the first 4 GiB sequence (markers start again there), read back at
     * odd sizes (int offsets and markers past 2^31 and 2^32).
     */
    static boolean across4GiB(File dir) throws Exception {
        File f = new File(dir, "big");
        TardisGenerator g = new TardisGenerator(9L << 30);
        long seqEdge = io.exalt.tardis.TardisFormat.MAX_SEQUENCE;
        long[][] ranges = {{(1L << 32) - (8 << 20), (1L << 32) + (8 << 20)}, {seqEdge - 100_003, seqEdge + 100_007}};
        Random r = new Random(5);
        try (RandomAccessFile raf = new RandomAccessFile(f, "rw"); FileChannel ch = raf.getChannel()) {
            for (int i = 0; i < ranges.length; i++) {
                for (long p = ranges[i][0]; p < ranges[i][1];) {
                    byte[] d = new byte[(int) Math.min(ranges[i][1] - p, 1 + r.nextInt(i == 0 ? 200_000 : 5000))];
                    g.fill(p, d, 0, d.length);
                    if (i == 0) {
                        raf.seek(p);
                        raf.write(d);
                    } else {
                        ch.write(ByteBuffer.wrap(d), p);
                    }
                    p += d.length;
                }
            }
        }
        try (RandomAccessFile raf = new RandomAccessFile(f, "r")) {
            for (long[] rg : ranges) {
                for (long p = rg[0]; p < rg[1];) {
                    int n = (int) Math.min(rg[1] - p, 1 + r.nextInt(300_000));
                    byte[] want = new byte[n];
                    g.fill(p, want, 0, n);
                    byte[] got = new byte[n];
                    raf.seek(p);
                    raf.readFully(got);
                    if (!Arrays.equals(got, want)) {
                        System.out.println("4 GiB: differs at " + (p + Arrays.mismatch(got, want)));
                        return false;
                    }
                    p += n;
                }
            }
        }
        return ChildReview.allocatedBytes(f) < (1 << 20); // and it stayed compressed
    }

    static int fdNumber(FileDescriptor fd) throws Exception {
        java.lang.reflect.Field f = FileDescriptor.class.getDeclaredField("fd");
        f.setAccessible(true);
        return f.getInt(fd);
    }

    public static void main(String[] a) throws Exception {
        File dir = new File(a[0]);
        int port = Integer.parseInt(a[2]);
        if (a.length > 3 && a[3].equals("fuzz")) {
            // what held in review rv18x, kept as a guard (the agent is started with a small index-limit)
            run("file-api-model-fuzz", () -> fileFuzz(dir, 12));
            run("socket-api-fuzz", () -> socketFuzz(port, 6));
            run("tardis-across-4gib-offsets", () -> across4GiB(dir));
            return;
        }

        // The agent identified the opened file by its name, after the JDK had opened it: a name that named another file
        // by then (a File whose path changes, a rename racing with the open) sent every write of the application's
        // descriptor to that other file.
        run("file-whose-name-changes-after-the-open", () -> {
            File real = new File(dir, "name-real");
            File other = new File(dir, "name-other");
            Files.write(other.toPath(), new byte[0]);
            File f = new File(real.getPath()) {
                private int calls;

                @Override
                public String getPath() {
                    return calls++ == 0 ? real.getPath() : other.getPath(); // the JDK opens the first name it gets
                }
            };
            byte[] d = tardis(100_000);
            try (FileOutputStream o = new FileOutputStream(f)) {
                o.write(d);
            }
            return Arrays.equals(Files.readAllBytes(real.toPath()), d) && other.length() == 0;
        });
        run("rename-racing-with-open", () -> {
            File target = new File(dir, "race");
            Files.write(target.toPath(), new byte[0]);
            java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
            Thread swapper = new Thread(() -> {
                for (int k = 0; !stop.get(); k++) {
                    try {
                        Path n = new File(dir, "race.new" + k).toPath();
                        Files.write(n, new byte[0]);
                        Files.move(n, target.toPath(), StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
                    } catch (IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                }
            });
            swapper.start();
            byte[] d = new byte[64];
            Arrays.fill(d, (byte) 7);
            int wrong = 0;
            try {
                for (int i = 0; i < 10_000; i++) {
                    try (RandomAccessFile r = new RandomAccessFile(target, "rw")) {
                        r.write(d);
                        // the descriptor's own file (whatever its name now) must hold the write
                        if (Files.size(Paths.get("/proc/self/fd/" + fdNumber(r.getFD()))) != d.length) {
                            wrong++;
                        }
                    }
                }
            } finally {
                stop.set(true);
                swapper.join();
            }
            if (wrong > 0) {
                System.out.println("rename-racing-with-open: " + wrong + " of 10000 writes went to another file");
            }
            return wrong == 0;
        });

        // A positional write whose end passes Long.MAX_VALUE: the kernel refuses it (EINVAL); the agent acknowledged it
        // and dropped the bytes (the file was not extended, the index entries beyond the size were dropped).
        run("write-past-the-largest-offset-fails", () -> {
            File f = new File(dir, "overflow");
            try (FileChannel ch = FileChannel.open(f.toPath(), StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
                try {
                    int w = ch.write(ByteBuffer.wrap(tardis(4800)), Long.MAX_VALUE - 100);
                    System.out.println("write-past-the-largest-offset-fails: write returned " + w + ", size " + ch.size());
                    return false;
                } catch (IOException expected) {
                    return ch.size() == 0;
                }
            }
        });

        // RandomAccessFile opened "r": the JDK's write fails (EBADF); the agent wrote the file through its own handle.
        run("read-only-random-access-file-refuses-writes", () -> {
            File f = new File(dir, "read-only");
            byte[] d = tardis(1200);
            Files.write(f.toPath(), d);
            int refused = 0;
            try (RandomAccessFile r = new RandomAccessFile(f, "r")) {
                for (int k = 0; k < 4; k++) {
                    try {
                        switch (k) {
                            case 0: r.write(new byte[] {1, 2, 3}); break;
                            case 1: r.write(new byte[] {1, 2, 3}, 1, 2); break;
                            case 2: r.write(9); break;
                            default: r.writeBytes("xyz");
                        }
                    } catch (IOException expected) {
                        refused++;
                    }
                }
            }
            return refused == 4 && Arrays.equals(Files.readAllBytes(f.toPath()), d);
        });

        // FileChannel.transferFrom at a position beyond the end of the file transfers nothing (JDK contract); the
        // agent wrote the bytes there.
        run("transferFrom-beyond-end-transfers-nothing", () -> {
            File f = new File(dir, "transfer-beyond");
            File src = new File(a[1], "transfer-src");
            byte[] d = tardis(5000);
            Files.write(f.toPath(), d);
            Files.write(src.toPath(), d);
            try (FileChannel ch = FileChannel.open(f.toPath(), StandardOpenOption.WRITE);
                    FileChannel s = FileChannel.open(src.toPath())) {
                long n = ch.transferFrom(s, 6000, d.length);
                return n == 0 && ch.size() == d.length && Arrays.equals(Files.readAllBytes(f.toPath()), d);
            }
        });

        // A FIFO under the prefix: every read and write failed with "Illegal seek" (the agent emulated it as a file).
        run("fifo-under-the-prefix", () -> {
            File f = new File(dir, "fifo");
            if (new ProcessBuilder("mkfifo", f.getPath()).inheritIO().start().waitFor() != 0) {
                throw new IllegalStateException("mkfifo failed");
            }
            Thread w = new Thread(() -> {
                try (FileOutputStream o = new FileOutputStream(f)) {
                    o.write("through the fifo".getBytes());
                } catch (IOException e) {
                    System.out.println("fifo writer: " + e);
                }
            });
            ByteArrayOutputStream got = new ByteArrayOutputStream();
            java.util.concurrent.atomic.AtomicReference<Exception> failed = new java.util.concurrent.atomic.AtomicReference<>();
            Thread reader = new Thread(() -> {
                try (FileInputStream in = new FileInputStream(f)) {
                    byte[] b = new byte[7];
                    for (int n; (n = in.read(b)) > 0;) {
                        got.write(b, 0, n);
                    }
                } catch (IOException e) {
                    failed.set(e);
                }
            });
            reader.setDaemon(true);
            w.setDaemon(true);
            w.start();
            reader.start();
            reader.join(30_000);
            if (reader.isAlive()) { // the agent's own read-only open of the FIFO waited for a writer that had gone
                System.out.println("fifo-under-the-prefix: the reader still hangs after 30 s");
                return false;
            }
            if (failed.get() != null) {
                throw failed.get();
            }
            return "through the fifo".equals(got.toString());
        });

        // close() from another thread while a blocking write is stuck on a peer that stopped reading (a watchdog
        // aborting it): the agent's close hook waited for the writer's lock, the writer waited for the peer, and close
        // never returned; without the agent close returns and the writer gets an AsynchronousCloseException.
        for (String how : new String[] {"channel", "adaptor-stream"}) {
            run("close-while-a-blocking-write-is-stuck-" + how, () -> {
                try (ServerSocketChannel ss = ServerSocketChannel.open()) {
                    ss.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
                    SocketChannel c = SocketChannel.open(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
                    try (SocketChannel peer = ss.accept()) { // never reads
                        java.util.concurrent.CountDownLatch writing = new java.util.concurrent.CountDownLatch(1);
                        Thread w = new Thread(() -> {
                            byte[] d = new byte[64 << 20];
                            new Random(1).nextBytes(d); // incompressible: far more than the socket buffers hold
                            try {
                                writing.countDown();
                                if (how.equals("channel")) {
                                    c.write(ByteBuffer.wrap(d));
                                } else {
                                    c.socket().getOutputStream().write(d);
                                }
                            } catch (IOException expected) {
                                // AsynchronousCloseException
                            }
                        });
                        w.setDaemon(true);
                        w.start();
                        writing.await();
                        Thread.sleep(1000); // the writer is now blocked on the full socket
                        Thread closer = new Thread(() -> {
                            try {
                                if (how.equals("channel")) {
                                    c.close();
                                } else {
                                    c.socket().close();
                                }
                            } catch (IOException e) {
                                System.out.println("close: " + e);
                            }
                        });
                        closer.setDaemon(true);
                        closer.start();
                        closer.join(30_000);
                        if (closer.isAlive()) {
                            System.out.println("close-while-a-blocking-write-is-stuck-" + how + ": close() still blocked after 30 s");
                            return false;
                        }
                        w.join(30_000);
                        return !w.isAlive();
                    }
                }
            });
        }

        // A non-blocking write the kernel took only part of (the agent holds the rest of its frame), then
        // shutdownOutput(): the shutdown made the agent's later send fail, so the peer read none of the reported bytes
        // and saw the stream end inside a frame.
        run("shutdownOutput-after-a-partial-non-blocking-write", () -> {
            try (ServerSocketChannel ss = ServerSocketChannel.open()) {
                ss.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
                try (SocketChannel c = SocketChannel.open(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
                        SocketChannel s = ss.accept()) {
                    c.setOption(StandardSocketOptions.SO_SNDBUF, 4096);
                    s.setOption(StandardSocketOptions.SO_RCVBUF, 4096);
                    c.configureBlocking(false);
                    byte[] d = new byte[1 << 20];
                    new Random(1).nextBytes(d);
                    int w = c.write(ByteBuffer.wrap(d));
                    c.shutdownOutput(); // must not wait for the peer, which reads only after this returns
                    boolean refusedAfter;
                    try {
                        c.write(ByteBuffer.wrap(d));
                        refusedAfter = false;
                    } catch (ClosedChannelException expected) {
                        refusedAfter = true;
                    }
                    ByteArrayOutputStream got = new ByteArrayOutputStream();
                    ByteBuffer bb = ByteBuffer.allocate(65536);
                    while (s.read(bb.clear()) >= 0) {
                        got.write(bb.array(), 0, bb.position());
                    }
                    byte[] g = got.toByteArray();
                    if (g.length != w) {
                        System.out.println("shutdownOutput: wrote " + w + ", the peer read " + g.length);
                    }
                    return w > 0 && refusedAfter && Arrays.equals(g, 0, g.length, d, 0, w) && g.length == w;
                }
            }
        });
    }
}
