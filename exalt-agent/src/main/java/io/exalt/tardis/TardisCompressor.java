package io.exalt.tardis;

import java.io.ByteArrayOutputStream;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/**
 * Tardis compression exactly as in Figure 4.2 of the dissertation.
 *
 * <ul>
 *   <li>{@code TardisCompress} calls {@code FindSubsequence} until the chunk is consumed; bytes between runs are
 *       emitted as metadata ({@code AppendMeta}), runs as {@code (marker, length)} ({@code AppendTardis}).</li>
 *   <li>{@code FindSubsequence} scans linearly for the first flag, then checks only one more unit: the one at
 *       {@code min(pos + marker, lastMarker)} (the fast path: first and last markers). If that pair is not
 *       consistent (metadata was inserted), it binary-searches for the rightmost consistent flag-marker pair,
 *       relying on markers being a sorted sequence.</li>
 *   <li>A unit split by metadata (or by a chunk boundary) is not a consistent pair and stays uncompressed.</li>
 *   <li>Every chunk is compressed on its own: nothing depends on data outside it.</li>
 * </ul>
 *
 * <p><b>Lossless on every input.</b> The paper's fast path trusts the bytes between the first and the last
 * consistent unit of a run. That is only safe if nobody changed bytes <i>in place</i> inside a run (a flipped
 * byte, an overwritten range, a unit copied from elsewhere): the decoder would regenerate the original Tardis
 * bytes and the change would be lost silently. By default ({@link RunCheck#VERIFY_EVERY_BYTE}) every unit of a
 * candidate run is therefore compared with the unit the format says must be there (two big-endian word
 * compares per 12-byte unit, at memory speed); a run ends at the first unit that differs, and scanning resumes
 * there, so whatever differs stays metadata. {@link RunCheck#SAMPLED_UNSAFE} keeps the paper's sampling fast
 * path as an explicit opt-in.
 *
 * <p>Compressed encoding: an uncompressed sequence is {@code 0, len(4 bytes), bytes}; a compressed one is
 * {@code 1, marker(4 bytes), len(4 bytes)} (all big-endian), as in §4.2.2.
 */
public final class TardisCompressor {
    public static final int META = 0;
    public static final int TARDIS = 1;

