package io.exalt.tardis;

/**
 * Generates a Tardis stream of a given logical length (what emulation clients write). The stream is a
 * concatenation of sequences of {@link TardisFormat#MAX_SEQUENCE} bytes; the last sequence is rounded up to a
 * whole number of units and then cut at the stream length (so at most 11 trailing bytes are a partial unit,
 * which the compressor keeps as metadata).
 *
 * <p>The generator is random-access: byte {@code p} of the stream is a pure function of the length and
 * {@code p}, which is also how tests and clients verify what they read back.
 */
public final class TardisGenerator {
    private final TardisFormat format;
    private final long length;

    public TardisGenerator(TardisFormat format, long length) {
        if (length < 0) {
            throw new IllegalArgumentException("Tardis stream length must be >= 0, got " + length);
        }
        this.format = format;
        this.length = length;
    }

    public TardisGenerator(long length) {
        this(TardisFormat.defaultFormat(), length);
    }

    public long length() {
        return length;
    }

    public TardisFormat format() {
        return format;
    }

    /** Fills {@code dst[off..off+len)} with stream bytes {@code [pos, pos+len)}; the range must lie in the stream. */
    public void fill(long pos, byte[] dst, int off, int len) {
        if (pos < 0 || len < 0 || pos + len > length) {
            throw new IndexOutOfBoundsException("range [" + pos + ", " + (pos + len) + ") outside Tardis stream of " + length);
        }
        long p = pos;
        int o = off;
        int remaining = len;
        while (remaining > 0) {
            long seq = p / TardisFormat.MAX_SEQUENCE;
            long seqStart = seq * TardisFormat.MAX_SEQUENCE;
            long seqLen = Math.min(TardisFormat.MAX_SEQUENCE, length - seqStart);
            long rounded = (seqLen + TardisFormat.UNIT - 1) / TardisFormat.UNIT * TardisFormat.UNIT;
            long inSeq = p - seqStart;
            int n = (int) Math.min(remaining, seqLen - inSeq);
            format.expand(rounded - TardisFormat.UNIT, inSeq, dst, o, n);
            p += n;
            o += n;
            remaining -= n;
        }
    }

    /** A new InputStream over the whole stream. */
    public java.io.InputStream openStream() {
        return new TardisInputStream(this);
    }

    /** An InputStream over a generated Tardis stream. */
    public static final class TardisInputStream extends java.io.InputStream {
        private final TardisGenerator gen;
        private long pos;

        TardisInputStream(TardisGenerator gen) {
            this.gen = gen;
        }

        @Override
        public int read() {
            if (pos >= gen.length) {
                return -1;
            }
            byte[] one = new byte[1];
            gen.fill(pos++, one, 0, 1);
            return one[0] & 0xFF;
        }

        @Override
        public int read(byte[] b, int off, int len) {
            if (len == 0) {
                return 0;
            }
            if (pos >= gen.length) {
                return -1;
            }
            int n = (int) Math.min(len, gen.length - pos);
            gen.fill(pos, b, off, n);
            pos += n;
            return n;
        }

        @Override
        public long skip(long n) {
            long s = Math.max(0, Math.min(n, gen.length - pos));
            pos += s;
            return s;
        }

        @Override
        public int available() {
            return (int) Math.min(Integer.MAX_VALUE, gen.length - pos);
        }
    }
}
