package io.salus.core.merkle;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A sparse binary Merkle tree over {@code leafCount} blocks (padded to the next power of two).
 * Unwritten blocks have the defined leaf hash of an all-zero block; unwritten subtrees cost no
 * storage (see {@link EmptyHashes}). Level 0 = leaves, level {@link #depth()} = root.
 *
 * <p>The same class serves as the client's <em>volume tree</em> and a region server's
 * <em>region tree</em>: a region is an aligned range of {@code 2^regionLevel} blocks, and a tree
 * built over those blocks (same algorithm and block size) has a root equal to the volume tree's
 * node at ({@code regionLevel}, region index). See {@link RegionLayout}.
 *
 * <p>Not thread-safe.
 */
public final class MerkleTree {
    private final HashAlgorithm alg;
    private final int blockSize;
    private final long leafCount;
    private final int depth;
    private final NodeStore store;
    private final EmptyHashes empty;

    public MerkleTree(HashAlgorithm alg, int blockSize, long leafCount, NodeStore store) {
        if (leafCount <= 0) {
            throw new IllegalArgumentException("a tree needs at least one leaf, got " + leafCount);
        }
        this.alg = alg;
        this.blockSize = blockSize;
        this.leafCount = leafCount;
        this.depth = depthFor(leafCount);
        this.store = store;
        this.empty = EmptyHashes.of(alg, blockSize);
    }

    /** An in-memory tree. */
    public MerkleTree(HashAlgorithm alg, int blockSize, long leafCount) {
        this(alg, blockSize, leafCount, new InMemoryNodeStore());
    }

    /** Number of levels above the leaves: ceil(log2(leafCount)). */
    public static int depthFor(long leafCount) {
        return leafCount <= 1 ? 0 : 64 - Long.numberOfLeadingZeros(leafCount - 1);
    }

    public HashAlgorithm algorithm() {
        return alg;
    }

    public int blockSize() {
        return blockSize;
    }

    public long leafCount() {
        return leafCount;
    }

    public int depth() {
        return depth;
    }

    public NodeStore store() {
        return store;
    }

    /** Hash of an unwritten subtree whose root is at {@code level}. */
    public Hash emptyHash(int level) {
        return empty.at(level);
    }

    /** Hash of node (level, index), the empty hash when unwritten. */
    public Hash node(int level, long index) {
        Hash h = store.get(level, index);
        return h != null ? h : empty.at(level);
    }

    public Hash root() {
        return node(depth, 0);
    }

    public Hash leaf(long block) {
        checkBlock(block);
        return node(0, block);
    }

    /** Leaf hash for a block's content. */
    public Hash leafHashOf(byte[] block) {
        if (block.length != blockSize) {
            throw new IllegalArgumentException("block must be " + blockSize + " bytes, got " + block.length);
        }
        return alg.leafHash(block);
    }

    /** Hashes and stores a block's content; returns the new root. */
    public Hash putBlock(long block, byte[] data) {
        return setLeaf(block, leafHashOf(data));
    }

    /** Sets a leaf hash and recomputes the path to the root; returns the new root. */
    public Hash setLeaf(long block, Hash leafHash) {
        checkBlock(block);
        setNode(0, block, leafHash);
        long idx = block;
        for (int level = 0; level < depth; level++) {
            long parent = idx >>> 1;
            Hash left = node(level, parent << 1);
            Hash right = node(level, (parent << 1) | 1);
            setNode(level + 1, parent, alg.nodeHash(left, right));
            idx = parent;
        }
        return root();
    }

    /**
     * Sets the leaves {@code offset + k} to {@code leaves.get(k)} and recomputes each node above them once, level by
     * level (a mount installs a region's leaves this way: {@link #setLeaf} per leaf hashed the whole path every time,
     * and a client mounting a volume with hundreds of thousands of written blocks spent minutes in it).
     * Returns the new root.
     */
    public Hash setLeaves(long offset, Map<Long, Hash> leaves) {
        long[] idx = new long[leaves.size()];
        int n = 0;
        for (Map.Entry<Long, Hash> e : leaves.entrySet()) {
            long b = offset + e.getKey();
            checkBlock(b);
            setNode(0, b, e.getValue());
            idx[n++] = b;
        }
        java.util.Arrays.sort(idx);
        for (int level = 0; level < depth && n > 0; level++) {
            int m = 0;
            for (int i = 0; i < n; i++) {
                long parent = idx[i] >>> 1;
                if (m > 0 && idx[m - 1] == parent) {
                    continue; // its sibling was set too: the parent is computed once
                }
                setNode(level + 1, parent, alg.nodeHash(node(level, parent << 1), node(level, (parent << 1) | 1)));
                idx[m++] = parent;
            }
            n = m;
        }
        return root();
    }

    private void setNode(int level, long index, Hash h) {
        if (h.equals(empty.at(level))) {
            store.remove(level, index);
        } else {
            store.put(level, index, h);
        }
    }

    /**
     * The proof for {@code block} up to {@code toLevel} (exclusive): pass {@link #depth()} for a
     * proof against the root, or the level of the lowest node the verifier caches.
     */
    public MerkleProof proof(long block, int toLevel) {
        checkBlock(block);
        if (toLevel < 0 || toLevel > depth) {
            throw new IllegalArgumentException("proof level must be in [0," + depth + "], got " + toLevel);
        }
        List<Hash> sibs = new ArrayList<>(toLevel);
        long idx = block;
        for (int level = 0; level < toLevel; level++) {
            sibs.add(node(level, idx ^ 1));
            idx >>>= 1;
        }
        return new MerkleProof(block, node(0, block), sibs);
    }

    /** True iff the proof recomputes this tree's node at the proof's level on the block's path. */
    public boolean verify(MerkleProof proof) {
        if (proof.block() < 0 || proof.block() >= leafCount || proof.toLevel() > depth) {
            return false;
        }
        return proof.ancestor(alg).equals(node(proof.toLevel(), proof.block() >>> proof.toLevel()));
    }

    /** True iff {@code data} is the content of {@code block} according to this tree and the proof. */
    public boolean verifyBlock(long block, byte[] data, MerkleProof proof) {
        return proof.block() == block && data.length == blockSize
                && alg.leafHash(data).equals(proof.leaf()) && verify(proof);
    }

    /**
     * For a verifier that stores only levels {@code >= proof.toLevel()}: checks {@code proof}
     * against the stored node, then installs {@code newLeaf} by recomputing the path with the proof's
     * siblings (below) and the stored siblings (above). Lower levels are not written. Returns the new
     * root.
     *
     * @throws IllegalArgumentException if the proof does not match the stored tree
     */
    public Hash applyProvenUpdate(MerkleProof proof, Hash newLeaf) {
        if (!verify(proof)) {
            throw new IllegalArgumentException("proof for block " + proof.block() + " does not match the tree");
        }
        MerkleProof updated = new MerkleProof(proof.block(), newLeaf, proof.siblings());
        int level = proof.toLevel();
        long idx = proof.block() >>> level;
        setNode(level, idx, updated.ancestor(alg));
        for (; level < depth; level++) {
            long parent = idx >>> 1;
            setNode(level + 1, parent, alg.nodeHash(node(level, parent << 1), node(level, (parent << 1) | 1)));
            idx = parent;
        }
        return root();
    }

    /**
     * Mount protocol: installs the given region roots at {@code regionLevel} (regions not in the map
     * are unwritten) and recomputes every level above; returns the rebuilt root. The caller compares
     * it with the signed root it trusts (e.g. the newest {@link VolumeRootRecord}).
     */
    public Hash installRegionRoots(int regionLevel, Map<Long, Hash> regionRoots) {
        if (regionLevel < 0 || regionLevel > depth) {
            throw new IllegalArgumentException("region level must be in [0," + depth + "], got " + regionLevel);
        }
        long regions = ((leafCount - 1) >>> regionLevel) + 1;
        for (Map.Entry<Long, Hash> e : regionRoots.entrySet()) {
            if (e.getKey() < 0 || e.getKey() >= regions) {
                throw new IllegalArgumentException("region " + e.getKey() + " out of range [0," + regions + ")");
            }
        }
        for (long r = 0; r < regions; r++) {
            Hash h = regionRoots.get(r);
            setNode(regionLevel, r, h == null ? empty.at(regionLevel) : h);
        }
        long width = regions;
        for (int level = regionLevel; level < depth; level++) {
            long parents = (width + 1) / 2;
            for (long p = 0; p < parents; p++) {
                setNode(level + 1, p, alg.nodeHash(node(level, p << 1), node(level, (p << 1) | 1)));
            }
            width = parents;
        }
        return root();
    }

    /** Volume root from region roots, without keeping a tree (e.g. for recovery's root check). */
    public static Hash rootFromRegionRoots(HashAlgorithm alg, int blockSize, long leafCount, int regionLevel,
                                           Map<Long, Hash> regionRoots) {
        return new MerkleTree(alg, blockSize, leafCount).installRegionRoots(regionLevel, regionRoots);
    }

    private void checkBlock(long block) {
        if (block < 0 || block >= leafCount) {
            throw new IndexOutOfBoundsException("block " + block + " outside the tree's " + leafCount + " blocks");
        }
    }
}
