package io.exalt.tardis;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Seeded fuzzing with in-place mutations of valid Tardis data (no insertion, so every untouched unit keeps its
 * place and the first/last markers of a run stay consistent): flipped bytes, overwritten ranges, units copied
 * from elsewhere in the sequence, forged units (flag plus a marker that fits the run position of a *different*
 * place), plus inserts. The default compressor verifies every byte of a run, so every input round-trips
 * exactly. The opt-in sampled fast path is shown to lose exactly these mutations (that is its documented risk).
 */
class TardisMutationFuzzTest {
    private final TardisFormat fmt = TardisFormat.defaultFormat();
    private final TardisCompressor comp = new TardisCompressor(fmt);
    private final TardisDecompressor dec = new TardisDecompressor(fmt);

    private static byte[] tardis(int len, long streamPos) {
        byte[] b = new byte[len];
        new TardisGenerator(1L << 30).fill(streamPos, b, 0, len);
        return b;
    }

    /** Applies 1..4 random in-place mutations; returns true if the bytes changed. */
    static boolean mutateInPlace(byte[] d, Random r, TardisFormat fmt) {
        byte[] before = d.clone();
        int n = 1 + r.nextInt(4);
        for (int i = 0; i < n; i++) {
            int kind = r.nextInt(5);
            int at = r.nextInt(d.length);
            switch (kind) {
                case 0 -> d[at] ^= (byte) (1 << r.nextInt(8)); // bit flip
                case 1 -> { // overwrite a range with random bytes
                    int l = Math.min(d.length - at, 1 + r.nextInt(64));
                    byte[] x = new byte[l];
                    r.nextBytes(x);
                    System.arraycopy(x, 0, d, at, l);
                }
                case 2 -> { // copy a whole unit from elsewhere onto a unit boundary
                    int units = d.length / 12;
                    if (units >= 2) {
                        int src = r.nextInt(units) * 12;
                        int dst = r.nextInt(units) * 12;
                        System.arraycopy(before, src, d, dst, 12);
                    }
                }
                case 3 -> { // forged unit: flag + a marker off by a multiple of 12 (plausible but wrong place)
                    int units = d.length / 12;
                    if (units >= 1) {
                        int u = r.nextInt(units) * 12;
                        long m = TardisFormat.markerAt(d, u + 8) + 12L * (1 + r.nextInt(5)) * (r.nextBoolean() ? 1 : -1);
                        System.arraycopy(fmt.flagBytes(), 0, d, u, 8);
                        d[u + 8] = (byte) (m >>> 24);
                        d[u + 9] = (byte) (m >>> 16);
                        d[u + 10] = (byte) (m >>> 8);
                        d[u + 11] = (byte) m;
                    }
                }
                default -> { // overwrite a range with zeros (a hole written as data)
                    int l = Math.min(d.length - at, 1 + r.nextInt(4096));
                    Arrays.fill(d, at, at + l, (byte) 0);
                }
            }
        }
        return !Arrays.equals(before, d);
    }

    private void roundTrip(byte[] d, String what) {
        byte[] c = comp.compress(d);
        assertArrayEquals(d, dec.decompress(c), what);
        byte[] viaArray = new byte[TardisCompressor.maxEncodedLength(d.length)];
        int cl = comp.compressTo(d, 0, d.length, viaArray, 0);
        assertArrayEquals(d, dec.decompress(Arrays.copyOf(viaArray, cl)), what + " (compressTo)");
        byte[] into = new byte[d.length + 7];
        assertEquals(d.length, dec.decompressTo(c, 0, c.length, into, 7), what + " (decompressTo length)");
        assertArrayEquals(d, Arrays.copyOfRange(into, 7, into.length), what + " (decompressTo)");
    }

    @Test
    void inPlaceMutationsRoundTripExactly() {
        Random r = new Random(20261123);
        int changed = 0;
        for (int i = 0; i < 600; i++) {
            int len = 24 + r.nextInt(r.nextBoolean() ? 2_000 : 300_000);
            byte[] d = tardis(len, 12L * r.nextInt(1000) + (r.nextInt(4) == 0 ? r.nextInt(12) : 0));
            if (mutateInPlace(d, r, fmt)) {
                changed++;
            }
            roundTrip(d, "mutation case " + i);
        }
        assertTrue(changed > 500, "the fuzzer really mutated the inputs: " + changed);
    }

    @Test
    void mutationsAndInsertsTogetherRoundTripExactly() {
        Random r = new Random(99);
        for (int i = 0; i < 300; i++) {
            byte[] d = tardis(1 + r.nextInt(100_000), 0);
            mutateInPlace(d, r, fmt);
            // insert 1..3 random slices (metadata or a copy of a Tardis piece) at random places
            for (int k = r.nextInt(4); k > 0; k--) {
                int at = r.nextInt(d.length + 1);
                byte[] ins = r.nextBoolean() ? new byte[1 + r.nextInt(100)] : Arrays.copyOfRange(d, 0, Math.min(d.length, 12 * (1 + r.nextInt(20))));
                if (ins.length > 0 && r.nextBoolean()) {
                    r.nextBytes(ins);
                }
                byte[] n = new byte[d.length + ins.length];
                System.arraycopy(d, 0, n, 0, at);
                System.arraycopy(ins, 0, n, at, ins.length);
                System.arraycopy(d, at, n, at + ins.length, d.length - at);
                d = n;
            }
            roundTrip(d, "mutation+insert case " + i);
        }
    }

    @Test
    void tenBytesOverwrittenInOneMibAreKept() {
        byte[] d = tardis(1 << 20, 0);
        byte[] ten = "0123456789".getBytes();
        System.arraycopy(ten, 0, d, 500_003, 10);
        byte[] c = comp.compress(d);
        assertArrayEquals(d, dec.decompress(c));
        assertTrue(c.length < 100, "still compresses around the change: " + c.length + " bytes");
    }

    @Test
    void unmodifiedTardisStillCompressesToOnePair() {
        byte[] d = tardis(12 * 87_381, 12L * 77); // ~1 MiB of whole units
        assertEquals(9, comp.compress(d).length, "a pure run is one (marker, length) pair");
    }

    @Test
    void sampledFastPathIsOptInAndLosesInPlaceChanges() {
        TardisCompressor sampled = new TardisCompressor(fmt, TardisCompressor.RunCheck.SAMPLED_UNSAFE);
        assertEquals(TardisCompressor.RunCheck.VERIFY_EVERY_BYTE, comp.runCheck(), "verification is the default");
        byte[] d = tardis(1 << 20, 0);
        d[400_000] ^= 1;
        assertFalse(Arrays.equals(d, dec.decompress(sampled.compress(d))),
                "documented risk of SAMPLED_UNSAFE: an in-place change inside a run is not seen");
        assertArrayEquals(d, dec.decompress(comp.compress(d)));
    }

    @Test
    void hugeMetadataLengthIsAFormatErrorNamingTheOffset() {
        for (int l : new int[] {0x7ffffffb, 0x7fffffff, 0x7ffffffc, 1000}) {
            byte[] c = new byte[] {1, 0, 0, 0, 0, 0, 0, 0, 12, // a valid 12-byte run first
                0, (byte) (l >>> 24), (byte) (l >>> 16), (byte) (l >>> 8), (byte) l, 7, 7};
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> dec.decompress(c),
                    "metadata length " + l);
            assertTrue(e.getMessage().contains("offset 9"), e.getMessage());
            assertTrue(e.getMessage().contains("corrupt Tardis encoding"), e.getMessage());
        }
    }
}
