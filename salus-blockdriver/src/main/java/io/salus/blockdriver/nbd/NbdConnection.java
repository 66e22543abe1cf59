package io.salus.blockdriver.nbd;

import static io.salus.blockdriver.nbd.NbdProtocol.*;

import io.salus.blockdriver.metrics.BlockDriverMetrics;
import io.salus.blockdriver.volume.BlockCorruptedException;
import io.salus.blockdriver.volume.Volume;
import io.salus.blockdriver.volume.VolumeException;
import java.io.EOFException;
import java.io.IOException;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One client connection: fixed newstyle handshake, then the transmission phase with many
 * requests in flight and replies sent in completion order. Any framing error (bad magic, an
 * oversized write payload, a client vanishing mid-request) ends this connection only; requests
 * already handed to the volume complete normally, so the volume is never left half-updated by a
 * protocol error.
 */
final class NbdConnection implements Runnable {
  private static final Logger LOG = LoggerFactory.getLogger(NbdConnection.class);
  private static final int MAX_OPTION_LEN = 64 * 1024;
  private static final int MAX_OPTIONS = 256;
  private static final int MAX_IN_FLIGHT = 128;
  private static final int MAX_IN_FLIGHT_BYTES = 128 << 20;
  private static final int HANDSHAKE_TIMEOUT_MS = 30_000;
  /**
   * A transfer that holds pooled buffer memory (shared by all connections under one cap) must keep
   * moving: when no byte of a write's payload arrives, or no byte of a reply can be sent because
   * the client does not read, for this long, the connection is closed and its memory returned
   * (nothing unanswered was acknowledged; nothing is lost). Without it one client that sends a
   * large WRITE header and then nothing, or asks for large reads and never reads the replies,
   * holds the server-wide cap and every other client's large requests get ENOMEM (tests lower it).
   */
  static volatile long stallTimeoutMs = Long.getLong("salus.nbd.stallTimeoutMs", 30_000);
  /** How long a closing connection waits for its requests in flight (tests lower it). */
  static volatile long drainTimeoutMs = Long.getLong("salus.nbd.drainTimeoutMs", 60_000);
  /** Aligned reads at least this large use the volume's zero-copy views when it has them. */
  private static final int ZERO_COPY_BYTES = 64 * 1024;
  /**
   * Requests at least this large are copied to/from the volume on a worker thread. Off by
   * default: on the 2-core test machine handing large requests to a worker was slower for
   * MemoryVolume (fio 1M sequential read 3.1 vs 3.9 GiB/s, write 4.8 vs 5.2 GiB/s).
   */
  private static final int OFFLOAD_BYTES =
      Integer.getInteger("salus.nbd.offloadBytes", Integer.MAX_VALUE);

