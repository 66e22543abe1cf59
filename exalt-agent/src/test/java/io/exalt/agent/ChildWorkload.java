package io.exalt.agent;

import io.exalt.tardis.TardisGenerator;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.InputStream;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;

/**
 * Runs inside a child JVM started with the agent (see {@link AgentFilesIT}). {@code write DIR OUTSIDE LEN} writes
 * the same logical content through every file API into DIR (emulated) and OUTSIDE (not emulated) and verifies
 * it through every read API; {@code read DIR LEN} re-verifies DIR from a second JVM.
 */
public final class ChildWorkload {
    static final int PATCH_AT = 5_000_000;
    static final int PATCH_LEN = 4096;

    /** The expected logical content: a Tardis stream with an in-place metadata patch. */
    static byte[] expected(int len) {
        byte[] d = new byte[len];
        new TardisGenerator(len).fill(0, d, 0, len);
        System.arraycopy(patch(), 0, d, PATCH_AT, PATCH_LEN);
        return d;
    }

    static byte[] patch() {
        byte[] p = new byte[PATCH_LEN];
        for (int i = 0; i < p.length; i++) {
            p[i] = (byte) (i * 31 + 7);
        }
        return p;
    }

    public static void main(String[] a) throws Exception {
        if (a[0].equals("noop")) {
            System.out.println("NOOP net sent logical=" + io.exalt.agent.boot.ExaltRuntime.NET_LOGICAL_BYTES_SENT.get()
                    + " wire=" + io.exalt.agent.boot.ExaltRuntime.NET_WIRE_BYTES_SENT.get());
            return;
        }
        if (a[0].equals("write")) {
            File dir = new File(a[1]);
            File outside = new File(a[2]);
            int len = Integer.parseInt(a[3]);
            byte[] t = new byte[len];
            new TardisGenerator(len).fill(0, t, 0, len);
            byte[] exp = expected(len);
            writeFos(new File(dir, "fos"), t);
            writeRaf(new File(dir, "raf"), t);
            writeChannel(new File(dir, "channel"), t);
            writeTransfer(new File(dir, "transfer"), len);
            writeFos(new File(outside, "fos"), t);
            for (String n : new String[] {"fos", "raf", "channel", "transfer"}) {
                verify(new File(dir, n), exp);
                System.out.println("VERIFIED " + n);
            }
            verify(new File(outside, "fos"), exp);
            System.out.println("VERIFIED outside");
        } else {
            File dir = new File(a[1]);
            byte[] exp = expected(Integer.parseInt(a[2]));
            for (String n : new String[] {"fos", "raf", "channel", "transfer"}) {
                verify(new File(dir, n), exp);
                System.out.println("CROSS-VERIFIED " + n);
            }
        }
    }

    static void writeFos(File f, byte[] t) throws Exception {
        try (FileOutputStream o = new FileOutputStream(f)) {
            int p = 0;
            o.write(t[p++]);
            while (p < t.length) {
                int n = Math.min(65_537, t.length - p);
                o.write(t, p, n);
                p += n;
            }
            o.getChannel().position(PATCH_AT);
            o.write(patch());
            if (o.getChannel().position() != PATCH_AT + PATCH_LEN) {
                throw new AssertionError("FileOutputStream position after in-place write");
            }
        }
    }

    static void writeRaf(File f, byte[] t) throws Exception {
        try (RandomAccessFile r = new RandomAccessFile(f, "rw")) {
            int p = 0;
            while (p < t.length) {
                int n = Math.min(100_003, t.length - p);
                r.write(t, p, n);
                p += n;
            }
            r.seek(PATCH_AT);
            r.write(patch());
            if (r.length() != t.length || r.getFilePointer() != PATCH_AT + PATCH_LEN) {
                throw new AssertionError("RandomAccessFile length/position are not logical");
            }
        }
    }

