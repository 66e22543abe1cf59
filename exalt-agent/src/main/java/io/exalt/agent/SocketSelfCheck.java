package io.exalt.agent;

import io.exalt.agent.boot.ExaltRuntime;
import java.io.DataInputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * Socket part of the start-up self-check: on a temporary loopback port added to the compressed set, sends the
 * probe data through SocketChannel (blocking and non-blocking), channel-socket streams and plain Socket
 * streams, and checks that the peer receives the same bytes while far fewer bytes cross the wire.
 */
final class SocketSelfCheck {
    private SocketSelfCheck() {
    }

    private static void check(boolean ok, String what) {
        if (!ok) {
            throw new IllegalStateException("Exalt self-check failed: " + what
                    + ". The agent refuses to run: emulated network data would be corrupted silently.");
        }
    }

    static void run(byte[] d) throws Exception {
        InetAddress lo = InetAddress.getLoopbackAddress();
        // 1. SocketChannel <-> SocketChannel; the reader is non-blocking, the writer gathers
        try (ServerSocketChannel server = ServerSocketChannel.open().bind(new InetSocketAddress(lo, 0))) {
            int port = ((InetSocketAddress) server.getLocalAddress()).getPort();
            ExaltRuntime.addPort(port);
            try {
                long wire0 = ExaltRuntime.NET_WIRE_BYTES_SENT.get();
                CompletableFuture<byte[]> got = CompletableFuture.supplyAsync(() -> {
                    try (SocketChannel s = server.accept()) {
                        s.configureBlocking(false);
                        ByteBuffer all = ByteBuffer.allocate(d.length);
                        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                        while (all.hasRemaining() && System.nanoTime() < deadline) {
                            if (s.read(all) == 0) {
                                Thread.sleep(1);
                            }
                        }
                        s.configureBlocking(true);
                        s.write(ByteBuffer.wrap(d, 0, 1000)); // echo a little back
                        return all.array();
                    } catch (Exception e) {
                        throw new RuntimeException(e);
                    }
                });
                try (SocketChannel c = SocketChannel.open(new InetSocketAddress(lo, port))) {
                    c.write(new ByteBuffer[] {ByteBuffer.wrap(d, 0, 33_333), ByteBuffer.wrap(d, 33_333, d.length - 33_333)});
                    check(Arrays.equals(got.get(30, TimeUnit.SECONDS), d), "SocketChannel transfer");
                    DataInputStream in = new DataInputStream(c.socket().getInputStream());
                    byte[] back = new byte[1000];
                    in.readFully(back);
                    check(Arrays.equals(back, Arrays.copyOf(d, 1000)), "channel socket stream read");
                }
                long wire = ExaltRuntime.NET_WIRE_BYTES_SENT.get() - wire0;
                check(wire * 50 < d.length, "SocketChannel traffic is compressed (" + wire + " wire bytes for " + d.length + ")");
            } finally {
                ExaltRuntime.removePort(port);
            }
        }
        // 2. Socket streams (NioSocketImpl) on both ends
        try (ServerSocket server = new ServerSocket(0, 1, lo)) {
            int port = server.getLocalPort();
            ExaltRuntime.addPort(port);
            try {
                CompletableFuture<byte[]> got = CompletableFuture.supplyAsync(() -> {
                    try (Socket s = server.accept()) {
                        DataInputStream in = new DataInputStream(s.getInputStream());
                        byte[] all = new byte[d.length];
                        all[0] = (byte) in.read();
                        in.readFully(all, 1, all.length - 1);
                        return all;
                    } catch (Exception e) {
                        throw new RuntimeException(e);
                    }
                });
                try (Socket c = new Socket(lo, port)) {
                    OutputStream out = c.getOutputStream();
                    out.write(d[0]);
                    out.write(d, 1, 49_999);
                    out.write(Arrays.copyOfRange(d, 50_000, d.length));
                    out.flush();
                    check(Arrays.equals(got.get(30, TimeUnit.SECONDS), d), "Socket stream transfer");
                    InputStream unused = c.getInputStream();
                    check(unused.available() == 0, "Socket available()");
                }
            } finally {
                ExaltRuntime.removePort(port);
            }
        }
    }
}
