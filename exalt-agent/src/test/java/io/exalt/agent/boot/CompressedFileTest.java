package io.exalt.agent.boot;

import java.io.IOException;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.exalt.tardis.TardisGenerator;
import java.io.ByteArrayOutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.UserDefinedFileAttributeView;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link CompressedFile} used directly (no agent needed: it does its own raw I/O): index overflow falls back
 * to writing runs out, read-write materialisation, and re-opening from the xattr as another JVM would.
 */
class CompressedFileTest {
    static CompressedFile open(Path p) throws Exception {
        Object key = Files.readAttributes(p, BasicFileAttributes.class).fileKey();
        return new CompressedFile(key, p, true);
    }

    static byte[] readAll(CompressedFile cf, int n) throws Exception {
        byte[] b = new byte[n];
        int done = 0;
        while (done < n) {
            int r = cf.read(done, b, done, n - done);
            assertTrue(r > 0);
            done += r;
        }
        return b;
    }

    /**
     * HDFS writes a block's data in 64 KiB packets, so every write starts inside a unit: the partial unit left by
     * the previous write is joined with this write's first bytes without copying the write, after comparing the 12
     * joined bytes with the unit the following run prescribes. The whole stream stays one extent with nothing on
     * disk; a joined unit that does not match (bytes changed at the boundary, in the saved part or in the new part)
     * is kept byte for byte.
     */
    @Test
    void writesThatStartInsideAUnitJoinWithoutLosingABoundaryChange(@TempDir Path dir) throws Exception {
        int n = 65536 * 9 + 100;
        byte[] t = new byte[n];
        new TardisGenerator(n + 12 * 30).fill(12 * 7, t, 0, n);
        for (int variant = 0; variant < 4; variant++) {
            byte[] expect = t.clone();
            int boundary = 65536 * (2 + variant); // a packet boundary: 65536 % 12 == 4, so inside a unit
            if (variant == 1) {
                expect[boundary - 1] ^= 0x10; // last byte of the saved partial unit
            } else if (variant == 2) {
                expect[boundary + 3] ^= 0x01; // a byte of the new write that completes the unit
            } else if (variant == 3) {
                expect[boundary + 8] ^= 0x01; // the run's first unit after the join
            }
            Path p = Files.createFile(dir.resolve("f" + variant));
            long phys0 = ExaltRuntime.PHYSICAL_BYTES_WRITTEN.get();
            CompressedFile cf = open(p);
            for (int pos = 0; pos < n; pos += 65536) {
                cf.write(pos, expect, pos, Math.min(65536, n - pos));
            }
            assertArrayEquals(expect, readAll(cf, n), "variant " + variant);
            if (variant == 0) {
                assertEquals(0, ExaltRuntime.PHYSICAL_BYTES_WRITTEN.get() - phys0, "nothing written to disk");
                assertTrue(cf.extentCount() <= 2, "one run (plus the trailing partial unit): " + cf.extentCount());
            }
            cf.close();
            assertArrayEquals(expect, readAll(open(p), n), "re-opened, variant " + variant);
        }
    }

    /**
     * The per-write metadata goes through the agent's own descriptor (fstat for size and modification time,
     * fsetxattr for the index; {@link FdOps}) instead of stat/open of /proc/self/fd/N. The index must still be in
     * the xattr the JDK's view names after every write (another JVM reads it while this one has the file open),
     * and a change outside the agent must still be seen by the next write.
     */
    @Test
    void descriptorCallsPersistTheIndexAfterEveryWriteAndSeeOutsideChanges(@TempDir Path dir) throws Exception {
        assertTrue(FdOps.available(), () -> "the test JVM opens sun.nio.fs (pom argLine): the descriptor path is what is tested; " + FdOps.WHY_NOT);
        JdkAccess.init(); // as the agent does at start (FileHooks.init): descriptor numbers
        Path p = Files.createFile(dir.resolve("h"));
        int n = 65536 * 3 + 5;
        byte[] t = new byte[n];
        new TardisGenerator(n).fill(0, t, 0, n);
        CompressedFile cf = open(p);
        assertTrue(cf.usesDescriptorCalls());
        for (int pos = 0; pos < n; pos += 65536) {
            cf.write(pos, t, pos, Math.min(65536, n - pos));
            int upTo = Math.min(pos + 65536, n);
            CompressedFile other = new CompressedFile(Files.readAttributes(p, BasicFileAttributes.class).fileKey(), p, false);
            assertArrayEquals(java.util.Arrays.copyOf(t, upTo), readAll(other, upTo), "index readable after the write ending at " + upTo);
            other.close();
        }
        assertEquals(n, Files.size(p));
        assertTrue(Files.getFileAttributeView(p, UserDefinedFileAttributeView.class).list().contains(CompressedFile.XATTR));
        // a modification time the agent did not make (another process wrote the file) fails the next write loudly
        Files.setLastModifiedTime(p, java.nio.file.attribute.FileTime.fromMillis(Files.getLastModifiedTime(p).toMillis() - 5000));
        IOException e = assertThrows(IOException.class, () -> cf.write(n, t, 0, 100));
        assertTrue(e.getMessage().contains("changed outside the agent"), e.getMessage());
        cf.close();
    }

