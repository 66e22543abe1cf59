package io.salus.blockdriver.tree;

import io.salus.core.merkle.Hash;
import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.function.BiConsumer;

/**
 * Where the client volume tree fetches what it does not keep (§3.3.3). Everything a source
 * returns is untrusted: the tree checks it against its trusted top levels before using it.
 *
 * <p>A plain source stores only leaf hashes: a cache miss fetches a whole subtree's leaves and
 * a mount scans every leaf. A source that {@link #persistsNodes() persists interior nodes} (the
 * plain-HBase volume) also stores the nodes above the leaves, so a mount reads the subtree
 * roots only and a cache miss fetches one path (the leaves asked for plus one sibling per
 * level). Blocks and nodes missing from an answer are unwritten (empty-subtree hash).
 */
public interface SubtreeSource {

  /** Stored leaf hashes of blocks in [firstBlock, firstBlock + count), keyed by block. */
  CompletableFuture<Map<Long, byte[]>> fetchLeaves(long firstBlock, long count);

  /** Streams every stored (block, leaf hash) in ascending block order (mount). */
  void scanAllLeaves(BiConsumer<Long, byte[]> consumer) throws IOException;

  /** Whether this source stores interior nodes ({@link #fetchNodes}, {@link #readTop}). */
  default boolean persistsNodes() {
    return false;
  }

  /** Stored hashes of the given nodes (level 0: a block's leaf hash); absent = not stored. */
  default CompletableFuture<Map<NodeId, byte[]>> fetchNodes(List<NodeId> nodes) {
    throw new UnsupportedOperationException("this source stores no interior nodes");
  }

  /**
   * What a mount reads: the stored roots of the subtrees at level {@code subtreeHeight} and the
   * subtrees marked dirty (written since their nodes were last stored: their stored nodes may be
   * behind their leaves). Null when the volume has no persisted nodes yet (a volume written
   * before nodes were persisted): the mount then scans every leaf.
   */
  default PersistedTop readTop(int subtreeHeight) throws IOException {
    return null;
  }

  /**
   * Stores nodes (a null hash deletes the node: an empty subtree) and waits until stored. With
   * {@code replaceSubtree} >= 0 every other stored node of that subtree (levels 1..height) is
   * deleted too. Levels >= 1 only; leaves are stored with their blocks.
   */
  default void writeNodes(Map<NodeId, Hash> nodes, int subtreeHeight, long replaceSubtree)
      throws IOException {
    throw new UnsupportedOperationException("this source stores no interior nodes");
  }

  /** Records that every subtree's nodes are stored (after a mount that scanned every leaf). */
  default void markNodesComplete() throws IOException {
    throw new UnsupportedOperationException("this source stores no interior nodes");
  }

  /** Subtree roots (level = subtree height) and dirty subtrees as stored; all untrusted. */
  record PersistedTop(Map<Long, byte[]> subtreeRoots, Set<Long> dirtySubtrees) {}
}
