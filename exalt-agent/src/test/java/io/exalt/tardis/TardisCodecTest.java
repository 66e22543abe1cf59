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
