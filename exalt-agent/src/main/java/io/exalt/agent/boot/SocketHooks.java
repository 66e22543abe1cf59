package io.exalt.agent.boot;

import io.exalt.tardis.TardisCompressor;
import io.exalt.tardis.TardisDecompressor;
import java.io.EOFException;
import java.io.IOException;
import java.lang.reflect.Field;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
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
        volatile ByteBuffer decoded = ByteBuffer.allocate(0);
        final byte[] hdr = new byte[4];
        int hdrFill;
        byte[] frame;
        int frameFill;
        /** Reused decode buffer: take() copies out of it, so nothing outside the hook ever holds it. */
        byte[] decodeBuf = new byte[0];

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

    /** The frames {@code [length][encoding]} of {@code b[off..off+len)}, one per {@link #MAX_FRAME_INPUT} bytes. */
    private static byte[] encode(byte[] b, int off, int len) {
        TardisCompressor c = ExaltRuntime.compressor();
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream(Math.min(len, MAX_FRAME_INPUT) / 8 + 64);
        int done = 0;
        do {
            int n = Math.min(MAX_FRAME_INPUT, len - done);
            byte[] enc = c.compress(b, off + done, n);
            out.write(enc.length >>> 24);
            out.write(enc.length >>> 16);
            out.write(enc.length >>> 8);
            out.write(enc.length);
            out.write(enc, 0, enc.length);
            done += n;
        } while (done < len);
        byte[] frames = out.toByteArray();
        ExaltRuntime.NET_LOGICAL_BYTES_SENT.addAndGet(len);
        ExaltRuntime.NET_WIRE_BYTES_SENT.addAndGet(frames.length);
        return frames;
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
                        st.frame = new byte[n];
                        st.frameFill = 0;
                        st.hdrFill = 0;
                    }
                    continue;
                }
                if (r < 0 && st.hdrFill > 0) {
                    throw new EOFException("Exalt: connection closed inside a frame header");
                }
            } else {
                r = st.frame.length == st.frameFill ? 1 : raw.read(st.frame, st.frameFill, st.frame.length - st.frameFill);
                if (r > 0 || st.frame.length == st.frameFill) {
                    st.frameFill += Math.max(r, 0);
                    if (st.frameFill == st.frame.length) {
                        TardisDecompressor dec = new TardisDecompressor(ExaltRuntime.format());
                        long n = dec.decompressedLength(st.frame, 0, st.frame.length);
                        if (n > (64 << 20)) {
                            throw new IOException("Exalt: frame expands to " + n + " bytes; both ends must run the agent with"
                                    + " the same ports= and flag=");
                        }
                        if (st.decodeBuf.length < n) {
                            st.decodeBuf = new byte[(int) Math.max(n, Math.min(64 << 20, 2L * st.decodeBuf.length))];
                        }
                        dec.decompressTo(st.frame, 0, st.frame.length, st.decodeBuf, 0);
                        st.decoded = ByteBuffer.wrap(st.decodeBuf, 0, (int) n);
                        st.frame = null;
                    }
                    continue;
                }
                if (r < 0) {
                    throw new EOFException("Exalt: connection closed inside a frame");
                }
            }
            return r; // 0 or -1
        }
        return 1;
    }

    private static int take(State st, byte[] b, int off, int len) {
        int n = Math.min(len, st.decoded.remaining());
        st.decoded.get(b, off, n);
        return n;
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
            int n = Math.min(dst.remaining(), st.decoded.remaining());
            ByteBuffer slice = st.decoded.slice();
            slice.limit(n);
            dst.put(slice);
            st.decoded.position(st.decoded.position() + n);
            return n;
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
            IN_HOOK.remove();
        }
    }

    public static Integer chWrite(SocketChannel ch, ByteBuffer src) throws IOException {
        State st = state(ch);
        if (st == null) {
            return null;
        }
        int n = src.remaining();
        if (n == 0) {
            return 0;
        }
        if (src.hasArray()) { // heap buffer (HDFS packets): compress in place, no copy
            byte[] frame = encode(src.array(), src.arrayOffset() + src.position(), n);
            src.position(src.position() + n);
            writeFrame(ch, frame);
            return n;
        }
        byte[] b = new byte[n];
        src.get(b);
        writeFrame(ch, encode(b, 0, n));
        return n;
    }

    public static Long chWriteV(SocketChannel ch, ByteBuffer[] srcs, int off, int len) throws IOException {
        State st = state(ch);
        if (st == null) {
            return null;
        }
        long total = 0;
        for (int i = off; i < off + len; i++) {
            total += srcs[i].remaining();
        }
        if (total == 0) {
            return 0L;
        }
        byte[] b = new byte[(int) total];
        int p = 0;
        for (int i = off; i < off + len; i++) {
            int r = srcs[i].remaining();
            srcs[i].get(b, p, r);
            p += r;
        }
        writeFrame(ch, encode(b, 0, b.length));
        return total;
    }

    private static void writeFrame(SocketChannel ch, byte[] frame) throws IOException {
        ByteBuffer bb = ByteBuffer.wrap(frame);
        IN_HOOK.set(Boolean.TRUE);
        try {
            synchronized (ch) {
                Selector sel = null;
                try {
                    while (bb.hasRemaining()) {
                        if (ch.write(bb) == 0 && bb.hasRemaining() && !ch.isBlocking()) {
                            // the whole frame must go out: wait until the socket is writable again
                            if (sel == null) {
                                sel = Selector.open();
                                ch.register(sel, SelectionKey.OP_WRITE);
                            }
                            sel.select(1000);
                            sel.selectedKeys().clear();
                        }
                    }
                } finally {
                    if (sel != null) {
                        sel.close();
                    }
                }
            }
        } finally {
            IN_HOOK.remove();
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
        byte[] f = encode(b, off, len);
        IN_HOOK.set(Boolean.TRUE);
        try {
            raw.write(f, 0, f.length);
        } finally {
            IN_HOOK.remove();
        }
        return true;
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
                    IN_HOOK.remove();
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
        byte[] f = encode(b, off, len);
        IN_HOOK.set(Boolean.TRUE);
        try {
            raw.write(f, 0, f.length);
        } finally {
            IN_HOOK.remove();
        }
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
        int n = st.decoded.remaining();
        if (n > 0) {
            return n;
        }
        IN_HOOK.set(Boolean.TRUE);
        try {
            return (int) availableMh(impl).invoke(impl);
        } catch (Throwable t) {
            throw rethrow(t);
        } finally {
            IN_HOOK.remove();
        }
    }

    private static java.lang.invoke.MethodHandle availableMh(Object impl) throws ReflectiveOperationException {
        return impl instanceof SocketChannel ? chAvailableMh : implAvailableMh;
    }
}