  private static final ScheduledExecutorService TIMERS =
      Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "nbd-timer");
        t.setDaemon(true);
        return t;
      });

  private final SocketChannel channel;
  private final SocketAddress remote;
  private final BufferPool pool;
  private final NbdExports exports;
  private final ExecutorService rmwExecutor;
  private final BlockDriverMetrics metrics;
  private final Runnable onClose;

  private ChannelIn in;
  private ChannelOut out;
  private final Object writeLock = new Object();
  private volatile boolean outputBroken;
  private boolean structured;
  private boolean noZeroes;
  private Thread readerThread;
  /**
   * Replies completed on threads other than this connection's reader (for HBaseVolume: the
   * HBase completion pool shared by every connection) are queued here and written by this
   * connection's own reply thread, so a client that stops reading blocks only that thread,
   * never a shared completion thread. Bounded by the in-flight limits (a request's permits are
   * released only after its reply is written).
   */
  private final LinkedBlockingQueue<Runnable> replyQueue = new LinkedBlockingQueue<>();
  private static final Runnable STOP_REPLIES = () -> { };
  private Thread replyThread;
  /** Set once the reply thread has been told to stop: later replies run on their own thread. */
  private volatile boolean repliesStopped;
  private boolean pendingFlush;
  private boolean drained;

  private final Semaphore inFlight = new Semaphore(MAX_IN_FLIGHT);
  private final Semaphore inFlightBytes = new Semaphore(MAX_IN_FLIGHT_BYTES);
  private final AtomicInteger outstanding = new AtomicInteger();

  NbdConnection(SocketChannel channel, NbdExports exports, ExecutorService rmwExecutor,
      BufferPool pool, BlockDriverMetrics metrics, Runnable onClose) {
    this.channel = channel;
    SocketAddress r = null;
    try {
      r = channel.getRemoteAddress();
    } catch (IOException ignored) {
      // unknown
    }
    this.remote = r;
    this.pool = pool;
    this.exports = exports;
    this.rmwExecutor = rmwExecutor;
    this.metrics = metrics;
    this.onClose = onClose;
  }

  /** Thrown to end the connection cleanly (protocol violation or client gone). */
  private static final class Disconnect extends Exception {
    Disconnect(String why) {
      super(why, null, false, false);
    }
  }

  @Override
  public void run() {
    readerThread = Thread.currentThread();
    try {
      channel.socket().setTcpNoDelay(true);
      keepAlive(channel);
      in = new ChannelIn(channel, 256 * 1024);
      out = new ChannelOut(channel, 256 * 1024);
      ScheduledFuture<?> timeout = TIMERS.schedule(() -> {
        metrics.handshakeFailures.increment();
        closeQuietly();
      }, HANDSHAKE_TIMEOUT_MS, TimeUnit.MILLISECONDS);
      Volume volume;
      try {
        volume = handshake();
      } finally {
        timeout.cancel(false);
      }
      if (volume == null) {
        return;
      }
      ScheduledFuture<?> replyWatch = watchReplies();
      try {
        transmission(new ByteRangeIo(volume, rmwExecutor, metrics));
      } finally {
        replyWatch.cancel(false);
      }
    } catch (Disconnect d) {
      LOG.debug("NBD connection {} closed: {}", remote, d.getMessage());
    } catch (EOFException e) {
      LOG.debug("NBD client {} went away: {}", remote, e.toString());
    } catch (IOException e) {
      LOG.debug("NBD connection {} I/O error: {}", remote, e.toString());
    } catch (RuntimeException e) {
      LOG.warn("NBD connection {} failed", remote, e);
    } catch (OutOfMemoryError e) {
      // e.g. direct memory outside the buffer pool (socket buffers): end this connection only
      LOG.warn("NBD connection {} closed: out of memory ({}); lower -Dsalus.nbd.maxBufferBytes"
          + " or raise -XX:MaxDirectMemorySize", remote, e.getMessage());
    } finally {
      drain();
      stopReplyThread();
      onClose.run();
    }
  }

  /**
   * TCP keepalive on the connection: the server writes nothing to an idle client, so without it
   * a client host that vanished (power loss, killed VM) would keep its connection, its slot
   * (at most {@link NbdServer#DEFAULT_MAX_CONNECTIONS}) and its threads forever. Probes start
   * after 60 s idle, every 10 s; after 6 unanswered the socket fails and the connection closes.
   */
  private void keepAlive(SocketChannel ch) {
    try {
      ch.setOption(java.net.StandardSocketOptions.SO_KEEPALIVE, true);
      ch.setOption(jdk.net.ExtendedSocketOptions.TCP_KEEPIDLE, 60);
      ch.setOption(jdk.net.ExtendedSocketOptions.TCP_KEEPINTERVAL, 10);
      ch.setOption(jdk.net.ExtendedSocketOptions.TCP_KEEPCOUNT, 6);
    } catch (IOException | UnsupportedOperationException e) {
      LOG.debug("NBD connection {}: keepalive settings not applied: {}", remote, e.toString());
    }
  }

  /** Runs {@code reply} now on the reader thread, else on this connection's reply thread. */
  private void replyOn(Runnable reply) {
    if (Thread.currentThread() == readerThread || replyThread == null) {
      reply.run();
    } else {
      replyQueue.add(reply);
      if (repliesStopped) {
        // the reply thread is gone (a request outlived the drain wait): run it here, so its
        // buffer and permits are released (the write fails on the closed channel)
        runLeftoverReplies();
      }
    }
  }

  /** Runs replies queued after the reply thread stopped; each runs once (poll is atomic). */
  private void runLeftoverReplies() {
    Runnable r;
    while ((r = replyQueue.poll()) != null) {
      if (r != STOP_REPLIES) {
        runReply(r);
      }
    }
  }

  private void runReply(Runnable r) {
    try {
      r.run();
    } catch (RuntimeException e) {
      // never let one reply end the reply thread: later replies would never run and their
      // buffers would be lost to the server-wide cap
      LOG.warn("NBD reply to {} failed", remote, e);
    }
  }

  private void replyLoop() {
    try {
      while (true) {
        Runnable r = replyQueue.take();
        if (r == STOP_REPLIES) {
          // the replies run just before the stop may still be held back for batching (the queue
          // was not empty after them: the stop was in it): send them before the channel closes
          flushPendingReplies();
          return;
        }
        runReply(r);
        if (replyQueue.isEmpty()) {
          flushPendingReplies();
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private void stopReplyThread() {
    replyQueue.add(STOP_REPLIES);
    if (replyThread != null) {
      try {
        replyThread.join(5000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    closeQuietly(); // also unblocks a reply write to a client that stopped reading
    if (replyThread != null) {
      try {
        replyThread.join(5000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    repliesStopped = true;
    runLeftoverReplies();
  }

  /**
   * Closes the connection if the payload being read into pooled memory makes no progress for
   * {@link #stallTimeoutMs} (checked every half period): the blocked read then fails, and the
   * caller returns the buffer.
   */
  private ScheduledFuture<?> watchPayload(long length) {
    return watchProgress(in::received, () -> true, "no byte of a " + length + "-byte write payload"
        + " arrived for " + stallTimeoutMs + " ms (its pooled buffer returned; the write was not"
        + " acknowledged)");
  }

  /**
   * Closes the connection if a reply write to the socket makes no progress for
   * {@link #stallTimeoutMs} (the client stopped reading while its replies hold pooled buffers):
   * the blocked write fails and every reply's buffer goes back to the pool.
   */
  private ScheduledFuture<?> watchReplies() {
    return watchProgress(out::sent, out::writing, "its client read no reply byte for "
        + stallTimeoutMs + " ms (the buffers of its replies returned)");
  }

  /**
   * The stall watchdog of {@link #watchPayload} and {@link #watchReplies}: every half
   * {@link #stallTimeoutMs}, a transfer that is {@code active} and whose byte count has not moved
   * for the whole timeout closes the connection (once), counted in {@code stalledConnections}.
   */
  private ScheduledFuture<?> watchProgress(java.util.function.LongSupplier bytes,
      java.util.function.BooleanSupplier active, String why) {
    long period = Math.max(1, stallTimeoutMs / 2);
    long[] last = {bytes.getAsLong(), System.nanoTime(), 0};
    return TIMERS.scheduleAtFixedRate(() -> {
      long now = System.nanoTime();
      long moved = bytes.getAsLong();
      if (last[2] != 0) {
        return; // closed already; the blocked call's failure cancels this watch
      }
      if (moved != last[0] || !active.getAsBoolean()) {
        last[0] = moved;
        last[1] = now;
      } else if (now - last[1] >= TimeUnit.MILLISECONDS.toNanos(stallTimeoutMs)) {
        last[2] = 1;
        metrics.stalledConnections.increment();
        LOG.warn("NBD connection {} closed: {}. Raise -Dsalus.nbd.stallTimeoutMs for slow clients",
            remote, why);
        closeQuietly();
      }
    }, period, period, TimeUnit.MILLISECONDS);
  }

  void closeQuietly() {
    try {
      channel.close();
    } catch (IOException ignored) {
      // closing
    }
  }

  /** Waits (bounded) for requests handed to the volume to finish before closing. */
  private void drain() {
    if (drained) {
      return;
    }
    drained = true;
    try {
      inFlight.tryAcquire(MAX_IN_FLIGHT, drainTimeoutMs, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  // ---------------------------------------------------------------- handshake

  private Volume handshake() throws IOException, Disconnect {
    out.writeLong(NBDMAGIC);
    out.writeLong(IHAVEOPT);
    out.writeShort(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES);
    out.flush();
    int clientFlags = in.readInt();
    if ((clientFlags & ~(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES)) != 0) {
      metrics.handshakeFailures.increment();
      throw new Disconnect("unknown client flags 0x" + Integer.toHexString(clientFlags));
    }
    noZeroes = (clientFlags & FLAG_C_NO_ZEROES) != 0;
    for (int n = 0; n < MAX_OPTIONS; n++) {
      long magic = in.readLong();
      if (magic != IHAVEOPT) {
        metrics.handshakeFailures.increment();
        throw new Disconnect("bad option magic 0x" + Long.toHexString(magic));
      }
      int option = in.readInt();
      int len = in.readInt();
      if (len < 0 || len > MAX_OPTION_LEN) {
        metrics.handshakeFailures.increment();
        if (option != OPT_EXPORT_NAME && len >= 0 && len <= 16 * MAX_OPTION_LEN) {
          skip(len);
          optionReply(option, REP_ERR_TOO_BIG, "option data too large");
          continue;
        }
        throw new Disconnect("option " + option + " data length " + Integer.toUnsignedString(len)
            + " too large");
      }
      byte[] data = new byte[len];
      in.readFully(data);
      switch (option) {
        case OPT_EXPORT_NAME: {
          String name = new String(data, StandardCharsets.UTF_8);
          Volume v = resolve(name);
          if (v == null) {
            metrics.handshakeFailures.increment();
            throw new Disconnect("unknown export '" + name + "' (EXPORT_NAME)");
          }
          out.writeLong(v.sizeInBytes());
          out.writeShort(transmissionFlags(v));
          if (!noZeroes) {
            out.write(new byte[124]);
          }
          out.flush();
          return v;
        }
        case OPT_ABORT:
          optionReply(option, REP_ACK, null);
          return null;
        case OPT_LIST:
          if (len != 0) {
            optionReply(option, REP_ERR_INVALID, "LIST takes no data");
            break;
          }
          try {
            for (String name : exports.names()) {
              byte[] nb = name.getBytes(StandardCharsets.UTF_8);
              byte[] payload = new byte[4 + nb.length];
              java.nio.ByteBuffer.wrap(payload).putInt(nb.length).put(nb);
              optionReplyRaw(option, REP_SERVER, payload);
            }
            optionReply(option, REP_ACK, null);
          } catch (Exception e) {
            optionReply(option, REP_ERR_UNSUP, "cannot list exports: " + e.getMessage());
          }
          break;
        case OPT_STRUCTURED_REPLY:
          if (len != 0) {
            optionReply(option, REP_ERR_INVALID, "STRUCTURED_REPLY takes no data");
          } else {
            structured = true;
            optionReply(option, REP_ACK, null);
          }
          break;
        case OPT_INFO:
        case OPT_GO: {
          Volume v = infoOrGo(option, data);
          if (v != null && option == OPT_GO) {
            return v;
          }
          break;
        }
        default:
          optionReply(option, REP_ERR_UNSUP, "option " + option + " is not supported");
      }
    }
    metrics.handshakeFailures.increment();
    throw new Disconnect("too many options");
  }

  /** Why the last {@link #resolve} found no volume, for the option reply. */
  private String resolveProblem;

  private Volume resolve(String name) {
    resolveProblem = "unknown export '" + name + "'";
    try {
      return exports.resolve(name);
    } catch (Exception e) {
      // e.g. a volume whose mount was refused (root mismatch): tell the client why
      LOG.warn("cannot open export '{}'", name, e);
      resolveProblem = "cannot open export '" + name + "': " + e.getMessage();
      return null;
    }
  }

  private Volume infoOrGo(int option, byte[] data) throws IOException {
    java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(data);
    if (data.length < 6) {
      optionReply(option, REP_ERR_INVALID, "INFO/GO data too short");
      return null;
    }
    int nameLen = b.getInt();
    if (nameLen < 0 || nameLen > data.length - 6) {
      optionReply(option, REP_ERR_INVALID, "bad export name length");
      return null;
    }
    byte[] nb = new byte[nameLen];
    b.get(nb);
    int nInfo = b.getShort() & 0xffff;
    if (b.remaining() != 2 * nInfo) {
      optionReply(option, REP_ERR_INVALID, "bad information request count");
      return null;
    }
    boolean wantName = false;
    for (int i = 0; i < nInfo; i++) {
      if ((b.getShort() & 0xffff) == INFO_NAME) {
        wantName = true;
      }
    }
    String name = new String(nb, StandardCharsets.UTF_8);
    Volume v = resolve(name);
    if (v == null) {
      optionReply(option, REP_ERR_UNKNOWN, resolveProblem);
      return null;
    }
    java.nio.ByteBuffer e = java.nio.ByteBuffer.allocate(12);
    e.putShort((short) INFO_EXPORT).putLong(v.sizeInBytes()).putShort((short) transmissionFlags(v));
    optionReplyRaw(option, REP_INFO, e.array());
    java.nio.ByteBuffer bsz = java.nio.ByteBuffer.allocate(14);
    bsz.putShort((short) INFO_BLOCK_SIZE).putInt(MIN_BLOCK).putInt(v.blockSize()).putInt(MAX_PAYLOAD);
    optionReplyRaw(option, REP_INFO, bsz.array());
    if (wantName) {
      byte[] vn = v.name().getBytes(StandardCharsets.UTF_8);
      java.nio.ByteBuffer nbuf = java.nio.ByteBuffer.allocate(2 + vn.length);
      nbuf.putShort((short) INFO_NAME).put(vn);
      optionReplyRaw(option, REP_INFO, nbuf.array());
    }
    optionReply(option, REP_ACK, null);
    return v;
  }

  private static int transmissionFlags(Volume v) {
    int f = TFLAG_HAS_FLAGS | TFLAG_SEND_FLUSH | TFLAG_SEND_FUA | TFLAG_SEND_TRIM
        | TFLAG_SEND_WRITE_ZEROES;
    if (v.flushCoversAllConnections()) {
      f |= TFLAG_CAN_MULTI_CONN;
    }
    return f;
  }

  private void optionReply(int option, int type, String message) throws IOException {
    optionReplyRaw(option, type,
        message == null ? new byte[0] : message.getBytes(StandardCharsets.UTF_8));
  }

  private void optionReplyRaw(int option, int type, byte[] payload) throws IOException {
    out.writeLong(OPTION_REPLY_MAGIC);
    out.writeInt(option);
    out.writeInt(type);
    out.writeInt(payload.length);
    out.write(payload);
    out.flush();
  }

  private void skip(long n) throws IOException {
    in.skip(n);
  }

  // ---------------------------------------------------------------- transmission

  private void transmission(ByteRangeIo io) throws IOException, Disconnect {
    replyThread = new Thread(this::replyLoop, readerThread.getName() + "-replies");
    replyThread.setDaemon(true);
    replyThread.start();
    Volume volume = io.volume();
    long size = volume.sizeInBytes();
    // a request split across reads (its payload still on the way) must not hold back the
    // replies to the whole requests before it
    in.beforeRead(this::flushPendingReplies);
    while (true) {
      if (in.buffered() == 0) {
        flushPendingReplies();
      }
      int magic = in.readInt();
      if (magic != REQUEST_MAGIC) {
        metrics.malformedRequests.increment();
        throw new Disconnect("bad request magic 0x" + Integer.toHexString(magic));
      }
      int flags = in.readUnsignedShort();
      int type = in.readUnsignedShort();
      long handle = in.readLong();
      long offset = in.readLong();
      long length = in.readInt() & 0xffffffffL;
      metrics.requests.increment();
      if (type == CMD_WRITE) {
        if (length > MAX_PAYLOAD) {
          metrics.malformedRequests.increment();
          reply(handle, EINVAL, "write length " + length + " exceeds maximum " + MAX_PAYLOAD);
          flushPendingReplies();
          throw new Disconnect("oversized write payload " + length);
        }
        // Small payloads are handed to the volume as a view of the receive buffer (volumes
        // consume the buffer before write() returns): no copy into a pooled buffer, and one
        // read(2) usually brings several pipelined requests. Large ones go straight from the
        // socket into a pooled buffer.
        boolean viewed = length <= in.maxView() && length < OFFLOAD_BYTES;
        ByteBuffer data;
        if (viewed) {
          data = in.view((int) length);
        } else {
          try {
            data = pool.get((int) length, this::flushPendingReplies);
          } catch (BufferPool.Exhausted e) {
            in.skip(length); // nowhere to keep the payload: consume it, refuse the request
            metrics.writes.increment();
            reply(handle, ENOMEM, e.getMessage());
            continue;
          }
          ScheduledFuture<?> watch = watchPayload(length);
          try {
            in.readFully(data);
          } catch (IOException e) {
            pool.release(data);
            throw e;
          } finally {
            watch.cancel(false);
          }
          data.flip();
        }
        int err = checkRange(flags, CMD_FLAG_FUA, offset, length, size, ENOSPC);
        if (err != 0) {
          if (!viewed) {
            pool.release(data);
          }
          metrics.malformedRequests.increment();
          reply(handle, err, "bad WRITE request");
          continue;
        }
        metrics.writes.increment();
        metrics.bytesWritten.add(length);
        CompletableFuture<Void> wf;
        boolean fua = (flags & CMD_FLAG_FUA) != 0;
        if (length >= OFFLOAD_BYTES) {
          // large payload: copy it into the volume on a worker while this thread reads on
          final long off = offset;
          long t0 = metrics.begin();
          wf = CompletableFuture.supplyAsync(() -> io.write(off, data, fua), rmwExecutor)
              .thenCompose(x -> x);
          // chained, not side callbacks: the reply depends on them, so the metric is recorded and the buffer
          // returned before the client can see the reply (CompletableFuture runs side callbacks in any order)
          wf = wf.whenComplete((v, t) -> metrics.end(BlockDriverMetrics.Op.WRITE, t0, t))
              .whenComplete((v, t) -> pool.release(data));
        } else {
          long t0 = metrics.begin();
          try {
            wf = io.write(offset, data, fua);
          } catch (RuntimeException | Error e) {
            // e.g. OutOfMemoryError allocating the volume's copy: answer this request (ENOMEM),
            // never leave the connection with its pooled buffer lost to the server-wide cap
            wf = CompletableFuture.failedFuture(e);
          } finally {
            if (!viewed) {
              pool.release(data); // volumes consume the buffer before write() returns
            }
          }
          if (wf.isDone()) {
            // completed synchronously (MemoryVolume, refusals): record and answer inline,
            // without a completion callback, a reply closure or in-flight permits
            replyDone(BlockDriverMetrics.Op.WRITE, t0, handle, wf);
            continue;
          }
          wf = wf.whenComplete((v, t) -> metrics.end(BlockDriverMetrics.Op.WRITE, t0, t)); // before the reply
        }
        submit(handle, (int) length, wf);
        continue;
      }
      switch (type) {
        case CMD_READ: {
          int err = length > MAX_PAYLOAD ? EINVAL
              : checkRange(flags, CMD_FLAG_FUA | CMD_FLAG_DF, offset, length, size, EINVAL);
          if (err != 0) {
            metrics.malformedRequests.increment();
            reply(handle, err, "bad READ request (offset " + offset + ", length " + length + ")");
            break;
          }
          metrics.reads.increment();
          metrics.bytesRead.add(length);
          final long off = offset;
          int bsz = volume.blockSize();
          if (length < ZERO_COPY_BYTES && offset % bsz == 0 && length % bsz == 0) {
            // small aligned read from a volume with views (MemoryVolume): copy the stored
            // bytes straight into the reply buffer after the header; no payload buffer, no
            // future, no permits (the reply is written before the next request is read)
            ByteBuffer[] views = volume.readViews(offset / bsz, (int) (length / bsz));
            if (views != null) {
              long t0 = metrics.begin();
              Throwable failed = null;
              try {
                smallViewReply(handle, off, (int) length, views);
              } catch (RuntimeException | Error e) {
                failed = e;
                throw e;
              } finally {
                metrics.end(BlockDriverMetrics.Op.READ, t0, failed);
              }
              break;
            }
          }
          acquire((int) length);
          if (length >= ZERO_COPY_BYTES && offset % bsz == 0 && length % bsz == 0) {
            ByteBuffer[] views = volume.readViews(offset / bsz, (int) (length / bsz));
            if (views != null) {
              // zero-copy: send straight from the volume's memory (permits acquired above)
              long t0 = metrics.begin();
              if (length >= OFFLOAD_BYTES) {
                CompletableFuture.runAsync(() -> viewReply(handle, off, (int) length, views),
                    rmwExecutor).whenComplete((v, t) -> {
                      release((int) length);
                      metrics.end(BlockDriverMetrics.Op.READ, t0, t);
                    });
              } else {
                Throwable failed = null;
                try {
                  viewReply(handle, off, (int) length, views);
                } catch (RuntimeException | Error e) {
                  failed = e;
                  throw e;
                } finally {
                  release((int) length);
                  metrics.end(BlockDriverMetrics.Op.READ, t0, failed);
                }
              }
              break;
            }
          }
          ByteBuffer buf;
          try {
            buf = pool.get((int) length, this::flushPendingReplies);
          } catch (BufferPool.Exhausted e) {
            release((int) length);
            reply(handle, ENOMEM, e.getMessage());
            break;
          }
          CompletableFuture<Void> f;
          final int len = (int) length;
          if (length >= OFFLOAD_BYTES) {
            // large read: fill and send it from a worker while this thread reads on
            f = timed(BlockDriverMetrics.Op.READ, () -> CompletableFuture.supplyAsync(
                () -> io.readInto(off, len, buf), rmwExecutor).thenCompose(x -> x));
          } else {
            f = timed(BlockDriverMetrics.Op.READ, () -> io.readInto(off, len, buf));
          }
          f.whenComplete((v, t) -> replyOn(() -> {
            try {
              if (t == null) {
                buf.flip();
                readReply(handle, off, buf);
              } else {
                reply(handle, errno(t), message(t));
              }
            } finally {
              pool.release(buf);
              release((int) length);
            }
          }));
          break;
        }
        case CMD_FLUSH:
          if ((flags & ~CMD_FLAG_FUA) != 0) {
            reply(handle, EINVAL, "unknown FLUSH flags");
            break;
          }
          metrics.flushes.increment();
          submit(handle, 0, timed(BlockDriverMetrics.Op.FLUSH, volume::flush));
          break;
        case CMD_TRIM: {
          int err = checkRange(flags, CMD_FLAG_FUA, offset, length, size, EINVAL);
          if (err != 0) {
            metrics.malformedRequests.increment();
            reply(handle, err, "bad TRIM request");
            break;
          }
          metrics.trims.increment();
          final long off = offset;
          final long len = length;
          boolean fua = (flags & CMD_FLAG_FUA) != 0;
          submit(handle, 0, timed(BlockDriverMetrics.Op.TRIM, () -> {
            CompletableFuture<Void> f = io.trim(off, len);
            return fua ? f.thenCompose(x -> volume.flush()) : f;
          }));
          break;
        }
        case CMD_WRITE_ZEROES: {
          int err = checkRange(flags, CMD_FLAG_FUA | CMD_FLAG_NO_HOLE, offset, length, size,
              ENOSPC);
          if (err != 0) {
            metrics.malformedRequests.increment();
            reply(handle, err, "bad WRITE_ZEROES request");
            break;
          }
          metrics.writeZeroes.increment();
          final long off = offset;
          final long len = length;
          boolean fua = (flags & CMD_FLAG_FUA) != 0;
          submit(handle, 0, timed(BlockDriverMetrics.Op.WRITE_ZEROES,
              () -> io.writeZeroes(off, len, fua)));
          break;
        }
        case CMD_DISC:
          flushPendingReplies();
          drain();
          try {
            // bounded like the drain: a hung flush must not hold the connection forever
            volume.flush().get(drainTimeoutMs, TimeUnit.MILLISECONDS);
          } catch (java.util.concurrent.ExecutionException
              | java.util.concurrent.TimeoutException e) {
            LOG.warn("NBD connection {}: flush on disconnect did not complete: {}", remote,
                e.toString());
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
          throw new Disconnect("client sent DISC");
        default:
          metrics.malformedRequests.increment();
          reply(handle, EINVAL, "unsupported command " + commandName(type));
      }
    }
  }

  /**
   * Answers a request whose volume operation {@code f} (begun at {@code t0}) is already
   * complete: records it and writes the reply on this thread.
   */
  private void replyDone(BlockDriverMetrics.Op op, long t0, long handle,
      CompletableFuture<Void> f) {
    Throwable t = failure(f);
    metrics.end(op, t0, t);
    answer(handle, t);
  }

  /** The failure of a completed future, or null when it succeeded. */
  private static Throwable failure(CompletableFuture<?> f) {
    if (f.isCompletedExceptionally()) {
      try {
        f.join();
      } catch (CompletionException | java.util.concurrent.CancellationException e) {
        return e;
      }
    }
    return null;
  }

  /**
   * Runs a volume operation, counting it in flight until it completes and recording its
   * latency and outcome per operation ({@link BlockDriverMetrics#end}).
   */
  private <T> CompletableFuture<T> timed(BlockDriverMetrics.Op op,
      java.util.function.Supplier<CompletableFuture<T>> call) {
    long t0 = metrics.begin();
    CompletableFuture<T> f;
    try {
      f = call.get();
    } catch (RuntimeException | Error e) {
      // an Error too (OutOfMemoryError: ENOMEM): the caller's reply releases the request's
      // pooled buffer and permits; thrown on, they would be lost to the server-wide cap
      f = CompletableFuture.failedFuture(e);
    }
    if (f.isDone()) {
      metrics.end(op, t0, failure(f)); // no completion callback for what completed already
    } else {
      f = f.whenComplete((r, t) -> metrics.end(op, t0, t)); // recorded before the reply that depends on it
    }
    return f;
  }

  /** Returns 0 or the NBD error for a request's flags and range. */
  private static int checkRange(int flags, int allowedFlags, long offset, long length, long size,
      int beyondEndError) {
    if ((flags & ~allowedFlags) != 0) {
      return EINVAL;
    }
    if (length == 0) {
      return EINVAL;
    }
    if (offset < 0 || offset > size) {
      return beyondEndError;
    }
    if (length > size - offset) {
      return beyondEndError;
    }
    return 0;
  }

  private void acquire(int bytes) throws IOException {
    int b = Math.min(bytes, MAX_IN_FLIGHT_BYTES);
    try {
      // about to wait for requests in flight to finish: the replies held back for batching go
      // out first (they must not wait for requests that may take long, e.g. a hung cluster)
      if (!inFlight.tryAcquire()) {
        flushPendingReplies();
        inFlight.acquire();
      }
      if (!inFlightBytes.tryAcquire(b)) {
        flushPendingReplies();
        inFlightBytes.acquire(b);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted");
    }
    outstanding.incrementAndGet();
  }

  private void release(int bytes) {
    outstanding.decrementAndGet();
    inFlightBytes.release(Math.min(bytes, MAX_IN_FLIGHT_BYTES));
    inFlight.release();
  }

  private void submit(long handle, int bytes, CompletableFuture<Void> f) throws IOException {
    if (f.isDone() && Thread.currentThread() == readerThread) {
      answer(handle, failure(f)); // no permits, callback or reply closure for a finished request
      return;
    }
    acquire(bytes);
    f.whenComplete((v, t) -> replyOn(() -> {
      try {
        if (t == null) {
          reply(handle, 0, null);
        } else {
          reply(handle, errno(t), message(t));
        }
      } finally {
        release(bytes);
      }
    }));
  }

  private void answer(long handle, Throwable t) {
    if (t == null) {
      reply(handle, 0, null);
    } else {
      reply(handle, errno(t), message(t));
    }
  }

  private int errno(Throwable t) {
    Throwable c = t instanceof CompletionException && t.getCause() != null ? t.getCause() : t;
    if (c instanceof BlockCorruptedException) {
      metrics.eioReplies.increment();
      return EIO;
    }
    if (c instanceof VolumeException.OutOfRange) {
      return EINVAL;
    }
    if (c instanceof VolumeException.Closed) {
      return ESHUTDOWN;
    }
    if (c instanceof OutOfMemoryError) {
      return ENOMEM;
    }
    LOG.warn("NBD request failed with I/O error", c);
    metrics.eioReplies.increment();
    return EIO;
  }

  private static String message(Throwable t) {
    Throwable c = t instanceof CompletionException && t.getCause() != null ? t.getCause() : t;
    String m = c.getMessage();
    return m == null ? c.getClass().getSimpleName() : m;
  }

  // ---------------------------------------------------------------- replies

  private void viewReply(long handle, long offset, int length, ByteBuffer[] views) {
    synchronized (writeLock) {
      if (outputBroken) {
        return;
      }
      try {
        writeReadHeader(handle, offset, length);
        out.write(views);
      } catch (IOException e) {
        broken(e);
      }
    }
  }

  /** A read reply whose (small) payload is copied from {@code views} into the reply buffer. */
  private void smallViewReply(long handle, long offset, int length, ByteBuffer[] views) {
    synchronized (writeLock) {
      if (outputBroken) {
        return;
      }
      try {
        writeReadHeader(handle, offset, length);
        for (ByteBuffer v : views) {
          out.write(v);
        }
        afterReply();
      } catch (IOException e) {
        broken(e);
      }
    }
  }

  private void writeReadHeader(long handle, long offset, int length) throws IOException {
    if (structured) {
      out.writeInt(STRUCTURED_REPLY_MAGIC);
      out.writeShort(REPLY_FLAG_DONE);
      out.writeShort(REPLY_TYPE_OFFSET_DATA);
      out.writeLong(handle);
      out.writeInt(8 + length);
      out.writeLong(offset);
    } else {
      out.writeInt(SIMPLE_REPLY_MAGIC);
      out.writeInt(0);
      out.writeLong(handle);
    }
  }

  private void readReply(long handle, long offset, ByteBuffer data) {
    synchronized (writeLock) {
      if (outputBroken) {
        return;
      }
      try {
        if (structured) {
          out.writeInt(STRUCTURED_REPLY_MAGIC);
          out.writeShort(REPLY_FLAG_DONE);
          out.writeShort(REPLY_TYPE_OFFSET_DATA);
          out.writeLong(handle);
          out.writeInt(8 + data.remaining());
          out.writeLong(offset);
        } else {
          out.writeInt(SIMPLE_REPLY_MAGIC);
          out.writeInt(0);
          out.writeLong(handle);
        }
        out.write(data);
        afterReply();
      } catch (IOException e) {
        broken(e);
      }
    }
  }

  private void reply(long handle, int error, String message) {
    if (error != 0) {
      metrics.errorReplies.increment();
    }
    synchronized (writeLock) {
      if (outputBroken) {
        return;
      }
      try {
        // A success without data gets a simple reply even when structured replies are on (the
        // NBD spec requires a structured reply only for READ; nbdkit does the same): 16 bytes
        // the client reads with one recv, where libnbd reads a structured header with two
        // (fio spent that second system call per 4k write). Errors stay structured: they carry
        // the message.
        if (structured && error != 0) {
          out.writeInt(STRUCTURED_REPLY_MAGIC);
          out.writeShort(REPLY_FLAG_DONE);
          byte[] msg = message == null ? new byte[0]
              : truncate(message.getBytes(StandardCharsets.UTF_8));
          out.writeShort(REPLY_TYPE_ERROR);
          out.writeLong(handle);
          out.writeInt(6 + msg.length);
          out.writeInt(error);
          out.writeShort(msg.length);
          out.write(msg);
        } else {
          out.writeInt(SIMPLE_REPLY_MAGIC);
          out.writeInt(error);
          out.writeLong(handle);
        }
        afterReply();
      } catch (IOException e) {
        broken(e);
      }
    }
  }

  private static byte[] truncate(byte[] b) {
    return b.length <= 1024 ? b : java.util.Arrays.copyOf(b, 1024);
  }

  /**
   * Replies produced on the reader thread are batched until it is about to block; those on the
   * reply thread until its queue is empty.
   */
  private void afterReply() throws IOException {
    if ((Thread.currentThread() == readerThread && in.buffered() > 0)
        || Thread.currentThread() == replyThread) {
      pendingFlush = true; // the reply thread flushes when its queue is empty
    } else {
      out.flush();
    }
  }

  private void flushPendingReplies() {
    synchronized (writeLock) {
      if (pendingFlush && !outputBroken) {
        try {
          out.flush();
        } catch (IOException e) {
          broken(e);
        }
      }
      pendingFlush = false;
    }
  }

  private void broken(IOException e) {
    outputBroken = true;
    LOG.debug("NBD reply to {} failed: {}", remote, e.toString());
    closeQuietly();
  }
}
