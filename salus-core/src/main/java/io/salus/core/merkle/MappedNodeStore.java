package io.salus.core.merkle;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;

/**
 * A {@link NodeStore} in a sparse, memory-mapped local file outside the Java heap: every node of a tree over {@code
 * leafCount} leaves has a fixed 32-byte slot (level by level), an all-zero slot is an unwritten (empty) subtree. The
 * file is unlinked as soon as it is mapped, so it never outlives the process (a {@code kill -9} leaves nothing
 * behind) and its pages are the operating system's page cache, written back to the file system under memory
 * pressure: a client's volume tree over hundreds of thousands of written blocks costs the heap nothing (issue 27:
 * the in-memory volume tree of the {@code salus up} JVM's client held ~1M hash objects at 2 GiB written).
 *
 * <p>Sparse: a volume of {@code n} blocks reserves {@code ~64 n} bytes of file, of which only pages holding written
 * nodes are allocated. The client's tree is its own trusted memory (the paper's client keeps it in memory); this store
 * changes where those bytes live, not who trusts them. Not thread-safe (as {@link MerkleTree}).
 */
public final class MappedNodeStore implements NodeStore {
    private static final int CHUNK_SHIFT = 30; // 1 GiB per mapping (a multiple of the 32-byte slot)
    private static final long CHUNK = 1L << CHUNK_SHIFT;
    private static final byte[] ZERO = new byte[Hash.LENGTH];

    private final long[] levelStart;
    private final long[] levelWidth;
    private final MappedByteBuffer[] chunks;

    /**
     * Maps a new store for a tree over {@code leafCount} leaves in a file under {@code dir} (created if missing),
     * unlinked at once.
     *
     * @throws UncheckedIOException if the directory cannot hold the file (the message names it)
     */
    public MappedNodeStore(Path dir, long leafCount) {
        if (leafCount <= 0) {
            throw new IllegalArgumentException("a tree needs at least one leaf, got " + leafCount);
        }
        int depth = MerkleTree.depthFor(leafCount);
        levelStart = new long[depth + 1];
        levelWidth = new long[depth + 1];
        long slots = 0;
        long width = leafCount;
        for (int l = 0; l <= depth; l++) {
            levelStart[l] = slots;
            levelWidth[l] = width;
            slots += width;
            width = (width + 1) / 2;
        }
        long bytes = slots * Hash.LENGTH;
        chunks = new MappedByteBuffer[(int) ((bytes + CHUNK - 1) >>> CHUNK_SHIFT)];
        Path file = null;
        try {
            Files.createDirectories(dir);
            // a page of the sparse file first written when its file system is full fails inside the tree update
            // (SIGBUS, an InternalError the client's batch cannot undo): the whole file's size must be free at start
            // (review of 2026-12-02; ~64 bytes per block of the volume)
            long usable = Files.getFileStore(dir).getUsableSpace();
            if (usable < bytes) {
                throw new IOException("the volume tree needs up to " + bytes + " bytes under " + dir + ", " + usable
                        + " are free");
            }
            file = Files.createTempFile(dir, "salus-tree-", ".nodes");
            try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                for (int c = 0; c < chunks.length; c++) {
                    long off = (long) c << CHUNK_SHIFT;
                    chunks[c] = ch.map(FileChannel.MapMode.READ_WRITE, off, Math.min(CHUNK, bytes - off));
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot map a tree node file of " + bytes + " bytes (sparse) under " + dir
                    + ": set salus.client.tree.dir to a writable local directory", e);
        } finally {
            if (file != null) {
                try {
                    Files.deleteIfExists(file);
                } catch (IOException ignored) {
                    // the mapping stays valid; the file name is left behind in a temporary directory
                }
            }
        }
    }

    private long slot(int level, long index) {
        if (level < 0 || level >= levelStart.length || index < 0 || index >= levelWidth[level]) {
            throw new IndexOutOfBoundsException("node " + level + "/" + index + " outside the tree");
        }
        return (levelStart[level] + index) * Hash.LENGTH;
    }

    /** True for a node right of the leaves (the tree is padded to a power of two): always empty, never stored. */
    private boolean padding(int level, long index) {
        return level >= 0 && level < levelWidth.length && index >= levelWidth[level];
    }

    @Override
    public Hash get(int level, long index) {
        if (padding(level, index)) {
            return null;
        }
        long pos = slot(level, index);
        byte[] b = new byte[Hash.LENGTH];
        chunks[(int) (pos >>> CHUNK_SHIFT)].get((int) (pos & (CHUNK - 1)), b);
        return Arrays.equals(b, ZERO) ? null : Hash.of(b);
    }

    @Override
    public void put(int level, long index, Hash hash) {
        byte[] b = hash.bytes();
        if (Arrays.equals(b, ZERO)) {
            // an all-zero slot reads as empty: a digest of 32 zero bytes does not occur, refuse rather than lose it
            throw new IllegalArgumentException("an all-zero node hash cannot be stored in a mapped tree");
        }
        long pos = slot(level, index);
        chunks[(int) (pos >>> CHUNK_SHIFT)].put((int) (pos & (CHUNK - 1)), b);
    }

    @Override
    public void remove(int level, long index) {
        if (padding(level, index)) {
            return;
        }
        long pos = slot(level, index);
        chunks[(int) (pos >>> CHUNK_SHIFT)].put((int) (pos & (CHUNK - 1)), ZERO);
    }
}
