package io.salus.hdfs.witness;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32C;

import io.salus.core.cert.RegionId;

/**
 * One record of the witness journal (storage format version 1, big-endian):
 *
 * <pre>
 *   u32 magic 0x53574A31 ("SWJ1")
 *   u8  type        1 = PUT (a LOG_ENTRY certificate), 2 = TRUNCATE (drop entries &lt;= index)
 *   u32 body length n
 *   u32 CRC32C of the 9 bytes above
 *   n   body:  u8 volume length, volume (UTF-8), i32 region index, i64 generation, i64 index,
 *              [PUT only] certificate bytes (salus-core encoding, unchanged)
 *   u32 CRC32C of the body
 * </pre>
 *
 * A separate header CRC lets recovery tell a record whose length field is damaged from one that
 * was cut short by a crash.
 */
record JournalRecord(byte type, RegionId region, long generation, long index, byte[] cert) {
  static final int MAGIC = 0x53574A31;
  static final byte PUT = 1;
  static final byte TRUNCATE = 2;
  static final int HEADER = 13;
  static final int TRAILER = 4;

  byte[] encode() {
    byte[] vol = region.volume().getBytes(StandardCharsets.UTF_8);
    int certLen = cert == null ? 0 : cert.length;
    int bodyLen = 1 + vol.length + 4 + 8 + 8 + certLen;
    ByteBuffer b = ByteBuffer.allocate(HEADER + bodyLen + TRAILER);
    b.putInt(MAGIC).put(type).putInt(bodyLen);
    b.putInt(crc(b.array(), 0, 9));
    int bodyStart = b.position();
    b.put((byte) vol.length).put(vol).putInt(region.index()).putLong(generation).putLong(index);
    if (cert != null) {
      b.put(cert);
    }
    b.putInt(crc(b.array(), bodyStart, bodyLen));
    return b.array();
  }

  /** Parses a body whose CRC has been checked; throws IllegalArgumentException on a bad body. */
  static JournalRecord parseBody(byte type, byte[] body) {
    ByteBuffer b = ByteBuffer.wrap(body);
    if (type != PUT && type != TRUNCATE) {
      throw new IllegalArgumentException("unknown record type " + type);
    }
    int vl = b.get() & 0xff;
    if (vl == 0 || b.remaining() < vl + 20) {
      throw new IllegalArgumentException("record body too short for its key");
    }
    byte[] vol = new byte[vl];
    b.get(vol);
    int ri = b.getInt();
    long gen = b.getLong();
    long idx = b.getLong();
    byte[] cert = null;
    if (type == PUT) {
      cert = new byte[b.remaining()];
      b.get(cert);
      if (cert.length == 0) {
        throw new IllegalArgumentException("PUT record without certificate bytes");
      }
    } else if (b.hasRemaining()) {
      throw new IllegalArgumentException("TRUNCATE record with trailing bytes");
    }
    return new JournalRecord(type, new RegionId(new String(vol, StandardCharsets.UTF_8), ri), gen,
        idx, cert);
  }

  static int crc(byte[] a, int off, int len) {
    CRC32C c = new CRC32C();
    c.update(a, off, len);
    return (int) c.getValue();
  }
}
