package io.exalt.tardis;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The shared template pages ({@link TardisTemplates}): the verify against them must find exactly the units the word
 * compare finds (so a changed byte anywhere in a run, in particular at a page boundary, is never dropped), and a copy
 * from them must be byte for byte what {@link TardisFormat#expand} writes.
 */
class TardisTemplatesTest {
    private static final int UNIT = TardisFormat.UNIT;
    private static final int PAGE = TardisTemplates.PAGE;
    private final TardisFormat fmt = new TardisFormat(0x1122_3344_5566_7788L); // its own pages, not the default's

    /** {@code units} valid units starting with marker {@code marker}. */
    private byte[] run(long marker, int units, int lead) {
        byte[] b = new byte[lead + units * UNIT + 5];
        fmt.expand(marker, 0, b, lead, units * UNIT);
        return b;
    }

    private static long[] interestingMarkers() {
        long top = 0xFFFF_FFFFL;
        long page = (long) PAGE; // markers span one page per PAGE of marker values (per residue)
        return new long[] {
            12 * 40, 12 * 40 + 5, page - 12, page, page + 12, page + 7, 3 * page + 11, 32L << 20, (32L << 20) - 12,
            top, top - 3, top - 12 * 7000, top - page, 0x8000_0000L, 0x7FFF_FFF4L,
        };
    }

    @Test
    void verifyAgainstPagesFindsExactlyTheUnitsTheWordCompareFinds() {
        TardisCompressor word = TardisCompressor.withoutTemplates(fmt);
        TardisTemplates t = new TardisTemplates(fmt, 1000);
        TardisCompressor tmpl = new TardisCompressor(fmt, TardisCompressor.RunCheck.VERIFY_EVERY_BYTE, t);
        Random rnd = new Random(15);
        int checked = 0;
        for (long top : interestingMarkers()) {
            int maxUnits = (int) Math.min(top / UNIT + 1, 3 * TardisTemplates.PAGE_UNITS);
            for (int trial = 0; trial < 12; trial++) {
                int units = 1 + rnd.nextInt(maxUnits);
                long marker = top - 12L * rnd.nextInt((int) Math.min(top / UNIT - units + 2, 20000));
                byte[] b = run(marker, units, 3);
                // the verify alone: every unit matches
                assertEquals(units, t.matchingUnits(b, 3, marker, units), "clean run, marker " + marker);
                // one changed byte anywhere (biased to page boundaries): both compares stop at that unit
                int at = rnd.nextBoolean() ? rnd.nextInt(units * UNIT) : boundaryByte(marker, units, rnd);
                b[3 + at] ^= (byte) (1 << rnd.nextInt(8));
                assertEquals(word.verifiedUnits(b, 3, marker, units), t.matchingUnits(b, 3, marker, units),
                        "byte " + at + " of a run of " + units + " units from marker " + marker);
                assertEquals(at / UNIT, t.matchingUnits(b, 3, marker, units));
                // the whole codec: the same encoding as the word compare, and the change round-trips
                byte[] enc = tmpl.compress(b);
                assertArrayEquals(word.compress(b), enc);
                assertArrayEquals(b, new TardisDecompressor(fmt).decompress(enc), "change lost at byte " + at);
                checked++;
            }
        }
        assertTrue(checked > 100 && t.pagesBuilt() > 10, "the template path must have been taken: " + t.pagesBuilt());
    }

    /** A byte of the unit just before or just after a page boundary inside the run (or anywhere if none). */
    private static int boundaryByte(long marker, int units, Random rnd) {
        long q = marker / UNIT;
        long unitsToBoundary = q % TardisTemplates.PAGE_UNITS; // units after the first before the page's lowest
        if (unitsToBoundary + 1 >= units) {
            return rnd.nextInt(units * UNIT);
        }
        int u = (int) unitsToBoundary + (rnd.nextBoolean() ? 0 : 1); // last unit of one page or first of the next
        return u * UNIT + rnd.nextInt(UNIT);
    }

    @Test
    void everyByteOfARunAcrossAPageBoundaryIsCompared() {
        // a run of 40 units whose 20th unit is the lowest of its page: flip each byte in turn
        long marker = 12L * (TardisTemplates.PAGE_UNITS * 7L + 19);
        TardisTemplates t = new TardisTemplates(fmt, 1000);
        TardisCompressor tmpl = new TardisCompressor(fmt, TardisCompressor.RunCheck.VERIFY_EVERY_BYTE, t);
        byte[] clean = run(marker, 40, 0);
        for (int at = 0; at < 40 * UNIT; at++) {
            byte[] b = clean.clone();
            b[at] ^= 0x40;
            assertEquals(at / UNIT, t.matchingUnits(b, 0, marker, 40), "byte " + at);
            assertArrayEquals(b, new TardisDecompressor(fmt).decompress(tmpl.compress(b)), "change lost at byte " + at);
        }
        assertEquals(2, t.pagesBuilt());
    }

    @Test
    void withThePageBudgetUsedUpTheCompressorFallsBackAndStaysLossless() {
        TardisTemplates t = new TardisTemplates(fmt, 1);
        TardisCompressor tmpl = new TardisCompressor(fmt, TardisCompressor.RunCheck.VERIFY_EVERY_BYTE, t);
        long marker = 12L * (TardisTemplates.PAGE_UNITS * 3L + 100);
        byte[] b = run(marker, 400, 0); // pages 3 and 2: only one may be built
        assertEquals(-1, t.matchingUnits(b, 0, marker, 400));
        assertEquals(1, t.pagesBuilt());
        b[350 * UNIT + 11] ^= 1; // in the unbuilt page's range
        byte[] enc = tmpl.compress(b);
        assertArrayEquals(TardisCompressor.withoutTemplates(fmt).compress(b), enc);
        assertArrayEquals(b, new TardisDecompressor(fmt).decompress(enc));
        assertFalse(t.copy(marker, 0, new byte[400 * UNIT], 0, 400 * UNIT));
    }

    @Test
    void copyFromPagesIsExactlyExpand() {
        TardisTemplates t = new TardisTemplates(fmt, 1000);
        Random rnd = new Random(4);
        int copied = 0;
        for (long top : interestingMarkers()) {
            for (int trial = 0; trial < 20; trial++) {
                long skip = rnd.nextInt(3 * PAGE);
                int len = rnd.nextInt(trial < 3 ? 40 : 2 * PAGE + 100);
                byte[] want = new byte[len + 9];
                byte[] got = new byte[len + 9];
                Arrays.fill(got, (byte) 0x5A);
                Arrays.fill(want, (byte) 0x5A);
                long lowMarker = top - (skip + Math.max(len, 1) - 1) / UNIT * UNIT;
                if (lowMarker < 0) {
                    assertFalse(t.copy(top, skip, got, 4, len), "a range with markers below 0 is left to expand");
                    continue;
                }
                fmt.expand(top, skip, want, 4, len);
                assertTrue(t.copy(top, skip, got, 4, len));
                assertArrayEquals(want, got, "marker " + top + " skip " + skip + " len " + len);
                copied++;
            }
        }
        assertTrue(copied > 150, "copied " + copied);
        // and the public entry the socket receive uses
        byte[] want = new byte[70_000];
        byte[] got = new byte[70_000];
        fmt.expand(1L << 26, 77, want, 0, want.length);
        fmt.expandCached(1L << 26, 77, got, 0, got.length);
        assertArrayEquals(want, got);
    }

    @Test
    void cursorReadsFromPagesEqualDecompress() {
        Random rnd = new Random(9);
        TardisCompressor c = new TardisCompressor(fmt);
        TardisDecompressor d = new TardisDecompressor(fmt);
        for (int trial = 0; trial < 30; trial++) {
            int len = 1000 + rnd.nextInt(200_000);
            byte[] data = new byte[len];
            new TardisGenerator(fmt, 1L << 28).fill(rnd.nextInt(1 << 27), data, 0, len);
            if (trial % 2 == 1) {
                data[rnd.nextInt(len)] ^= 2;
            }
            byte[] enc = c.compress(data);
            TardisDecompressor.Cursor cur = d.cursor(enc, 0, enc.length);
            byte[] got = new byte[len];
            int p = 0;
            while (cur.hasRemaining()) {
                p += cur.read(got, p, Math.min(len - p, 1 + rnd.nextInt(70_000)));
            }
            assertArrayEquals(data, got, "trial " + trial);
        }
    }

    @Test
    void theRunnersWorkloadNeedsOnePagePer64KiBOfItsFileAndStaysInTheBudget() {
        // the per-core run: 32 MiB files written in 64 KiB packets that start inside a unit; every packet's run is
        // verified against pages, and the pages of the whole file are 32 MiB / 65,532 B = 513, well inside 1,024
        int fileLen = 32 << 20;
        byte[] file = new byte[fileLen];
        new TardisGenerator(fmt, fileLen).fill(0, file, 0, fileLen);
        TardisTemplates t = new TardisTemplates(fmt, TardisTemplates.DEFAULT_MAX_PAGES);
        TardisCompressor tmpl = new TardisCompressor(fmt, TardisCompressor.RunCheck.VERIFY_EVERY_BYTE, t);
        TardisCompressor word = TardisCompressor.withoutTemplates(fmt);
        byte[] out = new byte[TardisCompressor.maxEncodedLength(65536)];
        byte[] out2 = new byte[out.length];
        for (int round = 0; round < 2; round++) {
            for (int off = 0; off + 65536 <= fileLen; off += 65536) {
                int n = tmpl.compressTo(file, off, 65536, out, 0);
                assertEquals(n, word.compressTo(file, off, 65536, out2, 0));
                assertTrue(Arrays.equals(out, 0, n, out2, 0, n), "packet at " + off);
                assertTrue(n < 64, "a packet of clean Tardis data is one run: " + n + " bytes");
            }
        }
        assertEquals((fileLen / UNIT) / TardisTemplates.PAGE_UNITS + 1, t.pagesBuilt());
        assertTrue(t.pagesBuilt() <= 513);
    }
}
