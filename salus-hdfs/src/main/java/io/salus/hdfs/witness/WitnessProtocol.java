package io.salus.hdfs.witness;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;

/**
 * The witness wire protocol, version 3 (v2 added authenticated recovery queries; v3 adds the
 * witness's own signed store acknowledgement to every STORED reply; an older peer gets a clear
 * "unsupported witness protocol version" error and the connection is closed): length-prefixed frames over TCP, big-endian, one response per
 * request, in request order (clients may pipeline). Documented in {@code docs/hdfs.md}.
 *
 * <pre>
 * request:  u32 frame length (bytes after this field) | u8 version=3 | u8 op | u64 request id | body
 * response: u32 frame length | u8 version=3 | u8 status | u64 request id | body
 *
 * op OFFER    (1) body: u32 n, n bytes of a TENTATIVE_LOG_ENTRY or LOG_ENTRY certificate
 *                  -> STORED (durable LOG_ENTRY for that slot; body u32 n + this witness's
 *                     signature over StoreAck.signedBytes(region, generation, index, digest),
 *                     the replicas' evidence that this witness stores it) | PENDING (waiting for the other
 *                     replicas' tentatives) | REJECTED (reason)
 * op QUERY    (2) body: u8 len, volume (UTF-8), i32 region, i64 generation, i64 index,
 *                  i64 attempt, u8 len, signer id (empty = unsigned), u32 n, signature
 *                  signed by a trust-file `recoverer` over {@link RecoveryQuery#signedBytes()}:
 *                  -> CERT with the stored LOG_ENTRY or a NO_NEXT_ENTRY signed by this witness
 *                     (which seals the slot, rule 15) | REJECTED (bad signature / not a recoverer)
 *                  unsigned: read-only -> CERT with what is stored | NOTHING_STORED (never seals)
 * op TRUNCATE (3) body: u32 n, n bytes of a CHECKPOINT certificate
 *                  -> TRUNCATED (entries &lt;= its throughIndex dropped) | REJECTED (reason)
 * op IDENTITY (4) body: empty -> IDENTITY: u8 len, node id, u8 scheme code, u32 n, verification key
 *
 * status: 0 STORED, 1 PENDING, 2 CERT (body u32 n + certificate), 3 TRUNCATED, 4 IDENTITY,
 *         5 NOTHING_STORED (empty body),
 *         16 REJECTED, 17 BAD_REQUEST, 18 BUSY, 19 ERROR   (16..19 carry u16 n + UTF-8 message)
 * </pre>
 */
public final class WitnessProtocol {
  public static final int VERSION = 3;

  public static final int OP_OFFER = 1;
  public static final int OP_QUERY = 2;
  public static final int OP_TRUNCATE = 3;
  public static final int OP_IDENTITY = 4;

  public static final int ST_STORED = 0;
  public static final int ST_PENDING = 1;
  public static final int ST_CERT = 2;
  public static final int ST_TRUNCATED = 3;
  public static final int ST_IDENTITY = 4;
  public static final int ST_NOTHING_STORED = 5;
  public static final int ST_REJECTED = 16;
  public static final int ST_BAD_REQUEST = 17;
  public static final int ST_BUSY = 18;
  public static final int ST_ERROR = 19;

  /** Frame header after the length: version, op/status, request id. */
  public static final int FRAME_HEADER = 1 + 1 + 8;

  private WitnessProtocol() {
  }

  /** A decoded frame. */
  public record Frame(int code, long requestId, byte[] body) {
  }

  public static void write(DataOutputStream out, int code, long requestId, byte[] body)
      throws IOException {
    out.writeInt(FRAME_HEADER + body.length);
    out.writeByte(VERSION);
    out.writeByte(code);
    out.writeLong(requestId);
    out.write(body);
  }

  /**
   * Reads one frame; returns null on a clean end of stream before a frame starts.
   *
   * @throws ProtocolException for a bad version or a frame over {@code maxFrame} bytes
   */
  public static Frame read(DataInputStream in, int maxFrame) throws IOException {
    int len;
    try {
      len = in.readInt();
    } catch (EOFException e) {
      return null;
    }
    if (len < FRAME_HEADER || len > maxFrame) {
      throw new ProtocolException("frame length " + len + " outside [" + FRAME_HEADER + ", "
          + maxFrame + "]; is the peer speaking the Salus witness protocol v" + VERSION + "?");
    }
    int version = in.readUnsignedByte();
    int code = in.readUnsignedByte();
    long id = in.readLong();
    byte[] body = new byte[len - FRAME_HEADER];
    in.readFully(body);
    if (version != VERSION) {
      throw new ProtocolException("unsupported witness protocol version " + version
          + " (this build speaks " + VERSION + "; v2 authenticates recovery queries, v3 signs store"
          + " acknowledgements: upgrade the older side)");
    }
    return new Frame(code, id, body);
  }

  /** A peer violated the framing; the connection is closed after reporting it. */
  public static final class ProtocolException extends IOException {
    public ProtocolException(String message) {
      super(message);
    }
  }
}
