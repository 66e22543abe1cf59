package io.exalt.tardis;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * The Tardis data format (dissertation §4.2.2): client data is a series of {@code <flag><marker>} units,
 * where the flag is a fixed 8-byte sequence that does not occur in system metadata and the marker is a
 * 4-byte big-endian unsigned integer giving the number of bytes that remain in the sequence after that unit.
 * The last unit of a sequence carries marker 0.
 *
 * <p>A marker is 32 bits, so one sequence is at most {@link #MAX_SEQUENCE} bytes; longer streams are a
 * concatenation of sequences (see {@link TardisGenerator}).
 */
public final class TardisFormat {
    private static final VarHandle LONG_BE = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);
    private static final VarHandle INT_BE = MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.BIG_ENDIAN);
    private static final VarHandle LONG_LE = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    public static final int FLAG_SIZE = 8;
    public static final int MARKER_SIZE = 4;
    public static final int UNIT = FLAG_SIZE + MARKER_SIZE;
    /** Longest single sequence: its first marker (length - UNIT) must fit an unsigned 32-bit integer. */
    public static final long MAX_SEQUENCE = UNIT * (0xFFFF_FFFFL / UNIT);
    /** The default flag: 8 random bytes chosen once (the paper's "take our chances" approach). */
    public static final long DEFAULT_FLAG = 0xE7A1_5C3D_9B04_F26AL;

    private static final TardisFormat DEFAULT = new TardisFormat(DEFAULT_FLAG);

    private final long flag;
    /** The flag as a native-order (little-endian) word: stored as is, it puts the big-endian flag bytes in memory. */
    private final long flagNative;
    private final byte[] flagBytes;
    /** Pre-expanded unit pages for the compressor's verify, shared by every thread using this format (built lazily). */
    private volatile TardisTemplates templates;

    public TardisFormat(long flag) {
        this.flag = flag;
        this.flagNative = Long.reverseBytes(flag);
        this.flagBytes = new byte[FLAG_SIZE];
        for (int i = 0; i < FLAG_SIZE; i++) {
            flagBytes[i] = (byte) (flag >>> (56 - 8 * i));
        }
        // A flag whose first byte recurs inside it would let a flag start in the middle of another one,
        // which is harmless for correctness but slows down the scan; all-equal bytes are rejected.
        boolean allSame = true;
        for (byte b : flagBytes) {
            allSame &= b == flagBytes[0];
        }
        if (allSame) {
            throw new IllegalArgumentException("Tardis flag 0x" + Long.toHexString(flag)
                    + " consists of one repeated byte; choose 8 random bytes, e.g. flag=0x"
                    + Long.toHexString(DEFAULT_FLAG));
        }
    }

    public static TardisFormat defaultFormat() {
        return DEFAULT;
    }

    /** Parses a flag given as 16 hex digits, with or without a 0x prefix. */
    public static TardisFormat parse(String hex) {
        String h = hex.startsWith("0x") || hex.startsWith("0X") ? hex.substring(2) : hex;
        if (h.length() != 16) {
            throw new IllegalArgumentException("Tardis flag '" + hex + "' must be exactly 16 hex digits (8 bytes), e.g. 0x"
                    + Long.toHexString(DEFAULT_FLAG));
        }
        try {
            return new TardisFormat(Long.parseUnsignedLong(h, 16));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("Tardis flag '" + hex + "' is not hexadecimal; use 16 hex digits", e);
        }
    }

    public long flag() {
        return flag;
    }

    /** This format's shared template pages ({@link TardisTemplates}), created on first use. */
    TardisTemplates templates() {
        TardisTemplates t = templates;
        if (t == null) {
            synchronized (this) {
                t = templates;
                if (t == null) {
                    t = new TardisTemplates(this, TardisTemplates.DEFAULT_MAX_PAGES);
                    templates = t;
                }
            }
        }
        return t;
    }

    public byte[] flagBytes() {
        return flagBytes.clone();
    }

    byte flagByte(int i) {
        return flagBytes[i];
    }

    /** True if {@code data[pos..pos+8)} is the flag. Caller guarantees the bounds. */
    public boolean isFlagAt(byte[] data, int pos) {
        for (int i = 0; i < FLAG_SIZE; i++) {
            if (data[pos + i] != flagBytes[i]) {
                return false;
            }
        }
        return true;
    }

    /** Reads the unsigned big-endian marker at {@code pos}. */
    public static long markerAt(byte[] data, int pos) {
        return ((data[pos] & 0xFFL) << 24) | ((data[pos + 1] & 0xFFL) << 16) | ((data[pos + 2] & 0xFFL) << 8)
                | (data[pos + 3] & 0xFFL);
    }

    /**
     * Writes the bytes of the unit stream into {@code dst}: the unit that starts at stream offset 0 carries
     * marker {@code firstMarker}, the next one {@code firstMarker - 12} and so on. Bytes {@code [skip, skip+len)}
     * of that stream are written to {@code dst[off..off+len)}.
     */
    public void expand(long firstMarker, long skip, byte[] dst, int off, int len) {
        java.util.Objects.checkFromIndexSize(off, len, dst.length);
        long unitIndex = skip / UNIT;
        int inUnit = (int) (skip % UNIT);
        int p = off;
        int end = off + len;
        if (inUnit != 0) { // the tail of a unit cut by skip
            int n = Math.min(UNIT - inUnit, len);
            partialUnit(firstMarker - unitIndex * UNIT, inUnit, dst, p, n);
            p += n;
            unitIndex++;
        }
        long marker = firstMarker - unitIndex * UNIT;
        // Whole unit pairs: 24 bytes = three 8-byte words stored in native order. The two marker-carrying words,
        // read big-endian, fall by exactly 24 << 32 and 24 per pair (the pairs are cut where the second marker would
        // wrap below 0, so no borrow crosses into the flag half): no per-unit multiply, branch or byte shuffling in the loop
        // (2x the earlier unit-at-a-time loop in a scratch microbenchmark; docs/exalt.md "Per-core efficiency").
        while (end - p >= 2 * UNIT) {
            long m32 = marker & 0xFFFF_FFFFL;
            if (m32 < UNIT) { // the second marker of the pair wraps below 0 (only on input no compressor produced)
                LONG_BE.set(dst, p, flag);
                INT_BE.set(dst, p + FLAG_SIZE, (int) marker);
                p += UNIT;
                marker -= UNIT;
                continue;
            }
            int pairs = (int) Math.min((end - p) / (2 * UNIT), (m32 - UNIT) / (2 * UNIT) + 1);
            long w1 = (marker << 32) | (flag >>> 32);
            long w2 = (flag << 32) | (m32 - UNIT);
            int pairEnd = p + pairs * 2 * UNIT;
            for (; p < pairEnd; p += 2 * UNIT) {
                LONG_LE.set(dst, p, flagNative);
                LONG_LE.set(dst, p + 8, Long.reverseBytes(w1));
                LONG_LE.set(dst, p + 16, Long.reverseBytes(w2));
                w1 -= (long) (2 * UNIT) << 32;
                w2 -= 2 * UNIT;
            }
            marker -= (long) pairs * 2 * UNIT;
        }
        if (end - p >= UNIT) {
            LONG_BE.set(dst, p, flag);
            INT_BE.set(dst, p + FLAG_SIZE, (int) marker);
            p += UNIT;
            marker -= UNIT;
        }
        if (p < end) { // the head of a unit cut by the end of the range
            partialUnit(marker, 0, dst, p, end - p);
        }
    }

    /**
     * The same bytes as {@link #expand}, copied from this format's shared template pages when the range is long enough
     * to pay for it (the agent's socket receive: the copy also brings the pages into cache for the verifies of the same
     * bytes that follow on a forwarding DataNode). Falls back to {@code expand} when no page can be used.
     */
    public void expandCached(long firstMarker, long skip, byte[] dst, int off, int len) {
        if (len < CACHED_MIN || !templates().copy(firstMarker, skip, dst, off, len)) {
            expand(firstMarker, skip, dst, off, len);
        }
    }

    /** Shorter ranges are expanded directly (a page costs a 64 KiB expand to build; small reads gain nothing). */
    static final int CACHED_MIN = 256;

    /** Bytes {@code [from, from+n)} of the unit {@code <flag><marker>} into {@code dst[p..p+n)}. */
    private void partialUnit(long marker, int from, byte[] dst, int p, int n) {
        for (int i = 0; i < n; i++) {
            int b = from + i;
            dst[p + i] = b < FLAG_SIZE ? flagBytes[b] : (byte) (marker >>> (8 * (UNIT - 1 - b)));
        }
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof TardisFormat && ((TardisFormat) o).flag == flag;
    }

    @Override
    public int hashCode() {
        return Long.hashCode(flag);
    }

    @Override
    public String toString() {
        return "Tardis(flag=0x" + Long.toHexString(flag) + ")";
    }

    static boolean sameBytes(byte[] a, byte[] b) {
        return Arrays.equals(a, b);
    }
}
