package io.salus.core.merkle;

import java.util.List;

/**
 * A GET proof: the leaf hash of {@code block} plus the sibling hashes on the path from the leaf up
 * to (but excluding) level {@code toLevel}. The verifier already holds the node at
 * ({@code toLevel}, {@code block >> toLevel}) — the root of a region tree, or any cached level — so
 * the levels it caches are not sent.
 *
 * @param block    block number (leaf index) within the tree the proof was cut from
 * @param leaf     the leaf hash being proved
 * @param siblings siblings.get(l) is the sibling of the path node at level l, l = 0..toLevel-1
 */
public record MerkleProof(long block, Hash leaf, List<Hash> siblings) {
    public MerkleProof {
        siblings = List.copyOf(siblings);
    }

    /** The level of the node this proof recomputes. */
    public int toLevel() {
        return siblings.size();
    }

    /** Recomputes the ancestor of the leaf at level {@link #toLevel()} from the leaf and siblings. */
    public Hash ancestor(HashAlgorithm alg) {
        Hash h = leaf;
        long idx = block;
        for (Hash sib : siblings) {
            h = (idx & 1) == 0 ? alg.nodeHash(h, sib) : alg.nodeHash(sib, h);
            idx >>>= 1;
        }
        return h;
    }

    /** Re-bases a proof cut from a region tree onto the volume tree (block number offset). */
    public MerkleProof atBlock(long volumeBlock) {
        return new MerkleProof(volumeBlock, leaf, siblings);
    }
}
