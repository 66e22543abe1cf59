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
    /**
     * The store refused a write, or a read an apply needed, because its region is being closed (an unassign, a move,
     * a disable, a region server stopping), not because its disk failed: the replica stops committing in this
     * incarnation, and nothing asks for the region to be reopened (the close is somebody's decision; a later
     * incarnation replays the log).
     */
    final class Closing extends java.io.UncheckedIOException {
        public Closing(String message, Throwable cause) {
            super(message, cause instanceof java.io.IOException io ? io : new java.io.IOException(cause));
        }
    }

    /**
     * A read of the region's cells failed (a store file block that fails its checksum, a lost block): the store's
     * damage, never the replica's disk (its Salus log and checkpoints). The storage handles it (a damaged store file is
     * moved aside at the region's reopen); a replica start that meets it keeps its disk (review rv38: an HFile damaged
     * under a tree node read during the log replay at open moved the healthy Salus log aside).
     */
    final class ReadFailed extends java.io.UncheckedIOException {
        public ReadFailed(String message, java.io.IOException cause) {
            super(message, cause);
        }

        /** Whether {@code e} or one of its causes is a {@link ReadFailed}. */
        public static boolean in(Throwable e) {
            for (Throwable t = e; t != null; t = t.getCause()) {
                if (t instanceof ReadFailed) {
                    return true;
                }
            }
            return false;
        }
    }

    /** Applies a committed write of one block and updates the region tree. */
    void apply(long localBlock, byte[] data);

    /** The block's content (all zeros if never written). */
    byte[] read(long localBlock);

    /** The proof from the block's leaf to the region root. */
    MerkleProof proof(long localBlock);

    /** The region tree root over the current cells. */
    Hash root();

    /** Leaf hashes of the written blocks. */
    Map<Long, Hash> leafHashes();

    /**
     * Leaf hashes of the written blocks in the local range [{@code fromBlock}, {@code toBlock}): what a mounting
     * client fetches, one range at a time ({@link io.salus.core.protocol.message.Message.LeafQuery}). A store on
     * disk reads only the range.
     */
    default java.util.SortedMap<Long, Hash> leafHashes(long fromBlock, long toBlock) {
        java.util.TreeMap<Long, Hash> all = new java.util.TreeMap<>(leafHashes());
        return fromBlock >= toBlock ? new java.util.TreeMap<>() : new java.util.TreeMap<>(all.subMap(fromBlock, toBlock));
    }

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

    /**
     * Whether the store holds the content of block {@code localBlock} and it is the one of {@code leaf} (a rebuild
     * fetches only the blocks it does not hold: the Merkle diff of issue 27). False by default: fetch everything.
     */
    default boolean holds(long localBlock, Hash leaf) {
        return false;
    }

    // ------------------------------------------------------------------ versions (issue 27: checkpoints without data)

    /**
     * Whether this store keeps its earlier states readable by {@link #version()} ({@link #readAt},
     * {@link #leafHashesAt}, {@link #resetTo}). A versioned store is durable by itself (HBase: the region's HFiles);
     * the replica's checkpoints then carry no blocks, only the version ({@link RegionSnapshot#stored}). False by
     * default: checkpoints carry the blocks that changed.
     */
    default boolean versioned() {
        return false;
    }

    /**
     * The version naming the store's current state (every later apply gets a higher one): what a checkpoint through
     * the last applied index records. Only for a {@link #versioned()} store.
     */
    default long version() {
        throw new UnsupportedOperationException(getClass().getSimpleName() + " keeps no versions");
    }

    /**
     * Makes the state at {@code version} durable (a {@link #version()} taken earlier): a versioned store that made a
     * later state durable since does nothing (a flush covers every version at or below the one current when it
     * started), so a checkpoint writer that fell behind pays one flush for all the checkpoints it catches up on.
     * Only for a {@link #versioned()} store.
     */
    default void makeDurableThrough(long version) {
        throw new UnsupportedOperationException(getClass().getSimpleName() + " keeps no versions");
    }

    /** The block's content as it was at {@code version} (zeros if it was not written then). */
    default byte[] readAt(long version, long localBlock) {
        throw new UnsupportedOperationException(getClass().getSimpleName() + " keeps no versions");
    }

    /** The leaf hashes of the blocks written at {@code version} (what a peer rebuilt from this one fetches first). */
    default Map<Long, Hash> leafHashesAt(long version) {
        throw new UnsupportedOperationException(getClass().getSimpleName() + " keeps no versions");
    }

    /**
     * Sets every block changed after {@code version} back to its content at {@code version} (a reopened store can
     * hold later applies: HBase flushes a closing region, or one under memory pressure) and checks that the region
     * tree root is then {@code expectedRoot} (a certified checkpoint's). Reads and rewrites only the blocks changed
     * since, never the whole region.
     *
     * @return the blocks set back
     * @throws StoreStateException if the root differs (cells lost or damaged): the replica must be rebuilt from its
     *                             peers, and nothing it holds may be served or signed
     */
    default int resetTo(long version, Hash expectedRoot) {
        throw new UnsupportedOperationException(getClass().getSimpleName() + " keeps no versions");
    }

    /**
     * A CHECKPOINT certificate through a state at {@code version} is stored and this replica's log is collected to
     * it: versions older than the one visible at {@code version} are not needed any more (HBase: compactions drop
     * them). Default: nothing to do.
     */
    default void retainFrom(long version) {
    }

    /** A versioned store's cells do not hold the state a certified checkpoint names. */
    final class StoreStateException extends IllegalStateException {
        public StoreStateException(String message) {
            super(message);
        }
    }
}
