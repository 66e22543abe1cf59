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

    static void run(String name, Callable<Boolean> c) {
        try {
            System.out.println(c.call() ? "OK " + name : "FAIL " + name + ": read back different bytes");
        } catch (Throwable t) {
            System.out.println("FAIL " + name + ": " + t);
        }
    }
}
