package io.exalt.agent.boot;

import io.exalt.tardis.TardisDecompressor;
import java.io.EOFException;
import java.io.IOException;
import java.lang.reflect.Field;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.Collections;
import java.util.Map;
import java.util.WeakHashMap;

/**
 * Network compression for sockets whose local or remote port is configured ({@code ports=}). Every write
 * becomes one frame {@code [length:4][Tardis encoding of the bytes]}; the reader decodes frames and hands out
 * the original bytes. Both ends must run the agent with the same ports and flag.
 *
 * <p>Hooked: {@code SocketChannelImpl.read/write} (blocking and non-blocking, scatter/gather) and the stream
 * paths of {@code Socket} ({@code NioSocketImpl.read/write/available}, {@code SocketChannelImpl.blockingRead/
 * blockingWriteFully} behind {@code socket.getInputStream()} of a channel socket). The original methods are
 * re-entered for the raw bytes while {@link #IN_HOOK} is set.
 */
public final class SocketHooks {
    /** No decoded bytes (declared before {@link #PLAIN}: static fields initialise in textual order). */
    private static final TardisDecompressor.Cursor EMPTY = new TardisDecompressor().cursor(new byte[0], 0, 0);
    static final ThreadLocal<Boolean> IN_HOOK = new ThreadLocal<>();
    private static final Map<Object, State> STATES = Collections.synchronizedMap(new WeakHashMap<>());
    private static final State PLAIN = new State(false);
    private static Field implPort;
    private static Field implLocalPort;
    private static Field chRemote;
    private static Field chLocal;
    private static java.lang.invoke.MethodHandle implReadMh;
    private static java.lang.invoke.MethodHandle implWriteMh;
    private static java.lang.invoke.MethodHandle chBlockingReadMh;
    private static java.lang.invoke.MethodHandle chBlockingWriteMh;
    private static java.lang.invoke.MethodHandle implAvailableMh;
    private static java.lang.invoke.MethodHandle chAvailableMh;

    private SocketHooks() {
    }

    static final class State {
        final boolean compressed;
        /** The logical bytes of the last frame not taken yet, expanded only when taken, straight into the reader's array. */
        volatile TardisDecompressor.Cursor decoded = EMPTY;
        final byte[] hdr = new byte[4];
        int hdrFill;
        /**
         * The frame being received (null between frames): grown as its bytes arrive, up to {@link #frameLen}, so a
         * header alone does not allocate the whole frame (a peer sending only headers exhausted the heap).
         */
        byte[] frame;
        int frameFill;
        /** Encoded length the current frame's header declared. */
        int frameLen;
        /** Scratch for a read into a direct ByteBuffer (no array to expand into); grown on demand, at most 64 KiB. */
        byte[] scratch = new byte[0];
        /** Guards the write side: pending frame bytes and the order of frames on the wire. */
        final java.util.concurrent.locks.ReentrantLock out = new java.util.concurrent.locks.ReentrantLock();
        /** The unsent rest of a frame a non-blocking write committed to (null: none). */
        ByteBuffer pending;
        /** shutdownOutput() was called while bytes were pending: done by the agent once they are out. */
        boolean shutdownDeferred;
        /** An error the flusher met sending {@link #pending}: thrown by the next write. */
        Exception failure;

        void throwIfFailed() throws IOException {
            Exception f = failure;
            if (f != null) {
                failure = null;
                throw f instanceof IOException ? (IOException) f : new IOException(f);
            }
        }

        State(boolean compressed) {
            this.compressed = compressed;
        }
    }

