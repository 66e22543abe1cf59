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
        long unitIndex = skip / UNIT;
        int inUnit = (int) (skip % UNIT);
        byte[] unit = new byte[UNIT];
        System.arraycopy(flagBytes, 0, unit, 0, FLAG_SIZE);
        int done = 0;
        while (done < len) {
            long marker = firstMarker - unitIndex * UNIT;
            if (inUnit == 0 && len - done >= 2 * UNIT) {
                // two whole units = three 8-byte words, stored in native order (see TardisCompressor.verifiedUnits)
                int p = off + done;
                LONG_LE.set(dst, p, flagNative);
                LONG_LE.set(dst, p + 8, Long.reverseBytes((marker << 32) | (flag >>> 32)));
                LONG_LE.set(dst, p + 16, Long.reverseBytes((flag << 32) | ((marker - UNIT) & 0xFFFF_FFFFL)));
                done += 2 * UNIT;
                unitIndex += 2;
                continue;
            }
            if (inUnit == 0 && len - done >= UNIT) {
                // whole unit: two stores instead of a 12-byte arraycopy (profiled hot in decompression/generation)
                int p = off + done;
                LONG_BE.set(dst, p, flag);
                INT_BE.set(dst, p + FLAG_SIZE, (int) marker);
                done += UNIT;
                unitIndex++;
                continue;
            }
            unit[8] = (byte) (marker >>> 24);
            unit[9] = (byte) (marker >>> 16);
            unit[10] = (byte) (marker >>> 8);
            unit[11] = (byte) marker;
            int n = Math.min(UNIT - inUnit, len - done);
            System.arraycopy(unit, inUnit, dst, off + done, n);
            done += n;
            inUnit = 0;
            unitIndex++;
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
