package io.salus.core.protocol;

import static org.junit.jupiter.api.Assertions.*;

import io.salus.core.cert.CertType;
import io.salus.core.cert.Certificate;
import io.salus.core.cert.RegionId;
import io.salus.core.cert.Statement;
import io.salus.core.crypto.KeyDirectory;
import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.NodeKeys;
import io.salus.core.crypto.SignatureScheme;
import io.salus.core.merkle.Hash;
import io.salus.core.merkle.HashAlgorithm;
import io.salus.core.merkle.MerkleTree;
import io.salus.core.merkle.RegionLayout;
import io.salus.core.protocol.message.Put;
import io.salus.core.protocol.message.SubBatch;
import io.salus.core.protocol.recovery.Coordination;
import io.salus.core.protocol.recovery.RecoveryException;
import io.salus.core.protocol.recovery.RegionLogRecovery;
import io.salus.core.protocol.recovery.VolumeRecovery;
import io.salus.core.protocol.replica.InMemoryReplicaDisk;
import io.salus.core.protocol.replica.RegionSnapshot;
import io.salus.core.protocol.witness.InMemoryCertificateStore;
import io.salus.core.protocol.witness.WitnessLog;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/** recoverRegionLog and identifyLCP against hand-built stores (no simulator). */
class RecoveryTest {
    final ProtocolConfig cfg = ProtocolConfig.of("v", 16, HashAlgorithm.SHA256, RegionLayout.ofRegionSize(16, 8));
    final KeyDirectory dir = new KeyDirectory(SignatureScheme.WEAK_CRC32C);
    final NodeKeys client = key("client");
    final List<NodeKeys> rs = List.of(key("rs0"), key("rs1"), key("rs2"));
    final List<NodeKeys> holders = List.of(key("dn0"), key("dn1"), key("dn2"), key("w0"), key("w1"));
    final RrsConfig old = new RrsConfig(new RegionId("v", 0), 0, ids(rs), ids(holders.subList(0, 3)),
            ids(holders.subList(3, 5)));
    final List<InMemoryCertificateStore> stores = new ArrayList<>();
    final List<WitnessLog> logs = new ArrayList<>();
    final List<InMemoryReplicaDisk> disks = List.of(new InMemoryReplicaDisk(), new InMemoryReplicaDisk(),
            new InMemoryReplicaDisk());

    NodeKeys key(String n) {
        NodeKeys k = NodeKeys.deterministic(SignatureScheme.WEAK_CRC32C, NodeId.of(n), 1);
        dir.register(k);
        return k;
    }

    static List<NodeId> ids(List<NodeKeys> ks) {
        return ks.stream().map(NodeKeys::id).toList();
    }

    RecoveryTest() {
        for (NodeKeys h : holders) {
            InMemoryCertificateStore s = new InMemoryCertificateStore();
            stores.add(s);
            logs.add(new WitnessLog(h.signer(), dir, s, (r, g) -> old.replicaSet()));
        }
        // three entries: seqs 1, 2..3, 5 (prevNum chain 0 -> 1 -> 3)
        write(0, sub(1, new long[] {1}, 0));
        write(1, sub(2, new long[] {2, 3}, 1));
        write(2, sub(3, new long[] {5}, 3));
    }

    SubBatch sub(long batch, long[] seqs, long prev) {
        List<Put> puts = new ArrayList<>();
        for (long s : seqs) {
            byte[] d = new byte[16];
            d[0] = (byte) s;
            puts.add(new Put(s, prev, s % 8, d, cfg.hash().leafHash(d), cfg.hash().hash(new byte[] {(byte) s})));
            prev = s;
        }
        SubBatch sb = new SubBatch("v", 0, batch, 0, puts, null);
        return sb.withSignature(client.signer().sign(sb.signedBytes()));
    }

    void write(long index, SubBatch sb) {
        byte[] b = sb.encode();
        for (InMemoryReplicaDisk d : disks) {
            d.append(0, index, b);
        }
        for (WitnessLog l : logs) {
            for (NodeKeys r : rs) {
                l.offer(Certificate.sign(CertType.TENTATIVE_LOG_ENTRY,
                        new Statement.LogEntry(old.region(), 0, index, cfg.hash().hash(b), b.length), r.signer()));
            }
        }
    }