    public static void init() throws ReflectiveOperationException {
        Class<?> si = Class.forName("java.net.SocketImpl");
        implPort = si.getDeclaredField("port");
        implPort.setAccessible(true);
        implLocalPort = si.getDeclaredField("localport");
        implLocalPort.setAccessible(true);
        Class<?> sc = Class.forName("sun.nio.ch.SocketChannelImpl");
        chRemote = sc.getDeclaredField("remoteAddress");
        chRemote.setAccessible(true);
        chLocal = sc.getDeclaredField("localAddress");
        chLocal.setAccessible(true);
        java.lang.invoke.MethodHandles.Lookup l = java.lang.invoke.MethodHandles.lookup();
        Class<?> nio = Class.forName("sun.nio.ch.NioSocketImpl");
        java.lang.reflect.Method m = nio.getDeclaredMethod("read", byte[].class, int.class, int.class);
        m.setAccessible(true);
        implReadMh = l.unreflect(m);
        m = nio.getDeclaredMethod("write", byte[].class, int.class, int.class);
        m.setAccessible(true);
        implWriteMh = l.unreflect(m);
        m = sc.getDeclaredMethod("blockingRead", byte[].class, int.class, int.class, long.class);
        m.setAccessible(true);
        chBlockingReadMh = l.unreflect(m);
        m = sc.getDeclaredMethod("blockingWriteFully", byte[].class, int.class, int.class);
        m.setAccessible(true);
        chBlockingWriteMh = l.unreflect(m);
        m = nio.getDeclaredMethod("available");
        m.setAccessible(true);
        implAvailableMh = l.unreflect(m);
        m = sc.getDeclaredMethod("available");
        m.setAccessible(true);
        chAvailableMh = l.unreflect(m);
    }

    private static IOException rethrow(Throwable t) {
        if (t instanceof IOException) {
            return (IOException) t;
        }
        if (t instanceof RuntimeException) {
            throw (RuntimeException) t;
        }
        if (t instanceof Error) {
            throw (Error) t;
        }
        return new IOException(t);
    }

    private static int port(SocketAddress a) {
        return a instanceof InetSocketAddress ? ((InetSocketAddress) a).getPort() : -1;
    }

    /** The state of a socket, or null if it is not compressed (or we are inside a hook). */
    static State state(Object sock) {
        if (!ExaltRuntime.hasPorts() || IN_HOOK.get() != null) {
            return null;
        }
        State s = STATES.get(sock);
        if (s == null) {
            int local;
            int remote;
            try {
                if (sock instanceof SocketChannel) {
                    remote = port((SocketAddress) chRemote.get(sock));
                    local = port((SocketAddress) chLocal.get(sock));
                } else {
                    remote = implPort.getInt(sock);
                    local = implLocalPort.getInt(sock);
                }
            } catch (IllegalAccessException e) {
                throw new IllegalStateException(e);
            }
            if (remote <= 0) {
                return null; // not connected yet: decide later
            }
            s = ExaltRuntime.portCompressed(remote) || ExaltRuntime.portCompressed(local) ? new State(true) : PLAIN;
            STATES.put(sock, s);
        }
        return s.compressed ? s : null;
    }

    public static boolean isCompressed(Object sock) {
        return sock instanceof SocketChannel && state(sock) != null;
    }

    // ---------------------------------------------------------------------------------- raw I/O helpers

    /** Reads raw bytes through the original method. */
    interface RawRead {
        int read(byte[] b, int off, int len) throws IOException;
    }

    interface RawWrite {
        void write(byte[] b, int off, int len) throws IOException;
    }

    /** Largest frame a reader accepts (encoded bytes). */
    static final int MAX_FRAME = 64 << 20;
    /**
     * Logical bytes per frame: one write of more is sent as several frames, so that no frame exceeds
     * {@link #MAX_FRAME} even when nothing compresses ({@code maxEncodedLength(16 MiB)} is about 23 MiB).
     */
    static final int MAX_FRAME_INPUT = 16 << 20;

    /** The frame {@code [length][encoding]} of {@code b[off..off+len)} (at most {@link #MAX_FRAME_INPUT} bytes). */
    private static byte[] encode(byte[] b, int off, int len) {
        if (len > MAX_FRAME_INPUT) { // callers send larger writes frame by frame
            throw new IllegalArgumentException("frame input " + len + " > " + MAX_FRAME_INPUT);
        }
        byte[] f = ExaltRuntime.compressor().compressExact(b, off, len, 4); // one exact allocation, no copies
        int n = f.length - 4;
        f[0] = (byte) (n >>> 24);
        f[1] = (byte) (n >>> 16);
        f[2] = (byte) (n >>> 8);
        f[3] = (byte) n;
        return f;
    }

