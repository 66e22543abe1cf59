package io.salus.core.protocol.replica;

import io.salus.core.merkle.Hash;
import io.salus.core.merkle.MerkleProof;
import java.util.Map;

/**
 * The storage seam of a replica: the region's cells and its region tree. {@link RegionReplica}
 * applies committed writes here and reads blocks with their proofs; at a checkpoint it writes only
 * what changed since the previous one ({@link #dirty}) and then marks it durable. The simulator uses
 * {@link InMemoryRegionStore}; the HBase adapter implements it over a region (block cells, tree
 * nodes persisted so that opening a region does not rehash it). Local block indexes (0-based inside
 * the region).
 */
public interface RegionStore {
    /** Applies a committed write of one block and updates the region tree. */
    void apply(long localBlock, byte[] data);

    /** The block's content (all zeros if never written). */
    byte[] read(long localBlock);

    /** The proof from the block's leaf to the region root. */
    MerkleProof proof(long localBlock);

    /** The region tree root over the current cells. */
    Hash root();

    /** Leaf hashes of the written blocks (what a mounting client fetches). */
    Map<Long, Hash> leafHashes();

    /** The blocks changed since the last {@link #markDurable()}: what a checkpoint must write. */
    Map<Long, byte[]> dirty();

    /** The state is durable (a checkpoint wrote {@link #dirty()}): forget the dirty set. */
    void markDurable();

    /** The leaf hash of a block (the empty leaf if never written). */
    default Hash leaf(long localBlock) {
        Hash h = leafHashes().get(localBlock);
        return h != null ? h : proof(localBlock).leaf();
    }

    /**
     * The first phase of a rebuild while serving (issue 14 item 3): sets the region tree to {@code leaves} (local
     * block to leaf hash, checked against a certified region root by the caller) <b>without the blocks' contents</b>:
     * every other block is empty, every block of {@code leaves} reads as zeros until its content is
     * {@link #apply applied} (the rebuild's second phase, or a newer write). The replica must not answer a read of
     * such a block before then. Unsupported by default.
     */
    default void setLeaves(Map<Long, Hash> leaves) {
        throw new UnsupportedOperationException(getClass().getSimpleName() + " cannot hold leaf hashes without blocks");
    }

    /**
     * The blocks of {@code written} (a {@link #dirty()} taken earlier, now written by a checkpoint) are durable:
     * forget them from the dirty set unless applied again since, whatever the content applied (a block written A, B,
     * then A again is still dirty after the checkpoint that took the first A: the one that took B was written after
     * it; review rvw21-2). May be called from a checkpoint-writer thread while
     * the event loop applies later writes (which stay dirty). Default: {@link #markDurable()}, right for a store
     * to which nothing is applied between {@link #dirty()} and this call (a checkpoint written inline).
     */
    default void markDurable(Map<Long, byte[]> written) {
        markDurable();
    }
}
