package io.salus.core.merkle;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import org.bouncycastle.crypto.digests.Blake3Digest;

/**
 * The hash functions a volume may use. Both produce 32-byte digests. The algorithm is fixed when a
 * volume is created and recorded with it.
 *
 * <p>Domain separation: a leaf (block) hash is {@code H(0x00 || block)}, an interior node is
 * {@code H(0x01 || left || right)}, so a block can never be confused with a pair of child hashes.
 */
public enum HashAlgorithm {
    /** SHA-256 from the JDK ({@link MessageDigest}). */
    SHA256((byte) 1),
    /** BLAKE3-256 from Bouncy Castle ({@link Blake3Digest}). */
    BLAKE3((byte) 2);

    public static final byte LEAF_PREFIX = 0x00;
    public static final byte NODE_PREFIX = 0x01;

    private final byte code;

    HashAlgorithm(byte code) {
        this.code = code;
    }

    /** Stable one-byte code used in encodings. */
    public byte code() {
        return code;
    }

    public static HashAlgorithm fromCode(byte code) {
        for (HashAlgorithm a : values()) {
            if (a.code == code) {
                return a;
            }
        }
        throw new IllegalArgumentException("unknown hash algorithm code " + code + " (known: 1=SHA256, 2=BLAKE3)");
    }

    /** An incremental hasher; not thread-safe, cheap to create. */
    public Hasher newHasher() {
        return switch (this) {
            case SHA256 -> new ShaHasher();
            case BLAKE3 -> new Blake3Hasher();
        };
    }

    /** Plain digest of {@code len} bytes of {@code b} starting at {@code off} (no domain prefix). */
    public Hash hash(byte[] b, int off, int len) {
        return newHasher().update(b, off, len).digest();
    }

    public Hash hash(byte[] b) {
        return hash(b, 0, b.length);
    }

    /** Leaf hash of a block's content: {@code H(0x00 || block)}. */
    public Hash leafHash(byte[] block, int off, int len) {
        return newHasher().update(LEAF_PREFIX).update(block, off, len).digest();
    }

    public Hash leafHash(byte[] block) {
        return leafHash(block, 0, block.length);
    }

    /** Interior node hash: {@code H(0x01 || left || right)}. */
    public Hash nodeHash(Hash left, Hash right) {
        Hasher h = newHasher().update(NODE_PREFIX);
        h.update(left.bytesNoCopy(), 0, Hash.LENGTH);
        h.update(right.bytesNoCopy(), 0, Hash.LENGTH);
        return h.digest();
    }

    /** An incremental hash computation. */
    public interface Hasher {
        Hasher update(byte b);

        Hasher update(byte[] b, int off, int len);

        default Hasher update(byte[] b) {
            return update(b, 0, b.length);
        }

        Hash digest();
    }

    private static final class ShaHasher implements Hasher {
        private final MessageDigest md;

        ShaHasher() {
            try {
                md = MessageDigest.getInstance("SHA-256");
            } catch (NoSuchAlgorithmException e) {
                throw new IllegalStateException("JDK without SHA-256", e);
            }
        }

        @Override
        public Hasher update(byte b) {
            md.update(b);
            return this;
        }

        @Override
        public Hasher update(byte[] b, int off, int len) {
            md.update(b, off, len);
            return this;
        }

        @Override
        public Hash digest() {
            return Hash.wrap(md.digest());
        }
    }

    private static final class Blake3Hasher implements Hasher {
        private final Blake3Digest d = new Blake3Digest(256);

        @Override
        public Hasher update(byte b) {
            d.update(b);
            return this;
        }

        @Override
        public Hasher update(byte[] b, int off, int len) {
            d.update(b, off, len);
            return this;
        }

        @Override
        public Hash digest() {
            byte[] out = new byte[Hash.LENGTH];
            d.doFinal(out, 0);
            return Hash.wrap(out);
        }
    }
}
