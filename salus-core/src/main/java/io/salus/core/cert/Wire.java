package io.salus.core.cert;

import io.salus.core.merkle.Hash;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/** Big-endian writer/reader for the canonical encodings; the reader checks every bound. */
public final class Wire {
    private Wire() {
    }

    /**
     * Canonical big-endian writer over a growable array. Not thread-safe, and deliberately not a
     * {@code ByteArrayOutputStream}, which synchronizes every {@code write(int)}; encodings are mostly
     * single-byte and 8-byte fields (before/after: docs/benchmarks/message-codec*.csv).
     */
    public static final class Out {
        private byte[] buf;
        private int len;

        public Out() {
            this(128);
        }

        /** A writer whose first buffer holds {@code capacity} bytes (it grows as needed). */
        public Out(int capacity) {
            buf = new byte[Math.max(16, capacity)];
        }

        private void ensure(int n) {
            if (buf.length - len < n) {
                if (n > Integer.MAX_VALUE - 16 - len) {
                    throw new IllegalArgumentException("encoding would exceed 2 GiB (" + len + " + " + n + " bytes)");
                }
                buf = Arrays.copyOf(buf, (int) Math.min(Integer.MAX_VALUE - 16L,
                        Math.max(2L * buf.length, (long) len + n)));
            }
        }

        /** One unsigned byte; a value outside 0..255 is refused, never wrapped. */
        public Out u8(int v) {
            if (v < 0 || v > 0xff) {
                throw new IllegalArgumentException("value " + v + " does not fit an unsigned byte (0..255)");
            }
            ensure(1);
            buf[len++] = (byte) v;
            return this;
        }

        /** Two bytes, unsigned; a value outside 0..65535 is refused, never wrapped. */
        public Out u16(int v) {
            if (v < 0 || v > 0xffff) {
                throw new IllegalArgumentException("value " + v + " does not fit an unsigned 16-bit field (0..65535)");
            }
            ensure(2);
            buf[len++] = (byte) (v >>> 8);
            buf[len++] = (byte) v;
            return this;
        }

        public Out i32(int v) {
            ensure(4);
            for (int s = 24; s >= 0; s -= 8) {
                buf[len++] = (byte) (v >>> s);
            }
            return this;
        }

        public Out i64(long v) {
            ensure(8);
            for (int s = 56; s >= 0; s -= 8) {
                buf[len++] = (byte) (v >>> s);
            }
            return this;
        }

        public Out bytes(byte[] v) {
            ensure(v.length);
            System.arraycopy(v, 0, buf, len, v.length);
            len += v.length;
            return this;
        }

        public Out hash(Hash h) {
            ensure(Hash.LENGTH);
            h.copyTo(buf, len);
            len += Hash.LENGTH;
            return this;
        }

        /** UTF-8 string with a one-byte length (max 255 bytes). */
        public Out str8(String s) {
            byte[] u = s.getBytes(StandardCharsets.UTF_8);
            if (u.length > 255) {
                throw new IllegalArgumentException("string longer than 255 UTF-8 bytes: " + s);
            }
            return u8(u.length).bytes(u);
        }

        /** Bytes with a 4-byte length. */
        public Out blob(byte[] v) {
            return i32(v.length).bytes(v);
        }

        /** Bytes written so far. */
        public int size() {
            return len;
        }

        public byte[] toByteArray() {
            return Arrays.copyOf(buf, len);
        }
    }

    /** Bounds-checked reader; every failure is a {@link CertificateFormatException} naming the field. */
    public static final class In {
        private final byte[] b;
        private int pos;
        private final int end;

        public In(byte[] b) {
            this(b, 0, b.length);
        }

        /** Reads {@code len} bytes of {@code b} from {@code off}; the range must lie inside the array. */
        public In(byte[] b, int off, int len) {
            java.util.Objects.checkFromIndexSize(off, len, b.length);
            this.b = b;
            this.pos = off;
            this.end = off + len;
        }

        private void need(int n, String what) {
            if (n < 0 || end - pos < n) {
                throw new CertificateFormatException("truncated input: need " + n + " bytes for " + what + ", only "
                        + (end - pos) + " left", pos);
            }
        }

        public int pos() {
            return pos;
        }

        public int remaining() {
            return end - pos;
        }

        public int u8(String what) {
            need(1, what);
            return b[pos++] & 0xff;
        }

        public int u16(String what) {
            need(2, what);
            int v = ((b[pos] & 0xff) << 8) | (b[pos + 1] & 0xff);
            pos += 2;
            return v;
        }

        public int i32(String what) {
            need(4, what);
            int v = 0;
            for (int i = 0; i < 4; i++) {
                v = (v << 8) | (b[pos++] & 0xff);
            }
            return v;
        }

        public long i64(String what) {
            need(8, what);
            long v = 0;
            for (int i = 0; i < 8; i++) {
                v = (v << 8) | (b[pos++] & 0xff);
            }
            return v;
        }

        public byte[] bytes(int n, String what) {
            need(n, what);
            byte[] v = Arrays.copyOfRange(b, pos, pos + n);
            pos += n;
            return v;
        }

        public Hash hash(String what) {
            return Hash.of(bytes(Hash.LENGTH, what));
        }

        /**
         * A string written by {@link Out#str8}. Malformed UTF-8 is rejected, not replaced with U+FFFD:
         * a replaced string would re-encode to different bytes, and the encoding must stay canonical.
         */
        public String str8(String what) {
            int n = u8(what + " length");
            int start = pos;
            byte[] u = bytes(n, what);
            try {
                return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                        .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(u)).toString();
            } catch (CharacterCodingException e) {
                throw new CertificateFormatException(what + " is not valid UTF-8", start);
            }
        }

        public byte[] blob(String what) {
            int n = i32(what + " length");
            if (n < 0) {
                throw new CertificateFormatException("negative length " + n + " for " + what, pos - 4);
            }
            return bytes(n, what);
        }

        /** An i64 that must be >= 0; a negative value is reported at the field's first byte. */
        public long i64NonNegative(String what) {
            long v = i64(what);
            if (v < 0) {
                throw new CertificateFormatException(what + " must be >= 0, got " + v, pos - 8);
            }
            return v;
        }

        /** An i32 that must be >= 0; a negative value is reported at the field's first byte. */
        public int i32NonNegative(String what) {
            int v = i32(what);
            if (v < 0) {
                throw new CertificateFormatException(what + " must be >= 0, got " + v, pos - 4);
            }
            return v;
        }

        /** Prefer {@link #i64NonNegative}/{@link #i32NonNegative}: this one reports the offset after the field. */
        public long nonNegative(long v, String what) {
            if (v < 0) {
                throw new CertificateFormatException(what + " must be >= 0, got " + v, pos);
            }
            return v;
        }

        /** Rejects trailing garbage. */
        public void expectEnd(String what) {
            if (pos != end) {
                throw new CertificateFormatException((end - pos) + " unexpected trailing bytes after " + what, pos);
            }
        }
    }
}
