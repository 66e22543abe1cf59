package io.salus.blockdriver.volume;

import java.time.Instant;

/**
 * Catalog entry of a volume (§3.1: size and block size fixed at creation).
 *
 * @param name volume name
 * @param kind storage kind ({@code hbase} = plain-HBase baseline)
 * @param blockSize bytes per block
 * @param sizeInBlocks number of blocks
 * @param created creation time
 * @param table HBase table holding the blocks
 * @param hashAlgorithm Merkle hash of the client volume tree
 * @param subtreeHeight height of the subtrees the client fetches on demand
 * @param regions number of regions the table was pre-split into
 * @param rootHash volume tree root recorded at the last flush/close (may be null)
 * @param rootSeq write sequence number of {@code rootHash}
 * @param cleanClose whether the last writer closed the volume cleanly
 */
public record VolumeInfo(
    String name,
    String kind,
    int blockSize,
    long sizeInBlocks,
    Instant created,
    String table,
    String hashAlgorithm,
    int subtreeHeight,
    int regions,
    byte[] rootHash,
    long rootSeq,
    boolean cleanClose) {

  public long sizeInBytes() {
    return sizeInBlocks * blockSize;
  }

  public long blocksPerRegion() {
    return (sizeInBlocks + regions - 1) / regions;
  }
}
