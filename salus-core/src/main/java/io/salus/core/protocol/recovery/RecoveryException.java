package io.salus.core.protocol.recovery;

/**
 * Recovery cannot proceed now (too few valid responses, no DataNode with matching bytes, failed root
 * check). Recovery is retried, replacing unavailable servers (§3.3.4 footnote 8).
 */
public class RecoveryException extends Exception {
    public RecoveryException(String message) {
        super(message);
    }
}
