package io.salus.blockdriver.tree;

import java.io.IOException;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.BiConsumer;

/**
 * Where the client volume tree fetches what it does not keep: the stored leaf hashes of a block
 * range (a region subtree, §3.3.3). For the plain-HBase baseline this is a scan of the hash
 * column; for Salus it will be a region server returning its region tree nodes.
 * Blocks missing from the answer are unwritten (their leaf is the empty-block hash).
 */
public interface SubtreeSource {

  /** Stored leaf hashes of blocks in [firstBlock, firstBlock + count), keyed by block. */
  CompletableFuture<Map<Long, byte[]>> fetchLeaves(long firstBlock, long count);

  /** Streams every stored (block, leaf hash) in ascending block order (mount). */
  void scanAllLeaves(BiConsumer<Long, byte[]> consumer) throws IOException;
}
