package io.salus.core.crypto;

/** Checks signatures of any known node, each under the scheme its keyring records for it. Thread-safe. */
public interface Verifier {
    /**
     * The scheme {@code signer}'s signatures must use, as the keyring records it (never as a signature or a
     * certificate claims it), or null if the signer is unknown.
     */
    SignatureScheme schemeOf(NodeId signer);

    /**
     * True iff {@code sig} is {@code signer}'s signature of the message under {@link #schemeOf signer's scheme};
     * false for unknown signers and for a signature of another scheme.
     */
    boolean verify(NodeId signer, byte[] msg, int off, int len, byte[] sig);

    default boolean verify(NodeId signer, byte[] msg, byte[] sig) {
        return verify(signer, msg, 0, msg.length, sig);
    }
}
