package io.salus.core.merkle;

/**
 * How a volume of {@code volumeBlocks} blocks is cut into regions of {@code 2^regionLevel}
 * contiguous, aligned blocks. Region {@code r} covers blocks {@code [r << regionLevel,
 * min((r+1) << regionLevel, volumeBlocks))}; its region tree has the same root as the volume
 * tree's node at ({@code regionLevel}, r).
 */
public record RegionLayout(long volumeBlocks, int regionLevel) {
    public RegionLayout {
        if (volumeBlocks <= 0) {
            throw new IllegalArgumentException("volume must have at least one block, got " + volumeBlocks);
        }
        if (regionLevel < 0 || regionLevel > MerkleTree.depthFor(volumeBlocks)) {
            throw new IllegalArgumentException("region level " + regionLevel + " must be in [0,"
                    + MerkleTree.depthFor(volumeBlocks) + "] for " + volumeBlocks + " blocks");
        }
    }

    /** Layout with regions of {@code blocksPerRegion} blocks, which must be a power of two. */
    public static RegionLayout ofRegionSize(long volumeBlocks, long blocksPerRegion) {
        if (blocksPerRegion <= 0 || Long.bitCount(blocksPerRegion) != 1) {
            throw new IllegalArgumentException("blocks per region must be a power of two, got " + blocksPerRegion);
        }
        return new RegionLayout(volumeBlocks, Long.numberOfTrailingZeros(blocksPerRegion));
    }

    public long blocksPerRegion() {
        return 1L << regionLevel;
    }

    public long regionCount() {
        return ((volumeBlocks - 1) >>> regionLevel) + 1;
    }

    public long regionOf(long block) {
        if (block < 0 || block >= volumeBlocks) {
            throw new IndexOutOfBoundsException("block " + block + " outside the volume's " + volumeBlocks + " blocks");
        }
        return block >>> regionLevel;
    }

    public long firstBlock(long region) {
        return region << regionLevel;
    }

    /** Block index inside its region tree. */
    public long localIndex(long block) {
        return block & (blocksPerRegion() - 1);
    }

    /** A new, empty in-memory region tree for one region. */
    public MerkleTree newRegionTree(HashAlgorithm alg, int blockSize, NodeStore store) {
        return new MerkleTree(alg, blockSize, blocksPerRegion(), store);
    }
}
