package io.exalt.tardis;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class TardisCodecTest {
    /**
     * expand() (whole units written as native-order words, two units at a time) against a per-byte reference of the
     * format: flag bytes, then the big-endian marker, which drops by 12 per unit (wrapping as an unsigned 32-bit
     * value), at any skip, length and destination offset. Generation and decoding both use expand(), so a round trip
     * alone could not see a wrong byte.
     */
    @Test
    void expandMatchesAPerByteReference() {
        TardisFormat f = TardisFormat.defaultFormat();
        byte[] fb = f.flagBytes();
        java.util.Random r = new java.util.Random(1);
        for (int t = 0; t < 20_000; t++) {
            long first = 12L * r.nextInt(1 << 20) + (r.nextBoolean() ? 0 : r.nextInt(12));
            long skip = r.nextInt(5000);
            int len = r.nextInt(300);
            int off = r.nextInt(7);
            byte[] got = new byte[len + 7];
            f.expand(first, skip, got, off, len);
            for (int i = 0; i < len; i++) {
                long s = skip + i;
                int in = (int) (s % 12);
                long m = first - s / 12 * 12;
                byte e = in < 8 ? fb[in] : (byte) (m >>> (8 * (11 - in)));
                assertEquals(e, got[off + i], "first marker " + first + ", skip " + skip + ", byte " + i);
            }
        }
    }

    /** The per-byte reference of the format: byte {@code s} of the unit stream whose first marker is {@code first}. */
    private static byte referenceByte(byte[] fb, long first, long s) {
        int in = (int) (s % 12);
        long m = first - s / 12 * 12;
        return in < 8 ? fb[in] : (byte) (m >>> (8 * (11 - in)));
    }

    /**
     * expand() where its unit-pair loop must stop: markers that reach 0 and wrap below it (only input no compressor
     * produces, e.g. a forged run length), markers near 2^32, long ranges (many pairs in one loop) and ranges that
     * start and end inside a unit. The pair loop keeps the two marker words as running values; a borrow out of the
     * low marker into the flag half would show here as a wrong flag byte.
     */
    @Test
    void expandMatchesTheReferenceAcrossMarkerWrapAndLongRanges() {
        TardisFormat f = TardisFormat.defaultFormat();
        byte[] fb = f.flagBytes();
        java.util.Random r = new java.util.Random(15);
        for (int t = 0; t < 4_000; t++) {
            long first = switch (t % 4) {
                case 0 -> r.nextInt(200); // wraps below 0 within the range
                case 1 -> 0xFFFF_FFFFL - r.nextInt(300); // the largest markers
                case 2 -> 12L * r.nextInt(1 << 24);
                default -> r.nextInt(12 * 40) + 12L * r.nextInt(100);
            };
            long skip = r.nextInt(600);
            int len = r.nextInt(t % 10 == 0 ? 70_000 : 3_000);
            int off = r.nextInt(13);
            byte[] got = new byte[len + off + 5];
            java.util.Arrays.fill(got, (byte) 0x5a);
            f.expand(first, skip, got, off, len);
            for (int i = 0; i < len; i++) {
                if (got[off + i] != referenceByte(fb, first, skip + i)) {
                    assertEquals(referenceByte(fb, first, skip + i), got[off + i],
                            "first marker " + first + ", skip " + skip + ", len " + len + ", byte " + i);
                }
            }
            for (int i = 0; i < off; i++) {
                assertEquals((byte) 0x5a, got[i], "byte before the range written");
            }
            for (int i = off + len; i < got.length; i++) {
                assertEquals((byte) 0x5a, got[i], "byte after the range written");
            }
        }
        assertThrows(IndexOutOfBoundsException.class, () -> f.expand(120, 0, new byte[30], 10, 21));
    }

    /**
     * The cursor the agent's socket reads use (a frame is expanded piece by piece straight into the reader's
     * buffers) yields exactly decompress()'s bytes, read in random piece sizes, on encodings with metadata between
     * and inside runs, partial units and bytes changed in place.
     */
    @Test
    void cursorReadsInPiecesEqualDecompress() {
        java.util.Random r = new java.util.Random(1515);
        for (int t = 0; t < 300; t++) {
            int len = 1 + r.nextInt(200_000);
            byte[] d = new byte[len];
            int start = r.nextInt(5000) / 12 * 12 + (t % 3 == 0 ? r.nextInt(12) : 0); // sometimes inside a unit
            new TardisGenerator(len + start + r.nextInt(5000)).fill(start, d, 0, len);
            for (int k = r.nextInt(6); k > 0; k--) { // metadata over the data and in-place changes
                int at = r.nextInt(len);
                int n = Math.min(len - at, 1 + r.nextInt(600));
                for (int i = 0; i < n; i++) {
                    d[at + i] = (byte) r.nextInt();
                }
            }
            byte[] enc = comp.compress(d);
            assertArrayEquals(d, dec.decompress(enc), "decompress");
            TardisDecompressor.Cursor c = dec.cursor(enc, 0, enc.length);
            assertEquals(len, c.remaining());
            byte[] got = new byte[len + 3];
            int p = 0;
            while (c.hasRemaining()) {
                int want = r.nextInt(4) == 0 ? 1 + r.nextInt(11) : 1 + r.nextInt(70_000);
                int n = c.read(got, p, Math.min(want, got.length - p));
                assertTrue(n > 0, "a cursor with bytes left returned 0");
                p += n;
            }
            assertEquals(len, p);
            assertEquals(0, c.read(got, 0, 3), "read past the end");
            assertArrayEquals(d, java.util.Arrays.copyOf(got, len), "cursor bytes differ from the input, try " + t);
        }
        // a corrupt encoding is refused when the cursor is made, before any byte is read
        assertThrows(IllegalArgumentException.class, () -> dec.cursor(new byte[] {0, 0, 0, 0, 9, 1}, 0, 6));
    }

    /**
     * Every byte of a run is verified: a single flipped bit at any position of a 101-unit run (covering the
     * 8-unit blocks and the unit-by-unit tail of the verification) survives the round trip.
     */
    @Test
    void aFlippedBitAnywhereInARunIsKept() {
        int len = 12 * 101;
        byte[] clean = new byte[len];
        new TardisGenerator(len + 12 * 7).fill(12 * 3, clean, 0, len);
        for (int pos = 0; pos < len; pos++) {
            byte[] d = clean.clone();
            d[pos] ^= (byte) (1 << (pos % 8));
            assertArrayEquals(d, dec.decompress(comp.compress(d)), "flipped bit at byte " + pos + " was lost");
        }
        assertTrue(comp.compress(clean).length < 20, "the clean run compresses to one pair");
    }

    private final TardisFormat fmt = TardisFormat.defaultFormat();
    private final TardisCompressor comp = new TardisCompressor(fmt);
    private final TardisDecompressor dec = new TardisDecompressor(fmt);

    private static byte[] tardis(long len) {
        byte[] b = new byte[(int) len];
        new TardisGenerator(len).fill(0, b, 0, b.length);
        return b;
    }

    /** Records segments as strings "M(off,len)" / "T(off,marker,len)". */
    private List<String> segments(byte[] d, int off, int len) {
        List<String> out = new ArrayList<>();
        comp.compress(d, off, len, new SegmentSink() {
            @Override
            public void meta(byte[] data, int o, int l) {
                out.add("M(" + (o - off) + "," + l + ")");
            }

            @Override
            public void tardis(int o, long marker, long l) {
                out.add("T(" + (o - off) + "," + marker + "," + l + ")");
            }
        });
        return out;
    }

    @Test
    void generatorFollowsTheFormat() {
        byte[] b = tardis(1200);
        for (int u = 0; u < 100; u++) {
            assertTrue(fmt.isFlagAt(b, u * 12));
            assertEquals(1200 - 12 - 12L * u, TardisFormat.markerAt(b, u * 12 + 8));
        }
        assertEquals(0, TardisFormat.markerAt(b, 1188 + 8), "last marker is 0");
    }

    @Test
    void wholeSequenceCompressesToOnePair() {
        byte[] b = tardis(1200);
        assertEquals(List.of("T(0,1188,1200)"), segments(b, 0, b.length));
        assertEquals(9, comp.compress(b).length);
        assertArrayEquals(b, dec.decompress(comp.compress(b)));
    }

    @Test
    void chunksCompressIndependently() {
        // Figure 4.1b: a sequence split into two chunks; each chunk alone yields its own (marker, length)
        byte[] b = tardis(1200);
        assertEquals(List.of("T(0,1188,600)"), segments(b, 0, 600));
        assertEquals(List.of("T(0,588,600)"), segments(b, 600, 600));
        // a split inside a unit: the partial units at the cut stay uncompressed
        assertEquals(List.of("T(0,1188,600)", "M(600,5)"), segments(b, 0, 605));
        assertEquals(List.of("M(0,7)", "T(7,576,588)"), segments(b, 605, 595));
    }

    @Test
    void metadataBetweenUnitsSplitsTheRun() {
        byte[] b = tardis(1200);
        byte[] meta = "HDFS-META".getBytes();
        byte[] d = concat(slice(b, 0, 240), meta, slice(b, 240, 960));
        assertEquals(List.of("T(0,1188,240)", "M(240,9)", "T(249,948,960)"), segments(d, 0, d.length));
        assertArrayEquals(d, dec.decompress(comp.compress(d)));
    }

    @Test
    void pairSplitByMetadataIsLeftUncompressed() {
        // Figure 4.1c: metadata inside a flag-marker pair; that pair (12 bytes) stays uncompressed
        byte[] b = tardis(1200);
        byte[] meta = new byte[] {1, 2, 3};
        byte[] d = concat(slice(b, 0, 245), meta, slice(b, 245, 955));
        assertEquals(List.of("T(0,1188,240)", "M(240,15)", "T(255,936,948)"), segments(d, 0, d.length));
        assertArrayEquals(d, dec.decompress(comp.compress(d)));
    }

    @Test
    void noFlagMeansAllMetadata() {
        byte[] d = "just some metadata, no flag here".getBytes();
        assertEquals(List.of("M(0," + d.length + ")"), segments(d, 0, d.length));
        assertArrayEquals(d, dec.decompress(comp.compress(d)));
        assertArrayEquals(new byte[0], dec.decompress(comp.compress(new byte[0])));
    }

    @Test
    void falseFlagWithBogusMarkerCompressesOnlyItself() {
        byte[] d = new byte[100];
        System.arraycopy(fmt.flagBytes(), 0, d, 10, 8);
        d[18] = 0x7F; // marker far beyond the chunk
        assertEquals(List.of("M(0,10)", "T(10," + TardisFormat.markerAt(d, 18) + ",12)", "M(22,78)"), segments(d, 0, d.length));
        assertArrayEquals(d, dec.decompress(comp.compress(d)));
    }

    @Test
    void largeChunkNeedsOnlyFirstAndLastMarker() {
        byte[] b = tardis(1 << 20);
        List<String> s = segments(b, 0, b.length);
        assertEquals(2, s.size(), s.toString()); // 1 MiB is not a multiple of 12: 4 trailing bytes stay raw
        assertEquals("M(" + (b.length - b.length % 12) + "," + b.length % 12 + ")", s.get(1));
        assertTrue(comp.compress(b).length <= 9 + 5 + 11);
    }

    @Test
    void longStreamsSpanSeveralSequences() {
        long len = TardisFormat.MAX_SEQUENCE + 1000;
        TardisGenerator g = new TardisGenerator(len);
        byte[] b = new byte[48];
        g.fill(TardisFormat.MAX_SEQUENCE - 24, b, 0, 48);
        // end of the first sequence (markers 12, 0) then the start of the second (1008 - 12 rounded)
        assertEquals(12, TardisFormat.markerAt(b, 8));
        assertEquals(0, TardisFormat.markerAt(b, 20));
        assertEquals(996, TardisFormat.markerAt(b, 32));
        List<String> s = segments(b, 0, 48);
        assertEquals(List.of("T(0,12,24)", "T(24,996,24)"), s);
    }

    @Test
    void inputStreamMatchesFill() throws Exception {
        TardisGenerator g = new TardisGenerator(10_000);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (InputStream in = g.openStream()) {
            byte[] buf = new byte[777];
            int n;
            out.write(in.read());
            while ((n = in.read(buf)) > 0) {
                out.write(buf, 0, n);
            }
        }
        assertArrayEquals(tardis(10_000), out.toByteArray());
    }

    @Test
    void badFlagAndCorruptInputGetClearErrors() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> TardisFormat.parse("0x1234"));
        assertTrue(e.getMessage().contains("16 hex digits"));
        assertThrows(IllegalArgumentException.class, () -> new TardisFormat(0x4141414141414141L));
        assertEquals(0x0123456789abcdefL, TardisFormat.parse("0x0123456789abcdef").flag());
        IllegalArgumentException c = assertThrows(IllegalArgumentException.class, () -> dec.decompress(new byte[] {7, 0, 0}));
        assertTrue(c.getMessage().contains("tag 7"));
        assertThrows(IllegalArgumentException.class, () -> dec.decompress(new byte[] {0, 0, 0, 0, 9, 1}));
    }

    /**
     * Review rv18x: a compressed run that is not whole units counting down to a marker >= 0 (no compressor writes one)
     * decoded without an error to bytes no Tardis writer wrote: markers wrapping below 0 (run of 24 bytes with first
     * marker 0), a cut unit (6 bytes), an empty run. Each now gets an IllegalArgumentException naming the run; every
     * run the compressor writes (last marker exactly 0, or any marker >= 0) still decodes.
     */
    @Test
    void runsThatAreNotWholeUnitsCountingDownToZeroAreRefused() {
        byte[][] corrupt = {
            {1, 0, 0, 0, 0, 0, 0, 0, 24}, // first marker 0, two units: the second marker would be -12
            {1, 0, 0, 0, 11, 0, 0, 0, 24}, // first marker 11: the second marker would be -1
            {1, 0, 0, 0, 100, 0, 0, 0, 6}, // half a unit
            {1, 0, 0, 0, 100, 0, 0, 0, 0}, // empty run
            {0, 0, 0, 0, 1, 42, 1, 0, 0, 0, 0, 0, 0, 0, 13}, // after metadata: 13 bytes
        };
        for (byte[] c : corrupt) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> dec.decompress(c),
                    java.util.Arrays.toString(c));
            assertTrue(e.getMessage().contains("compressed run"), e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> dec.cursor(c, 0, c.length));
        }
        // the largest runs each first marker allows still decode (last marker exactly 0, or above it)
        for (long m : new long[] {0, 12, 24, 25, 1200}) {
            int l = (int) (m / 12 + 1) * 12;
            byte[] c = {1, (byte) (m >>> 24), (byte) (m >>> 16), (byte) (m >>> 8), (byte) m, (byte) (l >>> 24), (byte) (l >>> 16),
                (byte) (l >>> 8), (byte) l};
            byte[] want = new byte[l];
            fmt.expand(m, 0, want, 0, want.length);
            assertArrayEquals(want, dec.decompress(c));
        }
        byte[] d = tardis(100_000);
        assertArrayEquals(d, dec.decompress(comp.compress(d)));
    }

    static byte[] slice(byte[] b, int off, int len) {
        byte[] r = new byte[len];
        System.arraycopy(b, off, r, 0, len);
        return r;
    }

    static byte[] concat(byte[]... parts) {
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        for (byte[] p : parts) {
            o.write(p, 0, p.length);
        }
        return o.toByteArray();
    }
}
