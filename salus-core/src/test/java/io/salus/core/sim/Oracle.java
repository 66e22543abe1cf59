package io.salus.core.sim;

import io.salus.core.merkle.Hash;
import io.salus.core.merkle.MerkleTree;
import io.salus.core.protocol.ProtocolConfig;
import io.salus.core.protocol.client.BlockWrite;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The simulator's independent model of what the client asked for: every issued PUT in seq order,
 * the state at the last recovery point, and the region roots at every sub-batch boundary. Shares no
 * state with the protocol code.
 */
final class Oracle {
    private final ProtocolConfig cfg;
    private Map<Long, byte[]> baseBlocks = new HashMap<>();
    private long[] baseRegionSeq;
    long baseSeq;
    long ackedMax;
    final TreeMap<Long, long[]> issuedBlocks = new TreeMap<>(); // seq -> {block}
    private final Map<Long, byte[]> issuedData = new HashMap<>();
    private final Map<Integer, Map<Long, Hash>> regionRootAt = new HashMap<>();
    private Map<Long, byte[]> current = new HashMap<>();
    private MerkleTree tree;

    Oracle(ProtocolConfig cfg) {
        this.cfg = cfg;
        this.baseRegionSeq = new long[cfg.regionCount()];
        reset();
    }

    private void reset() {
        tree = new MerkleTree(cfg.hash(), cfg.blockSize(), cfg.layout().volumeBlocks());
        current = new HashMap<>();
        baseBlocks.forEach((b, d) -> {
            tree.putBlock(b, d);
            current.put(b, d);
        });
        regionRootAt.clear();
        for (int r = 0; r < cfg.regionCount(); r++) {
            regionRootAt.computeIfAbsent(r, k -> new HashMap<>())
                    .put(baseRegionSeq[r], tree.node(cfg.layout().regionLevel(), r));
        }
    }

    int regionOf(long block) {
        return (int) cfg.layout().regionOf(block);
    }

    long issuedMax() {
        return issuedBlocks.isEmpty() ? baseSeq : issuedBlocks.lastKey();
    }

    void issue(long firstSeq, List<BlockWrite> writes) {
        if (firstSeq != issuedMax() + 1) {
            throw new SimulationViolation("oracle", "client assigned seq " + firstSeq + " after " + issuedMax());
        }
        Map<Integer, Long> lastOfRegion = new TreeMap<>();
        long seq = firstSeq;
        for (BlockWrite w : writes) {
            issuedBlocks.put(seq, new long[] {w.block()});
            issuedData.put(seq, w.data().clone());
            current.put(w.block(), w.data().clone());
            tree.putBlock(w.block(), w.data());
            lastOfRegion.put(regionOf(w.block()), seq);
            seq++;
        }
        lastOfRegion.forEach((r, s) -> regionRootAt.get(r).put(s, tree.node(cfg.layout().regionLevel(), r)));
    }

    /** The region root after the sub-batch ending at seq, or null if seq is not such a boundary. */
    Hash regionRootAt(int region, long seq) {
        return regionRootAt.get(region).get(seq);
    }

    byte[] currentValue(long block) {
        byte[] d = current.get(block);
        return d == null ? new byte[cfg.blockSize()] : d;
    }

    boolean matches(long block, byte[] data) {
        return Arrays.equals(currentValue(block), data);
    }

    /** The volume state after applying every PUT with seq <= lcp. */
    Map<Long, byte[]> stateAt(long lcp) {
        Map<Long, byte[]> s = new HashMap<>(baseBlocks);
        for (Map.Entry<Long, long[]> e : issuedBlocks.headMap(lcp, true).entrySet()) {
            s.put(e.getValue()[0], issuedData.get(e.getKey()));
        }
        return s;
    }

    Hash regionRootOfState(Map<Long, byte[]> state, int region) {
        MerkleTree t = new MerkleTree(cfg.hash(), cfg.blockSize(), cfg.layout().volumeBlocks());
        state.forEach(t::putBlock);
        return t.node(cfg.layout().regionLevel(), region);
    }

    /** After recovery: PUTs beyond the LCP are gone; the state at the LCP is the new base. */
    void truncate(long lcp) {
        Map<Long, byte[]> s = stateAt(lcp);
        for (Map.Entry<Long, long[]> e : issuedBlocks.headMap(lcp, true).entrySet()) {
            baseRegionSeq[regionOf(e.getValue()[0])] = e.getKey();
        }
        baseBlocks = s;
        baseSeq = lcp;
        issuedBlocks.clear();
        issuedData.clear();
        reset();
    }

    long regionBaseSeq(int r) {
        return baseRegionSeq[r];
    }
}
