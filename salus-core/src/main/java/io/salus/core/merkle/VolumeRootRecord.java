package io.salus.core.merkle;

import java.nio.ByteBuffer;

/**
 * What each region keeps for the mount protocol: the volume root produced by the most recent PUT
 * to one of its blocks, and that PUT's sequence number. Encoded as 8-byte big-endian seq followed
 * by the 32-byte root.
 */
public record VolumeRootRecord(Hash root, long seq) {
    public static final int ENCODED_LENGTH = 8 + Hash.LENGTH;

    /** The record a region keeps after seeing {@code candidate}: the one with the larger seq. */
    public VolumeRootRecord newer(VolumeRootRecord candidate) {
        return candidate != null && candidate.seq > seq ? candidate : this;
    }

    public byte[] encode() {
        ByteBuffer b = ByteBuffer.allocate(ENCODED_LENGTH);
        b.putLong(seq).put(root.bytesNoCopy());
        return b.array();
    }

    public static VolumeRootRecord decode(byte[] b) {
        if (b == null || b.length != ENCODED_LENGTH) {
            throw new IllegalArgumentException("a volume root record is " + ENCODED_LENGTH + " bytes (seq + root), got "
                    + (b == null ? "null" : b.length));
        }
        return new VolumeRootRecord(Hash.of(b, 8), ByteBuffer.wrap(b).getLong());
    }
}