    /**
     * Fills {@code st.decoded} with the next frame. Returns 1 when decoded data is available, 0 if the raw read
     * returned 0 (non-blocking, no data), -1 at a clean end of stream.
     */
    private static int fill(State st, RawRead raw) throws IOException {
        while (!st.decoded.hasRemaining()) {
            int r;
            if (st.frame == null) {
                r = raw.read(st.hdr, st.hdrFill, 4 - st.hdrFill);
                if (r > 0) {
                    st.hdrFill += r;
                    if (st.hdrFill == 4) {
                        int n = ((st.hdr[0] & 0xFF) << 24) | ((st.hdr[1] & 0xFF) << 16) | ((st.hdr[2] & 0xFF) << 8) | (st.hdr[3] & 0xFF);
                        if (n < 0 || n > MAX_FRAME) {
                            throw new IOException("Exalt: bad frame length " + n + " on a compressed socket; both ends must run"
                                    + " the agent with the same ports= and flag=");
                        }
                        // grown as the frame's bytes arrive (see State.frame): what a header alone costs is bounded
                        st.frame = new byte[Math.min(n, FRAME_CHUNK)];
                        st.frameLen = n;
                        st.frameFill = 0;
                        st.hdrFill = 0;
                    }
                    continue;
                }
                if (r < 0 && st.hdrFill > 0) {
                    throw new EOFException("Exalt: connection closed inside a frame header");
                }
            } else {
                if (st.frameFill < st.frameLen) {
                    if (st.frameFill == st.frame.length) {
                        st.frame = java.util.Arrays.copyOf(st.frame, (int) Math.min(st.frameLen, 2L * st.frame.length));
                    }
                    r = raw.read(st.frame, st.frameFill, st.frame.length - st.frameFill);
                    if (r < 0) {
                        throw new EOFException("Exalt: connection closed inside a frame");
                    }
                    if (r == 0) {
                        return 0;
                    }
                    st.frameFill += r;
                }
                if (st.frameFill == st.frameLen) { // also an empty frame (length 0): nothing to read for it
                    TardisDecompressor.Cursor cur;
                    try {
                        cur = new TardisDecompressor(ExaltRuntime.format()).cursor(st.frame, 0, st.frameLen);
                    } catch (IllegalArgumentException e) {
                        // a read throws IOException, never the decoder's RuntimeException (servers handle I/O errors per
                        // connection); the frame is kept, so every later read of this connection fails the same way
                        throw new java.io.StreamCorruptedException("Exalt: corrupt frame on a compressed socket (" + e.getMessage()
                                + "); both ends must run the agent with the same ports= and flag=");
                    }
                    if (cur.remaining() > (64 << 20)) {
                        throw new IOException("Exalt: frame expands to " + cur.remaining() + " bytes; both ends must run the agent with"
                                + " the same ports= and flag=");
                    }
                    st.decoded = cur; // keeps the frame: its bytes are expanded when taken (take, chRead)
                    st.frame = null;
                }
                continue;
            }
            return r; // 0 or -1
        }
        return 1;
    }

    /** First allocation for a frame being received; it doubles as the bytes arrive. */
    static final int FRAME_CHUNK = 256 << 10;

    private static int take(State st, byte[] b, int off, int len) {
        return st.decoded.read(b, off, len);
    }

    // ------------------------------------------------------------------------------------ SocketChannel

    public static Integer chRead(SocketChannel ch, ByteBuffer dst) throws IOException {
        State st = state(ch);
        if (st == null) {
            return null;
        }
        synchronized (st) {
            if (!dst.hasRemaining()) {
                return 0;
            }
            int r = fill(st, (b, o, l) -> rawChannelRead(ch, b, o, l));
            if (r <= 0) {
                return r;
            }
            if (dst.isReadOnly()) {
                throw new IllegalArgumentException("Read-only buffer"); // as the JDK's IOUtil.read, nothing consumed
            }
            int n = (int) Math.min(dst.remaining(), st.decoded.remaining());
            if (dst.hasArray()) { // heap buffer (HDFS packets): expand straight into it
                int got = st.decoded.read(dst.array(), dst.arrayOffset() + dst.position(), n);
                dst.position(dst.position() + got);
                return got;
            }
            int total = 0;
            while (total < n) {
                int k = Math.min(n - total, 64 << 10);
                if (st.scratch.length < k) {
                    st.scratch = new byte[k];
                }
                int got = st.decoded.read(st.scratch, 0, k);
                dst.put(st.scratch, 0, got);
                total += got;
            }
            return total;
        }
    }

