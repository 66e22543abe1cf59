package io.salus.core.merkle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class MappedNodeStoreTest {
    static final int BS = 64;

    @Test
    void aTreeOverAMappedStoreEqualsTheSameTreeInTheHeapAndLeavesNoFile(@TempDir Path dir) throws Exception {
        Random rnd = new Random(27);
        long leaves = 5000; // not a power of two
        MerkleTree heap = new MerkleTree(HashAlgorithm.SHA256, BS, leaves);
        MerkleTree mapped = new MerkleTree(HashAlgorithm.SHA256, BS, leaves, new MappedNodeStore(dir, leaves));
        try (var files = Files.list(dir)) {
            assertEquals(0, files.count(), "the node file is unlinked once mapped");
        }
        Map<Long, Hash> batch = new HashMap<>();
        for (int i = 0; i < 2000; i++) {
            long b = rnd.nextInt((int) leaves);
            byte[] d = new byte[BS];
            if (i % 7 != 0) {
                rnd.nextBytes(d); // every 7th: zeros, the empty leaf (its slot goes back to zero)
            }
            if (i < 1000) {
                assertEquals(heap.putBlock(b, d), mapped.putBlock(b, d));
            } else {
                batch.put(b, heap.leafHashOf(d));
            }
        }
        batch.forEach(heap::setLeaf);
        assertEquals(heap.root(), mapped.setLeaves(0, batch));
        for (int level = 0; level <= heap.depth(); level++) {
            for (long i = 0; i < (leaves >>> level) + 1 && i < (1L << (heap.depth() - level)); i++) {
                assertEquals(heap.node(level, i), mapped.node(level, i), "node " + level + "/" + i);
            }
        }
        MerkleProof p = mapped.proof(4999, mapped.depth());
        assertEquals(true, heap.verify(p));
    }

    @Test
    void slotsBeyondTheFirstGibibyteMappingAreKept(@TempDir Path dir) {
        long leaves = 1L << 26; // 2^27 slots of 32 bytes: 4 GiB of sparse file in four mappings
        MappedNodeStore s = new MappedNodeStore(dir, leaves);
        Hash h = HashAlgorithm.SHA256.hash(new byte[] {1});
        s.put(0, leaves - 1, h);
        s.put(26, 0, h);
        assertEquals(h, s.get(0, leaves - 1));
        assertEquals(h, s.get(26, 0));
        assertNull(s.get(0, leaves - 2));
        s.remove(0, leaves - 1);
        assertNull(s.get(0, leaves - 1));
        assertThrows(IndexOutOfBoundsException.class, () -> s.get(27, 0));
        assertNull(s.get(1, leaves / 2), "right of the leaves (padding): empty");
        assertThrows(IndexOutOfBoundsException.class, () -> s.put(1, leaves / 2, h));
    }
}
