package io.salus.core.cert;

/** Thrown when a well-formed certificate fails verification (bad signature, wrong or too few signers). */
public class CertificateVerificationException extends RuntimeException {
    public CertificateVerificationException(String message) {
        super(message);
    }
}
