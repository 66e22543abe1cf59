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

    Workload(Kind kind, FileSystem fs, int clients, long fileSize, long blockSize, short replication) {
        threads = new Thread[clients];
        clientFiles = new java.util.concurrent.atomic.AtomicLongArray(clients);
        for (int i = 0; i < clients; i++) {
            final int id = i;
            threads[i] = new Thread(() -> run(kind, fs, id, fileSize, blockSize, replication), "exalt-client-" + i);
            threads[i].setDaemon(true);
        }
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
        byte[] buf = new byte[1 << 20];
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
                        int n = (int) Math.min(buf.length, stream - pos);
                        gen.fill(pos, buf, 0, n);
                        out.write(buf, 0, n);
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
