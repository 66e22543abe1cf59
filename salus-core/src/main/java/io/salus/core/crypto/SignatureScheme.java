package io.salus.core.crypto;

/** The three signature schemes Salus supports. All nodes of a deployment use one scheme. */
public enum SignatureScheme {
    /**
     * The paper's weak signature: CRC32C over (signer id, message). Detects corruption by faulty but
     * non-malicious nodes at checksum speed; assumes a faulty node never produces a checksum that
     * looks like one produced by another node (§3.1.1). 4 bytes.
     */
    WEAK_CRC32C((byte) 1, 4),
    /** HMAC-SHA256 with a per-node secret key, known to verifiers through {@link KeyDirectory}. 32 bytes. */
    HMAC_SHA256((byte) 2, 32),
    /** Ed25519 (Bouncy Castle). Public-key verification. 64 bytes. */
    ED25519((byte) 3, 64);

    private final byte code;
    private final int signatureLength;

    SignatureScheme(byte code, int signatureLength) {
        this.code = code;
        this.signatureLength = signatureLength;
    }

    public byte code() {
        return code;
    }

    public int signatureLength() {
        return signatureLength;
    }

    public static SignatureScheme fromCode(byte code) {
        for (SignatureScheme s : values()) {
            if (s.code == code) {
                return s;
            }
        }
        throw new IllegalArgumentException("unknown signature scheme code " + code
                + " (known: 1=WEAK_CRC32C, 2=HMAC_SHA256, 3=ED25519)");
    }
}
