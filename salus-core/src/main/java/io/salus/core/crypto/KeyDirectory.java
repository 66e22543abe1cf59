package io.salus.core.crypto;

import java.security.MessageDigest;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The verification keys of all known nodes for one scheme, and the {@link Verifier} built on them.
 * The weak scheme needs no keys but still only accepts registered node ids.
 */
public final class KeyDirectory implements Verifier {
    private final SignatureScheme scheme;
    private final Map<NodeId, byte[]> keys = new ConcurrentHashMap<>();

    public KeyDirectory(SignatureScheme scheme) {
        this.scheme = scheme;
    }

    /** Registers a node's verification key (see {@link NodeKeys#verificationKey()}). */
    public KeyDirectory register(NodeId id, byte[] verificationKey) {
        keys.put(id, verificationKey.clone());
        return this;
    }

    public KeyDirectory register(NodeKeys k) {
        if (k.scheme() != scheme) {
            throw new IllegalArgumentException("keys of " + k.id() + " are " + k.scheme() + ", directory is " + scheme);
        }
        return register(k.id(), k.verificationKey());
    }

    public boolean knows(NodeId id) {
        return keys.containsKey(id);
    }

    @Override
    public SignatureScheme scheme() {
        return scheme;
    }

    @Override
    public boolean verify(NodeId signer, byte[] msg, int off, int len, byte[] sig) {
        byte[] key = keys.get(signer);
        if (key == null || sig == null || sig.length != scheme.signatureLength()) {
            return false;
        }
        return switch (scheme) {
            case WEAK_CRC32C -> MessageDigest.isEqual(NodeKeys.weakSignature(signer, msg, off, len), sig);
            case HMAC_SHA256 -> MessageDigest.isEqual(NodeKeys.hmac(key, msg, off, len), sig);
            case ED25519 -> NodeKeys.edVerify(key, msg, off, len, sig);
        };
    }
}
