package io.exalt.agent.boot;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.exalt.tardis.TardisFormat;
import io.exalt.tardis.TardisGenerator;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The extent index against a byte-array model: random writes of runs/inline bytes, clears, truncations. */
class ExtentIndexTest {
    private final TardisFormat fmt = TardisFormat.defaultFormat();

    private byte[] render(ExtentIndex idx, int size, byte[] background) {
        byte[] out = background.clone();
        for (ExtentIndex.Extent e : idx.overlapping(0, size)) {
            long a = Math.max(0, e.start);
            long b = Math.min(size, e.end());
            e.fill(fmt, a, out, (int) a, (int) (b - a));
        }
        return out;
    }

    @Test
    void sequentialRunsMergeIntoOneExtent() {
        ExtentIndex idx = new ExtentIndex();
        long marker = 12L * 1000 - 12;
        for (int i = 0; i < 10; i++) {
            idx.addTardis(i * 1200L, 1200, marker - i * 1200L);
        }
        assertEquals(1, idx.size());
        assertEquals(12_000, idx.end());
    }

    @Test
    void modelCheckedRandomOperations() {
        Random r = new Random(3);
        int size = 50_000;
        byte[] stream = new byte[size];
        new TardisGenerator(size).fill(0, stream, 0, size);
        for (int round = 0; round < 80; round++) {
            ExtentIndex idx = new ExtentIndex();
            byte[] model = new byte[size];
            byte[] zeros = new byte[size];
            for (int op = 0; op < 30; op++) {
                int a = r.nextInt(size - 100);
                int len = 1 + r.nextInt(Math.min(5000, size - a));
                switch (r.nextInt(3)) {
                    case 0 -> { // Tardis run aligned with the stream's units
                        int s = a - a % 12;
                        int l = Math.max(12, len - len % 12);
                        if (s + l > size) {
                            continue;
                        }
                        idx.addTardis(s, l, size - 12 - s + (12 - size % 12) % 12);
                        System.arraycopy(stream, s, model, s, l);
                    }
                    case 1 -> {
                        byte[] b = new byte[Math.min(len, 11)];
                        r.nextBytes(b);
                        idx.addInline(a, b);
                        System.arraycopy(b, 0, model, a, b.length);
                    }
                    default -> {
                        idx.clear(a, a + len);
                        System.arraycopy(zeros, 0, model, a, len);
                    }
                }
                byte[] enc = idx.encode(fmt.flag());
                long[] flag = new long[1];
                ExtentIndex back = ExtentIndex.decode(enc, flag);
                assertEquals(fmt.flag(), flag[0]);
                assertArrayEquals(model, render(idx, size, zeros), "round " + round + " op " + op);
                assertArrayEquals(model, render(back, size, zeros), "decoded index differs");
            }
            int cut = r.nextInt(size);
            idx.truncate(cut);
            assertTrue(idx.end() <= cut);
        }
    }

    @Test
    void corruptIndexIsReported() {
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> ExtentIndex.decode(new byte[] {9, 0}, new long[1]));
        assertTrue(e.getMessage().contains("version"));
    }

    @Test
    void overlapsAgreesWithOverlappingAndClearKeepsEverythingOutsideTheRange() {
        Random r = new Random(21);
        int size = 4_000;
        for (int round = 0; round < 300; round++) {
            ExtentIndex idx = new ExtentIndex();
            byte[] model = new byte[size];
            for (int op = 0; op < 1 + r.nextInt(40); op++) { // inline extents of random bytes, many small neighbours
                int a = r.nextInt(size - 1);
                byte[] b = new byte[1 + r.nextInt(Math.min(200, size - a))];
                r.nextBytes(b);
                idx.addInline(a, b);
                System.arraycopy(b, 0, model, a, b.length);
            }
            for (int q = 0; q < 20; q++) {
                int a = r.nextInt(size);
                int b = a + r.nextInt(size - a + 1);
                assertEquals(!idx.overlapping(a, b).isEmpty(), idx.overlaps(a, b), "[" + a + ", " + b + ")");
            }
            int a = r.nextInt(size);
            int b = a + 1 + r.nextInt(size - a);
            byte[] before = render(idx, size, new byte[size]);
            idx.clear(a, b);
            assertTrue(!idx.overlaps(a, b) && idx.overlapping(a, b).isEmpty(), "cleared [" + a + ", " + b + ")");
            byte[] after = render(idx, size, new byte[size]);
            java.util.Arrays.fill(before, a, b, (byte) 0);
            assertArrayEquals(before, after, "round " + round + ": clear [" + a + ", " + b + ") touched bytes outside it");
        }
    }
}
