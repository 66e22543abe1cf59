package io.salus.core.crypto;

/** Checks signatures of any known node. Implementations are thread-safe. */
public interface Verifier {
    SignatureScheme scheme();

    /** True iff {@code sig} is {@code signer}'s signature of the message; false for unknown signers. */
    boolean verify(NodeId signer, byte[] msg, int off, int len, byte[] sig);

    default boolean verify(NodeId signer, byte[] msg, byte[] sig) {
        return verify(signer, msg, 0, msg.length, sig);
    }
}
