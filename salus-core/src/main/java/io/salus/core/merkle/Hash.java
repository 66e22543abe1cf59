package io.salus.core.merkle;

import java.util.Arrays;
import java.util.HexFormat;

/** An immutable 32-byte digest (SHA-256 or BLAKE3-256). Usable as a map key. */
public final class Hash {
    public static final int LENGTH = 32;
    private final byte[] bytes;

    private Hash(byte[] bytes) {
        this.bytes = bytes;
    }

    /** Wraps a copy of {@code b}, which must be exactly 32 bytes. */
    public static Hash of(byte[] b) {
        if (b == null || b.length != LENGTH) {
            throw new IllegalArgumentException("a hash is exactly " + LENGTH + " bytes, got "
                    + (b == null ? "null" : b.length + " bytes"));
        }
        return new Hash(b.clone());
    }

    /** Reads 32 bytes at {@code off}. */
    public static Hash of(byte[] b, int off) {
        if (off < 0 || off + LENGTH > b.length) {
            throw new IllegalArgumentException("need " + LENGTH + " bytes at offset " + off + ", array has " + b.length);
        }
        return new Hash(Arrays.copyOfRange(b, off, off + LENGTH));
    }

    static Hash wrap(byte[] b) {
        return new Hash(b);
    }

    public static Hash fromHex(String hex) {
        return of(HexFormat.of().parseHex(hex));
    }

    /** A copy of the 32 digest bytes. */
    public byte[] bytes() {
        return bytes.clone();
    }

    /** Copies the digest into {@code dst} at {@code off}. */
    public void copyTo(byte[] dst, int off) {
        System.arraycopy(bytes, 0, dst, off, LENGTH);
    }

    byte[] bytesNoCopy() {
        return bytes;
    }

    public String toHex() {
        return HexFormat.of().formatHex(bytes);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Hash h && Arrays.equals(bytes, h.bytes);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(bytes);
    }

    @Override
    public String toString() {
        return toHex().substring(0, 12);
    }
}