    private static final int UNIT = TardisFormat.UNIT;
    private static final VarHandle LONG_BE = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);
    private static final VarHandle INT_BE = MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.BIG_ENDIAN);
    private static final VarHandle LONG_LE = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

    /** How a candidate run is checked before it is encoded as {@code (marker, length)}. */
    public enum RunCheck {
        /** Default: every byte of the run is compared with the bytes the format prescribes. Lossless on every input. */
        VERIFY_EVERY_BYTE,
        /**
         * Opt-in, <b>not lossless</b>: the paper's fast path, which checks only the first unit and the unit at
         * {@code min(pos + marker, lastMarker)} (plus the binary search when they disagree). Bytes changed in place
         * between two checked units (a flipped byte, an overwritten range, a copied or forged unit) are replaced by
         * the original Tardis bytes on decoding. Use it only when the application never mutates Tardis bytes in
         * place, and measure first: verification runs at memory speed.
         */
        SAMPLED_UNSAFE;

        /** Parses {@code verify} / {@code sampled-unsafe} (agent option {@code runcheck=}). */
        public static RunCheck parse(String s) {
            switch (s.trim().toLowerCase(java.util.Locale.ROOT)) {
                case "verify":
                case "verify-every-byte":
                    return VERIFY_EVERY_BYTE;
                case "sampled-unsafe":
                    return SAMPLED_UNSAFE;
                default:
                    throw new IllegalArgumentException("runcheck '" + s + "' is not one of: verify (default, lossless), "
                            + "sampled-unsafe (the paper's fast path; loses in-place changes inside a run)");
            }
        }
    }

    /** Runs shorter than this are verified word by word (a template page costs a 64 KiB expand to build). */
    static final int MIN_TEMPLATE_UNITS = 16;

    private final TardisFormat format;
    private final RunCheck runCheck;
    /** Shared pre-expanded pages the verify compares against, or null: word compare only. */
    private final TardisTemplates templates;

    public TardisCompressor(TardisFormat format) {
        this(format, RunCheck.VERIFY_EVERY_BYTE);
    }

    public TardisCompressor(TardisFormat format, RunCheck runCheck) {
        this(format, runCheck, format.templates());
    }

    /** A verifying compressor that compares word by word only, never against template pages (benchmarks, tests). */
    public static TardisCompressor withoutTemplates(TardisFormat format) {
        return new TardisCompressor(format, RunCheck.VERIFY_EVERY_BYTE, null);
    }

    /** With a given template cache, or null for the word compare only (tests compare the two). */
    TardisCompressor(TardisFormat format, RunCheck runCheck, TardisTemplates templates) {
        this.format = format;
        this.runCheck = java.util.Objects.requireNonNull(runCheck, "runCheck");
        this.templates = templates;
    }

    public RunCheck runCheck() {
        return runCheck;
    }

    public TardisCompressor() {
        this(TardisFormat.defaultFormat());
    }

    public TardisFormat format() {
        return format;
    }

    /** TardisCompress: reports the segments of {@code data[off..off+len)} to {@code sink} (offsets relative to off). */
    public void compress(byte[] data, int off, int len, SegmentSink sink) {
        int end = off + len;
        int index = off;
        while (index < end) {
            long found = findSubsequence(data, off, end, index, sink, index);
            if (found < 0) {
                sink.meta(data, index, end - index);
                return;
            }
            index = (int) found;
        }
    }

    /**
     * FindSubsequence plus the append step of the main loop. Returns the index after the emitted run, or -1 if
     * no flag was found from {@code startIndex} on (the caller then emits the rest as metadata).
     */
    private long findSubsequence(byte[] data, int chunkStart, int end, int startIndex, SegmentSink sink, int index) {
        int pos = scanForFlag(data, startIndex, end);
        if (pos < 0) {
            return -1;
        }
        long marker = TardisFormat.markerAt(data, pos + TardisFormat.FLAG_SIZE);
        // lastMarker: start of the last whole unit in the chunk that is aligned with pos
        long lastMarker = end - (UNIT + (long) (end - pos) % UNIT);
        long target = Math.min(pos + marker, lastMarker);
        long k;
        long kMax = (target - pos) / UNIT;
        if (consistent(data, pos, marker, kMax)) {
            k = kMax; // fast path: first and last markers agree
        } else {
            // rightmost consistent pair; k = 0 (the first unit itself) is always consistent
            long lo = 0;
            long hi = kMax;
            while (hi - lo > 1) {
                long mid = (lo + hi) >>> 1;
                if (consistent(data, pos, marker, mid)) {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            k = lo;
        }
        long units = k + 1;
        if (runCheck == RunCheck.VERIFY_EVERY_BYTE) {
            long t = templates != null && units >= MIN_TEMPLATE_UNITS ? templates.matchingUnits(data, pos, marker, units) : -1;
            // >= 1: the first unit was checked above; -1: no template pages left, compare word by word
            units = t >= 0 ? t : verifiedUnits(data, pos, marker, units);
        }
        long runLen = units * UNIT;
        if (pos > index) {
            sink.meta(data, index, pos - index);
        }
        sink.tardis(pos, marker, runLen);
        return pos + runLen;
    }

    /**
     * How many of the {@code units} units from {@code pos} on are exactly {@code flag, marker - i*UNIT}. Two units
     * (24 bytes) are three 8-byte words: {@code flag}, {@code marker<<32 | flag>>>32}, {@code flag<<32 | marker-12}.
     * They are loaded in native (little-endian) order and compared with the expected words byte-swapped once, in
     * blocks of 8 units without early exit (branch-free OR of differences); the first bad unit is then located
     * unit by unit. No per-byte loop: it runs near memory speed (1.75x the earlier 8+4-byte big-endian compare
     * per unit in the microbenchmark of the per-core session, docs/exalt.md "Per-core efficiency").
     */
    long verifiedUnits(byte[] data, int pos, long marker, long units) {
        long flag = format.flag();
        long flagHi = flag >>> 32;
        long flagLo = flag << 32;
        long flagNative = Long.reverseBytes(flag);
        int m = (int) marker; // unsigned marker; int arithmetic wraps the same way
        int p = pos;
        int n = (int) units;
        int i = 0;
        for (; i + 8 <= n; i += 8, p += 8 * UNIT, m -= 8 * UNIT) {
            long diff = 0;
            for (int j = 0; j < 8; j += 2) {
                int q = p + j * UNIT;
                int mj = m - j * UNIT;
                long w1 = Long.reverseBytes(((long) mj << 32) | flagHi);
                long w2 = Long.reverseBytes(flagLo | ((mj - UNIT) & 0xFFFF_FFFFL));
                diff |= ((long) LONG_LE.get(data, q) ^ flagNative) | ((long) LONG_LE.get(data, q + 8) ^ w1)
                        | ((long) LONG_LE.get(data, q + 16) ^ w2);
            }
            if (diff != 0) {
                break;
            }
        }
        for (; i < n; i++, p += UNIT, m -= UNIT) {
            if ((long) LONG_BE.get(data, p) != flag || (int) INT_BE.get(data, p + 8) != m) {
                return i;
            }
        }
        return n;
    }

    /** Is the unit {@code k} units after {@code pos} a flag with marker {@code marker - k*UNIT}? */
    private boolean consistent(byte[] data, int pos, long marker, long k) {
        long q = pos + k * UNIT;
        return format.isFlagAt(data, (int) q) && TardisFormat.markerAt(data, (int) q + TardisFormat.FLAG_SIZE) == marker - k * UNIT;
    }

    /** ScanForFlag: first position >= from where a whole unit starting with the flag fits before {@code end}. */
    private int scanForFlag(byte[] data, int from, int end) {
        byte first = format.flagByte(0);
        int last = end - UNIT;
        for (int i = from; i <= last; i++) {
            if (data[i] == first && format.isFlagAt(data, i)) {
                return i;
            }
        }
        return -1;
    }

    /** Upper bound of the encoded size of a chunk of {@code len} bytes (all metadata: 5 bytes overhead). */
    public static int maxEncodedLength(int len) {
        // worst case: alternating single units and metadata; a unit costs 9 bytes for 12, metadata 5 + n
        return len + 5 + (len / TardisFormat.UNIT + 1) * 5;
    }

    /**
     * Compresses one chunk into {@code dst} starting at {@code dstOff} (allocation-free apart from one small
     * sink object); returns the encoded length. {@code dst} must hold {@link #maxEncodedLength(int)} bytes.
     */
    public int compressTo(byte[] data, int off, int len, byte[] dst, int dstOff) {
        ArraySink sink = new ArraySink(dst, dstOff);
        compress(data, off, len, sink);
        return sink.p - dstOff;
    }

    private static final class ArraySink implements SegmentSink {
        final byte[] dst;
        int p;

        ArraySink(byte[] dst, int p) {
            this.dst = dst;
            this.p = p;
        }

        private void putInt(int v) {
            dst[p] = (byte) (v >>> 24);
            dst[p + 1] = (byte) (v >>> 16);
            dst[p + 2] = (byte) (v >>> 8);
            dst[p + 3] = (byte) v;
            p += 4;
        }

        @Override
        public void meta(byte[] d, int o, int l) {
            dst[p++] = META;
            putInt(l);
            System.arraycopy(d, o, dst, p, l);
            p += l;
        }

        @Override
        public void tardis(int o, long marker, long l) {
            dst[p++] = TARDIS;
            putInt((int) marker);
            putInt((int) l);
        }
    }

    /**
     * Compresses one chunk into a new array of exactly {@code reserve} + encoded-length bytes, the encoding starting
     * at {@code reserve} (room for a caller's header, e.g. a frame length). The segments are recorded first and
     * written once, so nothing is copied or grown on the way (the agent's socket frames: one allocation per frame).
     */
    public byte[] compressExact(byte[] data, int off, int len, int reserve) {
        long[][] segs = {new long[24]}; // {kind, offset or marker, length} triples
        int[] n = {0};
        long[] size = {0};
        compress(data, off, len, new SegmentSink() {
            private void add(long kind, long a, long l) {
                if (n[0] + 3 > segs[0].length) {
                    segs[0] = java.util.Arrays.copyOf(segs[0], segs[0].length * 2);
                }
                segs[0][n[0]++] = kind;
                segs[0][n[0]++] = a;
                segs[0][n[0]++] = l;
            }

            @Override
            public void meta(byte[] d, int o, int l) {
                add(META, o, l);
                size[0] += 5 + l;
            }

            @Override
            public void tardis(int o, long marker, long l) {
                add(TARDIS, marker, l);
                size[0] += 9;
            }
        });
        byte[] out = new byte[Math.toIntExact(reserve + size[0])];
        ArraySink sink = new ArraySink(out, reserve);
        long[] a = segs[0];
        for (int i = 0; i < n[0]; i += 3) {
            if (a[i] == META) {
                sink.meta(data, (int) a[i + 1], (int) a[i + 2]);
            } else {
                sink.tardis(0, a[i + 1], a[i + 2]);
            }
        }
        return out;
    }

    /** Compresses one chunk into the §4.2.2 byte encoding. */
    public byte[] compress(byte[] data, int off, int len) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(64);
        compress(data, off, len, new SegmentSink() {
            @Override
            public void meta(byte[] d, int o, int l) {
                out.write(META);
                writeInt(out, l);
                out.write(d, o, l);
            }

            @Override
            public void tardis(int o, long marker, long l) {
                out.write(TARDIS);
                writeInt(out, (int) marker);
                writeInt(out, (int) l);
            }
        });
        return out.toByteArray();
    }

    public byte[] compress(byte[] data) {
        return compress(data, 0, data.length);
    }

    static void writeInt(ByteArrayOutputStream out, int v) {
        out.write(v >>> 24);
        out.write(v >>> 16);
        out.write(v >>> 8);
        out.write(v);
    }
}