    public static Long chReadV(SocketChannel ch, ByteBuffer[] dsts, int off, int len) throws IOException {
        State st = state(ch);
        if (st == null) {
            return null;
        }
        long total = 0;
        for (int i = off; i < off + len; i++) {
            while (dsts[i].hasRemaining()) {
                if (total > 0 && !st.decoded.hasRemaining()) {
                    return total; // do not block once something was read
                }
                int r = chRead(ch, dsts[i]);
                if (r <= 0) {
                    return total > 0 ? total : (long) r;
                }
                total += r;
            }
        }
        return total;
    }

    private static int rawChannelRead(SocketChannel ch, byte[] b, int off, int len) throws IOException {
        IN_HOOK.set(Boolean.TRUE);
        try {
            return ch.read(ByteBuffer.wrap(b, off, len));
        } finally {
            IN_HOOK.set(null); // not remove(): the entry stays, so the next set() does not allocate and rehash
        }
    }

    /**
     * Logical bytes a non-blocking write takes at most: the part of a frame that the kernel does not accept is
     * kept in {@link State#pending} until it is out, so this bounds the memory a stalled socket holds.
     */
    static final int NB_MAX_INPUT = 1 << 20;
    /** How long close() waits for the peer to take pending frame bytes when it makes no progress. */
    static final long CLOSE_PATIENCE_NANOS = java.util.concurrent.TimeUnit.SECONDS.toNanos(10);

    public static Integer chWrite(SocketChannel ch, ByteBuffer src) throws IOException {
        State st = state(ch);
        if (st == null) {
            return null;
        }
        return (int) write(ch, st, new ByteBuffer[] {src}, 0, 1);
    }

    public static Long chWriteV(SocketChannel ch, ByteBuffer[] srcs, int off, int len) throws IOException {
        State st = state(ch);
        if (st == null) {
            return null;
        }
        return write(ch, st, srcs, off, len);
    }

