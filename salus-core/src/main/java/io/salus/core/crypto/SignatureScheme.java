package io.salus.core.crypto;

/**
 * The three signature schemes Salus supports, weakest first. Each node has one scheme, recorded with its key in the
 * verifiers' keyring ({@link KeyDirectory}); by role, the client (the volume's writer) signs with
 * {@link #DEFAULT_CLIENT} and the servers (replicas, metadata holders) with {@link #DEFAULT_SERVER} unless
 * configured otherwise (docs/salus-on-hbase.md, "Signature schemes by role").
 */
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

    /**
     * The client's default: public-key signatures, so no replica, witness or other server can forge the client's
     * writes (the servers hold only its public key).
     */
    public static final SignatureScheme DEFAULT_CLIENT = ED25519;
    /**
     * The servers' default (replicas, metadata holders): a keyed MAC. Under the paper's fault model (§3.1.1: faulty
     * servers are arbitrary but not malicious, they never forge another node's signature on purpose) it detects
     * corrupted or misattributed messages as the paper's weak signatures do, and in addition nobody without the
     * servers' secrets (an outsider) can produce one. Every verifier of server signatures holds those secrets (the
     * servers, and the client, which checks replies with them: review rv20), so a <em>malicious</em> server or client
     * could sign as a server (a server never as the client).
     */
    public static final SignatureScheme DEFAULT_SERVER = HMAC_SHA256;

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

    /** True if forging this scheme's signatures is at least as hard as forging {@code other}'s. */
    public boolean atLeastAsStrongAs(SignatureScheme other) {
        return ordinal() >= other.ordinal();
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
