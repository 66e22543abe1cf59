package io.salus.core.protocol.replica;

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
import io.salus.core.protocol.message.Message;
import io.salus.core.protocol.recovery.InMemoryCoordination;
import io.salus.core.protocol.recovery.RegionLogRecovery;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Review rv38 (its demonstration, made a test): RegionReplica.onRebuildBlocks took a fetched block out of the rebuild's
 * missing set BEFORE store.apply. One apply that failed (an HBase put refused once: RegionTooBusyException, a status
 * other than SUCCESS) lost that block for the rebuild: the rebuild finished, the tree held the certified leaf (root =
 * certified root, so the replica signed checkpoints with its peers) but the store never got the block's content. Now
 * the failure is a {@link RegionReplica.StoreWriteFailed} and the block stays missing.
 */
class RebuildStoreFailureTest {
    static final int BLOCK = 16;

    @org.junit.jupiter.api.Test
    void aRefusedRebuildWriteLeavesTheBlockMissingAndStopsTheReplica() {
        ProtocolConfig cfg = ProtocolConfig.of("v", BLOCK, HashAlgorithm.SHA256, RegionLayout.ofRegionSize(16, 8))
                .withCheckpointEvery(4);
        KeyDirectory dir = new KeyDirectory(SignatureScheme.WEAK_CRC32C);
        Map<NodeId, Signer> signers = new HashMap<>();
        java.util.function.Function<String, NodeId> id = n -> {
            NodeKeys k = NodeKeys.deterministic(SignatureScheme.WEAK_CRC32C, NodeId.of(n), 5);
            dir.register(k);
            signers.put(k.id(), k.signer());
            return k.id();
        };
        NodeId me = id.apply("rs0a");
        NodeId clientId = id.apply("client");
        List<NodeId> reps = List.of(me, id.apply("rs0b"), id.apply("rs0c"));
        RrsConfig rrs = new RrsConfig(new RegionId("v", 0), 0, reps,
                List.of(id.apply("dn0a"), id.apply("dn0b"), id.apply("dn0c")), List.of(id.apply("w0a"), id.apply("w0b")));
        Membership membership = Rvw27RebuildTest.only(rrs);
        Map<Long, byte[]> certified = new TreeMap<>();
        for (long k = 0; k < 4; k++) {
            byte[] b = new byte[BLOCK];
            java.util.Arrays.fill(b, (byte) (k + 1));
            certified.put(k, b);
        }
        Map<Long, Hash> leaves = new TreeMap<>(new InMemoryRegionStore(cfg, certified).leafHashes());
        Hash certifiedRoot = new InMemoryRegionStore(cfg, certified).root();
        java.util.concurrent.atomic.AtomicBoolean failed = new java.util.concurrent.atomic.AtomicBoolean();
        InMemoryRegionStore cells = new InMemoryRegionStore(cfg, Map.of());
        RegionStore store = flakyVersionedStore(cfg, cells, failed);
        store.setLeaves(leaves); // installMetadata's step: the tree without the blocks (the cells were lost)
        InMemoryReplicaDisk disk = new InMemoryReplicaDisk();
        long through = 7;
        VolumeRootRecord rec = new VolumeRootRecord(RegionLogRecovery.emptyVolumeRoot(cfg), 8);
        RegionSnapshot base = new RegionSnapshot(0, through, 8, Map.of(), rec);
        List<Map.Entry<NodeId, Message>> sent = new ArrayList<>();
        List<RuntimeException> thrown = new ArrayList<>();
        RegionReplica r = new RegionReplica(cfg, rrs, me, clientId, signers.get(me), dir, membership,
                (to, m) -> sent.add(Map.entry(to, m)), disk, new InMemoryCoordination(), ReplicaHooks.NONE,
                base, store, leaves);
        r.rebuildRate(10_000);
        long end = System.currentTimeMillis() + 10_000;
        while (r.rebuilding() && System.currentTimeMillis() < end) {
            r.tick();
            for (Map.Entry<NodeId, Message> e : new ArrayList<>(sent)) {
                if (e.getValue() instanceof Message.RebuildRequest q && !q.blocks().isEmpty()) {
                    List<Message.StateBlock> bs = new ArrayList<>();
                    for (long k : q.blocks()) {
                        bs.add(new Message.StateBlock(k, certified.get(k)));
                    }
                    try {
                        r.receive(e.getKey(), new Message.RebuildBlocks(0, 0, through, bs));
                    } catch (RegionReplica.StoreWriteFailed ex) {
                        thrown.add(ex); // ReplicaHost reports it (the region reopens)
                    }
                }
            }
            sent.clear();
        }
        boolean hole = !cfg.hash().leafHash(store.read(2)).equals(leaves.get(2L));
        org.junit.jupiter.api.Assertions.assertTrue(failed.get(), "the fault acted: block 2's first write was refused");
        org.junit.jupiter.api.Assertions.assertEquals(1, thrown.size(), "the refused write is a StoreWriteFailed: "
                + thrown);
        org.junit.jupiter.api.Assertions.assertFalse(!r.rebuilding() && hole, "the rebuild finished without block 2's"
                + " content (rebuilding=" + r.rebuilding() + ", counters " + r.rebuildCounters() + ")");
    }

    /**
     * A versioned store (as HRegionStore since issue 27) over an in-memory one whose first apply of block 2 is refused
     * ({@code failed} set then); {@code holds} answers from the cells.
     */
    static RegionStore flakyVersionedStore(ProtocolConfig cfg, InMemoryRegionStore d,
                                           java.util.concurrent.atomic.AtomicBoolean failed) {
        java.util.concurrent.atomic.AtomicLong version = new java.util.concurrent.atomic.AtomicLong();
        return (RegionStore) java.lang.reflect.Proxy.newProxyInstance(RegionStore.class.getClassLoader(),
                new Class<?>[] {RegionStore.class}, (proxy, m, args) -> {
                    switch (m.getName()) {
                        case "apply" -> {
                            if ((long) args[0] == 2 && failed.compareAndSet(false, true)) {
                                throw new java.io.UncheckedIOException("cannot write",
                                        new java.io.IOException("RegionTooBusyException"));
                            }
                            version.incrementAndGet();
                        }
                        case "holds" -> {
                            Hash leaf = (Hash) args[1];
                            return d.leaf((long) args[0]).equals(leaf)
                                    && cfg.hash().leafHash(d.read((long) args[0])).equals(leaf);
                        }
                        case "versioned" -> {
                            return true;
                        }
                        case "version" -> {
                            return version.get();
                        }
                        case "makeDurableThrough" -> {
                            return null;
                        }
                        default -> {
                        }
                    }
                    try {
                        return m.invoke(d, args);
                    } catch (java.lang.reflect.InvocationTargetException t) {
                        throw t.getCause();
                    }
                });
    }
}
