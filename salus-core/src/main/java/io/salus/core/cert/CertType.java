package io.salus.core.cert;

/**
 * The certificates of §3.3.2–3.3.4. A tentative certificate carries one signature; the combined
 * certificate carries the matching signatures of all three replicas of an RRS (unanimous consent).
 * Codes are stable (encoding version 1).
 */
public enum CertType {
    TENTATIVE_LOG_ENTRY(1, StatementKind.LOG_ENTRY, 1),
    LOG_ENTRY(2, StatementKind.LOG_ENTRY, 3),
    TENTATIVE_PUT_SUCCESS(3, StatementKind.PUT_SUCCESS, 1),
    PUT_SUCCESS(4, StatementKind.PUT_SUCCESS, 3),
    TENTATIVE_PUT_FAILED(5, StatementKind.PUT_FAILED, 1),
    /** Signed by one DataNode store or witness: it has nothing at that log position. */
    NO_NEXT_ENTRY(6, StatementKind.NO_NEXT_ENTRY, 1),
    TENTATIVE_CHECKPOINT(7, StatementKind.CHECKPOINT, 1),
    /** Flush/compaction digest certificate: (region, k, root) signed by all three replicas. */
    CHECKPOINT(8, StatementKind.CHECKPOINT, 3),
    TENTATIVE_COMMIT(9, StatementKind.COMMIT, 1),
    COMMIT(10, StatementKind.COMMIT, 3),
    TENTATIVE_ABORT(11, StatementKind.ABORT, 1),
    ABORT(12, StatementKind.ABORT, 3),
    /**
     * The volume's writer announces its lease epoch (signed by the client alone): a replica that records it refuses
     * every sub-batch and BatchInfo of a lower epoch (fencing enforced by storage).
     */
    WRITER_EPOCH(13, StatementKind.WRITER_EPOCH, 1);

    /** Replicas per RRS whose signatures make a combined certificate. */
    public static final int RRS_SIZE = 3;

    private final int code;
    private final StatementKind kind;
    private final int signatures;

    CertType(int code, StatementKind kind, int signatures) {
        this.code = code;
        this.kind = kind;
        this.signatures = signatures;
    }

    public int code() {
        return code;
    }

    public StatementKind kind() {
        return kind;
    }

    /** Exact number of distinct signers required. */
    public int requiredSignatures() {
        return signatures;
    }

    public boolean tentative() {
        return signatures == 1;
    }

    /** The combined type that three matching tentatives of this type form, or null. */
    public CertType combined() {
        return switch (this) {
            case TENTATIVE_LOG_ENTRY -> LOG_ENTRY;
            case TENTATIVE_PUT_SUCCESS -> PUT_SUCCESS;
            case TENTATIVE_CHECKPOINT -> CHECKPOINT;
            case TENTATIVE_COMMIT -> COMMIT;
            case TENTATIVE_ABORT -> ABORT;
            default -> null;
        };
    }

    public static CertType fromCode(int code, int offset) {
        for (CertType t : values()) {
            if (t.code == code) {
                return t;
            }
        }
        throw new CertificateFormatException("unknown certificate type code " + code + " (known: 1.." + values().length + ")", offset);
    }
}
