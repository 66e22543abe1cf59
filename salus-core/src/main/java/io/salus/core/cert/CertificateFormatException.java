package io.salus.core.cert;

/** Thrown when bytes are not a well-formed encoded certificate; the message says what and where. */
public class CertificateFormatException extends IllegalArgumentException {
    private final int offset;

    public CertificateFormatException(String message, int offset) {
        super(message + " (at byte offset " + offset + ")");
        this.offset = offset;
    }

    /** Byte offset at which decoding failed. */
    public int offset() {
        return offset;
    }
}
