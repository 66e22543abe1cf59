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

    static int fdNumber(FileDescriptor fd) throws Exception {
        java.lang.reflect.Field f = FileDescriptor.class.getDeclaredField("fd");
        f.setAccessible(true);
        return f.getInt(fd);
    }

    public static void main(String[] a) throws Exception {
        File dir = new File(a[0]);
        int port = Integer.parseInt(a[2]);

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
                for (int i = 0; i < 3000; i++) {
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
                System.out.println("rename-racing-with-open: " + wrong + " of 3000 writes went to another file");
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
            w.start();
            ByteArrayOutputStream got = new ByteArrayOutputStream();
            try (FileInputStream in = new FileInputStream(f)) {
                byte[] b = new byte[7];
                for (int n; (n = in.read(b)) > 0;) {
                    got.write(b, 0, n);
                }
            }
            w.join();
            return "through the fifo".equals(got.toString());
        });

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