    /**
     * A write of a compressed SocketChannel. Blocking mode: the whole input goes out as frames, as before.
     * Non-blocking mode (the JDK contract: never wait, return how many bytes were taken): first the rest of an
     * earlier frame ({@link State#pending}) is sent, and while it does not fit 0 is returned; then at most
     * {@link #NB_MAX_INPUT} bytes become one frame. If the kernel takes none of it, nothing is consumed and 0
     * returned; if it takes part, the bytes are consumed (the frame is committed to the wire) and the rest is
     * pending: the next write, the {@link Flusher} thread (the application may stop writing and wait for a
     * reply), a switch to blocking mode or close() sends it.
     */
    private static long write(SocketChannel ch, State st, ByteBuffer[] srcs, int off, int len) throws IOException {
        long total = 0;
        for (int i = off; i < off + len; i++) {
            total += srcs[i].remaining();
        }
        if (total == 0) {
            return 0;
        }
        st.out.lock();
        try {
            if (st.shutdownDeferred) {
                throw new java.nio.channels.ClosedChannelException(); // as after the JDK's shutdownOutput
            }
            st.throwIfFailed();
            if (st.pending != null) {
                rawWrite(ch, st.pending);
                if (st.pending.hasRemaining()) {
                    if (!ch.isBlocking()) {
                        return 0; // the earlier frame is still going out: the application selects OP_WRITE and retries
                    }
                    writeFully(ch, st.pending);
                }
                st.pending = null;
            }
            boolean blocking = ch.isBlocking();
            if (blocking) {
                // one frame per MAX_FRAME_INPUT bytes, each encoded and sent before the next is encoded: the heap a write
                // needs is bounded by one frame (before, the whole write was copied and encoded first: ~3x its size)
                long limit = Math.min(total, Integer.MAX_VALUE - 64);
                byte[] scratch = null;
                long sent = 0;
                while (sent < limit) {
                    int n = (int) Math.min(limit - sent, MAX_FRAME_INPUT);
                    byte[] frame;
                    if (len == 1 && srcs[off].hasArray()) { // heap buffer (HDFS packets): compress in place, no copy
                        ByteBuffer src = srcs[off];
                        frame = encode(src.array(), src.arrayOffset() + src.position(), n);
                    } else {
                        if (scratch == null) {
                            scratch = new byte[(int) Math.min(limit, MAX_FRAME_INPUT)];
                        }
                        gather(srcs, off, len, scratch, n);
                        frame = encode(scratch, 0, n);
                    }
                    writeFully(ch, ByteBuffer.wrap(frame));
                    consume(srcs, off, len, n);
                    sent += n;
                    ExaltRuntime.NET_LOGICAL_BYTES_SENT.addAndGet(n);
                    ExaltRuntime.NET_WIRE_BYTES_SENT.addAndGet(frame.length);
                }
                return sent;
            }
            int n = (int) Math.min(total, NB_MAX_INPUT);
            byte[] frames;
            if (len == 1 && srcs[off].hasArray()) { // heap buffer: compress in place, no copy
                ByteBuffer src = srcs[off];
                frames = encode(src.array(), src.arrayOffset() + src.position(), n);
            } else {
                byte[] b = new byte[n];
                gather(srcs, off, len, b, n);
                frames = encode(b, 0, n);
            }
            ByteBuffer bb = ByteBuffer.wrap(frames);
            rawWrite(ch, bb);
            if (bb.position() == 0) {
                return 0; // the kernel took nothing: nothing is committed, the application retries
            }
            if (bb.hasRemaining()) {
                st.pending = bb;
                Flusher.add(ch, st);
            }
            consume(srcs, off, len, n);
            ExaltRuntime.NET_LOGICAL_BYTES_SENT.addAndGet(n);
            ExaltRuntime.NET_WIRE_BYTES_SENT.addAndGet(frames.length);
            return n;
        } finally {
            st.out.unlock();
        }
    }

    /** Copies the first {@code n} remaining bytes of {@code srcs[off..off+len)} into {@code b} (positions unchanged). */
    private static void gather(ByteBuffer[] srcs, int off, int len, byte[] b, int n) {
        int p = 0;
        for (int i = off; i < off + len && p < n; i++) {
            ByteBuffer d = srcs[i].duplicate();
            int r = Math.min(d.remaining(), n - p);
            d.get(b, p, r);
            p += r;
        }
    }

    private static void consume(ByteBuffer[] srcs, int off, int len, long n) {
        for (int i = off; i < off + len && n > 0; i++) {
            int r = (int) Math.min(srcs[i].remaining(), n);
            srcs[i].position(srcs[i].position() + r);
            n -= r;
        }
    }

    /** One raw (unhooked) write attempt; returns the count. */
    private static int rawWrite(SocketChannel ch, ByteBuffer bb) throws IOException {
        IN_HOOK.set(Boolean.TRUE);
        try {
            return ch.write(bb);
        } finally {
            IN_HOOK.set(null); // not remove(): the entry stays, so the next set() does not allocate and rehash
        }
    }

    /** Writes all of {@code bb}; if the channel is (or becomes) non-blocking, waits for it to be writable. */
    private static void writeFully(SocketChannel ch, ByteBuffer bb) throws IOException {
        long backoff = 0;
        while (bb.hasRemaining()) {
            if (rawWrite(ch, bb) == 0 && bb.hasRemaining()) {
                backoff = Flusher.pause(backoff);
            } else {
                backoff = 0;
            }
        }
    }

    /**
     * Before {@code SocketChannelImpl.implConfigureBlocking(true)}: a blocking channel has no pending frame bytes
     * (its writes send everything), so they go out now; this waits for the peer, as a blocking write would.
     */
    public static void beforeBlockingMode(SocketChannel ch, boolean block) throws IOException {
        if (!block) {
            return;
        }
        State st = state(ch);
        if (st == null) {
            return;
        }
        st.out.lock();
        try {
            if (st.pending != null) {
                writeFully(ch, st.pending);
                st.pending = null;
            }
            finishDeferredShutdown(ch, st);
        } finally {
            st.out.unlock();
        }
    }

