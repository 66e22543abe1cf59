package io.salus.core.cert;

/** Thrown when bytes are not a well-formed encoded certificate; the message says what and where. */
public class CertificateFormatException extends IllegalArgumentException {
    private final int offset;
    private final String reason;

    public CertificateFormatException(String message, int offset) {
        super(message + " (at byte offset " + offset + ")");
        this.offset = offset;
        this.reason = message;
    }

    /** Byte offset at which decoding failed. */
    public int offset() {
        return offset;
    }

    /** What was wrong, without the offset (for wrapping a nested decoder's error at an outer offset). */
    public String reason() {
        return reason;
    }

    /**
     * This error re-based into an enclosing encoding: the nested value started at {@code base} of the
     * outer input, and {@code context} says what it was.
     */
    public CertificateFormatException within(String context, int base) {
        return new CertificateFormatException(context + ": " + reason, base + offset);
    }
}
