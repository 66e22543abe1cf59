package io.salus.core.protocol.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.salus.core.crypto.NodeId;
import io.salus.core.merkle.Hash;
import io.salus.core.merkle.HashAlgorithm;
import io.salus.core.merkle.InMemoryNodeStore;
import io.salus.core.merkle.MerkleTree;
import io.salus.core.merkle.RegionLayout;
import io.salus.core.protocol.ProtocolConfig;
import io.salus.core.protocol.message.Message;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * The mount's leaf fetch (issue 27) on regions wider than one leaf range: a region's leaves arrive in several
 * {@link Message.LeafChunk}s, at most {@link MountLeafFetch#WINDOW} ranges in flight, and a replica whose leaves do
 * not build the signed root leaves nothing behind in the new tree when the next replica's leaves are taken.
 */
class MountLeafFetchTest {
    static final long REGION = 4 * Message.LeafQuery.MAX_BLOCKS; // four ranges per region
    final ProtocolConfig cfg = ProtocolConfig.of("v", 16, HashAlgorithm.SHA256,
            RegionLayout.ofRegionSize(2 * REGION, REGION));
    final List<NodeId> reps = List.of(NodeId.of("a"), NodeId.of("b"), NodeId.of("c"));

    /** Leaves of region blocks 0, 20,000, 40,000, ... (local), each the hash of its index and {@code salt}. */
    SortedMap<Long, Hash> leaves(int salt) {
        SortedMap<Long, Hash> m = new TreeMap<>();
        for (long b = 0; b < REGION; b += 20_000) {
            m.put(b, cfg.hash().leafHash(new byte[] {(byte) b, (byte) (b >> 8), (byte) (b >> 16), (byte) salt}));
        }
        m.put(REGION - 1, cfg.hash().leafHash(new byte[] {9, (byte) salt}));
        return m;
    }

    Hash regionRoot(SortedMap<Long, Hash> leaves) {
        return cfg.layout().newRegionTree(cfg.hash(), cfg.blockSize(), new InMemoryNodeStore()).setLeaves(0, leaves);
    }

    MerkleTree volumeTree() {
        return new MerkleTree(cfg.hash(), cfg.blockSize(), cfg.layout().volumeBlocks());
    }

    /** Answers every query in {@code sends} from the replica's {@code held} leaves; returns the chunks answered. */
    int answer(MountLeafFetch f, List<Map.Entry<NodeId, Message>> sends, Map<NodeId, SortedMap<Long, Hash>> held,
               Hash root, long now) {
        int n = 0;
        for (Map.Entry<NodeId, Message> e : sends) {
            Message.LeafQuery q = (Message.LeafQuery) e.getValue();
            assertTrue(q.toBlock() - q.fromBlock() <= Message.LeafQuery.MAX_BLOCKS, "a range a replica answers");
            SortedMap<Long, Hash> mine = held.get(e.getKey());
            f.offer(e.getKey(), new Message.LeafChunk(q.nonce(), "v", q.region(), 0, root, q.fromBlock(), q.toBlock(),
                    new TreeMap<>(mine.subMap(q.fromBlock(), q.toBlock()))), now);
            n++;
        }
        return n;
    }

    @Test
    void aRegionOfSeveralRangesIsBuiltRangeByRangeWithinTheWindow() {
        SortedMap<Long, Hash> honest = leaves(1);
        Hash root = regionRoot(honest);
        MountLeafFetch f = new MountLeafFetch(cfg, 7, volumeTree());
        f.want(1, root, reps, 0);
        int chunks = 0;
        for (int round = 0; round < 10 && !f.verified(1, root); round++) {
            List<Map.Entry<NodeId, Message>> sends = f.takeSends(round, 1_000);
            assertTrue(sends.size() <= MountLeafFetch.WINDOW, "at most the window in flight: " + sends.size());
            chunks += answer(f, sends, Map.of(reps.get(0), honest, reps.get(1), honest, reps.get(2), honest), root, round);
        }
        assertTrue(f.verified(1, root));
        assertEquals(4, chunks, "one query per range, none asked twice");
        MerkleTree expected = volumeTree();
        expected.setLeaves(cfg.layout().firstBlock(1), honest);
        assertEquals(expected.root(), f.tree().root());
        assertNull(f.refusal());
    }

    @Test
    void aLyingReplicasLeavesLeaveTheTreeBeforeTheNextReplicasAreTaken() {
        SortedMap<Long, Hash> honest = leaves(1);
        SortedMap<Long, Hash> lies = leaves(2); // other leaves, other blocks' hashes: another root
        lies.put(12_345L, cfg.hash().leafHash(new byte[] {1})); // and a block the honest region never wrote
        Hash root = regionRoot(honest);
        MountLeafFetch f = new MountLeafFetch(cfg, 7, volumeTree());
        f.want(0, root, reps, 0); // region 0 asks replica 0 first: the liar
        Map<NodeId, SortedMap<Long, Hash>> held = Map.of(reps.get(0), lies, reps.get(1), honest, reps.get(2), honest);
        for (int round = 0; round < 20 && !f.verified(0, root); round++) {
            answer(f, f.takeSends(round, 1_000), held, root, round);
        }
        assertTrue(f.verified(0, root), "built from the next replica's leaves");
        MerkleTree expected = volumeTree();
        expected.setLeaves(0, honest);
        assertEquals(expected.root(), f.tree().root(), "nothing of the liar's leaves is left in the tree");
    }

    @Test
    void threeReplicasWhoseLeavesDoNotBuildTheRootRefuse() {
        Hash root = regionRoot(leaves(1));
        MountLeafFetch f = new MountLeafFetch(cfg, 7, volumeTree());
        f.want(0, root, reps, 0);
        Map<NodeId, SortedMap<Long, Hash>> held = Map.of(reps.get(0), leaves(2), reps.get(1), leaves(3), reps.get(2),
                leaves(4));
        for (int round = 0; round < 30 && f.refusal() == null; round++) {
            answer(f, f.takeSends(round, 1_000), held, root, round);
        }
        assertNotNull(f.refusal());
        assertTrue(f.refusal().startsWith("region 0: no replica sent leaf hashes"), f.refusal());
        assertTrue(f.takeSends(100, 1_000).isEmpty(), "a refused region is not asked again");
    }

    @Test
    void aSilentReplicaIsAskedAgainThenPassedOver() {
        SortedMap<Long, Hash> honest = leaves(1);
        Hash root = regionRoot(honest);
        MountLeafFetch f = new MountLeafFetch(cfg, 7, volumeTree());
        f.want(0, root, reps, 0);
        List<Map.Entry<NodeId, Message>> first = f.takeSends(0, 100);
        assertEquals(4, first.size());
        assertTrue(first.stream().allMatch(e -> e.getKey().equals(reps.get(0))));
        List<Map.Entry<NodeId, Message>> again = f.takeSends(100, 100);
        assertEquals(4, again.size(), "asked again after one period");
        assertTrue(again.stream().allMatch(e -> e.getKey().equals(reps.get(0))));
        List<Map.Entry<NodeId, Message>> next = f.takeSends(100 * MountLeafFetch.SILENT_ROUNDS, 100);
        assertFalse(next.isEmpty());
        assertTrue(next.stream().allMatch(e -> e.getKey().equals(reps.get(1))), "the next replica after silence");
        answer(f, next, Map.of(reps.get(1), honest), root, 500);
        assertTrue(f.verified(0, root));
        assertNull(f.refusal(), "silence is not a lie");
    }
}
