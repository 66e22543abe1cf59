package io.salus.core.protocol.client;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.salus.core.merkle.Hash;
import io.salus.core.merkle.HashAlgorithm;
import io.salus.core.merkle.RegionLayout;
import io.salus.core.protocol.ProtocolConfig;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * Review of 2026-12-02: a mount answer's leaf hashes are not signed. In a last region the volume fills only partly
 * (1000 blocks, 256 per region: region 3 holds 232), a faulty replica that adds block 232 with the empty leaf hash
 * still hashes to the signed region root; the mount took its leaves (only keys at or above 256 were refused) and the
 * client's install then refused block 232, so every mount failed while that replica answered first.
 */
class ReplicaMountLeafRangeTest {
    final ProtocolConfig cfg = ProtocolConfig.of("v", 16, HashAlgorithm.SHA256, RegionLayout.ofRegionSize(1000, 256));

    @Test
    void aLeafPastTheVolumesEndInAPartlyFilledLastRegionIsOutOfRange() {
        Hash empty = cfg.hash().leafHash(new byte[cfg.blockSize()]);
        TreeMap<Long, Hash> honest = new TreeMap<>();
        honest.put(0L, cfg.hash().leafHash(new byte[cfg.blockSize()]));
        honest.put(231L, empty);
        assertTrue(ReplicaMount.leavesInRegion(cfg, 3, honest), "blocks 0..231 of region 3 are the volume's");
        TreeMap<Long, Hash> padded = new TreeMap<>(honest);
        padded.put(232L, empty);
        assertFalse(ReplicaMount.leavesInRegion(cfg, 3, padded), "block 232 of region 3 is past the volume's end");
        assertTrue(ReplicaMount.leavesInRegion(cfg, 0, padded), "region 0 is full: 232 is one of its blocks");
        TreeMap<Long, Hash> far = new TreeMap<>();
        far.put(256L, empty);
        assertFalse(ReplicaMount.leavesInRegion(cfg, 0, far));
        TreeMap<Long, Hash> negative = new TreeMap<>();
        negative.put(-1L, empty);
        assertFalse(ReplicaMount.leavesInRegion(cfg, 0, negative));
        assertTrue(ReplicaMount.leavesInRegion(cfg, 3, new TreeMap<>()));
    }
}
