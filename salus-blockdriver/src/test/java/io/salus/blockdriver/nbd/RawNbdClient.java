package io.salus.blockdriver.nbd;

import static io.salus.blockdriver.nbd.NbdProtocol.*;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * A small NBD client speaking the wire protocol byte by byte, so tests can send exactly the
 * (valid or malformed) messages they want. Real clients (libnbd, qemu) are exercised in the it
 * module.
 */
final class RawNbdClient implements AutoCloseable {
  final Socket socket;
  final DataInputStream in;
  final DataOutputStream out;
  boolean structured;
  long exportSize;
  int transmissionFlags;

  /** One option reply. */
  record OptReply(int option, int type, byte[] data) {}

  /** One (simple or structured, single-chunk) reply. */
  record Reply(long handle, int error, byte[] data, int chunkType) {}

  RawNbdClient(int port) throws IOException {
    socket = new Socket();
    socket.connect(new InetSocketAddress("127.0.0.1", port), 5000);
    socket.setSoTimeout(20_000);
    in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
    out = new DataOutputStream(new BufferedOutputStream(socket.getOutputStream()));
  }

  /** Reads the server greeting and sends client flags. Returns the handshake flags. */
  int greet(int clientFlags) throws IOException {
    if (in.readLong() != NBDMAGIC || in.readLong() != IHAVEOPT) {
      throw new IOException("bad greeting");
    }
    int flags = in.readUnsignedShort();
    out.writeInt(clientFlags);
    out.flush();
    return flags;
  }

  void sendOption(int option, byte[] data) throws IOException {
    out.writeLong(IHAVEOPT);
    out.writeInt(option);
    out.writeInt(data.length);
    out.write(data);
    out.flush();
  }

  OptReply readOptReply() throws IOException {
    if (in.readLong() != OPTION_REPLY_MAGIC) {
      throw new IOException("bad option reply magic");
    }
    int opt = in.readInt();
    int type = in.readInt();
    int len = in.readInt();
    byte[] d = new byte[len];
    in.readFully(d);
    return new OptReply(opt, type, d);
  }

  static byte[] infoRequest(String name, int... infos) {
    byte[] nb = name.getBytes(StandardCharsets.UTF_8);
    ByteBuffer b = ByteBuffer.allocate(4 + nb.length + 2 + 2 * infos.length);
    b.putInt(nb.length).put(nb).putShort((short) infos.length);
    for (int i : infos) {
      b.putShort((short) i);
    }
    return b.array();
  }

  /** Full handshake: optional STRUCTURED_REPLY, then GO. */
  void connect(String export, boolean wantStructured) throws IOException {
    greet(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES);
    if (wantStructured) {
      sendOption(OPT_STRUCTURED_REPLY, new byte[0]);
      OptReply r = readOptReply();
      if (r.type() != REP_ACK) {
        throw new IOException("structured reply refused");
      }
      structured = true;
    }
    sendOption(OPT_GO, infoRequest(export, INFO_BLOCK_SIZE));
    while (true) {
      OptReply r = readOptReply();
      if (r.type() == REP_ACK) {
        return;
      }
      if (r.type() == REP_INFO) {
        ByteBuffer b = ByteBuffer.wrap(r.data());
        if (b.getShort() == INFO_EXPORT) {
          exportSize = b.getLong();
          transmissionFlags = b.getShort() & 0xffff;
        }
        continue;
      }
      throw new IOException("GO failed with reply type 0x" + Integer.toHexString(r.type()));
    }
  }

  /** Buffers a request header (not flushed): tests that send partial requests add what they want. */
  void writeRequestHeader(int flags, int type, long handle, long offset, int length) throws IOException {
    out.writeInt(REQUEST_MAGIC);
    out.writeShort(flags);
    out.writeShort(type);
    out.writeLong(handle);
    out.writeLong(offset);
    out.writeInt(length);
  }

  void sendRequest(int flags, int type, long handle, long offset, int length, byte[] payload)
      throws IOException {
    writeRequestHeader(flags, type, handle, offset, length);
    if (payload != null) {
      out.write(payload);
    }
    out.flush();
  }

  /** Reads one reply; {@code readLength} is the data length expected for a simple READ reply. */
  Reply readReply(int readLength) throws IOException {
    int magic = in.readInt();
    if (magic == SIMPLE_REPLY_MAGIC) {
      int err = in.readInt();
      long handle = in.readLong();
      byte[] data = null;
      if (err == 0 && readLength > 0) {
        data = new byte[readLength];
        in.readFully(data);
      }
      return new Reply(handle, err, data, -1);
    }
    if (magic != STRUCTURED_REPLY_MAGIC) {
      throw new IOException("bad reply magic 0x" + Integer.toHexString(magic));
    }
    int flags = in.readUnsignedShort();
    int type = in.readUnsignedShort();
    long handle = in.readLong();
    int len = in.readInt();
    byte[] payload = new byte[len];
    in.readFully(payload);
    if ((flags & REPLY_FLAG_DONE) == 0) {
      throw new IOException("multi-chunk replies not expected from this server");
    }
    ByteBuffer b = ByteBuffer.wrap(payload);
    switch (type) {
      case REPLY_TYPE_NONE:
        return new Reply(handle, 0, null, type);
      case REPLY_TYPE_OFFSET_DATA: {
        b.getLong();
        byte[] d = new byte[len - 8];
        b.get(d);
        return new Reply(handle, 0, d, type);
      }
      case REPLY_TYPE_ERROR:
        return new Reply(handle, b.getInt(), null, type);
      default:
        throw new IOException("unexpected chunk type " + type);
    }
  }

  byte[] read(long offset, int length) throws IOException {
    sendRequest(0, CMD_READ, 1, offset, length, null);
    Reply r = readReply(length);
    if (r.error() != 0) {
      throw new IOException("read error " + r.error());
    }
    return r.data();
  }

  int write(long offset, byte[] data, boolean fua) throws IOException {
    sendRequest(fua ? CMD_FLAG_FUA : 0, CMD_WRITE, 2, offset, data.length, data);
    return readReply(0).error();
  }

  void disconnect() throws IOException {
    sendRequest(0, CMD_DISC, 0, 0, 0, null);
  }

  /** True when the server has closed the connection (read returns EOF). */
  boolean serverClosed() {
    try {
      socket.setSoTimeout(5000);
      return in.read() < 0;
    } catch (IOException e) {
      return true;
    }
  }

  @Override
  public void close() throws IOException {
    socket.close();
  }
}
