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
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.concurrent.Callable;

/**
 * Runs inside a child JVM started with the agent (see {@link AgentHostileIT}): hostile and unsupported cases,
 * each printed as {@code OK name} or {@code FAIL name: reason} so that one JVM start covers them all.
 * Arguments: {@code DIR OUTSIDE PORT} (DIR is under the agent's prefix, PORT is a compressed port).
 */
public final class ChildHostile {
    static final int MIB = 1 << 20;

    /** 1 MiB of Tardis data with 10 bytes overwritten in place (no insertion), as an application might do. */
    static byte[] mutatedMib() {
        byte[] d = new byte[MIB];
        new TardisGenerator(1L << 30).fill(0, d, 0, MIB);
        System.arraycopy("0123456789".getBytes(), 0, d, 500_003, 10);
        return d;
    }

    public static void main(String[] a) throws Exception {
        File dir = new File(a[0]);
        int port = Integer.parseInt(a[2]);
        gaps(dir, new File(a[1]));
        byte[] d = mutatedMib();
        run("mutated-fos", () -> {
            File f = new File(dir, "mutated-fos");
            try (FileOutputStream o = new FileOutputStream(f)) {
                o.write(d);
            }
            return Arrays.equals(Files.readAllBytes(f.toPath()), d);
        });
        run("mutated-raf", () -> {
            File f = new File(dir, "mutated-raf");
            try (RandomAccessFile r = new RandomAccessFile(f, "rw")) {
                r.write(d);
            }
            return Arrays.equals(Files.readAllBytes(f.toPath()), d);
        });
        run("mutated-channel", () -> {
            File f = new File(dir, "mutated-channel");
            try (FileChannel ch = FileChannel.open(f.toPath(), StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
                ch.write(ByteBuffer.wrap(d));
            }
            return Arrays.equals(Files.readAllBytes(f.toPath()), d);
        });
        run("mutated-socket", () -> {
            try (ServerSocket ss = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
                Thread w = new Thread(() -> {
                    try (Socket s = new Socket(InetAddress.getLoopbackAddress(), port); OutputStream o = s.getOutputStream()) {
                        o.write(d);
                    } catch (Exception e) {
                        e.printStackTrace();
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
    }

    /** Item 2 of issue 15: agent gaps that used to fail silently. */
    static void gaps(File dir, File outside) {
        byte[] t = new byte[MIB];
        new TardisGenerator(MIB).fill(0, t, 0, MIB);
        run("raf-writeBytes-writeChars", () -> {
            File f = new File(dir, "raf-strings");
            try (RandomAccessFile r = new RandomAccessFile(f, "rw")) {
                r.write(t);
                r.seek(1000);
                r.writeBytes("HELLO");
                r.seek(5000);
                r.writeChars("AB\u20ac");
                if (r.getFilePointer() != 5006) {
                    throw new AssertionError("position after writeChars: " + r.getFilePointer());
                }
            }
            byte[] exp = t.clone();
            System.arraycopy("HELLO".getBytes(), 0, exp, 1000, 5);
            System.arraycopy(new byte[] {0, 'A', 0, 'B', 0x20, (byte) 0xac}, 0, exp, 5000, 6);
            return Arrays.equals(Files.readAllBytes(f.toPath()), exp);
        });
        run("symlink-outside-into-prefix", () -> {
            File f = new File(dir, "linked");
            try (FileOutputStream o = new FileOutputStream(f)) {
                o.write(t);
            }
            java.nio.file.Path fileLink = Files.createSymbolicLink(new File(outside, "file-link").toPath(), f.toPath());
            java.nio.file.Path dirLink = Files.createSymbolicLink(new File(outside, "dir-link").toPath(), dir.toPath());
            boolean readBack = Arrays.equals(Files.readAllBytes(fileLink), t)
                    && Arrays.equals(Files.readAllBytes(dirLink.resolve("linked")), t);
            // written through a link outside the prefix: still emulated (checked from outside by the test)
            try (FileOutputStream o = new FileOutputStream(dirLink.resolve("via-link").toFile())) {
                o.write(t);
            }
            return readBack && Arrays.equals(Files.readAllBytes(new File(dir, "via-link").toPath()), t);
        });
        run("async-channel-refused", () -> {
            File f = new File(dir, "async");
            try (FileOutputStream o = new FileOutputStream(f)) {
                o.write(t);
            }
            try (java.nio.channels.AsynchronousFileChannel ch = java.nio.channels.AsynchronousFileChannel.open(f.toPath(),
                    StandardOpenOption.READ)) {
                ByteBuffer b = ByteBuffer.allocate(MIB);
                ch.read(b, 0).get();
                System.out.println("async read returned " + (Arrays.equals(b.array(), t) ? "the right bytes" : "WRONG bytes"));
                return false;
            } catch (UnsupportedOperationException e) {
                return e.getMessage().contains("AsynchronousFileChannel is not supported on emulated file");
            }
        });
        run("files-copy", () -> {
            File f = new File(dir, "copy-src");
            try (FileOutputStream o = new FileOutputStream(f)) {
                o.write(t);
            }
            Files.copy(f.toPath(), new File(outside, "copy-out").toPath());
            Files.copy(f.toPath(), new File(dir, "copy-in").toPath());
            Files.copy(f.toPath(), new File(dir, "copy-in").toPath(), java.nio.file.StandardCopyOption.REPLACE_EXISTING,
                    java.nio.file.StandardCopyOption.COPY_ATTRIBUTES);
            boolean refused = false;
            try {
                Files.copy(f.toPath(), new File(dir, "copy-in").toPath());
            } catch (java.nio.file.FileAlreadyExistsException e) {
                refused = true;
            }
            return refused && Arrays.equals(Files.readAllBytes(new File(outside, "copy-out").toPath()), t)
                    && Arrays.equals(Files.readAllBytes(new File(dir, "copy-in").toPath()), t);
        });
        run("shrink-then-extend-refused", () -> {
            File f = new File(dir, "shrink");
            try (RandomAccessFile r = new RandomAccessFile(f, "rw")) {
                r.write(t);
                r.setLength(100); // native, not hooked
                r.setLength(MIB); // bytes [100, MIB) are now zeros, but the index still lists the old runs
            }
            try (java.io.FileInputStream in = new java.io.FileInputStream(f)) {
                byte[] got = in.readAllBytes();
                byte[] exp = new byte[MIB];
                System.arraycopy(t, 0, exp, 0, 100);
                System.out.println("shrink-then-extend read returned " + (Arrays.equals(got, exp) ? "the right bytes" : "STALE bytes"));
                return false;
            } catch (java.io.IOException e) {
                return e.getMessage().contains("was changed outside the agent");
            }
        });
    }

    static void run(String name, Callable<Boolean> c) {
        try {
            System.out.println(c.call() ? "OK " + name : "FAIL " + name + ": read back different bytes");
        } catch (Throwable t) {
            System.out.println("FAIL " + name + ": " + t);
        }
    }
}
