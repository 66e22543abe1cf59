package io.salus.core.cert;

/** What is being attested; part of the signed bytes. Codes are stable (encoding version 1). */
public enum StatementKind {
    LOG_ENTRY(1), PUT_SUCCESS(2), PUT_FAILED(3), NO_NEXT_ENTRY(4), CHECKPOINT(5), COMMIT(6), ABORT(7), WRITER_EPOCH(8);

    private final int code;

    StatementKind(int code) {
        this.code = code;
    }

    public int code() {
        return code;
    }
}
