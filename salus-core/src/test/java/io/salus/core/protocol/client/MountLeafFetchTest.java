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
import org.junit.jupiter.api.io.TempDir;

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

    // ---- review findings (tests that fail on the code under review) ----

    @TempDir
    java.nio.file.Path tmp;

    static final Hash ZERO = Hash.of(new byte[Hash.LENGTH]);

    /** Offers a chunk the way the HBase client runner does: an exception out of the client is logged, not rethrown. */
    static boolean offerSwallowing(MountLeafFetch f, NodeId from, Message.LeafChunk c, long now) {
        try {
            f.offer(from, c, now);
            return false;
        } catch (RuntimeException e) {
            return true;
        }
    }

    /**
     * A faulty first source answers the region's only range with an all-zero leaf hash. The client's production tree
     * store ({@code MappedNodeStore}) refuses to store it: {@code setLeaves} throws out of {@code offer} after the range
     * was taken off {@code asked}. Nothing is in flight, nextFrom is at the end, the silence rule needs a range in
     * flight: the region is never asked again and never verified (the mount waits for ever), though two honest
     * replicas answer everything they are asked.
     */
    @Test
    void anAllZeroLeafFromTheFirstSourceDoesNotStallTheRegionForEver() {
        ProtocolConfig small = ProtocolConfig.of("v", 16, HashAlgorithm.SHA256, RegionLayout.ofRegionSize(32, 16));
        SortedMap<Long, Hash> honest = new TreeMap<>(Map.of(1L, small.hash().leafHash(new byte[] {1})));
        Hash root = small.layout().newRegionTree(small.hash(), 16, new InMemoryNodeStore()).setLeaves(0, honest);
        MountLeafFetch f = new MountLeafFetch(small, 7, new MerkleTree(small.hash(), 16, 32,
                new io.salus.core.merkle.MappedNodeStore(tmp, 32)));
        f.want(0, root, reps, 0);
        List<Map.Entry<NodeId, Message>> first = f.takeSends(0, 100);
        assertEquals(1, first.size());
        Message.LeafQuery q = (Message.LeafQuery) first.get(0).getValue();
        SortedMap<Long, Hash> poison = new TreeMap<>(Map.of(3L, ZERO));
        boolean threw = offerSwallowing(f, reps.get(0), new Message.LeafChunk(7, "v", 0, 0, root, q.fromBlock(),
                q.toBlock(), poison), 1);
        for (long t = 100; t <= 10_000 && !f.verified(0, root); t += 100) {
            for (Map.Entry<NodeId, Message> e : f.takeSends(t, 100)) {
                Message.LeafQuery qq = (Message.LeafQuery) e.getValue();
                f.offer(e.getKey(), new Message.LeafChunk(7, "v", 0, 0, root, qq.fromBlock(), qq.toBlock(),
                        new TreeMap<>(honest.subMap(qq.fromBlock(), qq.toBlock()))), t);
            }
        }
        assertTrue(f.verified(0, root), "region 0 never verified after one all-zero leaf (offer threw: " + threw
                + "; replicas asked: " + f.asked() + ", refusal: " + f.refusal() + ")");
    }

    /**
     * Same fault in a region of two ranges: the chunk {5: forged, 6: all-zero} leaves leaf 5 written at level 0 with
     * its ancestors not recomputed (setLeaves threw before the level loop). clearRegion walks only non-empty nodes, so
     * it never finds it; the next replica's leaves (block 4 unwritten) build the signed root, the region verifies and
     * the mount would install a tree with a forged leaf hidden under an empty parent. The client's next write to
     * block 4 then hashes the forged leaf into its volume root.
     */
    @Test
    void aLeafLeftBehindByAFailedChunkIsNotInTheVerifiedTree() {
        long region = 2 * Message.LeafQuery.MAX_BLOCKS;
        ProtocolConfig two = ProtocolConfig.of("v", 16, HashAlgorithm.SHA256, RegionLayout.ofRegionSize(2 * region,
                region));
        SortedMap<Long, Hash> honest = new TreeMap<>();
        honest.put(0L, two.hash().leafHash(new byte[] {1}));
        honest.put(20_000L, two.hash().leafHash(new byte[] {2}));
        Hash root = two.layout().newRegionTree(two.hash(), 16, new InMemoryNodeStore()).setLeaves(0, honest);
        MountLeafFetch f = new MountLeafFetch(two, 7, new MerkleTree(two.hash(), 16, 2 * region,
                new io.salus.core.merkle.MappedNodeStore(tmp, 2 * region)));
        f.want(0, root, reps, 0); // region 0: reps[0] first, the faulty one
        Hash forged = two.hash().leafHash(new byte[] {66});
        for (long t = 0; t <= 2_000 && !f.verified(0, root); t += 100) {
            for (Map.Entry<NodeId, Message> e : f.takeSends(t, 100)) {
                Message.LeafQuery q = (Message.LeafQuery) e.getValue();
                SortedMap<Long, Hash> l = new TreeMap<>(honest.subMap(q.fromBlock(), q.toBlock()));
                if (e.getKey().equals(reps.get(0)) && q.fromBlock() == 0) {
                    l = new TreeMap<>(Map.of(5L, forged, 6L, ZERO));
                }
                offerSwallowing(f, e.getKey(), new Message.LeafChunk(7, "v", 0, 0, root, q.fromBlock(), q.toBlock(),
                        l), t);
            }
        }
        assertTrue(f.verified(0, root), "verified from the honest replica's leaves");
        MerkleTree expected = new MerkleTree(two.hash(), 16, 2 * region);
        expected.setLeaves(0, honest);
        assertEquals(expected.root(), f.tree().root(), "the root check passes");
        Hash x = two.hash().leafHash(new byte[] {4});
        assertEquals(expected.setLeaf(4, x), f.tree().setLeaf(4, x),
                "a write of block 4 after the mount gives the client's tree another root (hidden leaf 5 = "
                        + f.tree().node(0, 5) + ")");
    }

    /**
     * LeafChunks are unsigned and the client takes the sender from the reply envelope (HBaseVolumeClientRunner.onReply;
     * ReplicaLink does not tie a reply to the server polled). One faulty server that knows the mount's nonce (every
     * replica gets the fenced MountQuery) answers range 0 "from" each replica of a region in turn with another root: the
     * mismatch is sticky, all three honest-in-fact replicas are marked, and the mount is refused blaming the region's
     * stored state. Before this commit the leaves came inside a MountState only the replica itself could sign.
     */
    @Test
    void chunksInTheNameOfHonestReplicasDoNotRefuseTheMount() {
        SortedMap<Long, Hash> honest = leaves(1);
        Hash root = regionRoot(honest);
        Hash other = regionRoot(leaves(2));
        MountLeafFetch f = new MountLeafFetch(cfg, 7, volumeTree());
        f.want(0, root, reps, 0);
        for (long t = 0; t < 5 && f.refusal() == null; t++) {
            for (Map.Entry<NodeId, Message> e : f.takeSends(t, 1_000)) {
                Message.LeafQuery q = (Message.LeafQuery) e.getValue();
                // forged by a faulty server, arriving before the real replica's answer
                f.offer(e.getKey(), new Message.LeafChunk(7, "v", 0, 0, other, q.fromBlock(), q.toBlock(),
                        new TreeMap<>()), t);
            }
        }
        assertNull(f.refusal(), "one forging server refused a mount whose three replicas are correct");
    }
}
