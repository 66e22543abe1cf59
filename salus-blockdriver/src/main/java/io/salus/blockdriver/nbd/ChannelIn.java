package io.salus.blockdriver.nbd;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;

/**
 * Buffered big-endian reads from a blocking socket channel. Small fields come from a direct
 * receive buffer; large payloads go straight into the caller's buffer (one copy out of the
 * kernel).
 */
final class ChannelIn {
  private final SocketChannel ch;
  private final ByteBuffer buf;

  ChannelIn(SocketChannel ch, int size) {
    this.ch = ch;
    this.buf = ByteBuffer.allocateDirect(size);
    buf.flip(); // empty, read mode
  }

  /** Bytes already received and buffered (no system call). */
  int buffered() {
    return buf.remaining();
  }

  private void need(int n) throws IOException {
    if (buf.remaining() >= n) {
      return;
    }
    buf.compact();
    try {
      while (buf.position() < n) {
        if (ch.read(buf) < 0) {
          throw new EOFException("peer closed");
        }
      }
    } finally {
      buf.flip();
    }
  }

  int readInt() throws IOException {
    need(4);
    return buf.getInt();
  }

  long readLong() throws IOException {
    need(8);
    return buf.getLong();
  }

  int readUnsignedShort() throws IOException {
    need(2);
    return buf.getShort() & 0xffff;
  }

  void readFully(byte[] dst) throws IOException {
    readFully(ByteBuffer.wrap(dst));
  }

  /** Fills {@code dst} up to its limit. */
  void readFully(ByteBuffer dst) throws IOException {
    if (buf.hasRemaining()) {
      int n = Math.min(buf.remaining(), dst.remaining());
      ByteBuffer slice = buf.slice();
      slice.limit(n);
      dst.put(slice);
      buf.position(buf.position() + n);
    }
    while (dst.hasRemaining()) {
      if (ch.read(dst) < 0) {
        throw new EOFException("peer closed");
      }
    }
  }

  void skip(long n) throws IOException {
    ByteBuffer scratch = ByteBuffer.allocate((int) Math.min(n, 64 * 1024));
    while (n > 0) {
      scratch.clear();
      scratch.limit((int) Math.min(n, scratch.capacity()));
      readFully(scratch);
      n -= scratch.limit();
    }
  }
}
