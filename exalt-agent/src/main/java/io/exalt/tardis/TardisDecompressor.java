package io.exalt.tardis;


/** Reverses {@link TardisCompressor#compress(byte[], int, int)}: metadata is copied, runs are expanded. */
public final class TardisDecompressor {
    private final TardisFormat format;

    public TardisDecompressor(TardisFormat format) {
        this.format = format;
    }

    public TardisDecompressor() {
        this(TardisFormat.defaultFormat());
    }

    /** Uncompressed length of an encoded chunk, without expanding it. */
    public long decompressedLength(byte[] c, int off, int len) {
        long total = 0;
        int p = off;
        int end = off + len;
        while (p < end) {
            int tag = c[p];
            if (tag == TardisCompressor.META) {
                int l = readInt(c, p + 1, end);
                if (l < 0 || l > end - p - 5) {
                    throw new IllegalArgumentException("corrupt Tardis encoding: uncompressed segment at offset " + (p - off)
                            + " declares " + (l & 0xFFFF_FFFFL) + " bytes but only " + (end - p - 5)
                            + " follow; the encoding is truncated or was not produced by TardisCompressor");
                }
                total += l;
                p += 5 + l;
            } else if (tag == TardisCompressor.TARDIS) {
                int l = readInt(c, p + 5, end);
                if (l < 0) {
                    throw new IllegalArgumentException("corrupt Tardis encoding: compressed run at offset " + (p - off)
                            + " declares " + (l & 0xFFFF_FFFFL) + " bytes (more than one chunk can hold); "
                            + "the encoding was not produced by TardisCompressor");
                }
                long marker = readInt(c, p + 1, end) & 0xFFFF_FFFFL;
                if (l == 0 || l % TardisFormat.UNIT != 0 || l - TardisFormat.UNIT > marker) {
                    // a run is whole units whose markers count down to >= 0 (the compressor checked every one): any
                    // other run would expand to bytes no Tardis writer wrote (markers wrapping below 0, a cut unit)
                    throw new IllegalArgumentException("corrupt Tardis encoding: compressed run at offset " + (p - off)
                            + " of " + l + " bytes with first marker " + marker + " is not whole units counting down to"
                            + " a marker >= 0; the encoding was not produced by TardisCompressor");
                }
                total += l;
                p += 9;
            } else {
                throw new IllegalArgumentException("corrupt Tardis encoding: tag " + tag + " at offset " + (p - off)
                        + " (expected 0 = uncompressed or 1 = compressed); was this produced by TardisCompressor?");
            }
        }
        if (p != end) {
            throw new IllegalArgumentException("corrupt Tardis encoding: last segment overruns the input by " + (p - end) + " bytes");
        }
        return total;
    }

    public byte[] decompress(byte[] c) {
        return decompress(c, 0, c.length);
    }

    public byte[] decompress(byte[] c, int off, int len) {
        long n = decompressedLength(c, off, len);
        if (n > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("chunk expands to " + n + " bytes, too large for one array; decompress it in parts");
        }
        byte[] out = new byte[(int) n];
        decompressTo(c, off, len, out, 0);
        return out;
    }

    /**
     * Decompresses into {@code out[outOff..)}, which must hold {@link #decompressedLength} bytes; returns that length.
     * Lets a caller reuse one buffer instead of allocating per chunk.
     */
    public int decompressTo(byte[] c, int off, int len, byte[] out, int outOff) {
        long n = decompressedLength(c, off, len);
        if (n > out.length - outOff) {
            throw new IllegalArgumentException("output buffer holds " + (out.length - outOff) + " bytes, chunk expands to " + n);
        }
        int o = outOff;
        int p = off;
        int end = off + len;
        while (p < end) {
            if (c[p] == TardisCompressor.META) {
                int l = readInt(c, p + 1, end);
                System.arraycopy(c, p + 5, out, o, l);
                o += l;
                p += 5 + l;
            } else {
                long marker = readInt(c, p + 1, end) & 0xFFFF_FFFFL;
                int l = readInt(c, p + 5, end);
                format.expand(marker, 0, out, o, l);
                o += l;
                p += 9;
            }
        }
        return (int) n;
    }

    /**
     * A reader over the logical bytes of one encoded chunk that expands each piece straight into the caller's
     * array ({@link Cursor#read}), so a socket frame is never expanded into a buffer of its own and copied again
     * (the agent's receive path: one write pass per logical byte instead of an expand plus a copy). The bytes read
     * are exactly those of {@link #decompress}. The encoding is validated here, before anything is read.
     */
    public Cursor cursor(byte[] c, int off, int len) {
        long n = decompressedLength(c, off, len);
        return new Cursor(format, c, off, off + len, n);
    }

    /** See {@link TardisDecompressor#cursor}. Not thread-safe. */
    public static final class Cursor {
        private final TardisFormat format;
        private final byte[] c;
        private final int end;
        /** Encoded offset of the next segment header. */
        private int next;
        /** The current segment: Tardis run (marker) or metadata (data offset in c); bytes of it left and consumed. */
        private boolean run;
        private long marker;
        private int dataOff;
        private long segLen;
        private long segDone;
        private long remaining;

        private Cursor(TardisFormat format, byte[] c, int off, int end, long length) {
            this.format = format;
            this.c = c;
            this.next = off;
            this.end = end;
            this.remaining = length;
        }

        /** Logical bytes not read yet. */
        public long remaining() {
            return remaining;
        }

        public boolean hasRemaining() {
            return remaining > 0;
        }

        /** Reads up to {@code len} logical bytes into {@code dst[off..)}; returns how many (0 only at the end). */
        public int read(byte[] dst, int off, int len) {
            java.util.Objects.checkFromIndexSize(off, len, dst.length);
            int done = 0;
            while (done < len && remaining > 0) {
                if (segDone == segLen) {
                    nextSegment();
                    continue;
                }
                int n = (int) Math.min(len - done, segLen - segDone);
                if (run) { // from the shared template pages where they serve (same bytes as expand)
                    format.expandCached(marker, segDone, dst, off + done, n);
                } else {
                    System.arraycopy(c, dataOff + (int) segDone, dst, off + done, n);
                }
                segDone += n;
                done += n;
                remaining -= n;
            }
            return done;
        }

        private void nextSegment() {
            int p = next;
            if (c[p] == TardisCompressor.META) {
                run = false;
                segLen = readInt(c, p + 1, end);
                dataOff = p + 5;
                next = p + 5 + (int) segLen;
            } else {
                run = true;
                marker = readInt(c, p + 1, end) & 0xFFFF_FFFFL;
                segLen = readInt(c, p + 5, end);
                next = p + 9;
            }
            segDone = 0;
        }
    }

    private static int readInt(byte[] c, int p, int end) {
        if (p + 4 > end) {
            throw new IllegalArgumentException("corrupt Tardis encoding: truncated segment header at offset " + p);
        }
        return ((c[p] & 0xFF) << 24) | ((c[p + 1] & 0xFF) << 16) | ((c[p + 2] & 0xFF) << 8) | (c[p + 3] & 0xFF);
    }

}
