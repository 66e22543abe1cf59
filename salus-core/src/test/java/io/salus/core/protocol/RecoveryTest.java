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
import io.salus.core.protocol.recovery.InMemoryCoordination;
import io.salus.core.protocol.recovery.RecoveryException;
import io.salus.core.protocol.recovery.RecoveryOrchestrator;
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
    final ProtocolConfig cfg = ProtocolConfig.of("v", 16, HashAlgorithm.SHA256, RegionLayout.ofRegionSize(16, 8))
            .withCheckpointEvery(PipelinedCommitTest.CHECKPOINT_EVERY); // these tests were written for 4
    final KeyDirectory dir = new KeyDirectory(SignatureScheme.WEAK_CRC32C);
    final NodeKeys client = key("client");
    final List<NodeKeys> rs = List.of(key("rs0"), key("rs1"), key("rs2"));
    final List<NodeKeys> holders = List.of(key("dn0"), key("dn1"), key("dn2"), key("w0"), key("w1"));
    final RrsConfig old = new RrsConfig(new RegionId("v", 0), 0, ids(rs), ids(holders.subList(0, 3)),
            ids(holders.subList(3, 5)));
    /** The new generation's RRS and a membership that knows both generations. */
    final RrsConfig fresh = old.remap(ids(List.of(key("rs3"), key("rs4"), key("rs5"))),
            ids(List.of(key("dn3"), key("dn4"), key("dn5"))), ids(List.of(key("w3"), key("w4"))));
    final Membership membership = new Membership() {
        public RrsConfig current(int region) {
            return fresh;
        }

        public RrsConfig config(RegionId region, long generation) {
            return !region.equals(old.region()) ? null : generation == 0 ? old : generation == 1 ? fresh : null;
        }
    };

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

            public List<Certificate> readDecisions(long g) {
                return disks.get(i).decisions(g);
            }
        };
    }

    @Test
    void twoLyingHoldersAnsweringFirstCannotTruncateOrReorderTheLog() throws Exception {
        disks.get(0).corruptEntry(0, 1, 40);
        disks.get(1).deleteAll();
        RegionLogRecovery.RecoveredLog log = RegionLogRecovery.recover(cfg, dir, client.id(), membership, old, Optional.empty(),
                List.of(liar(3), liar(4), honest(0), honest(1), honest(2)), List.of(dn(0), dn(1), dn(2)));
        assertEquals(3, log.entries().size());
        assertEquals(List.of(1L, 2L, 3L, 5L), new ArrayList<>(log.seqs()));
        RegionLogRecovery.verify(cfg, dir, client.id(), membership, log);
    }

    @Test
    void tooFewValidAnswersIsARetryNotAGuess() {
        RecoveryException e = assertThrows(RecoveryException.class, () -> RegionLogRecovery.recover(cfg, dir,
                client.id(), membership, old, Optional.empty(), List.of(liar(3), honest(0)), List.of(dn(0))));
        assertTrue(e.getMessage().contains("valid answers"), e.getMessage());
    }

    @Test
    void noDataNodeWithMatchingBytesIsDetected() {
        disks.forEach(d -> d.corruptEntry(0, 0, 3));
        assertThrows(RecoveryException.class, () -> RegionLogRecovery.recover(cfg, dir, client.id(), membership, old,
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
        RegionLogRecovery.RecoveredLog log = RegionLogRecovery.recover(cfg, dir, client.id(), membership, old, Optional.empty(),
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

    // ---------------------------------------------------------------- hole 1: every proof is bound

    RegionLogRecovery.RecoveredLog honestLog() throws RecoveryException {
        return RegionLogRecovery.recover(cfg, dir, client.id(), membership, old, Optional.empty(),
                List.of(honest(0), honest(1), honest(2)), List.of(dn(0)));
    }

    void assertRejected(RegionLogRecovery.RecoveredLog forged, String why) {
        RecoveryException v = assertThrows(RecoveryException.class,
                () -> RegionLogRecovery.verify(cfg, dir, client.id(), membership, forged), why + ": verify accepted it");
        assertTrue(v.getMessage().contains(old.region().toString()), v.getMessage());
        Coordination.Lcp lcp = new Coordination.Lcp(1, 1, cfg.hash().hash(new byte[1]));
        assertThrows(RecoveryException.class, () -> VolumeRecovery.endorse(cfg, dir, client.id(),
                key("rs3").signer(), fresh, membership, forged, lcp), why + ": endorse accepted it");
    }

    @Test
    void logTruncatedWithHonestAnswersForAnotherGenerationIsRejected() throws Exception {
        RegionLogRecovery.RecoveredLog full = honestLog();
        RegionLogRecovery.verify(cfg, dir, client.id(), membership, full);
        // the stores honestly say "nothing at index 1 of generation 7": true, and irrelevant to generation 0
        List<Certificate> otherGen = List.of(logs.get(0).query(old.region(), 7, 1), logs.get(1).query(old.region(),
                7, 1), logs.get(2).query(old.region(), 7, 1));
        assertRejected(new RegionLogRecovery.RecoveredLog(old, full.base(), null, full.entries().subList(0, 1),
                otherGen), "NO_NEXT_ENTRY of another generation");
        RegionId other = new RegionId("v", 1);
        List<Certificate> otherRegion = List.of(logs.get(0).query(other, 0, 1), logs.get(3).query(other, 0, 1),
                logs.get(4).query(other, 0, 1));
        assertRejected(new RegionLogRecovery.RecoveredLog(old, full.base(), null, full.entries().subList(0, 1),
                otherRegion), "NO_NEXT_ENTRY of another region");
    }

    @Test
    void logEntryOfAnotherRegionIsRejected() throws Exception {
        RegionLogRecovery.RecoveredLog full = honestLog();
        RegionLogRecovery.RecoveredEntry e0 = full.entries().get(0);
        Statement.LogEntry st = e0.logEntry().statement(Statement.LogEntry.class);
        List<Certificate> t = new ArrayList<>();
        for (NodeKeys r : rs) { // the same servers also host region 1: their signatures are genuine
            t.add(Certificate.sign(CertType.TENTATIVE_LOG_ENTRY, new Statement.LogEntry(new RegionId("v", 1),
                    st.generation(), st.index(), st.digest(), st.length()), r.signer()));
        }
        List<RegionLogRecovery.RecoveredEntry> entries = new ArrayList<>(full.entries());
        entries.set(0, new RegionLogRecovery.RecoveredEntry(0, Certificate.combine(t), e0.bytes(), e0.subBatch()));
        assertRejected(new RegionLogRecovery.RecoveredLog(old, full.base(), null, entries, full.endProof()),
                "LOG_ENTRY of another region");
    }

    @Test
    void baseCheckpointSignedByOutsidersOrForAnotherGenerationIsRejected() throws Exception {
        RegionSnapshot base = new RegionSnapshot(0, 3, 5, Map.of(), RegionSnapshot.empty(0,
                RegionLogRecovery.emptyVolumeRoot(cfg)).rootRecord());
        Hash root = base.regionRoot(cfg.hash(), cfg.blockSize(), cfg.layout());
        List<Certificate> end = List.of(logs.get(0).query(old.region(), 0, 4), logs.get(1).query(old.region(), 0, 4),
                logs.get(2).query(old.region(), 0, 4));
        // three genuine signatures, but by the metadata holders, not by the region's replicas
        List<Certificate> byHolders = new ArrayList<>();
        for (NodeKeys h : holders.subList(0, 3)) {
            byHolders.add(Certificate.sign(CertType.TENTATIVE_CHECKPOINT,
                    new Statement.Checkpoint(old.region(), 0, 3, 5, root, base.rootRecord().root()), h.signer()));
        }
        assertRejected(new RegionLogRecovery.RecoveredLog(old, base, Certificate.combine(byHolders), List.of(), end),
                "CHECKPOINT not signed by the replicas");
        List<Certificate> otherGen = new ArrayList<>();
        for (NodeKeys r : rs) {
            otherGen.add(Certificate.sign(CertType.TENTATIVE_CHECKPOINT,
                    new Statement.Checkpoint(old.region(), 3, 3, 5, root, base.rootRecord().root()), r.signer()));
        }
        assertRejected(new RegionLogRecovery.RecoveredLog(old, base, Certificate.combine(otherGen), List.of(), end),
                "CHECKPOINT of another generation");
        // and recover itself refuses a base checkpoint with outsider signatures
        disks.get(0).writeSnapshot(base);
        assertThrows(RecoveryException.class, () -> RegionLogRecovery.recover(cfg, dir, client.id(), membership, old,
                Optional.of(Certificate.combine(byHolders)), List.of(honest(0), honest(1), honest(2)),
                List.of(dn(0))));
    }

    @Test
    void endorseRefusesALogOfAConfigurationThatIsNotThePreviousGeneration() throws Exception {
        RegionLogRecovery.RecoveredLog full = honestLog();
        Coordination.Lcp lcp = new Coordination.Lcp(1, 5, cfg.hash().hash(new byte[1]));
        // the same log presented as the previous generation of a configuration two generations on
        RrsConfig later = fresh.remap(ids(List.of(key("rs6"), key("rs7"), key("rs8"))), fresh.stores(),
                fresh.witnesses());
        RecoveryException e = assertThrows(RecoveryException.class, () -> VolumeRecovery.endorse(cfg, dir,
                client.id(), key("rs6").signer(), later, membership, full, lcp));
        assertTrue(e.getMessage().contains("generation"), e.getMessage());
        assertNotNull(VolumeRecovery.endorse(cfg, dir, client.id(), key("rs3").signer(), fresh, membership, full,
                lcp));
    }

    // ---------------------------------------------------------------- hole 5: aborted stays aborted

    Certificate decision(boolean commit, long batch, long first, long last, List<NodeKeys> by) {
        return decision(commit, batch, first, last, by, 0);
    }

    Certificate decision(boolean commit, long batch, long first, long last, List<NodeKeys> by, long generation) {
        List<Certificate> t = new ArrayList<>();
        for (NodeKeys k : by) {
            t.add(Certificate.sign(commit ? CertType.TENTATIVE_COMMIT : CertType.TENTATIVE_ABORT,
                    new Statement.Decision(commit, "v", batch, first, last, old.region(), generation), k.signer()));
        }
        return Certificate.combine(t);
    }

    @Test
    void loggedThenAbortedSubBatchIsNotPreparedAndNeverRebuilt() throws Exception {
        // batch 2 (seqs 2..3) was logged at index 1, then aborted; one replica recorded the ABORT
        disks.get(2).recordDecision(0, decision(false, 2, 2, 3, rs));
        RegionLogRecovery.RecoveredLog log = RegionLogRecovery.recover(cfg, dir, client.id(), membership, old,
                Optional.empty(), List.of(honest(0), honest(1), honest(2)), List.of(dn(0), dn(1), dn(2)));
        RegionLogRecovery.verify(cfg, dir, client.id(), membership, log);
        Coordination.RegionReport report = VolumeRecovery.report(log);
        assertEquals(List.of(1L), new ArrayList<>(report.preparedSeqs()),
                "the aborted seqs 2, 3 and the later seq 5 are not prepared");
        assertEquals(1, VolumeRecovery.identifyLcp(Map.of(0, report)));
        RegionSnapshot s = VolumeRecovery.rebuildRegion(cfg, log, 5, 1);
        assertEquals(Set.of(1L), s.blocks().keySet(), "an aborted write (nor what follows it) never comes back,"
                + " whatever the LCP");
        // a forged abort proof in a log handed to the new replicas is refused, not used to drop writes
        RegionLogRecovery.RecoveredLog honestLog = honestLog();
        List<RegionLogRecovery.RecoveredEntry> forged = new ArrayList<>(honestLog.entries());
        RegionLogRecovery.RecoveredEntry e1 = forged.get(1);
        forged.set(1, new RegionLogRecovery.RecoveredEntry(e1.index(), e1.logEntry(), e1.bytes(), e1.subBatch(),
                decision(false, 2, 2, 3, holders.subList(0, 3))));
        assertRejected(new RegionLogRecovery.RecoveredLog(old, honestLog.base(), null, forged, honestLog.endProof()),
                "ABORT signed by non-replicas");
    }

    /**
     * Task net19 (found by {@code SalusSimulationTest} seed 2875 once replicas resent fewer sub-batches): batch 2
     * spans this region and another. The other region's replicas recorded its ABORT (the client was told it
     * failed), but their own sub-batch of it has no LOG_ENTRY (one replica signed a wrong digest), so it is not in
     * their recovered log; this region's replicas have not recorded the ABORT yet (an earlier entry still waited for
     * its decision). Recovery read the other region's ABORT record and dropped it with the unrecovered entry: the
     * aborted seqs 2..3 came back. Now a region's recovered log keeps every ABORT its replicas recorded and
     * {@link VolumeRecovery#shareAborts} shares them too; one that does not bind (signed by the holders) is not used.
     */
    @Test
    void anAbortRecordedOnlyWhereTheEntryWasNotRecoveredStillProvesTheBatchAborted() throws Exception {
        // recover() keeps the decision records of a batch with no entry in this log
        disks.get(1).recordDecision(0, decision(false, 9, 7, 8, rs));
        RegionLogRecovery.RecoveredLog here = RegionLogRecovery.recover(cfg, dir, client.id(), membership, old,
                Optional.empty(), List.of(honest(0), honest(1), honest(2)), List.of(dn(0), dn(1), dn(2)));
        assertEquals(1, here.recordedAborts().size(), "the ABORT of batch 9 is kept: " + here.recordedAborts());
        assertEquals(List.of(1L, 2L, 3L, 5L), new ArrayList<>(VolumeRecovery.report(here).preparedSeqs()));
        // the other region: nothing recovered, its replicas recorded batch 2's ABORT
        RegionLogRecovery.RecoveredLog other = new RegionLogRecovery.RecoveredLog(old, here.base(), null, List.of(),
                here.endProof(), List.of(decision(false, 2, 2, 3, rs)));
        Map<Integer, RegionLogRecovery.RecoveredLog> shared = VolumeRecovery.shareAborts(cfg, dir, membership,
                Map.of(0, here, 1, other));
        assertEquals(List.of(1L), new ArrayList<>(VolumeRecovery.report(shared.get(0)).preparedSeqs()),
                "batch 2 aborted: its seqs 2, 3 and the later 5 are not prepared");
        RegionLogRecovery.verify(cfg, dir, client.id(), membership, shared.get(0));
        // hostile: an ABORT signed by the holders, not the leader region's replicas, proves nothing
        RegionLogRecovery.RecoveredLog forged = new RegionLogRecovery.RecoveredLog(old, here.base(), null,
                List.of(), here.endProof(), List.of(decision(false, 2, 2, 3, holders.subList(0, 3))));
        assertEquals(List.of(1L, 2L, 3L, 5L), new ArrayList<>(VolumeRecovery.report(VolumeRecovery.shareAborts(cfg,
                dir, membership, Map.of(0, here, 1, forged)).get(0)).preparedSeqs()));
    }

    @Test
    void abortProofsThatDoNotBindToTheEntryAreIgnored() throws Exception {
        // an ABORT signed by outsiders, one for another batch, and a COMMIT: none makes an entry aborted
        disks.get(0).recordDecision(0, decision(false, 2, 2, 3, holders.subList(0, 3)));
        disks.get(1).recordDecision(0, decision(false, 9, 2, 3, rs));
        disks.get(2).recordDecision(0, decision(true, 2, 2, 3, rs));
        RegionLogRecovery.RecoveredLog log = RegionLogRecovery.recover(cfg, dir, client.id(), membership, old,
                Optional.empty(), List.of(honest(0), honest(1), honest(2)), List.of(dn(0), dn(1), dn(2)));
        assertEquals(List.of(1L, 2L, 3L, 5L), new ArrayList<>(VolumeRecovery.report(log).preparedSeqs()));
    }

    // ---------------------------------------------------------------- review: the base snapshot's root record

    /**
     * review: a faulty DataNode (one of the three, within the fault bound) serves the checkpointed
     * snapshot with the right cells and last seq but a forged volume-root record. The CHECKPOINT
     * certificate covers the region root and the last seq, not the record, and recovery took the
     * record as it came: the rebuilt region's last seq became the forged seq, so the new replicas
     * start with lastAcceptedSeq far ahead of the client (every later sub-batch is dropped as stale,
     * the mount's newest-record check fails): the volume stalls for good. The snapshot of the honest
     * DataNode tried second must be used instead, and a new replica must refuse the forged base.
     */
    @Test
    void aForgedRootRecordInTheBaseSnapshotIsNotAdopted() throws Exception {
        // the three entries (seqs 1, 2..3, 5) were applied and checkpointed through index 2
        RegionLogRecovery.RecoveredLog log = honestLog();
        RegionSnapshot honestBase = VolumeRecovery.rebuildRegion(cfg, log, 5, 0);
        RegionSnapshot base = new RegionSnapshot(0, 2, 5, honestBase.blocks(), honestBase.rootRecord());
        assertEquals(5, base.rootRecord().seq());
        Hash root = base.regionRoot(cfg.hash(), cfg.blockSize(), cfg.layout());
        List<Certificate> t = new ArrayList<>();
        for (NodeKeys r : rs) {
            t.add(Certificate.sign(CertType.TENTATIVE_CHECKPOINT, new Statement.Checkpoint(old.region(), 0, 2, 5, root,
                    base.rootRecord().root()),
                    r.signer()));
        }
        Certificate cp = Certificate.combine(t);
        RegionSnapshot forged = new RegionSnapshot(0, 2, 5, base.blocks(),
                new io.salus.core.merkle.VolumeRootRecord(cfg.hash().hash(new byte[] {9}), 1_000_000));
        disks.get(0).writeSnapshot(forged);
        disks.get(1).writeSnapshot(base);
        RegionLogRecovery.RecoveredLog got = RegionLogRecovery.recover(cfg, dir, client.id(), membership, old,
                Optional.of(cp), List.of(honest(0), honest(1), honest(2)), List.of(dn(0), dn(1)));
        RegionSnapshot rebuilt = VolumeRecovery.rebuildRegion(cfg, got, 5, 1);
        assertEquals(5, rebuilt.lastSeq(), "the new replicas would wait for seq 1000000 before accepting a write");
        assertEquals(base.rootRecord(), rebuilt.rootRecord());
        // and a log handed to the new replicas with the forged base is refused
        RegionLogRecovery.RecoveredLog withForged = new RegionLogRecovery.RecoveredLog(old, forged, cp, List.of(),
                got.endProof());
        assertRejected(withForged, "a base snapshot whose root record is not at the checkpoint's last seq");
    }

    /**
     * review finding: the same faulty DataNode forges only the root of the record, at the right seq.
     * The CHECKPOINT certificate does not cover the record, so nothing tells the two snapshots apart;
     * recovery takes the first that matches. When the LCP is the checkpoint's last seq, lcpRoot takes
     * the forged root, putLcp stores it for the epoch (first writer wins), and rebuildVolume fails its
     * root check: recovery fails whenever that DataNode is asked first, and the rebuilt region carries
     * the forged record (the mount's newest-record check then fails). Fixed: the CHECKPOINT statement
     * binds the volume-root record (its volumeRoot with its lastSeq), and recovery takes only a
     * snapshot whose record is the certified one.
     */
    @Test
    void aForgedRootAtTheRightSeqInTheBaseSnapshotIsNotAdopted() throws Exception {
        RegionLogRecovery.RecoveredLog log = honestLog();
        RegionSnapshot honestBase = VolumeRecovery.rebuildRegion(cfg, log, 5, 0);
        RegionSnapshot base = new RegionSnapshot(0, 2, 5, honestBase.blocks(), honestBase.rootRecord());
        Hash root = base.regionRoot(cfg.hash(), cfg.blockSize(), cfg.layout());
        List<Certificate> t = new ArrayList<>();
        for (NodeKeys r : rs) {
            t.add(Certificate.sign(CertType.TENTATIVE_CHECKPOINT, new Statement.Checkpoint(old.region(), 0, 2, 5, root,
                    base.rootRecord().root()),
                    r.signer()));
        }
        RegionSnapshot forged = new RegionSnapshot(0, 2, 5, base.blocks(),
                new io.salus.core.merkle.VolumeRootRecord(cfg.hash().hash(new byte[] {9}), 5));
        disks.get(0).writeSnapshot(forged);
        disks.get(1).writeSnapshot(base);
        RegionLogRecovery.RecoveredLog got = RegionLogRecovery.recover(cfg, dir, client.id(), membership, old,
                Optional.of(Certificate.combine(t)), List.of(honest(0), honest(1), honest(2)), List.of(dn(0), dn(1)));
        assertEquals(base.rootRecord(), VolumeRecovery.rebuildRegion(cfg, got, 5, 1).rootRecord());
        assertEquals(base.rootRecord().root(), VolumeRecovery.lcpRoot(cfg, Map.of(0, got), 5));
    }

    /**
     * review finding: a faulty replica of the region (it holds the Salus servers' ZooKeeper
     * credentials, as every replica that stores a checkpoint must) files a CHECKPOINT certificate
     * naming a far later index, with its own genuine signature and two made-up ones. Coordination
     * keeps "the newest (generation, index)" without checking signatures, so the honest replicas'
     * later checkpoints are refused from then on, and recovery, which reads only the latest one,
     * throws "the latest checkpoint certificate is not usable" on every attempt. The honest replicas
     * have already garbage-collected their log through their last real checkpoint, so the volume can
     * never be recovered. Fixed: coordination keeps every filed checkpoint (never replaced, so no
     * rollback either) and the reader takes the newest that verifies against its generation's replicas.
     */
    @Test
    void aForgedCheckpointFiledByOneFaultyReplicaDoesNotBlockRecovery() throws Exception {
        RegionLogRecovery.RecoveredLog log = honestLog();
        RegionSnapshot rebuilt = VolumeRecovery.rebuildRegion(cfg, log, 5, 0);
        RegionSnapshot base = new RegionSnapshot(0, 2, 5, rebuilt.blocks(), rebuilt.rootRecord());
        Hash root = base.regionRoot(cfg.hash(), cfg.blockSize(), cfg.layout());
        disks.forEach(d -> d.writeSnapshot(base));
        List<Certificate> t = new ArrayList<>();
        for (NodeKeys r : rs) {
            t.add(Certificate.sign(CertType.TENTATIVE_CHECKPOINT, new Statement.Checkpoint(old.region(), 0, 2, 5, root,
                    base.rootRecord().root()),
                    r.signer()));
        }
        Certificate honestCp = Certificate.combine(t);
        InMemoryCoordination coord = new InMemoryCoordination();
        // rs0 is faulty: its own signature is genuine, the other two are made up
        Statement.Checkpoint lie = new Statement.Checkpoint(old.region(), 0, 1_000_003, 5, root,
                base.rootRecord().root());
        Certificate mine = Certificate.sign(CertType.TENTATIVE_CHECKPOINT, lie, rs.get(0).signer());
        List<Certificate.Sig> sigs = new ArrayList<>(mine.signatures());
        sigs.add(new Certificate.Sig(rs.get(1).id(), new byte[4]));
        sigs.add(new Certificate.Sig(rs.get(2).id(), new byte[4]));
        sigs.sort(java.util.Comparator.comparing(s -> s.signer().toString()));
        Certificate forged = Certificate.of(CertType.CHECKPOINT, mine.scheme(), lie, sigs);
        assertFalse(forged.verify(dir, old.replicaSet()));
        coord.putCheckpoint(forged);
        coord.putCheckpoint(honestCp); // the honest replicas' checkpoint comes next
        RegionLogRecovery.RecoveredLog got = RegionLogRecovery.recover(cfg, dir, client.id(), membership, old,
                coord.latestCheckpoint(old.region(), Coordination.signedByItsGeneration(dir, membership)), List.of(honest(0), honest(1), honest(2)), List.of(dn(0)));
        assertEquals(5, got.base().lastSeq());
    }

    /**
     * The Decision statement names no generation. A region remapped onto the same three servers
     * (nothing in Membership or the orchestrator forbids it) makes a genuine ABORT of generation 0
     * verify as one of generation 1; a restarted client starts its batch ids at 1 again and its
     * seqs after the LCP, i.e. at the aborted batch's own id and seqs. One faulty replica of
     * generation 1 appends that old certificate to its decision records; recovery of generation 1
     * then treats the committed, acknowledged batch 1 as aborted and drops it (and everything after).
     */
    @Test
    void staleAbortOfAnEarlierGenerationDoesNotDropACommittedWriteOfTheNextOne() throws Exception {
        RrsConfig sameServers = new RrsConfig(old.region(), 1, ids(rs), ids(holders.subList(0, 3)),
                ids(holders.subList(3, 5)));
        Membership m = new Membership() {
            public RrsConfig current(int region) {
                return sameServers;
            }

            public RrsConfig config(RegionId region, long generation) {
                return !region.equals(old.region()) ? null : generation == 0 ? old : generation == 1 ? sameServers
                        : null;
            }
        };
        // generation 0: batch 1 (seq 1, led by region 0) was aborted; LCP 0; generation 1 starts empty
        Certificate staleAbort = decision(false, 1, 1, 1, rs);
        RegionSnapshot base = new RegionSnapshot(1, -1, 0, Map.of(), RegionSnapshot.empty(1,
                RegionLogRecovery.emptyVolumeRoot(cfg)).rootRecord());
        List<Certificate> cp = new ArrayList<>();
        for (NodeKeys r : rs) {
            cp.add(Certificate.sign(CertType.TENTATIVE_CHECKPOINT, new Statement.Checkpoint(old.region(), 1, -1, 0,
                    base.regionRoot(cfg.hash(), cfg.blockSize(), cfg.layout()), base.rootRecord().root()), r.signer()));
        }
        disks.forEach(d -> d.writeSnapshot(base));
        // generation 1: the restarted client's batch 1 (seq 1 again) is logged and committed
        SubBatch again = sub(1, new long[] {1}, 0);
        byte[] b = again.encode();
        for (InMemoryReplicaDisk d : disks) {
            d.append(1, 0, b);
        }
        for (WitnessLog l : logs) {
            for (NodeKeys r : rs) {
                l.offer(Certificate.sign(CertType.TENTATIVE_LOG_ENTRY,
                        new Statement.LogEntry(old.region(), 1, 0, cfg.hash().hash(b), b.length), r.signer()));
            }
        }
        Certificate commit = decision(true, 1, 1, 1, rs, 1);
        disks.get(0).recordDecision(1, commit); // the honest replicas' commit marks (PUT_SUCCESS sent after)
        disks.get(1).recordDecision(1, commit);
        disks.get(2).recordDecision(1, staleAbort); // the faulty replica's "abort mark"
        RegionLogRecovery.RecoveredLog log = RegionLogRecovery.recover(cfg, dir, client.id(), m, sameServers,
                Optional.of(Certificate.combine(cp)), List.of(honest(0), honest(1), honest(2)),
                List.of(dn(2), dn(0), dn(1)));
        assertEquals(List.of(1L), new ArrayList<>(VolumeRecovery.report(log).preparedSeqs()),
                "the committed and acknowledged seq 1 of generation 1 must stay prepared");
    }

    // ---------------------------------------------------------------- the Master's role in main code

    /** A one-region volume over the same stores, driven through {@link RecoveryOrchestrator}. */
    RecoveryOrchestrator.Outcome orchestrate(boolean lastReplicaSignsAnotherRoot) throws RecoveryException {
        return orchestrate(new boolean[] {lastReplicaSignsAnotherRoot}, false);
    }

    /**
     * @param lie   whether the last new replica endorses another state (read at each endorsement)
     * @param retry after a failed adopt, recover and adopt again with {@code lie} cleared
     */
    RecoveryOrchestrator.Outcome orchestrate(boolean[] lie, boolean retry) throws RecoveryException {
        ProtocolConfig one = ProtocolConfig.of("v", 16, HashAlgorithm.SHA256, RegionLayout.ofRegionSize(8, 8))
                .withCheckpointEvery(PipelinedCommitTest.CHECKPOINT_EVERY);
        RrsConfig[] current = {old};
        Membership m = new Membership() {
            public RrsConfig current(int region) {
                return current[0];
            }

            public RrsConfig config(RegionId region, long generation) {
                return generation == 0 ? old : generation == 1 ? fresh : null;
            }
        };
        InMemoryCoordination coord = new InMemoryCoordination();
        List<RegionSnapshot> started = new ArrayList<>();
        RecoveryOrchestrator master = new RecoveryOrchestrator(one, dir, client.id(), m, coord, 1);
        RecoveryOrchestrator.Cluster cluster = new RecoveryOrchestrator.Cluster() {
            public List<RegionLogRecovery.MetadataHolder> holders(RrsConfig o) {
                return List.of(liar(3), honest(0), honest(1), honest(2), liar(4));
            }

            public List<RegionLogRecovery.DataSource> dataNodes(RrsConfig o) {
                return List.of(dn(0), dn(1), dn(2));
            }

            public RrsConfig remap(RrsConfig o) {
                current[0] = fresh;
                return fresh;
            }

            public Certificate endorse(NodeId replica, RrsConfig f, RegionLogRecovery.RecoveredLog log,
                                       Coordination.Lcp lcp) throws RecoveryException {
                NodeKeys k = replica.equals(f.replicas().get(2)) ? key("rs5") : replica.equals(f.replicas().get(1))
                        ? key("rs4") : key("rs3");
                Certificate t = VolumeRecovery.endorse(one, dir, client.id(), k.signer(), f, m, log, lcp);
                if (lie[0] && replica.equals(f.replicas().get(2))) {
                    Statement.Checkpoint st = t.statement(Statement.Checkpoint.class);
                    return Certificate.sign(CertType.TENTATIVE_CHECKPOINT, new Statement.Checkpoint(st.region(),
                            st.generation(), st.throughIndex(), st.lastSeq(), one.hash().hash(new byte[1]), st.volumeRoot()),
                            k.signer());
                }
                return t;
            }

            public void start(RrsConfig f, RegionSnapshot state) {
                started.add(state);
            }
        };
        Map<Integer, RegionLogRecovery.RecoveredLog> logs = master.recoverLogs(cluster);
        assertEquals(3, logs.get(0).entries().size(), "two lying holders answering first change nothing");
        // the fixture's PUTs carry made-up volume roots, so the LCP step is given here instead of
        // master.rebuild (identifyAndRebuild is covered by the simulator on real roots)
        Coordination.Lcp lcp = new Coordination.Lcp(1, 3, one.hash().hash(new byte[] {3}));
        VolumeRecovery.Rebuilt rb = new VolumeRecovery.Rebuilt(lcp, Map.of(0, VolumeRecovery.rebuildRegion(one,
                logs.get(0), 3, 1)), logs);
        Map<Integer, RrsConfig> configs;
        try {
            configs = master.adopt(rb, cluster);
        } catch (RecoveryException e) {
            if (!retry) {
                throw e;
            }
            assertEquals(fresh, m.current(0), "the failed adopt remapped the region");
            lie[0] = false; // the faulty new replica is replaced, or behaves this time
            logs = master.recoverLogs(cluster);
            assertEquals(old, logs.get(0).old(), "the retry recovers the adopted generation's log again");
            assertEquals(3, logs.get(0).entries().size());
            rb = new VolumeRecovery.Rebuilt(lcp, Map.of(0, VolumeRecovery.rebuildRegion(one, logs.get(0), 3, 1)), logs);
            configs = master.adopt(rb, cluster);
        }
        assertEquals(1, started.size());
        assertEquals(CertType.CHECKPOINT, coord.latestCheckpoint(old.region(), Coordination.signedByItsGeneration(dir, membership)).orElseThrow().type());
        return new RecoveryOrchestrator.Outcome(rb, configs, master.retries());
    }

    @Test
    void orchestratorRecoversRebuildsAndHasTheNewReplicasAdoptTheState() throws Exception {
        RecoveryOrchestrator.Outcome out = orchestrate(false);
        assertEquals(3, out.lcp().seq(), "seqs 1..3 are contiguous; 4 was never issued to this region");
        assertEquals(1, out.configs().get(0).generation());
    }

    /**
     * review: one faulty new replica endorses another state, so adopt fails after remapRegion has
     * already recorded the new generation in membership. The next recovery took that generation as
     * "the old configuration"; it has no CHECKPOINT (adopt never stored one), so recoverRegionLog
     * threw "no checkpoint certificate for generation 1" on every later attempt: one faulty machine
     * among the new replicas made the volume unrecoverable for good. Now the retry recovers the
     * generation the latest checkpoint names, and remaps from it again.
     */
    @Test
    void aFailedAdoptCanBeRetried() throws Exception {
        RecoveryOrchestrator.Outcome out = orchestrate(new boolean[] {true}, true);
        assertEquals(1, out.configs().get(0).generation());
        assertEquals(3, out.lcp().seq());
    }

    @Test
    void orchestratorNamesANewReplicaThatEndorsesAnotherState() {
        RecoveryException e = assertThrows(RecoveryException.class, () -> orchestrate(true));
        assertTrue(e.getMessage().contains("rs5"), e.getMessage());
    }
}
