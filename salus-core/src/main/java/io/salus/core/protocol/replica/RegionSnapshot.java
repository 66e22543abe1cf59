package io.salus.core.protocol.replica;

import io.salus.core.merkle.Hash;
import io.salus.core.merkle.HashAlgorithm;
import io.salus.core.merkle.MerkleTree;
import io.salus.core.merkle.RegionLayout;
import io.salus.core.merkle.VolumeRootRecord;
import java.util.Map;
import java.util.TreeMap;

/**
 * A flushed region (checkpoint file): the cells (block contents by local index) after applying log
 * entries through {@code throughIndex} of {@code generation} ({@code -1}: the generation's starting
 * state), the last client seq applied, and the region's volume-root record. Replicas agree on its
 * <em>logical</em> digest, the region tree root ({@link #regionRoot}), not on file bytes.
 */
public record RegionSnapshot(long generation, long throughIndex, long lastSeq, Map<Long, byte[]> blocks,
                             VolumeRootRecord rootRecord) {
    public RegionSnapshot {
        blocks = new TreeMap<>(blocks);
    }

    public static RegionSnapshot empty(long generation, Hash emptyVolumeRoot) {
        return new RegionSnapshot(generation, -1, 0, Map.of(), new VolumeRootRecord(emptyVolumeRoot, 0));
    }

    /**
     * Why this snapshot is not the state {@code cp} certifies (generation, index, last seq, volume-root
     * record, region tree root), or null if it is.
     */
    public String mismatch(io.salus.core.cert.Statement.Checkpoint cp, HashAlgorithm alg, int blockSize,
                           RegionLayout layout) {
        if (generation != cp.generation() || throughIndex != cp.throughIndex()) {
            return "it is of generation " + generation + " through index " + throughIndex + ", the certificate of "
                    + cp.generation() + " through " + cp.throughIndex();
        }
        if (lastSeq != cp.lastSeq() || !rootRecord.equals(cp.rootRecord())) {
            return "its last seq " + lastSeq + " / volume-root record " + rootRecord + " differ from the certified "
                    + cp.lastSeq() + " / " + cp.rootRecord();
        }
        Hash root = regionRoot(alg, blockSize, layout);
        return root.equals(cp.regionRoot()) ? null
                : "its region tree root " + root + " differs from the certified " + cp.regionRoot();
    }

    /** The region tree root over these cells. */
    public Hash regionRoot(HashAlgorithm alg, int blockSize, RegionLayout layout) {
        MerkleTree t = layout.newRegionTree(alg, blockSize, new io.salus.core.merkle.InMemoryNodeStore());
        blocks.forEach(t::putBlock);
        return t.root();
    }
}
