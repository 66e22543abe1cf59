package io.exalt.agent;

import io.exalt.agent.boot.ExaltRuntime;
import io.exalt.tardis.TardisGenerator;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.Comparator;
import java.util.stream.Stream;

/**
 * Start-up self-check: writes Tardis data mixed with metadata through every hooked write API into a probe
 * directory, and reads it back through every hooked read API. It fails (and the agent refuses to run) if any
 * API returns different bytes, if Tardis bytes reached the disk (a write hook is missing), or if lengths are
 * not logical.
 */
final class SelfCheck {
    private SelfCheck() {
    }

    static byte[] probeData() {
        byte[] t1 = new byte[60_000];
        new TardisGenerator(t1.length).fill(0, t1, 0, t1.length);
        byte[] t2 = new byte[40_004];
        new TardisGenerator(100_000).fill(50_000, t2, 0, t2.length);
        byte[] meta = new byte[100];
        for (int i = 0; i < meta.length; i++) {
            meta[i] = (byte) (i * 37 + 11);
        }
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        o.write(t1, 0, t1.length);
        o.write(meta, 0, meta.length);
        o.write(t2, 0, t2.length);
        return o.toByteArray();
    }

    private static void check(boolean ok, String what) {
        if (!ok) {
            throw new IllegalStateException("Exalt self-check failed: " + what
                    + ". The agent refuses to run: emulated data would be corrupted silently.");
        }
    }

    static void run(boolean sockets) throws Exception {
        Path dir = Files.createTempDirectory("exalt-selfcheck");
        ExaltRuntime.addPrefix(dir.toString());
        try {
            byte[] d = probeData();
            File a = dir.resolve("fos").toFile();
            try (FileOutputStream out = new FileOutputStream(a)) {
                out.write(d, 0, 30_001);
                out.write(d[30_001]);
                out.write(Arrays.copyOfRange(d, 30_002, d.length));
            }
            File b = dir.resolve("raf").toFile();
            try (RandomAccessFile raf = new RandomAccessFile(b, "rw")) {
                raf.write(d, 0, 50_000);
                raf.write(d[50_000]);
                raf.write(Arrays.copyOfRange(d, 50_001, d.length));
                raf.seek(1_000); // in-place update of a Tardis range with the same bytes through another path
                raf.write(d, 1_000, 24_000);
                check(raf.getFilePointer() == 25_000, "RandomAccessFile position after write");
                check(raf.length() == d.length, "RandomAccessFile.length() is logical");
            }
            File c = dir.resolve("channel").toFile();
            try (FileChannel ch = FileChannel.open(c.toPath(), StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
                ch.write(ByteBuffer.wrap(d, 0, 20_000));
                ByteBuffer direct = ByteBuffer.allocateDirect(20_000);
                direct.put(d, 20_000, 20_000).flip();
                ch.write(direct);
                ch.write(new ByteBuffer[] {ByteBuffer.wrap(d, 40_000, 10_000), ByteBuffer.wrap(d, 50_000, 10_000)});
                ch.write(ByteBuffer.wrap(d, 70_000, d.length - 70_000), 70_000); // positional, leaves a gap
                ch.write(ByteBuffer.wrap(d, 60_000, 10_000), 60_000);
                check(ch.size() == d.length, "FileChannel.size() is logical");
            }
            File t = dir.resolve("transfer").toFile();
            try (FileChannel ch = FileChannel.open(t.toPath(), StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
                long n = ch.transferFrom(Channels.newChannel(new ByteArrayInputStream(d)), 0, d.length);
                check(n == d.length, "FileChannel.transferFrom count");
            }
            for (File f : new File[] {a, b, c, t}) {
                check(f.length() == d.length, "File.length() of " + f.getName() + " is logical");
                byte[] phys = ExaltRuntime.readPhysical(f.getPath());
                check(phys.length == d.length, "physical size equals logical size");
                int nonZero = 0;
                for (int i = 0; i < 59_000; i++) {
                    nonZero += phys[i] != 0 ? 1 : 0;
                }
                check(nonZero == 0, "Tardis bytes reached the disk through the write path of " + f.getName());
                check(Arrays.equals(Arrays.copyOfRange(phys, 60_000, 60_100), Arrays.copyOfRange(d, 60_000, 60_100)),
                        "metadata of " + f.getName() + " stored in place");
                verifyReads(f, d);
            }
            if (sockets) {
                SocketSelfCheck.run(d);
            }
        } finally {
            ExaltRuntime.removePrefix(dir.toString());
            try (Stream<Path> s = Files.walk(dir)) {
                s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    private static void verifyReads(File f, byte[] d) throws IOException {
        String n = f.getName();
        try (FileInputStream in = new FileInputStream(f)) {
            ByteArrayOutputStream o = new ByteArrayOutputStream();
            o.write(in.read());
            byte[] buf = new byte[7_777];
            int r = in.read(buf);
            o.write(buf, 0, r);
            r = in.read(buf, 10, 5_000);
            o.write(buf, 10, r);
            o.write(in.readNBytes(20_000));
            check(in.available() == d.length - o.size(), "FileInputStream.available() is logical");
            o.write(in.readAllBytes());
            check(in.read() == -1, "FileInputStream EOF");
            check(Arrays.equals(o.toByteArray(), d), "FileInputStream reads of " + n);
        }
        try (RandomAccessFile raf = new RandomAccessFile(f, "r")) {
            byte[] all = new byte[d.length];
            all[0] = (byte) raf.read();
            raf.readFully(all, 1, 10_000);
            raf.seek(50_000);
            int r = raf.read(all, 50_000, d.length - 50_000);
            check(r == d.length - 50_000, "RandomAccessFile.read count");
            raf.seek(10_001);
            raf.read(Arrays.copyOf(all, 0));
            byte[] mid = new byte[50_000 - 10_001];
            raf.readFully(mid);
            System.arraycopy(mid, 0, all, 10_001, mid.length);
            check(Arrays.equals(all, d), "RandomAccessFile reads of " + n);
        }
        try (FileChannel ch = FileChannel.open(f.toPath(), StandardOpenOption.READ)) {
            ByteBuffer all = ByteBuffer.allocate(d.length);
            all.limit(30_000);
            ch.read(all);
            all.limit(d.length);
            ByteBuffer direct = ByteBuffer.allocateDirect(10_000);
            ch.read(direct, 30_000);
            direct.flip();
            all.put(direct);
            ch.position(40_000);
            ch.read(new ByteBuffer[] {all.slice().limit(5_000), ByteBuffer.allocate(0)});
            all.position(45_000);
            ch.position(45_000);
            while (all.hasRemaining() && ch.read(all) > 0) {
                // read to the end
            }
            check(Arrays.equals(all.array(), d), "FileChannel reads of " + n);
            ByteArrayOutputStream o = new ByteArrayOutputStream();
            long sent = ch.transferTo(0, d.length, Channels.newChannel(o));
            check(sent == d.length && Arrays.equals(o.toByteArray(), d), "FileChannel.transferTo of " + n);
            MappedByteBuffer mb = ch.map(FileChannel.MapMode.READ_ONLY, 0, d.length);
            byte[] mapped = new byte[d.length];
            mb.get(mapped);
            check(Arrays.equals(mapped, d), "read-only FileChannel.map of " + n);
        }
    }
}
