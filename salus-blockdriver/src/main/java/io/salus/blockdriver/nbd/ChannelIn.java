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
  /** Read-only twin of {@link #buf}, repositioned for each {@link #view} (no allocation). */
  private final ByteBuffer viewBuf;
  /** Run before every read(2) that may block (flushes replies held back for batching). */
  private volatile Runnable beforeRead = () -> { };
  /** Bytes received from the socket so far (read by a watchdog on another thread). */
  private volatile long received;

  ChannelIn(SocketChannel ch, int size) {
    this.ch = ch;
    this.buf = ByteBuffer.allocateDirect(size);
    this.viewBuf = buf.asReadOnlyBuffer();
    buf.flip(); // empty, read mode
  }

  /**
   * Sets what runs before each read from the socket: the reader thread is about to wait for the
   * client, so whatever it holds back for the client must go out first.
   */
  void beforeRead(Runnable r) {
    this.beforeRead = r;
  }

  /** Bytes received from the socket so far (any thread; grows while a payload arrives). */
  long received() {
    return received;
  }

  /** Bytes already received and buffered (no system call). */
  int buffered() {
    return buf.remaining();
  }

  /**
   * Makes at least {@code n} bytes available. New bytes are read after the buffered ones; the
   * buffered bytes are moved to the front only when the space behind them is too small (so a
   * stream of pipelined requests costs no copying in the common case).
   */
  private void need(int n) throws IOException {
    int have = buf.remaining();
    if (have >= n) {
      return;
    }
    if (have == 0) {
      buf.clear().limit(0);
    } else if (buf.capacity() - buf.position() < n) {
      buf.compact().flip();
    }
    beforeRead.run();
    int start = buf.position();
    buf.position(buf.limit()).limit(buf.capacity());
    try {
      while (buf.position() - start < n) {
        int r = ch.read(buf);
        if (r < 0) {
          throw new EOFException("peer closed");
        }
        received += r;
      }
    } finally {
      buf.limit(buf.position()).position(start);
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

  /** Largest payload {@link #view} serves from the receive buffer. */
  int maxView() {
    return buf.capacity() / 2;
  }

  /**
   * The next {@code n} bytes ({@code n <= maxView()}) as a read-only view of the receive buffer,
   * filling it from the socket as needed; one {@code read} system call usually brings several
   * pipelined requests. The view is valid only until the next call on this object: it is the
   * same read-only buffer object every time (position to limit = the payload; not a slice, so
   * its position is not 0), which saves two allocations per small write.
   */
  ByteBuffer view(int n) throws IOException {
    need(n);
    int p = buf.position();
    viewBuf.limit(p + n).position(p);
    buf.position(p + n);
    return viewBuf;
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
    if (dst.hasRemaining()) {
      beforeRead.run();
    }
    while (dst.hasRemaining()) {
      int r = ch.read(dst);
      if (r < 0) {
        throw new EOFException("peer closed");
      }
      received += r;
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
