package io.salus.blockdriver.nbd;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;

/**
 * Buffered big-endian writes to a blocking socket channel. Headers and small payloads are
 * gathered in a direct buffer; a large payload is written together with the pending header in
 * one gathering write. Not thread-safe: callers hold the connection's write lock.
 */
final class ChannelOut {
  private final SocketChannel ch;
  private final ByteBuffer buf;
  private final ByteBuffer[] pair = new ByteBuffer[2];
  /** Bytes written to the socket so far (read by a watchdog on another thread). */
  private volatile long sent;
  /** True while a write to the socket is under way (it blocks while the client does not read). */
  private volatile boolean writing;

  ChannelOut(SocketChannel ch, int size) {
    this.ch = ch;
    this.buf = ByteBuffer.allocateDirect(size);
  }

  private void room(int n) throws IOException {
    if (buf.remaining() < n) {
      flush();
    }
  }

  void writeLong(long v) throws IOException {
    room(8);
    buf.putLong(v);
  }

  void writeInt(int v) throws IOException {
    room(4);
    buf.putInt(v);
  }

  void writeShort(int v) throws IOException {
    room(2);
    buf.putShort((short) v);
  }

  void write(byte[] b) throws IOException {
    write(ByteBuffer.wrap(b));
  }

  /** Writes {@code data} (position to limit); small payloads are buffered. */
  void write(ByteBuffer data) throws IOException {
    if (data.remaining() <= buf.remaining()) {
      buf.put(data);
      return;
    }
    if (data.remaining() <= buf.capacity() / 4) {
      flush();
      buf.put(data);
      return;
    }
    buf.flip();
    pair[0] = buf;
    pair[1] = data;
    writing = true;
    try {
      while (buf.hasRemaining() || data.hasRemaining()) {
        sent += ch.write(pair);
      }
    } finally {
      writing = false;
      buf.clear();
      pair[0] = null;
      pair[1] = null;
    }
  }

  /** Writes the pending bytes and then all of {@code data} with gathering writes. */
  void write(ByteBuffer[] data) throws IOException {
    ByteBuffer[] all = new ByteBuffer[data.length + 1];
    buf.flip();
    all[0] = buf;
    System.arraycopy(data, 0, all, 1, data.length);
    long total = 0;
    for (ByteBuffer b : all) {
      total += b.remaining();
    }
    writing = true;
    try {
      while (total > 0) {
        long n = ch.write(all);
        sent += n;
        total -= n;
      }
    } finally {
      writing = false;
      buf.clear();
    }
  }

  boolean hasPending() {
    return buf.position() > 0;
  }

  void flush() throws IOException {
    buf.flip();
    writing = true;
    try {
      while (buf.hasRemaining()) {
        sent += ch.write(buf);
      }
    } finally {
      writing = false;
      buf.clear();
    }
  }

  /** Bytes written to the socket so far (any thread). */
  long sent() {
    return sent;
  }

  /** True while a write to the socket is under way (any thread). */
  boolean writing() {
    return writing;
  }
}
