package io.salus.core.hbase;

import java.io.IOException;

/** A Salus volume's tables cannot be created, read or deleted as asked; the message says why and how to fix it. */
public final class VolumeLayoutException extends IOException {
    private static final long serialVersionUID = 1L;

    public VolumeLayoutException(String message) {
        super(message);
    }

    public VolumeLayoutException(String message, Throwable cause) {
        super(message, cause);
    }
}
