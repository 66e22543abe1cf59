package io.exalt.tardis;

/** Receives the segments {@link TardisCompressor} finds in a chunk, in order. */
public interface SegmentSink {
    /** {@code data[off..off+len)} is metadata (or anything not recognised as Tardis) and stays uncompressed. */
    void meta(byte[] data, int off, int len);

    /**
     * The chunk holds, at array index {@code off} (like {@link #meta}), {@code len} bytes (a multiple of the unit size) of a consistent
     * Tardis run whose first unit carries marker {@code marker}.
     */
    void tardis(int off, long marker, long len);
}
