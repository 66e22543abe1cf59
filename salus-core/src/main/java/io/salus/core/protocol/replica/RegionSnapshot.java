package io.salus.core.protocol.replica;

import io.salus.core.merkle.Hash;
import io.salus.core.merkle.HashAlgorithm;
import io.salus.core.merkle.MerkleTree;
import io.salus.core.merkle.RegionLayout;
import io.salus.core.merkle.VolumeRootRecord;
import java.util.Map;
import java.util.TreeMap;

/**
 * A region's state through log index {@code throughIndex} of {@code generation} ({@code -1}: the generation's
 * starting state): the last client seq applied, the region's volume-root record, and the cells, in one of two forms.
 * <ul>
 * <li><b>Carried</b> ({@code stored == null}): the block contents by local index are in {@link #blocks} (the
 * simulator's disk, a generation's starting state after recovery, a checkpoint file of a volume created before
 * issue 27).</li>
 * <li><b>Stored</b> ({@code stored != null}, {@link #blocks} empty): the blocks live once, in the replica's own
 * {@link RegionStore}, which keeps them as they were at {@link StoredState#storeVersion} (HBase: the cells' timestamp
 * of the last apply through the index, read back as of that timestamp); the checkpoint itself is metadata only
 * ({@link #isStored}). Memory and the checkpoint file stay O(1) whatever the region holds.</li>
 * </ul>
 * Replicas agree on the <em>logical</em> digest, the region tree root ({@link #regionRoot}), not on file bytes.
 */
public record RegionSnapshot(long generation, long throughIndex, long lastSeq, Map<Long, byte[]> blocks,
                             VolumeRootRecord rootRecord, StoredState stored) {
    /**
     * Where a stored checkpoint's blocks are: the region store's version holding the state through the index, and
     * that state's region tree root (as the replica computed it when it signed).
     */
    public record StoredState(Hash regionRoot, long storeVersion) {
        public StoredState {
            java.util.Objects.requireNonNull(regionRoot, "regionRoot");
            if (storeVersion < 0) {
                throw new IllegalArgumentException("a stored checkpoint needs a store version, got " + storeVersion);
            }
        }
    }

    public RegionSnapshot {
        blocks = new TreeMap<>(blocks);
        if (stored != null && !blocks.isEmpty()) {
            throw new IllegalArgumentException("a stored checkpoint carries no blocks (" + blocks.size() + " given)");
        }
    }

    /** A snapshot that carries its blocks. */
    public RegionSnapshot(long generation, long throughIndex, long lastSeq, Map<Long, byte[]> blocks,
                          VolumeRootRecord rootRecord) {
        this(generation, throughIndex, lastSeq, blocks, rootRecord, null);
    }

    /** A checkpoint whose blocks are in the replica's region store at {@code storeVersion} (metadata only). */
    public static RegionSnapshot stored(long generation, long throughIndex, long lastSeq, VolumeRootRecord rootRecord,
                                        Hash regionRoot, long storeVersion) {
        return new RegionSnapshot(generation, throughIndex, lastSeq, Map.of(), rootRecord,
                new StoredState(regionRoot, storeVersion));
    }

    /** Whether the blocks are in the region store, not in this snapshot. */
    public boolean isStored() {
        return stored != null;
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

    /**
     * The region tree root: over the carried cells, or the recorded root of a stored checkpoint (the region store
     * checks its cells against it when the replica opens on it: {@link RegionStore#resetTo}).
     */
    public Hash regionRoot(HashAlgorithm alg, int blockSize, RegionLayout layout) {
        if (stored != null) {
            return stored.regionRoot();
        }
        MerkleTree t = layout.newRegionTree(alg, blockSize, new io.salus.core.merkle.InMemoryNodeStore());
        blocks.forEach(t::putBlock);
        return t.root();
    }
}
