package io.salus.core.protocol.replica;

import io.salus.core.protocol.message.Message;

import static org.junit.jupiter.api.Assertions.*;

import io.salus.core.cert.RegionId;
import io.salus.core.crypto.KeyDirectory;
import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.NodeKeys;
import io.salus.core.crypto.SignatureScheme;
import io.salus.core.crypto.Signer;
import io.salus.core.merkle.Hash;
import io.salus.core.merkle.HashAlgorithm;
import io.salus.core.merkle.MerkleProof;
import io.salus.core.merkle.RegionLayout;
import io.salus.core.merkle.VolumeRootRecord;
import io.salus.core.protocol.Membership;
import io.salus.core.protocol.ProtocolConfig;
import io.salus.core.protocol.RrsConfig;
import io.salus.core.protocol.recovery.InMemoryCoordination;
import io.salus.core.protocol.recovery.RegionLogRecovery;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * Review rvw27: a rebuild while serving over a store that keeps one version of its cells (an {@code HRegionStore} of a
 * table created before issue 27: {@code versioned()} false, but {@code holds()} answers from the cells) takes the
 * blocks the store already holds without fetching them (issue 27's Merkle diff), and then writes as its checkpoint
 * through the certified index ({@code whole.<through>}) only the blocks it fetched. The checkpoint file on the disk
 * is not the certified state: its region root differs, so the replica's next restart refuses its own disk, the deltas
 * written on top of it compose a wrong state, and a peer rebuilt from it gets leaves that do not give the certified
 * root.
 */
class Rvw27RebuildTest {
    static final int BLOCK = 16;
    final ProtocolConfig cfg = ProtocolConfig.of("v", BLOCK, HashAlgorithm.SHA256, RegionLayout.ofRegionSize(16, 8))
            .withCheckpointEvery(4);
    final KeyDirectory dir = new KeyDirectory(SignatureScheme.WEAK_CRC32C);
    final Map<NodeId, Signer> signers = new HashMap<>();

    NodeId id(String n) {
        NodeKeys k = NodeKeys.deterministic(SignatureScheme.WEAK_CRC32C, NodeId.of(n), 5);
        dir.register(k);
        signers.put(k.id(), k.signer());
        return k.id();
    }

    /** A store with one version per block, answering {@link #holds} from its cells (as HRegionStore does). */
    static final class OneVersionStore implements RegionStore {
        final InMemoryRegionStore d;
        final ProtocolConfig cfg;

        OneVersionStore(ProtocolConfig cfg, Map<Long, byte[]> initial) {
            this.cfg = cfg;
            this.d = new InMemoryRegionStore(cfg, initial);
        }

        public void apply(long k, byte[] data) {
            d.apply(k, data);
        }

        public byte[] read(long k) {
            return d.read(k);
        }

        public MerkleProof proof(long k) {
            return d.proof(k);
        }

        public Hash root() {
            return d.root();
        }

        public Map<Long, Hash> leafHashes() {
            return d.leafHashes();
        }

        public Map<Long, byte[]> dirty() {
            return d.dirty();
        }

        public void markDurable() {
            d.markDurable();
        }

        public void markDurable(Map<Long, byte[]> w) {
            d.markDurable(w);
        }

        public Hash leaf(long k) {
            return d.leaf(k);
        }

        public void setLeaves(Map<Long, Hash> leaves) {
            // HRegionStore.setLeaves since issue 27: a block whose leaf is the certified one keeps its content
            Map<Long, Hash> changed = new TreeMap<>();
            for (Map.Entry<Long, Hash> e : leaves.entrySet()) {
                if (!d.leaf(e.getKey()).equals(e.getValue())) {
                    changed.put(e.getKey(), e.getValue());
                }
            }
            if (!changed.isEmpty()) {
                d.setLeaves(changed);
            }
        }

        @Override
        public boolean holds(long k, Hash leaf) {
            // HRegionStore.holds: its leaf is the certified one and its cell hashes to it
            return d.leaf(k).equals(leaf) && cfg.hash().leafHash(d.read(k)).equals(leaf);
        }
    }

    static byte[] block(int v) {
        byte[] b = new byte[BLOCK];
        java.util.Arrays.fill(b, (byte) v);
        return b;
    }

    /** A membership of one RRS configuration, whatever region or generation is asked. */
    static Membership only(RrsConfig rrs) {
        return new Membership() {
            public RrsConfig current(int region) {
                return rrs;
            }

            public RrsConfig config(RegionId region, long generation) {
                return rrs;
            }
        };
    }

    @Test
    void aRebuildOverAStoreThatHoldsTheBlocksWritesTheCertifiedStateAsItsCheckpoint() {
        NodeId me = id("rs0a");
        NodeId clientId = id("client");
        List<NodeId> reps = List.of(me, id("rs0b"), id("rs0c"));
        RrsConfig rrs = new RrsConfig(new RegionId("v", 0), 0, reps, List.of(id("dn0a"), id("dn0b"), id("dn0c")),
                List.of(id("w0a"), id("w0b")));
        Membership membership = only(rrs);
        // the certified state through index 7: blocks 0..3 written; this replica's cells still hold all of them (its
        // Salus disk was lost or quarantined, its HBase region is intact)
        Map<Long, byte[]> certified = new TreeMap<>();
        for (long k = 0; k < 4; k++) {
            certified.put(k, block((int) k + 1));
        }
        OneVersionStore store = new OneVersionStore(cfg, certified);
        Map<Long, Hash> leaves = new TreeMap<>(store.leafHashes());
        Hash certifiedRoot = store.root();
        InMemoryReplicaDisk disk = new InMemoryReplicaDisk();
        long through = 7;
        VolumeRootRecord rec = new VolumeRootRecord(RegionLogRecovery.emptyVolumeRoot(cfg), 8);
        RegionSnapshot base = new RegionSnapshot(0, through, 8, Map.of(), rec);
        store.setLeaves(leaves); // installMetadata's step
        java.util.List<java.util.Map.Entry<NodeId, Message>> sent = new java.util.ArrayList<>();
        RegionReplica r = new RegionReplica(cfg, rrs, me, clientId, signers.get(me), dir, membership,
                (to, m) -> sent.add(java.util.Map.entry(to, m)), disk, new InMemoryCoordination(), ReplicaHooks.NONE,
                base, store, leaves);
        r.rebuildRate(10_000);
        assertTrue(r.rebuilding(), "rebuilt while serving");
        // the peers answer its block requests with the certified blocks (a store without versions fetches them all:
        // its checkpoint file carries them; before the fix it took the held ones without fetching and left them out)
        long end = System.currentTimeMillis() + 10_000;
        while (r.rebuilding() && System.currentTimeMillis() < end) {
            r.tick();
            for (java.util.Map.Entry<NodeId, Message> e : new java.util.ArrayList<>(sent)) {
                if (e.getValue() instanceof Message.RebuildRequest q && !q.blocks().isEmpty()) {
                    List<Message.StateBlock> bs = new java.util.ArrayList<>();
                    for (long k : q.blocks()) {
                        bs.add(new Message.StateBlock(k, certified.get(k)));
                    }
                    r.receive(e.getKey(), new Message.RebuildBlocks(0, 0, through, bs));
                }
            }
            sent.clear();
        }
        assertFalse(r.rebuilding(), "the rebuild finished");
        RegionSnapshot s = disk.readSnapshot(0, through);
        assertNotNull(s, "the checkpoint through the certified index was written");
        assertEquals(certifiedRoot, s.regionRoot(cfg.hash(), cfg.blockSize(), cfg.layout()),
                "the disk's checkpoint through " + through + " is the certified state (it carries " + s.blocks().size()
                        + " of its " + certified.size() + " blocks)");
    }
}
