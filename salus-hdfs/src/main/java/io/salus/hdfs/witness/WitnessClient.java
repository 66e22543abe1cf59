package io.salus.hdfs.witness;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.Closeable;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

import io.salus.core.cert.Certificate;
import io.salus.core.cert.RegionId;
import io.salus.core.cert.Wire;
import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.SignatureScheme;
import io.salus.core.crypto.Signer;

/**
 * Client of the witness protocol (region servers broadcasting TENTATIVE_LOG_ENTRY certificates,
 * recovery querying entries). One connection, one request at a time (thread-safe: calls are
 * serialised); open one client per thread or per log for parallelism. Errors from the witness
 * surface as {@link WitnessException} with its message; transport errors as {@link IOException}.
 */
public final class WitnessClient implements Closeable {
  /** Reply to an offer. */
  public enum OfferResult { STORED, PENDING }

  /** The witness answered REJECTED, BAD_REQUEST, BUSY or ERROR. */
  public static final class WitnessException extends IOException {
    private final int status;

    WitnessException(int status, String message) {
      super(message);
      this.status = status;
    }

    public int status() {
      return status;
    }

    public boolean rejected() {
      return status == WitnessProtocol.ST_REJECTED;
    }
  }

  /** The witness's signing identity. */
  public record Identity(NodeId id, SignatureScheme scheme, byte[] verificationKey) {
  }

  private final InetSocketAddress address;
  private final Socket socket;
  private final DataInputStream in;
  private final DataOutputStream out;
  private long nextId = 1;

  public WitnessClient(InetSocketAddress address, int timeoutMillis) throws IOException {
    this.address = address;
    this.socket = new Socket();
    try {
      socket.connect(address, timeoutMillis);
      socket.setSoTimeout(timeoutMillis);
      socket.setTcpNoDelay(true);
      in = new DataInputStream(new BufferedInputStream(socket.getInputStream(), 65536));
      out = new DataOutputStream(new BufferedOutputStream(socket.getOutputStream(), 65536));
    } catch (IOException e) {
      socket.close();
      throw new IOException("cannot reach witness at " + address + ": " + e.getMessage()
          + "; is it running (salus witness / DataNode plugin) and is the port right?", e);
    }
  }

  public static WitnessClient connect(InetSocketAddress address) throws IOException {
    return new WitnessClient(address, 30_000);
  }

  public InetSocketAddress address() {
    return address;
  }

  private synchronized WitnessProtocol.Frame call(int op, byte[] body) throws IOException {
    long id = nextId++;
    WitnessProtocol.write(out, op, id, body);
    out.flush();
    WitnessProtocol.Frame f = WitnessProtocol.read(in, 64 << 20);
    if (f == null) {
      throw new IOException("witness " + address + " closed the connection");
    }
    if (f.code() >= WitnessProtocol.ST_REJECTED) {
      throw new WitnessException(f.code(), "witness " + address + ": " + statusName(f.code())
          + ": " + readMessage(f.body()));
    }
    if (f.requestId() != id) {
      throw new IOException("witness " + address + " answered request " + f.requestId()
          + " while " + id + " was outstanding");
    }
    return f;
  }

  /** Offers a TENTATIVE_LOG_ENTRY or LOG_ENTRY; STORED means durable on this witness. */
  public OfferResult offer(Certificate c) throws IOException {
    return offerBytes(c.encode());
  }

  public OfferResult offerBytes(byte[] cert) throws IOException {
    return offerForAck(cert).result();
  }

  /**
   * Reply to an offer: STORED carries the witness's signature over
   * {@code Message.StoreAck.signedBytes} of the slot (verify it against the witness's key).
   */
  public record OfferReply(OfferResult result, byte[] storeAckSignature) {
  }

