package io.salus.core.hbase.storage;

/**
 * A replica's file on HDFS holds a damaged record that is not a torn tail: a frame whose checksum or
 * magic does not match while bytes follow it, or a damaged record in a file that was completed. The
 * replica must not trust or silently drop anything past it: recovery copies the region's state from a
 * peer replica (the message names the file and the byte offset).
 */
public final class CorruptReplicaLogException extends RuntimeException {
    public CorruptReplicaLogException(String message) {
        super(message);
    }
}
