package io.salus.core.merkle;

import static org.junit.jupiter.api.Assertions.*;

import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.api.Test;

class MerkleTreeTest {
    static final int BS = 64;

    static byte[] block(Random r) {
        byte[] b = new byte[BS];
        r.nextBytes(b);
        return b;
    }

    @ParameterizedTest
    @EnumSource(HashAlgorithm.class)
    void emptyTreeRootIsDefinedAndMatchesExplicitZeros(HashAlgorithm alg) {
        MerkleTree sparse = new MerkleTree(alg, BS, 1000);
        MerkleTree dense = new MerkleTree(alg, BS, 1000);
        for (int i = 0; i < 1000; i++) {
            dense.setLeaf(i, alg.leafHash(new byte[BS]));
        }
        assertEquals(sparse.root(), dense.root());
        assertEquals(0, ((InMemoryNodeStore) dense.store()).size(), "zero blocks must not use storage");
        assertEquals(10, sparse.depth());
    }

    @Test
    void algorithmsDiffer() {
        assertNotEquals(HashAlgorithm.SHA256.hash(new byte[3]), HashAlgorithm.BLAKE3.hash(new byte[3]));
        // known-answer SHA-256 of "abc"
        assertEquals("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
                HashAlgorithm.SHA256.hash("abc".getBytes()).toHex());
        // known-answer BLAKE3 of "" (official test vector)
        assertEquals("af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262",
                HashAlgorithm.BLAKE3.hash(new byte[0]).toHex());
        assertNotEquals(HashAlgorithm.SHA256.leafHash(new byte[64]),
                HashAlgorithm.SHA256.nodeHash(Hash.of(new byte[32]), Hash.of(new byte[32])));
    }

    @ParameterizedTest
    @EnumSource(HashAlgorithm.class)
    void proofsVerifyAndDetectTampering(HashAlgorithm alg) {
        Random r = new Random(7);
        MerkleTree t = new MerkleTree(alg, BS, 300);
        Map<Long, byte[]> data = new HashMap<>();
        for (int i = 0; i < 100; i++) {
            long b = r.nextInt(300);
            byte[] d = block(r);
            data.put(b, d);
            t.putBlock(b, d);
        }
        for (Map.Entry<Long, byte[]> e : data.entrySet()) {
            MerkleProof p = t.proof(e.getKey(), t.depth());
            assertTrue(t.verifyBlock(e.getKey(), e.getValue(), p));
            byte[] bad = e.getValue().clone();
            bad[3] ^= 1;
            assertFalse(t.verifyBlock(e.getKey(), bad, p));
            assertFalse(t.verifyBlock(e.getKey() ^ 1, e.getValue(), p));
            // partial proof against a cached level
            MerkleProof p4 = t.proof(e.getKey(), 4);
            assertEquals(4, p4.siblings().size());
            assertTrue(t.verify(p4));
        }
        // unwritten block proves as zeros
        long unwritten = 0;
        while (data.containsKey(unwritten)) {
            unwritten++;
        }
        assertTrue(t.verifyBlock(unwritten, new byte[BS], t.proof(unwritten, t.depth())));
    }

    @ParameterizedTest
    @EnumSource(HashAlgorithm.class)
    void regionTreesRebuildTheVolumeRoot(HashAlgorithm alg) {
        Random r = new Random(11);
        long blocks = 200; // not a multiple of the region size: last region is partial
        RegionLayout layout = RegionLayout.ofRegionSize(blocks, 32);
        MerkleTree volume = new MerkleTree(alg, BS, blocks);
        Map<Long, MerkleTree> regions = new HashMap<>();
        for (int i = 0; i < 150; i++) {
            long b = r.nextInt((int) blocks);
            byte[] d = block(r);
            volume.putBlock(b, d);
            regions.computeIfAbsent(layout.regionOf(b), k -> layout.newRegionTree(alg, BS, new InMemoryNodeStore()))
                    .putBlock(layout.localIndex(b), d);
        }
        Map<Long, Hash> roots = new HashMap<>();
        regions.forEach((k, v) -> roots.put(k, v.root()));
        for (Map.Entry<Long, MerkleTree> e : regions.entrySet()) {
            assertEquals(volume.node(layout.regionLevel(), e.getKey()), e.getValue().root());
        }
        assertEquals(volume.root(), MerkleTree.rootFromRegionRoots(alg, BS, blocks, layout.regionLevel(), roots));
        roots.put(0L, alg.hash(new byte[1]));
        assertNotEquals(volume.root(), MerkleTree.rootFromRegionRoots(alg, BS, blocks, layout.regionLevel(), roots));
        assertEquals(7, layout.regionCount());
    }