    RegionLogRecovery.MetadataHolder honest(int i) {
        return new RegionLogRecovery.MetadataHolder() {
            public NodeId id() {
                return holders.get(i).id();
            }

            public Certificate query(RegionId r, long g, long idx) {
                return logs.get(i).query(r, g, idx);
            }
        };
    }

    RegionLogRecovery.MetadataHolder liar(int i) {
        return new RegionLogRecovery.MetadataHolder() {
            public NodeId id() {
                return holders.get(i).id();
            }

            public Certificate query(RegionId r, long g, long idx) {
                if (idx == 0) {
                    return stores.get(i).get(r, g, 1).orElse(null); // wrong position
                }
                return Certificate.sign(CertType.NO_NEXT_ENTRY, new Statement.NoNextEntry(r, g, idx),
                        holders.get(i).signer());
            }
        };
    }

    RegionLogRecovery.DataSource dn(int i) {
        return new RegionLogRecovery.DataSource() {
            public byte[] readEntry(long g, long idx) {
                return disks.get(i).read(g, idx);
            }

            public RegionSnapshot readSnapshot(long g, long k) {
                return disks.get(i).readSnapshot(g, k);
            }
        };
    }

    @Test
    void twoLyingHoldersAnsweringFirstCannotTruncateOrReorderTheLog() throws Exception {
        disks.get(0).corruptEntry(0, 1, 40);
        disks.get(1).deleteAll();
        RegionLogRecovery.RecoveredLog log = RegionLogRecovery.recover(cfg, dir, client.id(), old, Optional.empty(),
                List.of(liar(3), liar(4), honest(0), honest(1), honest(2)), List.of(dn(0), dn(1), dn(2)));
        assertEquals(3, log.entries().size());
        assertEquals(List.of(1L, 2L, 3L, 5L), new ArrayList<>(log.seqs()));
        RegionLogRecovery.verify(cfg, dir, client.id(), log);
    }

    @Test
    void tooFewValidAnswersIsARetryNotAGuess() {
        RecoveryException e = assertThrows(RecoveryException.class, () -> RegionLogRecovery.recover(cfg, dir,
                client.id(), old, Optional.empty(), List.of(liar(3), honest(0)), List.of(dn(0))));
        assertTrue(e.getMessage().contains("valid answers"), e.getMessage());
    }

    @Test
    void noDataNodeWithMatchingBytesIsDetected() {
        disks.forEach(d -> d.corruptEntry(0, 0, 3));
        assertThrows(RecoveryException.class, () -> RegionLogRecovery.recover(cfg, dir, client.id(), old,
                Optional.empty(), List.of(honest(0), honest(1), honest(2)), List.of(dn(0), dn(1), dn(2))));
    }

    @Test
    void identifyLcpStopsAtTheFirstGap() {
        Map<Integer, Coordination.RegionReport> reports = Map.of(
                0, new Coordination.RegionReport(3, new TreeSet<>(List.of(5L, 7L, 9L))),
                1, new Coordination.RegionReport(2, new TreeSet<>(List.of(4L, 6L, 10L))));
        assertEquals(7, VolumeRecovery.identifyLcp(reports));
        assertEquals(0, VolumeRecovery.identifyLcp(Map.of(0, new Coordination.RegionReport(0, new TreeSet<>(
                List.of(2L))))));
    }

    @Test
    void rebuildAppliesOnlyPutsWithinTheLcp() throws Exception {
        RegionLogRecovery.RecoveredLog log = RegionLogRecovery.recover(cfg, dir, client.id(), old, Optional.empty(),
                List.of(honest(0), honest(1), honest(2)), List.of(dn(0)));
        RegionSnapshot s = VolumeRecovery.rebuildRegion(cfg, log, 2, 1);
        assertEquals(2, s.lastSeq());
        assertEquals(2, s.blocks().size());
        Hash root = s.regionRoot(cfg.hash(), cfg.blockSize(), cfg.layout());
        MerkleTree expect = cfg.layout().newRegionTree(cfg.hash(), 16, new io.salus.core.merkle.InMemoryNodeStore());
        for (long seq : new long[] {1, 2}) {
            byte[] d = new byte[16];
            d[0] = (byte) seq;
            expect.putBlock(seq % 8, d);
        }
        assertEquals(expect.root(), root);
        assertEquals(Set.of(1L, 2L), s.blocks().keySet());
    }
}
