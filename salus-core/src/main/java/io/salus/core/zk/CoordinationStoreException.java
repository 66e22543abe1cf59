package io.salus.core.zk;

/** The coordination store (ZooKeeper) failed or holds data Salus cannot read; the message names the znode. */
public class CoordinationStoreException extends RuntimeException {
    public CoordinationStoreException(String message, Throwable cause) {
        super(message, cause);
    }
}