    @Test
    void clientWithTopLevelsOnlyAppliesProvenUpdates() {
        HashAlgorithm alg = HashAlgorithm.SHA256;
        Random r = new Random(3);
        RegionLayout layout = RegionLayout.ofRegionSize(256, 16);
        MerkleTree full = new MerkleTree(alg, BS, 256);
        InMemoryNodeStore top = new InMemoryNodeStore();
        InMemoryNodeStore discarded = new InMemoryNodeStore();
        MerkleTree client = new MerkleTree(alg, BS, 256,
                new TieredNodeStore(layout.regionLevel(), top, discarded));
        for (int i = 0; i < 60; i++) {
            long b = r.nextInt(256);
            byte[] d = block(r);
            MerkleProof p = full.proof(b, layout.regionLevel()); // served by the region server
            full.putBlock(b, d);
            client.applyProvenUpdate(p, alg.leafHash(d));
            assertEquals(full.root(), client.root());
        }
        assertEquals(0, discarded.size(), "client must not store levels below the region level");
        long b = 5;
        MerkleProof stale = full.proof(b, layout.regionLevel());
        full.putBlock(b, block(r));
        assertThrows(IllegalArgumentException.class, () -> client.applyProvenUpdate(
                new MerkleProof(b, alg.leafHash(new byte[BS]), stale.siblings()).atBlock(b).equals(stale)
                        ? stale : new MerkleProof(b, alg.hash(new byte[2]), stale.siblings()),
                alg.leafHash(new byte[BS])));
    }

    @Test
    void volumeRootRecordEncodingAndOrdering() {
        VolumeRootRecord a = new VolumeRootRecord(HashAlgorithm.SHA256.hash(new byte[1]), 5);
        VolumeRootRecord b = new VolumeRootRecord(HashAlgorithm.SHA256.hash(new byte[2]), 9);
        assertEquals(a, VolumeRootRecord.decode(a.encode()));
        assertEquals(b, a.newer(b));
        assertEquals(b, b.newer(a));
        assertThrows(IllegalArgumentException.class, () -> VolumeRootRecord.decode(new byte[39]));
    }

    @Test
    void badArgumentsNameTheProblem() {
        MerkleTree t = new MerkleTree(HashAlgorithm.SHA256, BS, 10);
        IndexOutOfBoundsException e = assertThrows(IndexOutOfBoundsException.class, () -> t.setLeaf(10, t.leaf(0)));
        assertTrue(e.getMessage().contains("block 10"));
        assertThrows(IllegalArgumentException.class, () -> t.putBlock(1, new byte[3]));
        assertThrows(IllegalArgumentException.class, () -> RegionLayout.ofRegionSize(10, 3));
    }

    /** A mount's batch install (each node hashed once) builds the tree leaf-by-leaf setting builds, nodes included. */
    @ParameterizedTest
    @EnumSource(HashAlgorithm.class)
    void setLeavesAtAnOffsetBuildsWhatSettingEachLeafBuilds(HashAlgorithm alg) {
        Random rnd = new Random(27);
        long leaves = 1000; // not a power of two: the last region is partial
        MerkleTree one = new MerkleTree(alg, BS, leaves);
        MerkleTree batch = new MerkleTree(alg, BS, leaves);
        long offset = 256;
        Map<Long, Hash> set = new HashMap<>();
        for (int i = 0; i < 300; i++) {
            long k = rnd.nextInt((int) (leaves - offset));
            byte[] d = new byte[BS];
            rnd.nextBytes(d);
            // some leaves set to the empty leaf (a block written with zeros): stored as unwritten in both
            Hash h = i % 10 == 0 ? one.emptyHash(0) : alg.leafHash(d);
            set.put(k, h);
        }
        set.forEach((k, h) -> one.setLeaf(offset + k, h));
        assertEquals(one.root(), batch.setLeaves(offset, set));
        for (int level = 0; level <= one.depth(); level++) {
            for (long i = 0; i < (leaves >>> level) + 1; i++) {
                assertEquals(one.node(level, i), batch.node(level, i), "node " + level + "/" + i);
            }
        }
        assertEquals(((InMemoryNodeStore) one.store()).size(), ((InMemoryNodeStore) batch.store()).size());
        assertThrows(IndexOutOfBoundsException.class, () -> batch.setLeaves(offset, Map.of(leaves - offset, one.root())));
    }
}
