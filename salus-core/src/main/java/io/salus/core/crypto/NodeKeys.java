package io.salus.core.crypto;

import java.security.SecureRandom;
import java.util.Random;
import java.util.zip.CRC32C;
import org.bouncycastle.crypto.digests.SHA256Digest;
import org.bouncycastle.crypto.macs.HMac;
import org.bouncycastle.crypto.params.KeyParameter;
import org.bouncycastle.crypto.params.Ed25519PrivateKeyParameters;
import org.bouncycastle.crypto.params.Ed25519PublicKeyParameters;
import org.bouncycastle.crypto.signers.Ed25519Signer;

/**
 * One node's signing material for a scheme, and the public part other nodes need to verify it
 * ({@link #verificationKey()}: empty for the weak scheme, the shared secret for HMAC, the public key
 * for Ed25519). Register the verification key in a {@link KeyDirectory}.
 */
public final class NodeKeys {
    private final NodeId id;
    private final SignatureScheme scheme;
    private final byte[] secret;
    private final byte[] verificationKey;

    private NodeKeys(NodeId id, SignatureScheme scheme, byte[] secret, byte[] verificationKey) {
        this.id = id;
        this.scheme = scheme;
        this.secret = secret;
        this.verificationKey = verificationKey;
    }

    /** Fresh keys from a {@link SecureRandom}. */
    public static NodeKeys generate(SignatureScheme scheme, NodeId id, SecureRandom rnd) {
        byte[] seed = new byte[32];
        rnd.nextBytes(seed);
        return fromSecret(scheme, id, seed);
    }

    /** Deterministic keys for simulations and tests only (derived from {@code seed} and the id). */
    public static NodeKeys deterministic(SignatureScheme scheme, NodeId id, long seed) {
        byte[] secret = new byte[32];
        new Random(seed * 31 + id.name().hashCode()).nextBytes(secret);
        return fromSecret(scheme, id, secret);
    }

    /** Keys from a 32-byte secret (HMAC key or Ed25519 private seed; ignored by the weak scheme). */
    public static NodeKeys fromSecret(SignatureScheme scheme, NodeId id, byte[] secret) {
        return switch (scheme) {
            case WEAK_CRC32C -> new NodeKeys(id, scheme, new byte[0], new byte[0]);
            case HMAC_SHA256 -> new NodeKeys(id, scheme, secret.clone(), secret.clone());
            case ED25519 -> {
                Ed25519PrivateKeyParameters priv = new Ed25519PrivateKeyParameters(secret, 0);
                yield new NodeKeys(id, scheme, priv.getEncoded(), priv.generatePublicKey().getEncoded());
            }
        };
    }

    public NodeId id() {
        return id;
    }

    public SignatureScheme scheme() {
        return scheme;
    }

    public byte[] verificationKey() {
        return verificationKey.clone();
    }

    public Signer signer() {
        return switch (scheme) {
            case WEAK_CRC32C -> new WeakSigner(id);
            case HMAC_SHA256 -> new HmacSigner(id, secret);
            case ED25519 -> new EdSigner(id, new Ed25519PrivateKeyParameters(secret, 0));
        };
    }

    // ---- schemes ----

    static byte[] weakSignature(NodeId id, byte[] msg, int off, int len) {
        CRC32C c = new CRC32C();
        byte[] idb = id.utf8();
        c.update(idb.length);
        c.update(idb);
        c.update(msg, off, len);
        int v = (int) c.getValue();
        return new byte[] {(byte) (v >>> 24), (byte) (v >>> 16), (byte) (v >>> 8), (byte) v};
    }

    static byte[] hmac(byte[] key, byte[] msg, int off, int len) {
        HMac mac = new HMac(new SHA256Digest());
        mac.init(new KeyParameter(key));
        mac.update(msg, off, len);
        byte[] out = new byte[32];
        mac.doFinal(out, 0);
        return out;
    }

    static boolean edVerify(byte[] publicKey, byte[] msg, int off, int len, byte[] sig) {
        if (publicKey.length != Ed25519PublicKeyParameters.KEY_SIZE || sig.length != 64) {
            return false;
        }
        Ed25519Signer v = new Ed25519Signer();
        v.init(false, new Ed25519PublicKeyParameters(publicKey, 0));
        v.update(msg, off, len);
        return v.verifySignature(sig);
    }

    private record WeakSigner(NodeId id) implements Signer {
        @Override
        public SignatureScheme scheme() {
            return SignatureScheme.WEAK_CRC32C;
        }

        @Override
        public byte[] sign(byte[] msg, int off, int len) {
            return weakSignature(id, msg, off, len);
        }
    }

    private record HmacSigner(NodeId id, byte[] key) implements Signer {
        @Override
        public SignatureScheme scheme() {
            return SignatureScheme.HMAC_SHA256;
        }

        @Override
        public byte[] sign(byte[] msg, int off, int len) {
            return hmac(key, msg, off, len);
        }
    }

    private record EdSigner(NodeId id, Ed25519PrivateKeyParameters key) implements Signer {
        @Override
        public SignatureScheme scheme() {
            return SignatureScheme.ED25519;
        }

        @Override
        public byte[] sign(byte[] msg, int off, int len) {
            Ed25519Signer s = new Ed25519Signer();
            s.init(true, key);
            s.update(msg, off, len);
            return s.generateSignature();
        }
    }
}
