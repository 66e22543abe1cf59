package io.salus.core.merkle;

/**
 * Where the nodes of a {@link MerkleTree} live. Level 0 holds leaf (block) hashes, level
 * {@code depth} holds the root. A node that is not stored stands for an entirely unwritten
 * subtree, whose hash is the precomputed per-level empty hash; stores therefore never hold
 * empty-subtree hashes and an unwritten volume costs nothing.
 *
 * <p>Implementations may keep nodes in memory ({@link InMemoryNodeStore}), split them by level
 * ({@link TieredNodeStore}: a client keeps the top levels and fetches lower subtrees on demand), or
 * load them from elsewhere (a region server's persisted region tree, stored per-block hashes).
 */
public interface NodeStore {
    /** The stored hash of node (level, index), or {@code null} when that subtree is unwritten. */
    Hash get(int level, long index);

    /** Stores a (non-empty) node hash. */
    void put(int level, long index, Hash hash);

    /** Forgets a node, making it read as the empty subtree. */
    void remove(int level, long index);
}