    static void writeChannel(File f, byte[] t) throws Exception {
        try (FileChannel ch = FileChannel.open(f.toPath(), StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            int p = 0;
            boolean direct = false;
            while (p < t.length) {
                int n = Math.min(131_071, t.length - p);
                if (direct) {
                    ByteBuffer b = ByteBuffer.allocateDirect(n);
                    b.put(t, p, n).flip();
                    ch.write(b);
                } else {
                    int h = n / 2;
                    ch.write(new ByteBuffer[] {ByteBuffer.wrap(t, p, h), ByteBuffer.wrap(t, p + h, n - h)});
                }
                direct = !direct;
                p += n;
            }
            ch.write(ByteBuffer.wrap(patch()), PATCH_AT);
            if (ch.size() != t.length) {
                throw new AssertionError("FileChannel.size is not logical");
            }
        }
    }

    static void writeTransfer(File f, int len) throws Exception {
        try (FileChannel ch = FileChannel.open(f.toPath(), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
                InputStream in = new TardisGenerator(len).openStream()) {
            long done = 0;
            while (done < len) {
                done += ch.transferFrom(Channels.newChannel(in), done, len - done);
            }
            ch.write(ByteBuffer.wrap(patch()), PATCH_AT);
        }
    }

    static void check(boolean ok, String what, File f) {
        if (!ok) {
            throw new AssertionError(what + " of " + f + " returned different bytes");
        }
    }

    static void verify(File f, byte[] exp) throws Exception {
        check(f.length() == exp.length, "File.length", f);
        try (FileInputStream in = new FileInputStream(f)) {
            ByteArrayOutputStream o = new ByteArrayOutputStream(exp.length);
            o.write(in.read());
            byte[] buf = new byte[65_536];
            int n = in.read(buf);
            o.write(buf, 0, n);
            o.write(in.readNBytes(1_000_000));
            while ((n = in.read(buf, 3, 40_000)) > 0) {
                o.write(buf, 3, n);
            }
            check(Arrays.equals(o.toByteArray(), exp), "FileInputStream.read", f);
        }
        try (FileInputStream in = new FileInputStream(f)) {
            check(Arrays.equals(in.readAllBytes(), exp), "FileInputStream.readAllBytes", f);
        }
        try (RandomAccessFile r = new RandomAccessFile(f, "r")) {
            byte[] all = new byte[exp.length];
            r.seek(exp.length / 2);
            r.readFully(all, exp.length / 2, exp.length - exp.length / 2);
            r.seek(0);
            all[0] = (byte) r.read();
            r.readFully(all, 1, exp.length / 2 - 1);
            check(Arrays.equals(all, exp), "RandomAccessFile.read", f);
        }
        try (FileChannel ch = FileChannel.open(f.toPath(), StandardOpenOption.READ)) {
            ByteBuffer all = ByteBuffer.allocateDirect(exp.length);
            long pos = 0;
            while (pos < exp.length) {
                all.limit((int) Math.min(exp.length, pos + 999_999));
                int n = ch.read(all, pos); // positional
                pos += n;
            }
            all.flip();
            byte[] got = new byte[exp.length];
            all.get(got);
            check(Arrays.equals(got, exp), "FileChannel.read(buf, pos)", f);
            ByteArrayOutputStream o = new ByteArrayOutputStream(exp.length);
            long sent = 0;
            while (sent < exp.length) {
                sent += ch.transferTo(sent, exp.length - sent, Channels.newChannel(o));
            }
            check(Arrays.equals(o.toByteArray(), exp), "FileChannel.transferTo", f);
            // a mapping shows the physical file, so the agent writes the mapped range out in full (docs/exalt.md): map
            // 8 KiB in the middle of a Tardis range, so that the caller's disk-usage check still sees a compressed file
            int at = Math.max(0, Math.min(exp.length - 8192, exp.length / 2 + 5));
            int n = Math.min(8192, exp.length - at);
            MappedByteBuffer m = ch.map(FileChannel.MapMode.READ_ONLY, at, n);
            byte[] mapped = new byte[n];
            m.get(mapped);
            check(Arrays.equals(mapped, Arrays.copyOfRange(exp, at, at + n)), "FileChannel.map(READ_ONLY)", f);
        }
    }
}
