package io.salus.core.hbase.storage;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.util.zip.CRC32C;

/**
 * The canonical frame of every record a replica writes to HDFS (log entries, decisions, checkpoint
 * files): {@code magic(4) | length(4) | index(8) | headerCrc(4) | crc(4) | payload(length)}, big-endian;
 * {@code headerCrc} is the CRC32C (JDK) of magic, length and index, so a damaged length is never taken for
 * a torn tail; {@code crc} the CRC32C over length, index and payload. The index is the record's logical
 * position (log index, decision number, or a checkpoint's through-index), so a frame read back at the
 * wrong place is recognised.
 */
public final class LogFrame {
    public static final int MAGIC = 0x534c4631; // "SLF1"
    public static final int HEADER = 24;
    /** Largest payload accepted (a sub-batch is at most a few MiB; a checkpoint file is one frame). */
    public static final int MAX_PAYLOAD = 1 << 30;

    private LogFrame() {
    }

    public static byte[] encode(long index, byte[] payload) {
        ByteBuffer b = ByteBuffer.allocate(HEADER + payload.length);
        b.putInt(MAGIC).putInt(payload.length).putLong(index).putInt(headerCrc(payload.length, index))
                .putInt(crc(payload.length, index, payload)).put(payload);
        return b.array();
    }

    static int headerCrc(int length, long index) {
        CRC32C c = new CRC32C();
        c.update(ByteBuffer.allocate(16).putInt(MAGIC).putInt(length).putLong(index).flip());
        return (int) c.getValue();
    }

    static int crc(int length, long index, byte[] payload) {
        CRC32C c = new CRC32C();
        c.update(ByteBuffer.allocate(12).putInt(length).putLong(index).flip());
        c.update(payload);
        return (int) c.getValue();
    }

    /** One scanned frame: its index, payload and byte offset in the file. */
    public record Frame(long index, byte[] payload, long offset) {
        public long end() {
            return offset + HEADER + payload.length;
        }
    }

    /** What a scan stopped at: a clean end, or a torn tail starting at {@code validLength}. */
    public enum Tail { CLEAN, TORN }

    /**
     * Reads the frame starting at {@code offset} from {@code in} (positioned there) of a file of
     * {@code fileLength} bytes. Returns null when the bytes from {@code offset} to the end are the prefix
     * of a frame (a torn tail: header incomplete, or the declared payload runs past the end); throws
     * {@link CorruptReplicaLogException} when a complete frame does not verify.
     */
    public static Frame read(InputStream in, long offset, long fileLength, String file) throws IOException {
        if (fileLength - offset < HEADER) {
            return null;
        }
        byte[] h = in.readNBytes(HEADER);
        if (h.length < HEADER) {
            throw new EOFException(file + ": file shorter than its reported length " + fileLength);
        }
        ByteBuffer hb = ByteBuffer.wrap(h);
        int magic = hb.getInt();
        int len = hb.getInt();
        long index = hb.getLong();
        int hcrc = hb.getInt();
        int crc = hb.getInt();
        if (magic != MAGIC || hcrc != headerCrc(len, index) || len < 0 || len > MAX_PAYLOAD) {
            throw new CorruptReplicaLogException(file + ": damaged frame header at byte " + offset + " (magic "
                    + Integer.toHexString(magic) + ", length " + len + ") with " + (fileLength - offset)
                    + " bytes after it; not a torn tail, so nothing past it is trusted. Restore this replica's"
                    + " region from a peer replica (recovery), then delete the file.");
        }
        if (offset + HEADER + len > fileLength) {
            return null;
        }
        byte[] payload = in.readNBytes(len);
        if (payload.length < len) {
            throw new EOFException(file + ": file shorter than its reported length " + fileLength);
        }
        if (crc(len, index, payload) != crc) {
            throw new CorruptReplicaLogException(file + ": CRC32C mismatch in the frame of index " + index + " at byte "
                    + offset + " (" + len + " payload bytes, complete, so not a torn tail). Restore this replica's"
                    + " region from a peer replica (recovery), then delete the file.");
        }
        return new Frame(index, payload, offset);
    }
}
