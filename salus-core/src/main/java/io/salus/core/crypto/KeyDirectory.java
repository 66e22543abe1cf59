package io.salus.core.crypto;

import java.security.MessageDigest;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The verification keys of all known nodes, each with <b>its node's scheme</b>, and the {@link Verifier} built on
 * them. A node's scheme is fixed when it is registered: a signature is checked only under that scheme, whatever
 * its bytes or a certificate's scheme byte claim (a node cannot downgrade its own signatures, e.g. to the weak
 * scheme, and a server-style MAC never passes for a node registered with Ed25519). The weak scheme needs no keys
 * but still only accepts registered node ids.
 */
public final class KeyDirectory implements Verifier {
    private record Entry(SignatureScheme scheme, byte[] key) {
    }

    /** Keys {@link #deriveUnregistered derived} for unregistered nodes kept at most (then the cache starts over). */
    static final int DERIVED_CACHE = 4096;

    private final SignatureScheme scheme;
    private final Map<NodeId, Entry> keys = new ConcurrentHashMap<>();
    /** How to derive the keys of an unregistered node (null: it has none), see {@link #deriveUnregistered}. */
    private volatile java.util.function.Function<NodeId, NodeKeys> derive;
    /** A bounded cache of derived keys (never the registered ones: those are {@link #keys}). */
    private final Map<NodeId, Entry> derived = new ConcurrentHashMap<>();

    /** @param scheme the scheme of nodes registered without one ({@link #register(NodeId, byte[])}) */
    public KeyDirectory(SignatureScheme scheme) {
        this.scheme = scheme;
    }

    /** Registers a node's verification key (see {@link NodeKeys#verificationKey()}) under the default scheme. */
    public KeyDirectory register(NodeId id, byte[] verificationKey) {
        return register(id, scheme, verificationKey);
    }

    /** Registers a node's verification key under {@code nodeScheme}: its signatures verify only under it. */
    public KeyDirectory register(NodeId id, SignatureScheme nodeScheme, byte[] verificationKey) {
        keys.put(id, new Entry(nodeScheme, verificationKey.clone()));
        return this;
    }

    /** Registers a node's keys under their own scheme. */
    public KeyDirectory register(NodeKeys k) {
        return register(k.id(), k.scheme(), k.verificationKey());
    }

    /** True if {@code id} was registered (keys only {@link #deriveUnregistered derived} for it do not count). */
    public boolean knows(NodeId id) {
        return keys.containsKey(id);
    }

    /**
     * From now on, a node that was not registered verifies with the keys {@code f} derives for it ({@code f} returns
     * null for a node that has none), e.g. the replica keys of every volume a witness's {@code endpoint-volume *}
     * line covers. Nothing is registered for them: the derived keys are kept in a cache of at most
     * {@link #DERIVED_CACHE} nodes, so a stranger naming ever new nodes cannot grow this directory (review rvw22).
     * A registered node's key always wins.
     */
    public KeyDirectory deriveUnregistered(java.util.function.Function<NodeId, NodeKeys> f) {
        this.derive = f;
        derived.clear();
        return this;
    }

    private Entry entry(NodeId id) {
        Entry e = keys.get(id);
        java.util.function.Function<NodeId, NodeKeys> f = derive;
        if (e != null || f == null) {
            return e;
        }
        e = derived.get(id);
        if (e == null) {
            NodeKeys k = f.apply(id);
            if (k == null) {
                return null;
            }
            e = new Entry(k.scheme(), k.verificationKey());
            if (derived.size() >= DERIVED_CACHE) {
                derived.clear(); // derivable again: dropping them costs a derivation, never a wrong answer
            }
            derived.put(id, e);
        }
        return e;
    }

    /** The scheme of nodes registered without one. */
    public SignatureScheme scheme() {
        return scheme;
    }

    @Override
    public SignatureScheme schemeOf(NodeId signer) {
        Entry e = entry(signer);
        return e == null ? null : e.scheme();
    }

    @Override
    public boolean verify(NodeId signer, byte[] msg, int off, int len, byte[] sig) {
        Entry e = entry(signer);
        if (e == null || sig == null || sig.length != e.scheme().signatureLength()) {
            return false;
        }
        return switch (e.scheme()) {
            case WEAK_CRC32C -> MessageDigest.isEqual(NodeKeys.weakSignature(signer, msg, off, len), sig);
            case HMAC_SHA256 -> MessageDigest.isEqual(NodeKeys.hmac(e.key(), msg, off, len), sig);
            case ED25519 -> NodeKeys.edVerify(e.key(), msg, off, len, sig);
        };
    }
}