  /** Offers encoded certificate bytes; a STORED reply carries the witness-signed store ack. */
  public OfferReply offerForAck(byte[] cert) throws IOException {
    WitnessProtocol.Frame f = call(WitnessProtocol.OP_OFFER, new Wire.Out().blob(cert).toByteArray());
    return switch (f.code()) {
      case WitnessProtocol.ST_STORED -> new OfferReply(OfferResult.STORED,
          new Wire.In(f.body()).blob("store ack signature"));
      case WitnessProtocol.ST_PENDING -> new OfferReply(OfferResult.PENDING, null);
      default -> throw new IOException("unexpected status " + f.code() + " to OFFER");
    };
  }

  /**
   * Unsigned, read-only query: what the witness stores at the slot (a LOG_ENTRY or an earlier
   * seal's NO_NEXT_ENTRY), or null. Never seals. Verify before use.
   */
  public Certificate query(RegionId region, long generation, long index) throws IOException {
    return queryBytes(region, generation, index, generation + 1, "", new byte[0]);
  }

  /**
   * Recovery query signed by a trust-file {@code recoverer} (the Master): the LOG_ENTRY at
   * {@code index}, or this witness's signed NO_NEXT_ENTRY, which seals the slot. {@code attempt} is
   * the new generation the recovery installs. Verify before use.
   */
  public Certificate query(RegionId region, long generation, long index, long attempt,
      Signer recoverer) throws IOException {
    RecoveryQuery q = new RecoveryQuery(region, generation, index, attempt);
    return queryBytes(region, generation, index, attempt, recoverer.id().name(), q.sign(recoverer));
  }

  /** A QUERY with explicit credentials (tests send forged or replayed ones). */
  public Certificate queryBytes(RegionId region, long generation, long index, long attempt,
      String signer, byte[] signature) throws IOException {
    WitnessProtocol.Frame f = call(WitnessProtocol.OP_QUERY, new Wire.Out().str8(region.volume())
        .i32(region.index()).i64(generation).i64(index).i64(attempt).str8(signer).blob(signature)
        .toByteArray());
    if (f.code() == WitnessProtocol.ST_NOTHING_STORED) {
      return null;
    }
    if (f.code() != WitnessProtocol.ST_CERT) {
      throw new IOException("unexpected status " + f.code() + " to QUERY");
    }
    return Certificate.decode(new Wire.In(f.body()).blob("certificate"));
  }

  /** Asks the witness to drop entries covered by a CHECKPOINT certificate. */
  public void truncate(Certificate checkpoint) throws IOException {
    WitnessProtocol.Frame f = call(WitnessProtocol.OP_TRUNCATE,
        new Wire.Out().blob(checkpoint.encode()).toByteArray());
    if (f.code() != WitnessProtocol.ST_TRUNCATED) {
      throw new IOException("unexpected status " + f.code() + " to TRUNCATE");
    }
  }

  public Identity identity() throws IOException {
    WitnessProtocol.Frame f = call(WitnessProtocol.OP_IDENTITY, new byte[0]);
    Wire.In r = new Wire.In(f.body());
    NodeId id = NodeId.of(r.str8("node id"));
    SignatureScheme s = SignatureScheme.fromCode((byte) r.u8("scheme"));
    return new Identity(id, s, r.blob("verification key"));
  }

  static String readMessage(byte[] body) {
    if (body.length < 2) {
      return "(no message)";
    }
    int n = ((body[0] & 0xff) << 8) | (body[1] & 0xff);
    return new String(body, 2, Math.min(n, body.length - 2), StandardCharsets.UTF_8);
  }

  static String statusName(int s) {
    return switch (s) {
      case WitnessProtocol.ST_REJECTED -> "REJECTED";
      case WitnessProtocol.ST_BAD_REQUEST -> "BAD_REQUEST";
      case WitnessProtocol.ST_BUSY -> "BUSY";
      case WitnessProtocol.ST_ERROR -> "ERROR";
      default -> "status " + s;
    };
  }

  @Override
  public void close() throws IOException {
    socket.close();
  }
}