    @Test
    void manyRunsOverflowTheIndexAndAreWrittenOutLosslessly(@TempDir Path dir) throws Exception {
        Path p = Files.createFile(dir.resolve("f"));
        ByteArrayOutputStream model = new ByteArrayOutputStream();
        byte[] t = new byte[1_000_000];
        new TardisGenerator(t.length).fill(0, t, 0, t.length);
        long mat0 = ExaltRuntime.MATERIALISED_BYTES.get();
        CompressedFile cf = open(p);
        long pos = 0;
        for (int i = 0; i < 600; i++) { // 600 runs separated by metadata: far more extents than fit the xattr
            cf.write(pos, t, i * 1200, 1200);
            model.write(t, i * 1200, 1200);
            byte[] meta = {(byte) i, 1, 2, 3, 4, 5, 6};
            cf.write(pos + 1200, meta, 0, meta.length);
            model.write(meta, 0, meta.length);
            pos += 1207;
        }
        byte[] expect = model.toByteArray();
        assertEquals(expect.length, Files.size(p), "physical size is the logical size");
        assertArrayEquals(expect, readAll(cf, expect.length));
        assertTrue(ExaltRuntime.MATERIALISED_BYTES.get() > mat0, "overflow wrote runs out");
        UserDefinedFileAttributeView v = Files.getFileAttributeView(p, UserDefinedFileAttributeView.class);
        assertTrue(v.size(CompressedFile.XATTR) <= 3000, "index stays within the limit");
        cf.close();
        // a fresh instance (as another JVM) sees the same bytes
        CompressedFile again = open(p);
        assertArrayEquals(expect, readAll(again, expect.length));
        // read-write mmap path: materialise everything, the index disappears, the disk holds the logical bytes
        again.materialise(0, expect.length, true);
        assertEquals(0, again.extentCount());
        assertArrayEquals(expect, Files.readAllBytes(p));
        assertTrue(v.list().isEmpty(), "empty index removes the xattr");
        again.close();
    }

    @Test
    void sequentialAppendsKeepOneRunAndTruncationDropsIt(@TempDir Path dir) throws Exception {
        Path p = Files.createFile(dir.resolve("g"));
        int len = 5_000_003;
        byte[] t = new byte[len];
        new TardisGenerator(len).fill(0, t, 0, len);
        CompressedFile cf = open(p);
        int pos = 0;
        int step = 1;
        while (pos < len) { // odd-sized appends: partial units are re-joined by the next write
            int n = Math.min(step, len - pos);
            cf.write(pos, t, pos, n);
            pos += n;
            step = step * 3 + 1;
        }
        assertTrue(cf.extentCount() <= 3, "extents: " + cf.extentCount());
        assertArrayEquals(t, readAll(cf, len));
        cf.truncateByHook(1000); // what the hooked FileChannel.truncate does (FileHooks.truncate; this JVM has no agent)
        assertEquals(1000, cf.size());
        byte[] head = new byte[1000];
        assertEquals(1000, cf.read(0, head, 0, 1000));
        assertArrayEquals(java.util.Arrays.copyOf(t, 1000), head);
        assertEquals(-1, cf.read(1000, head, 0, 10));
        cf.close();
    }

    @Test
    void aChangeOutsideTheAgentIsRefusedLoudlyInAndAcrossSessions(@TempDir Path dir) throws Exception {
        Path p = Files.createFile(dir.resolve("h"));
        byte[] t = new byte[100_000];
        new TardisGenerator(t.length).fill(0, t, 0, t.length);
        CompressedFile cf = open(p);
        cf.write(0, t, 0, t.length);
        // shrink then re-extend without the agent (RandomAccessFile.setLength is native and cannot be hooked)
        try (java.io.RandomAccessFile r = new java.io.RandomAccessFile(p.toFile(), "rw")) {
            r.setLength(10);
            r.setLength(t.length);
        }
        IOException e = assertThrows(IOException.class, () -> cf.read(0, new byte[10], 0, 10));
        assertTrue(e.getMessage().contains("was changed outside the agent") && e.getMessage().contains("FileChannel.truncate"),
                e.getMessage());
        cf.close();
        // the next session (e.g. another agent JVM) sees the seal written at close and refuses as well
        CompressedFile again = open(p);
        assertThrows(IOException.class, () -> again.read(0, new byte[10], 0, 10));
        again.close();

        // a clean session seals the file; a change while no agent has it open is seen at the next open
        Path q = Files.createFile(dir.resolve("i"));
        CompressedFile c2 = open(q);
        c2.write(0, t, 0, t.length);
        c2.close();
        CompressedFile c3 = open(q);
        assertArrayEquals(t, readAll(c3, t.length), "a clean hand-over reads back");
        c3.close();
        try (java.io.RandomAccessFile r = new java.io.RandomAccessFile(q.toFile(), "rw")) {
            r.setLength(10);
            r.setLength(t.length);
        }
        CompressedFile c4 = open(q);
        assertThrows(IOException.class, () -> c4.read(0, new byte[10], 0, 10));
        c4.close();
    }
}
