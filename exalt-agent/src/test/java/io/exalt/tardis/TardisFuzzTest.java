package io.exalt.tardis;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** Seeded fuzzing: whatever the bytes and however they are chunked, compression round-trips losslessly. */
class TardisFuzzTest {
    private final TardisFormat fmt = TardisFormat.defaultFormat();
    private final TardisCompressor comp = new TardisCompressor(fmt);
    private final TardisDecompressor dec = new TardisDecompressor(fmt);

    private void roundTripInChunks(byte[] d, Random r) {
        int p = 0;
        while (p < d.length) {
            int n = Math.min(d.length - p, 1 + r.nextInt(r.nextBoolean() ? 64 : 20_000));
            byte[] c = comp.compress(d, p, n);
            byte[] viaArray = new byte[TardisCompressor.maxEncodedLength(n)];
            int cl = comp.compressTo(d, p, n, viaArray, 0);
            assertArrayEquals(c, java.util.Arrays.copyOf(viaArray, cl), "compressTo matches compress");
            byte[] exact = comp.compressExact(d, p, n, 4);
            assertArrayEquals(c, java.util.Arrays.copyOfRange(exact, 4, exact.length), "compressExact matches compress");
            byte[] back = dec.decompress(c);
            byte[] orig = new byte[n];
            System.arraycopy(d, p, orig, 0, n);
            assertArrayEquals(orig, back, () -> "chunk mismatch");
            p += n;
        }
        assertArrayEquals(d, dec.decompress(comp.compress(d)));
    }

    @Test
    void arbitraryBytes() {
        Random r = new Random(42);
        for (int i = 0; i < 300; i++) {
            byte[] d = new byte[r.nextInt(5000)];
            r.nextBytes(d);
            roundTripInChunks(d, r);
        }
    }

    /** Metadata full of flags: flags with random markers, marker 0, truncated flags, flags at the chunk end. */
    private byte[] adversarialMeta(Random r) {
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        byte[] flag = fmt.flagBytes();
        int parts = 1 + r.nextInt(6);
        for (int i = 0; i < parts; i++) {
            switch (r.nextInt(6)) {
                case 0 -> o.write(flag, 0, 8);
                case 1 -> o.write(flag, 0, 1 + r.nextInt(7));
                case 2 -> {
                    o.write(flag, 0, 8);
                    byte[] m = new byte[4];
                    r.nextBytes(m);
                    o.write(m, 0, 4);
                }
                case 3 -> {
                    o.write(flag, 0, 8);
                    o.write(new byte[4], 0, 4); // marker 0
                }
                case 4 -> {
                    o.write(flag, 0, 8);
                    int m = 12 * r.nextInt(50); // plausible marker
                    o.write(new byte[] {(byte) (m >>> 24), (byte) (m >>> 16), (byte) (m >>> 8), (byte) m}, 0, 4);
                }
                default -> {
                    byte[] junk = new byte[r.nextInt(40)];
                    r.nextBytes(junk);
                    o.write(junk, 0, junk.length);
                }
            }
        }
        return o.toByteArray();
    }

    @Test
    void tardisInterleavedWithMetadataAndFalseFlags() {
        Random r = new Random(7);
        long totalIn = 0;
        long totalOut = 0;
        for (int i = 0; i < 400; i++) {
            int len = 1 + r.nextInt(200_000);
            byte[] t = new byte[len];
            new TardisGenerator(len).fill(0, t, 0, len);
            ByteArrayOutputStream o = new ByteArrayOutputStream();
            int p = 0;
            while (p < len) {
                int n = Math.min(len - p, 1 + r.nextInt(30_000));
                o.write(t, p, n); // cut anywhere, also inside a unit
                p += n;
                if (r.nextInt(3) == 0) {
                    byte[] m = adversarialMeta(r);
                    o.write(m, 0, m.length);
                }
            }
            byte[] d = o.toByteArray();
            roundTripInChunks(d, r);
            totalIn += d.length;
            totalOut += comp.compress(d).length;
        }
        // not a timing claim: interleaved Tardis still compresses substantially
        assertTrue(totalOut * 50 < totalIn, "compressed " + totalIn + " to " + totalOut);
    }

    @Test
    void hdfsLikePacketsWithChecksums() {
        // 512-byte chunks each followed by a 4-byte checksum-like value: metadata every 512 bytes
        Random r = new Random(11);
        byte[] t = new byte[512 * 256];
        new TardisGenerator(t.length).fill(0, t, 0, t.length);
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        for (int i = 0; i < 256; i++) {
            o.write(t, i * 512, 512);
            byte[] crc = new byte[4];
            r.nextBytes(crc);
            o.write(crc, 0, 4);
        }
        byte[] d = o.toByteArray();
        roundTripInChunks(d, r);
        byte[] c = comp.compress(d);
        assertTrue(c.length * 10 < d.length, "packet data compresses: " + d.length + " -> " + c.length);
    }
}
