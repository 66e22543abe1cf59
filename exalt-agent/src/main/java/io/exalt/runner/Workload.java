package io.exalt.runner;

import io.exalt.tardis.TardisGenerator;
import java.io.IOException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * Emulated clients writing Tardis data (§4.5.1).
 * <ul>
 *   <li>{@code own-dir}: each client creates files in its own directory, writes {@code fileSize} bytes, closes,
 *       starts the next file (the paper's default: 192 MB files, 128 MB blocks, replication 3);</li>
 *   <li>{@code same-dir}: the same, but every client creates its files in one shared directory;</li>
 *   <li>{@code growing-file}: each client keeps appending to one file that grows without bound.</li>
 * </ul>
 */
final class Workload {
    enum Kind { OWN_DIR, SAME_DIR, GROWING_FILE }

    final LongAdder bytes = new LongAdder();
    final LongAdder files = new LongAdder();
    final LongAdder createNanos = new LongAdder();
    final LongAdder creates = new LongAdder();
    final LongAdder closeNanos = new LongAdder();
    final LongAdder closes = new LongAdder();
    final AtomicLong errors = new AtomicLong();
    /** Files completed (written in full and closed) per client. */
    final java.util.concurrent.atomic.AtomicLongArray clientFiles;
    volatile String lastError;
    private volatile boolean stop;
    private final Thread[] threads;
    /**
     * Files of at most this size are generated once and shared read-only by all clients: every file of one size
     * holds the same Tardis bytes (the stream is a pure function of its length and offset), so generating them
     * again per file and client was one whole expand pass per logical byte spent outside HDFS and the agent.
     */
    static final long PREGENERATE_MAX = 256L << 20;
    static final int CHUNK = 1 << 20;
    /** The file's bytes in {@link #CHUNK}-sized pieces (never written to), or null: generated per write. */
    private final byte[][] fileChunks;

    Workload(Kind kind, FileSystem fs, int clients, long fileSize, long blockSize, short replication) {
        fileChunks = kind != Kind.GROWING_FILE && fileSize <= PREGENERATE_MAX ? pregenerate(fileSize) : null;
        threads = new Thread[clients];
        clientFiles = new java.util.concurrent.atomic.AtomicLongArray(clients);
        for (int i = 0; i < clients; i++) {
            final int id = i;
            threads[i] = new Thread(() -> run(kind, fs, id, fileSize, blockSize, replication), "exalt-client-" + i);
            threads[i].setDaemon(true);
        }
    }

    /** The Tardis stream of {@code length} bytes as {@link #CHUNK}-sized arrays (the last one shorter). */
    static byte[][] pregenerate(long length) {
        TardisGenerator gen = new TardisGenerator(length);
        int n = (int) ((length + CHUNK - 1) / CHUNK);
        byte[][] chunks = new byte[n][];
        for (int i = 0; i < n; i++) {
            long pos = (long) i * CHUNK;
            chunks[i] = new byte[(int) Math.min(CHUNK, length - pos)];
            gen.fill(pos, chunks[i], 0, chunks[i].length);
        }
        return chunks;
    }

    /** Files each client completed so far. */
    long[] clientFilesSnapshot() {
        long[] r = new long[clientFiles.length()];
        for (int i = 0; i < r.length; i++) {
            r[i] = clientFiles.get(i);
        }
        return r;
    }

    void start() {
        for (Thread t : threads) {
            t.start();
        }
    }

    void stop() throws InterruptedException {
        stop = true;
        for (Thread t : threads) {
            t.join(30_000);
        }
    }

    private void run(Kind kind, FileSystem fs, int id, long fileSize, long blockSize, short replication) {
        byte[] buf = fileChunks != null ? null : new byte[CHUNK];
        long stream = kind == Kind.GROWING_FILE ? Long.MAX_VALUE / 2 : fileSize;
        TardisGenerator gen = new TardisGenerator(stream);
        int k = 0;
        while (!stop) {
            Path p = switch (kind) {
                case OWN_DIR -> new Path("/exalt/client" + id + "/file" + k);
                case SAME_DIR -> new Path("/exalt/shared/c" + id + "-f" + k);
                case GROWING_FILE -> new Path("/exalt/growing/client" + id);
            };
            k++;
            try {
                long t0 = System.nanoTime();
                FSDataOutputStream out = fs.create(p, true, 64 << 10, replication, blockSize);
                createNanos.add(System.nanoTime() - t0);
                creates.increment();
                long pos = 0;
                try {
                    while (pos < stream && !stop) {
                        int n;
                        if (fileChunks != null) {
                            byte[] c = fileChunks[(int) (pos / CHUNK)];
                            n = c.length;
                            out.write(c, 0, n);
                        } else {
                            n = (int) Math.min(buf.length, stream - pos);
                            gen.fill(pos, buf, 0, n);
                            out.write(buf, 0, n);
                        }
                        pos += n;
                        bytes.add(n);
                    }
                } finally {
                    long t1 = System.nanoTime();
                    out.close();
                    closeNanos.add(System.nanoTime() - t1);
                    closes.increment();
                }
                if (pos == stream) {
                    files.increment();
                    clientFiles.incrementAndGet(id);
                }
            } catch (IOException | RuntimeException e) {
                if (!stop) {
                    errors.incrementAndGet();
                    lastError = e.toString();
                    try {
                        Thread.sleep(200);
                    } catch (InterruptedException ie) {
                        return;
                    }
                }
            }
        }
    }
}
