package io.salus.core.crypto;

/** Signs messages on behalf of one node. Implementations are thread-safe. */
public interface Signer {
    NodeId id();

    SignatureScheme scheme();

    byte[] sign(byte[] msg, int off, int len);

    default byte[] sign(byte[] msg) {
        return sign(msg, 0, msg.length);
    }
}