    /**
     * {@code shutdownOutput()} of a compressed SocketChannel. The kernel sends the bytes queued before a shutdown, then the
     * FIN, and the call does not wait; the rest of a frame the agent holds (a non-blocking write reported it written) must
     * likewise arrive. So with pending bytes the shutdown is deferred: the output counts as shut down for the application
     * (its next write throws ClosedChannelException, as the JDK's) and the agent (flusher, a switch to blocking mode)
     * shuts it down once they are out. Returns true if deferred (the original method is skipped). Before this, the
     * shutdown ran at once, the flusher's next send failed on it and dropped the bytes: the peer saw the stream end
     * inside a frame and read none of them.
     */
    public static boolean shutdownOutput(SocketChannel ch) throws IOException {
        State st = state(ch);
        if (st == null || ch.isBlocking()) {
            return false; // nothing pending in blocking mode (and a writer blocked in the kernel may hold st.out)
        }
        try {
            if (!st.out.tryLock(CLOSE_PATIENCE_NANOS, java.util.concurrent.TimeUnit.NANOSECONDS)) {
                return false; // another thread has been sending for long (a switch to blocking mode): as the JDK
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
        try {
            if (st.pending != null) {
                rawWrite(ch, st.pending);
                if (st.pending.hasRemaining()) {
                    st.shutdownDeferred = true;
                    Flusher.add(ch, st);
                    return true;
                }
                st.pending = null;
            }
            return false;
        } finally {
            st.out.unlock();
        }
    }

    /** The deferred shutdownOutput (see {@link #shutdownOutput}) once the pending bytes are out or dropped. Holds st.out. */
    private static void finishDeferredShutdown(SocketChannel ch, State st) {
        if (!st.shutdownDeferred) {
            return;
        }
        st.shutdownDeferred = false;
        IN_HOOK.set(Boolean.TRUE);
        try {
            ch.shutdownOutput();
        } catch (IOException | RuntimeException e) {
            // closed meanwhile: nothing left to shut down
        } finally {
            IN_HOOK.set(null); // not remove(): the entry stays, so the next set() does not allocate and rehash
        }
    }

    /**
     * Before {@code close()} of a compressed SocketChannel: the kernel would still deliver what an application
     * wrote before closing, so pending frame bytes are sent first, waiting while the peer takes them. If the peer
     * takes nothing for {@link #CLOSE_PATIENCE_NANOS} (it stopped reading) or the connection fails, they are
     * dropped with a message on stderr; the peer then sees the connection end inside a frame (an EOFException).
     */
    public static void beforeClose(SocketChannel ch) {
        State st;
        try {
            st = ch.isOpen() ? state(ch) : null;
        } catch (RuntimeException e) {
            return;
        }
        if (st == null || ch.isBlocking()) {
            // blocking mode has no pending bytes (the switch to it sent them); and a blocking writer stuck in the kernel
            // on a peer that stopped reading holds st.out: this close is what must unblock it, so it must not wait
            return;
        }
        try {
            if (!st.out.tryLock(CLOSE_PATIENCE_NANOS, java.util.concurrent.TimeUnit.NANOSECONDS)) {
                System.err.println("[exalt] closing compressed socket " + ch + " without sending pending frame bytes: another"
                        + " thread has been sending on it for " + CLOSE_PATIENCE_NANOS / 1_000_000_000 + " s");
                return;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
        }
        try {
            ByteBuffer p = st.pending;
            if (p == null) {
                return;
            }
            st.pending = null;
            long last = System.nanoTime();
            long backoff = 0;
            try {
                while (p.hasRemaining()) {
                    if (rawWrite(ch, p) > 0) {
                        last = System.nanoTime();
                        backoff = 0;
                    } else if (System.nanoTime() - last > CLOSE_PATIENCE_NANOS || Thread.currentThread().isInterrupted()) {
                        System.err.println("[exalt] closing compressed socket " + ch + " with " + p.remaining() + " bytes of"
                                + " a frame unsent: the peer took none for " + CLOSE_PATIENCE_NANOS / 1_000_000_000
                                + " s (it stopped reading). The peer sees the connection end inside a frame.");
                        return;
                    } else {
                        backoff = Flusher.pause(backoff);
                    }
                }
            } catch (IOException e) {
                System.err.println("[exalt] closing compressed socket " + ch + ": " + p.remaining() + " bytes of a frame"
                        + " could not be sent (" + e + ")");
            }
        } finally {
            st.out.unlock();
        }
    }

    /**
     * Sends the pending rest of frames of non-blocking sockets whose application stopped writing (HDFS waits for
     * an ack after its last packet; the frame of that packet must arrive without another write). One daemon thread;
     * it polls the sockets with pending bytes, pausing between rounds without progress (20 us doubling to 5 ms).
     * Errors are kept and thrown by the socket's next write, as the kernel reports them.
     */
    static final class Flusher implements Runnable {
        private static final java.util.Map<SocketChannel, State> PENDING = new java.util.LinkedHashMap<>();
        private static Thread thread;

        static synchronized void add(SocketChannel ch, State st) {
            PENDING.put(ch, st);
            if (thread == null) {
                thread = new Thread(new Flusher(), "exalt-socket-flusher");
                thread.setDaemon(true);
                thread.start();
            } else {
                java.util.concurrent.locks.LockSupport.unpark(thread);
            }
        }

        static long pause(long backoff) {
            long b = backoff == 0 ? 20_000 : Math.min(backoff * 2, 5_000_000);
            java.util.concurrent.locks.LockSupport.parkNanos(b);
            return b;
        }

        @Override
        public void run() {
            long backoff = 0;
            while (true) {
                java.util.List<java.util.Map.Entry<SocketChannel, State>> work;
                synchronized (Flusher.class) {
                    work = new java.util.ArrayList<>(PENDING.entrySet());
                }
                if (work.isEmpty()) {
                    java.util.concurrent.locks.LockSupport.park();
                    continue;
                }
                boolean progress = false;
                for (java.util.Map.Entry<SocketChannel, State> e : work) {
                    SocketChannel ch = e.getKey();
                    State st = e.getValue();
                    boolean done;
                    if (!st.out.tryLock()) {
                        continue; // an application write holds it (and sends the pending bytes first)
                    }
                    try {
                        if (st.pending == null || !ch.isOpen()) {
                            done = true;
                        } else if (ch.isBlocking()) {
                            continue; // never block this thread: the next (blocking) write sends them
                        } else {
                            try {
                                progress |= rawWrite(ch, st.pending) > 0;
                            } catch (IOException | RuntimeException x) {
                                st.failure = x;
                                st.pending = null;
                            }
                            done = st.pending == null || !st.pending.hasRemaining();
                            if (done) {
                                st.pending = null;
                                finishDeferredShutdown(ch, st);
                            }
                        }
                    } finally {
                        st.out.unlock();
                    }
                    if (done) {
                        synchronized (Flusher.class) {
                            if (st.pending == null) {
                                PENDING.remove(ch);
                            }
                        }
                    }
                }
                backoff = progress ? 0 : pause(backoff);
            }
        }
    }

    /** SocketChannelImpl.blockingRead (socket streams of channel sockets). */
    public static Integer blockingRead(SocketChannel ch, byte[] b, int off, int len, long nanos) throws IOException {
        State st = state(ch);
        if (st == null) {
            return null;
        }
        return streamRead(st, b, off, len, (x, o, l) -> {
            try {
                return (int) chBlockingReadMh.invoke(ch, x, o, l, nanos);
            } catch (Throwable t) {
                throw rethrow(t);
            }
        });
    }

    public static boolean blockingWrite(SocketChannel ch, byte[] b, int off, int len) throws IOException {
        RawWrite raw = (x, o, l) -> {
            try {
                chBlockingWriteMh.invoke(ch, x, o, l);
            } catch (Throwable t) {
                throw rethrow(t);
            }
        };
        State st = state(ch);
        if (st == null) {
            return false;
        }
        if (!checkStreamWrite(b, off, len)) {
            return true;
        }
        streamWrite(st, raw, b, off, len);
        return true;
    }

    /**
     * A Socket stream write: one frame per {@link #MAX_FRAME_INPUT} bytes, each encoded and sent before the next (the heap
     * a write needs is bounded by one frame; before, every frame of the write was encoded into one array first), under
     * the write lock so that the frames of concurrent writes never interleave.
     */
    private static void streamWrite(State st, RawWrite raw, byte[] b, int off, int len) throws IOException {
        st.out.lock();
        try {
            int done = 0;
            while (done < len) {
                int n = Math.min(len - done, MAX_FRAME_INPUT);
                byte[] f = encode(b, off + done, n);
                IN_HOOK.set(Boolean.TRUE);
                try {
                    raw.write(f, 0, f.length);
                } finally {
                    IN_HOOK.set(null); // not remove(): the entry stays, so the next set() does not allocate and rehash
                }
                done += n;
                ExaltRuntime.NET_LOGICAL_BYTES_SENT.addAndGet(n);
                ExaltRuntime.NET_WIRE_BYTES_SENT.addAndGet(f.length);
            }
        } finally {
            st.out.unlock();
        }
    }

    /**
     * The JDK's checks of a stream write: bounds (IndexOutOfBoundsException, nothing sent) and a zero length (nothing
     * sent). Returns false when there is nothing to send. Before, a zero or negative length became an empty frame,
     * acknowledged, and the reader failed on it.
     */
    private static boolean checkStreamWrite(byte[] b, int off, int len) {
        java.util.Objects.checkFromIndexSize(off, len, b.length);
        return len > 0;
    }

    // ------------------------------------------------------------------------------ Socket (NioSocketImpl)

    public static Integer implRead(Object impl, byte[] b, int off, int len) throws IOException {
        State st = state(impl);
        if (st == null) {
            return null;
        }
        return streamRead(st, b, off, len, (x, o, l) -> {
            try {
                return (int) implReadMh.invoke(impl, x, o, l);
            } catch (Throwable t) {
                throw rethrow(t);
            }
        });
    }

    private static Integer streamRead(State st, byte[] b, int off, int len, RawRead raw) throws IOException {
        if (len == 0) {
            return 0;
        }
        synchronized (st) {
            int r = fill(st, (x, o, l) -> {
                IN_HOOK.set(Boolean.TRUE);
                try {
                    return raw.read(x, o, l);
                } finally {
                    IN_HOOK.set(null); // not remove(): the entry stays, so the next set() does not allocate and rehash
                }
            });
            if (r <= 0) {
                return r;
            }
            return take(st, b, off, len);
        }
    }

    public static boolean implWrite(Object impl, byte[] b, int off, int len) throws IOException {
        RawWrite raw = (x, o, l) -> {
            try {
                implWriteMh.invoke(impl, x, o, l);
            } catch (Throwable t) {
                throw rethrow(t);
            }
        };
        State st = state(impl);
        if (st == null) {
            return false;
        }
        if (!checkStreamWrite(b, off, len)) {
            return true;
        }
        streamWrite(st, raw, b, off, len);
        return true;
    }

    /**
     * {@code available()} of a compressed socket ({@code NioSocketImpl}, and {@code SocketChannelImpl} behind the
     * stream of a channel socket): the decoded bytes not yet taken; when there are none, what the kernel holds (part
     * or all of the next frame, which the peer writes whole), so that a reader polling {@code available() > 0} sees
     * data arrive. Null when not compressed.
     */
    public static Integer implAvailable(Object impl) throws IOException {
        State st = state(impl);
        if (st == null) {
            return null;
        }
        // no lock: available() must not wait for a reader blocked inside a frame (that reader holds the state)
        int n = (int) Math.min(Integer.MAX_VALUE, st.decoded.remaining());
        if (n > 0) {
            return n;
        }
        IN_HOOK.set(Boolean.TRUE);
        try {
            return (int) availableMh(impl).invoke(impl);
        } catch (Throwable t) {
            throw rethrow(t);
        } finally {
            IN_HOOK.set(null); // not remove(): the entry stays, so the next set() does not allocate and rehash
        }
    }

    private static java.lang.invoke.MethodHandle availableMh(Object impl) throws ReflectiveOperationException {
        return impl instanceof SocketChannel ? chAvailableMh : implAvailableMh;
    }
}
