package io.salus.core.protocol.replica;

import io.salus.core.merkle.Hash;
import io.salus.core.merkle.InMemoryNodeStore;
import io.salus.core.merkle.MerkleProof;
import io.salus.core.merkle.MerkleTree;
import io.salus.core.protocol.ProtocolConfig;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * A {@link RegionStore} in memory (simulator, unit tests, benchmarks). Not thread-safe, except that the dirty-set
 * methods ({@link #apply}, {@link #dirty}, {@link #markDurable(Map)}) may be called by a checkpoint writer thread
 * while the event loop applies.
 */
public final class InMemoryRegionStore implements RegionStore {
    private final int blockSize;
    private final Map<Long, byte[]> blocks = new HashMap<>();
    private final MerkleTree tree;
    private final Set<Long> dirty = new LinkedHashSet<>();
    /** Blocks whose leaf hash is set without their content ({@link #setLeaves}, a rebuild's first phase). */
    private final Map<Long, Hash> leavesOnly = new HashMap<>();

    /** A store holding {@code initial} (local index to content), all of it durable already. */
    public InMemoryRegionStore(ProtocolConfig cfg, Map<Long, byte[]> initial) {
        this.blockSize = cfg.blockSize();
        this.tree = cfg.layout().newRegionTree(cfg.hash(), cfg.blockSize(), new InMemoryNodeStore());
        initial.forEach((k, v) -> {
            blocks.put(k, v.clone());
            tree.putBlock(k, v);
        });
    }

    @Override
    public void apply(long localBlock, byte[] data) {
        synchronized (dirty) {
            leavesOnly.remove(localBlock);
            blocks.put(localBlock, data.clone()); // one copy per apply: markDurable(Map) tells applies apart by it
            dirty.add(localBlock);
        }
        tree.putBlock(localBlock, data);
    }

    @Override
    public Hash leaf(long localBlock) {
        return tree.leaf(localBlock);
    }

    @Override
    public void setLeaves(Map<Long, Hash> leaves) {
        java.util.Set<Long> all = new java.util.TreeSet<>(leafHashes().keySet());
        all.addAll(leaves.keySet());
        synchronized (dirty) {
            for (long k : all) {
                blocks.remove(k);
                dirty.remove(k);
                Hash leaf = leaves.get(k);
                tree.setLeaf(k, leaf == null ? tree.emptyHash(0) : leaf);
                if (leaf != null) {
                    leavesOnly.put(k, leaf);
                } else {
                    leavesOnly.remove(k);
                }
            }
        }
    }

    @Override
    public byte[] read(long localBlock) {
        byte[] b = blocks.get(localBlock);
        return b == null ? new byte[blockSize] : b.clone();
    }

    @Override
    public MerkleProof proof(long localBlock) {
        return tree.proof(localBlock, tree.depth());
    }

    @Override
    public Hash root() {
        return tree.root();
    }

    @Override
    public Map<Long, Hash> leafHashes() {
        Map<Long, Hash> m = new TreeMap<>(leavesOnly);
        blocks.keySet().forEach(k -> m.put(k, tree.leaf(k)));
        return m;
    }

    @Override
    public Map<Long, byte[]> dirty() {
        Map<Long, byte[]> m = new TreeMap<>();
        synchronized (dirty) {
            dirty.forEach(k -> m.put(k, blocks.get(k)));
        }
        return m;
    }

    @Override
    public void markDurable() {
        synchronized (dirty) {
            dirty.clear();
        }
    }

    @Override
    public void markDurable(Map<Long, byte[]> written) {
        synchronized (dirty) {
            written.forEach((k, v) -> {
                // by the apply's copy, not by content: A, B, A again must stay dirty (review rvw21-2)
                if (blocks.get(k) == v) {
                    dirty.remove(k);
                }
            });
        }
    }

    /** Every written block (full copy: for tests and the benchmark's whole-region baseline). */
    public Map<Long, byte[]> allBlocks() {
        return new TreeMap<>(blocks);
    }
}
