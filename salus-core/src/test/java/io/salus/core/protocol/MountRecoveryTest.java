package io.salus.core.protocol;

import static org.junit.jupiter.api.Assertions.*;

import io.salus.core.cert.CertType;
import io.salus.core.cert.Certificate;
import io.salus.core.cert.Statement;
import io.salus.core.crypto.NodeId;
import io.salus.core.protocol.PipelinedCommitTest.Envelope;
import io.salus.core.protocol.client.BlockWrite;
import io.salus.core.protocol.client.ReplicaMount;
import io.salus.core.protocol.client.VolumeClient;
import io.salus.core.protocol.message.BatchInfo;
import io.salus.core.protocol.message.Message;
import io.salus.core.protocol.recovery.Coordination;
import io.salus.core.protocol.replica.RegionReplica;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Recovery at mount (issue 14 item 4, §3.3.4 identifyLCP): a previous writer died with a batch that reached only some
 * of its regions (or whose BatchInfo reached no leader replica). Such a batch is never decided by the protocol (leaders
 * never abort on a timeout), so before this a new writer's mount waited for ever
 * ({@code PipelinedCommitTest#aLateSubBatchAfterTheFenceIsNotLoggedAndTheUndecidedRegionKeepsTheMountWaiting}). Now the
 * mount records the LCP in coordination, the leader replicas abort the batches after it (each checking the request
 * itself), and the mount completes at the LCP. Real replicas, witnesses and client over the in-memory network of
 * {@link PipelinedCommitTest} (its harness: two regions of 8 blocks, region 0 = blocks 0..7, region 1 = 8..15).
 */
class MountRecoveryTest {
    final PipelinedCommitTest h = new PipelinedCommitTest();
    long now;

    /** The first writer commits block 1 (seq 1), then dies with batch 2 (blocks 2, 10) sent to region 0 only. */
    void firstWriterDiesWithAPartialBatch() {
        assertTrue(h.client.submit(List.of(new BlockWrite(1, PipelinedCommitTest.data(1)))) > 0);
        h.drain();
        assertEquals(1, h.acked.size());
        h.hold = e -> e.m() instanceof Message.SubBatchMsg s && s.subBatch().region() == 1;
        assertTrue(h.client.submit(List.of(new BlockWrite(2, PipelinedCommitTest.data(2)),
                new BlockWrite(10, PipelinedCommitTest.data(3)))) > 0);
        h.drain();
        h.held.clear(); // the writer died before these left it
        h.hold = e -> false;
        assertEquals(1, h.acked.size(), "batch 2 is not acknowledged");
    }

    VolumeClient newWriterWithRecovery() {
        VolumeClient w = h.newWriter();
        w.recoverWith(h.coord);
        return w;
    }

    /** Runs the mount until it is no longer waiting: messages delivered, retransmission periods passing. */
    ReplicaMount.Outcome mount(VolumeClient w, long nonce) {
        w.beginRemount(nonce);
        ReplicaMount.Outcome o = null;
        for (int i = 0; i < 30; i++) {
            h.drain();
            o = w.remountOutcome();
            if (!(o instanceof ReplicaMount.Outcome.Waiting)) {
                return o;
            }
            h.drain();
            now += 1000;
            w.tick(now);
            h.replicas.values().forEach(RegionReplica::tick);
        }
        return o;
    }

    RegionReplica leader(int i) {
        return h.replicas.get(h.configs.get(0).replicas().get(i));
    }

    @Test
    void aBatchThatReachedOnlySomeRegionsIsAbortedAfterTheLcpAndTheMountCompletesThere() {
        firstWriterDiesWithAPartialBatch();
        VolumeClient w = newWriterWithRecovery();
        ReplicaMount.Outcome o = mount(w, 9);
        var m = assertInstanceOf(ReplicaMount.Outcome.Mounted.class, o, String.valueOf(o));
        assertEquals(1, m.seq(), "mounted at the LCP: the last committed PUT");
        Coordination.Lcp lcp = h.coord.lcp(m.nextBatchId()).orElseThrow(); // the fence is the recovery epoch
        assertEquals(1, lcp.seq());
        assertEquals(m.root(), lcp.root());
        assertEquals(lcp, w.lastMountLcp());
        assertEquals(List.of(2L), List.copyOf(w.lastMountAborts()));
        assertEquals(2, h.coord.reports(m.nextBatchId()).size(), "every region's report is in the LCP file");
        for (NodeId r : h.configs.get(0).replicas()) {
            Certificate d = h.replicas.get(r).decisionCertificate(2);
            assertNotNull(d, r + " learned batch 2's decision");
            assertEquals(CertType.ABORT, d.type());
            assertEquals(1, h.replicas.get(r).appliedSeq(), r + ": batch 2's write to block 2 is not applied");
        }
        for (int i = 0; i < 3; i++) {
            assertEquals(1, leader(i).recoveryAbortsSigned(), "leader replica " + i + " signed the abort");
        }
    }

    @Test
    void afterTheRecoveryTheNewWriterWritesAndReadsBothRegions() {
        firstWriterDiesWithAPartialBatch();
        VolumeClient w = newWriterWithRecoveryNoEpoch();
        assertInstanceOf(ReplicaMount.Outcome.Mounted.class, mount(w, 9));
        int before = h.acked.size();
        long id = w.submit(List.of(new BlockWrite(3, PipelinedCommitTest.data(7)),
                new BlockWrite(11, PipelinedCommitTest.data(8))));
        assertTrue(id > 0);
        h.drain();
        assertEquals(before + 1, h.acked.size(), "the new writer's batch commits in both regions");
        w.get(1);
        w.get(2);
        w.get(3);
        w.get(10);
        w.get(11);
        h.drain();
        assertArrayEquals(PipelinedCommitTest.data(1), h.got.get(1L), "the committed write reads back");
        assertArrayEquals(new byte[16], h.got.get(2L), "the aborted batch's block 2 reads as never written");
        assertArrayEquals(new byte[16], h.got.get(10L), "its block 10 too");
        assertArrayEquals(PipelinedCommitTest.data(7), h.got.get(3L));
        assertArrayEquals(PipelinedCommitTest.data(8), h.got.get(11L));
    }

    /**
     * Review rv19 finding 1: the new writer's batch, acknowledged after a mount that aborted the previous writer's
     * partial batch, is logged in region 0 right after that batch's aborted entry (same log generation: a mount does
     * not remap). A full recovery of the volume before the region's next checkpoint (any region server lost later)
     * took only the entries before the first aborted one as prepared ("every later entry belongs to a later batch,
     * which the COMMIT-CONFIRMATION chain aborted too"): true within one writer's batch chain, false for the next
     * writer's batches, which start a new chain (prevBatchId -1). The LCP stopped at seq 1 and the acknowledged
     * writes to blocks 3 and 11 were gone, with no error.
     */
    @Test
    void aNewWritersAcknowledgedBatchLoggedAfterAnAbortedEntrySurvivesAFullRecovery() throws Exception {
        firstWriterDiesWithAPartialBatch();
        VolumeClient w = newWriterWithRecoveryNoEpoch();
        assertInstanceOf(ReplicaMount.Outcome.Mounted.class, mount(w, 9));
        int before = h.acked.size();
        assertTrue(w.submit(List.of(new BlockWrite(3, PipelinedCommitTest.data(7)),
                new BlockWrite(11, PipelinedCommitTest.data(8)))) > 0);
        h.drain();
        assertEquals(before + 1, h.acked.size(), "the new writer's batch is acknowledged");
        long ackedLast = h.acked.get(h.acked.size() - 1)[2];
        // every region server is lost: the Master recovers the logs from the holders and DataNodes and rebuilds
        io.salus.core.protocol.recovery.RecoveryOrchestrator master =
                new io.salus.core.protocol.recovery.RecoveryOrchestrator(h.cfg, h.dir, h.clientId, h.membership,
                        h.coord, 1);
        var logs = master.recoverLogs(h.recoveryCluster());
        assertEquals(3, logs.get(0).entries().size(), "region 0: batch 1, the aborted batch 2, the new batch");
        assertTrue(logs.get(0).entries().get(1).aborted());
        var rb = master.rebuild(1, logs);
        assertTrue(rb.lcp().seq() >= ackedLast, "the LCP " + rb.lcp().seq() + " drops the acknowledged seqs up to "
                + ackedLast);
        assertArrayEquals(PipelinedCommitTest.data(7), rb.regions().get(0).blocks().get(3L),
                "block 3's acknowledged write is in the rebuilt region 0");
        assertArrayEquals(PipelinedCommitTest.data(8), rb.regions().get(1).blocks().get(3L),
                "block 11's acknowledged write is in the rebuilt region 1");
        assertNull(rb.regions().get(0).blocks().get(2L), "the aborted batch's block 2 stays out");
        // each new replica re-checks the COMMIT proof that keeps the entry: accepted as recovered, refused when it
        // is another batch's (genuinely signed) COMMIT or none of the leader region's
        var log0 = rb.logs().get(0);
        io.salus.core.protocol.recovery.RegionLogRecovery.verify(h.cfg, h.dir, h.clientId, h.membership, log0);
        var e2 = log0.entries().get(2);
        assertTrue(e2.committed());
        var e0 = log0.entries().get(0);
        Certificate otherBatch = h.disks.get(h.configs.get(0).replicas().get(0)).decisions(0).stream()
                .filter(c -> c.type() == CertType.COMMIT && c.statement(Statement.Decision.class).batchId()
                        == e0.subBatch().batchId()).findFirst().orElseThrow();
        List<io.salus.core.protocol.recovery.RegionLogRecovery.RecoveredEntry> forged = new ArrayList<>(log0.entries());
        forged.set(2, new io.salus.core.protocol.recovery.RegionLogRecovery.RecoveredEntry(e2.index(), e2.logEntry(),
                e2.bytes(), e2.subBatch(), null, otherBatch));
        var bad = new io.salus.core.protocol.recovery.RegionLogRecovery.RecoveredLog(log0.old(), log0.base(),
                log0.baseCertificate(), forged, log0.endProof(), log0.recordedAborts());
        var ex = assertThrows(io.salus.core.protocol.recovery.RecoveryException.class,
                () -> io.salus.core.protocol.recovery.RegionLogRecovery.verify(h.cfg, h.dir, h.clientId,
                        h.membership, bad));
        assertTrue(ex.getMessage().contains("committed without proof"), ex.getMessage());
        // its commit mark not durable on any DataNode yet (committed at the leaders, acknowledged in another region
        // first): the new writer's batch ids (from its mount's fence) still mark it as a new chain, not the aborted one
        List<io.salus.core.protocol.recovery.RegionLogRecovery.RecoveredEntry> unproven = new ArrayList<>(log0.entries());
        unproven.set(2, new io.salus.core.protocol.recovery.RegionLogRecovery.RecoveredEntry(e2.index(), e2.logEntry(),
                e2.bytes(), e2.subBatch()));
        var noMark = new io.salus.core.protocol.recovery.RegionLogRecovery.RecoveredLog(log0.old(), log0.base(),
                log0.baseCertificate(), unproven, log0.endProof(), log0.recordedAborts());
        assertEquals(List.of(e0.subBatch().batchId(), e2.subBatch().batchId()),
                noMark.preparedEntries().stream().map(e -> e.subBatch().batchId()).toList());
    }

    /**
     * Review rv19 finding 2 (task tput19 widened it): a leader replica whose decision was queued for its writer
     * (signed, not yet durable, sent to nobody) loses it in a crash, while the other two leader replicas' COMMITs
     * went out. The writer died too. The restarted leader replica never gets the batch's BatchInfo again (only the
     * client sends it, and a mount's fence refuses a late one), so it can never sign; the other two keep reporting
     * the batch committed, so the new writer's mount waits for its COMMIT for ever; no ABORT can form either.
     */
    @Test
    void aLeaderReplicaThatLostItsQueuedDecisionDoesNotKeepTheNextMountWaitingForEver() {
        NodeId l = leaderReplicaLosesItsQueuedCommit();
        VolumeClient nw = newWriterWithRecovery();
        ReplicaMount.Outcome o = mount(nw, 9);
        var m = assertInstanceOf(ReplicaMount.Outcome.Mounted.class, o, String.valueOf(o));
        assertEquals(1, m.seq(), "the batch its other two leader replicas committed is in the mounted volume");
        assertEquals(1, h.replicas.get(l).recoveryBatchInfosTaken(), "the re-sent BatchInfo was taken");
        for (int i = 0; i < 3; i++) {
            assertEquals(CertType.TENTATIVE_COMMIT, l0Decision(leader(i), 1), "leader replica " + i + " committed");
            assertEquals(CertType.COMMIT, leader(i).decisionCertificate(1).type());
            assertEquals(1, leader(i).appliedSeq());
        }
        assertNull(h.coord.lcp(m.nextBatchId()).orElse(null), "nothing needed an LCP: nothing was aborted");
        assertTrue(nw.lastMountAborts().isEmpty());
    }

    /**
     * Review rv20-1: rv19-2's case (leader replica 1 lost its queued COMMIT of batch 1 in a crash, the writer died)
     * when the other two leader replicas then restart as well (a power loss of the region's servers, a cluster
     * restart after the writer died). Before, their COMMITs were reloaded from the disk without the BatchInfo (it was
     * never recorded), so their claims were proven only in the unanimous-region form: the mount counted batch 1 as
     * committed (never stuck, never aborted), yet re-sends a BatchInfo only from a proof that carries one. Nobody held
     * the BatchInfo any more: leader replica 1 never decided, no ABORT could form (two COMMITs are on the disks), and
     * every mount of the volume waited for ever ("waiting for their leaders to decide them"). Now the BatchInfo is
     * recorded with each COMMIT and reloaded (checked against the client's key): the mount re-sends it, leader replica
     * 1 commits, and the volume mounts with batch 1 in it.
     */
    @Test
    void aLeaderReplicaThatLostItsQueuedDecisionWhileTheOtherTwoRestartedDoesNotKeepTheMountWaitingForEver() {
        NodeId l = leaderReplicaLosesItsQueuedCommit();
        restartTheOtherTwoLeaderReplicas(l, null);
        for (NodeId n : h.configs.get(0).replicas()) {
            if (!n.equals(l)) {
                assertEquals(1, h.replicas.get(n).batchInfosReloaded(), n + " reloaded its COMMIT's BatchInfo");
                assertEquals(0, h.replicas.get(n).batchInfosRefusedAtReload());
            }
        }
        VolumeClient nw = newWriterWithRecovery();
        ReplicaMount.Outcome o = mount(nw, 9);
        var m = assertInstanceOf(ReplicaMount.Outcome.Mounted.class, o, "the mount waits for ever: " + o);
        assertEquals(1, m.seq(), "the batch its other two leader replicas committed is in the mounted volume");
        assertEquals(1, h.replicas.get(l).recoveryBatchInfosTaken(), "the re-sent BatchInfo was taken");
        for (int i = 0; i < 3; i++) {
            assertEquals(CertType.TENTATIVE_COMMIT, l0Decision(leader(i), 1), "leader replica " + i + " committed");
            assertEquals(CertType.COMMIT, leader(i).decisionCertificate(1).type());
            assertEquals(1, leader(i).appliedSeq());
        }
        assertNull(h.coord.lcp(m.nextBatchId()).orElse(null), "nothing needed an LCP: nothing was aborted");
        assertTrue(nw.lastMountAborts().isEmpty());
    }

    /**
     * Review rv20-1, hostile: a BatchInfo record on a leader replica's disk is the disk's word, not the client's. In
     * the case above, one restarted leader replica's record is forged (the BatchInfo widened to one more seq under
     * the client's signature): it is refused at the reload, its COMMIT proves itself without it, and it never
     * reaches the mount. The other restarted leader replica's genuine record still gets the mount through.
     */
    @Test
    void aForgedBatchInfoRecordIsRefusedAtTheRestartAndTheGenuineOneOfAnotherLeaderStillMounts() {
        NodeId l = leaderReplicaLosesItsQueuedCommit();
        NodeId forgedAt = h.configs.get(0).replicas().get(0);
        restartTheOtherTwoLeaderReplicas(l, forgedAt);
        assertEquals(1, h.replicas.get(forgedAt).batchInfosRefusedAtReload());
        assertTrue(h.replicas.get(forgedAt).lastReloadedBatchInfoRefusal().contains("not signed by the client"),
                h.replicas.get(forgedAt).lastReloadedBatchInfoRefusal());
        assertEquals(0, h.replicas.get(forgedAt).batchInfosReloaded());
        VolumeClient nw = newWriterWithRecovery();
        ReplicaMount.Outcome o = mount(nw, 9);
        var m = assertInstanceOf(ReplicaMount.Outcome.Mounted.class, o, String.valueOf(o));
        assertEquals(1, m.seq());
        boolean first = true;
        for (Envelope e : h.sent) {
            if (e.from().equals(forgedAt) && e.m() instanceof Message.RecoveryState s && !s.commitProofs().isEmpty()) {
                // its first report proves the COMMIT without a BatchInfo; later ones with the genuine one, once the
                // mount re-sent it (a COMMIT reloaded from the disk takes it back then, review rv19-2)
                for (Message.CommitProof p : s.commitProofs()) {
                    assertTrue(first ? p.info() == null : p.info() == null || p.info().lastSeq() == 1,
                            "the forged BatchInfo is never reported: " + p.info());
                }
                first = false;
            }
            if (e.m() instanceof Message.RecoveryBatchInfo r) {
                assertEquals(1, r.info().lastSeq(), "only the genuine BatchInfo is re-sent");
            }
        }
        assertEquals(1, h.replicas.get(l).recoveryBatchInfosTaken());
        assertEquals(0, h.replicas.get(l).recoveryBatchInfosRefused(), h.replicas.get(l).lastRecoveryBatchInfoRefusal());
    }

    /**
     * Restarts the two leader replicas of region 0 other than {@code l} (their COMMIT of batch 1 reloaded from their
     * disks); on {@code forgedAt}'s disk the BatchInfo record is first replaced by a forged one (one more seq, the
     * client's signature of the genuine one).
     */
    void restartTheOtherTwoLeaderReplicas(NodeId l, NodeId forgedAt) {
        for (int i = 0; i < 3; i++) {
            NodeId n = h.configs.get(0).replicas().get(i);
            if (!n.equals(l)) {
                assertEquals(CertType.TENTATIVE_COMMIT, l0Decision(h.replicas.get(n), 1), "leader " + i + " committed");
                if (n.equals(forgedAt)) {
                    h.disks.get(n).rewriteDecisionRecords(0, b -> {
                        if (!io.salus.core.protocol.replica.BatchInfoRecord.is(b)) {
                            return b;
                        }
                        BatchInfo g = io.salus.core.protocol.replica.BatchInfoRecord.decode(b);
                        return io.salus.core.protocol.replica.BatchInfoRecord.encode(new BatchInfo(g.volume(),
                                g.batchId(), g.firstSeq(), g.lastSeq() + 1, g.participants(), g.prevBatchId(),
                                g.prevLeaderRegion(), g.epoch(), g.clientSig()));
                    });
                }
                h.start(h.configs.get(0), n); // restarted: its COMMIT reloaded from its disk, with its BatchInfo
            }
        }
    }

    /**
     * Leader replica 1 of region 0 signs COMMIT for batch 1 (block 1, region 0 only) and queues it for its disk writer;
     * the other two leader replicas' COMMITs go out. It dies with the record queued (its disk keeps the log entry),
     * and so does the writer. Returns its id.
     */
    NodeId leaderReplicaLosesItsQueuedCommit() {
        NodeId l = h.configs.get(0).replicas().get(1);
        PipelinedCommitTest.HeldWriter w = new PipelinedCommitTest.HeldWriter(h.disks.get(l));
        w.holdLeaderDecisions = true;
        h.autoWriters.add(w);
        h.replicas.get(l).writeDiskOn(w);
        assertTrue(h.client.submit(List.of(new BlockWrite(1, PipelinedCommitTest.data(1)))) > 0);
        h.drain();
        assertEquals(1, w.heldDecisions.size(), "its decision waits for its writer");
        assertTrue(h.acked.isEmpty());
        // its process dies with the queued record (the disk keeps the log entry); the writer dies too
        h.autoWriters.remove(w);
        h.start(h.configs.get(0), l);
        return l;
    }

    /**
     * Review rv19-2, hostile: the leader replica that lost its decision takes a re-sent BatchInfo only as the mount's
     * own (client-signed, under the fence it holds), unchanged, matching the entry it logged as the batch's leader
     * region, and not once the LCP recorded for the epoch excludes the batch (recovery aborts it then). Each refusal
     * signs nothing; the genuine re-send is taken and the batch commits by the usual unanimous rule.
     */
    @Test
    void aReSentBatchInfoThatIsChangedStaleForeignOrExcludedByTheLcpIsRefused() {
        NodeId l = leaderReplicaLosesItsQueuedCommit();
        RegionReplica rl = h.replicas.get(l);
        BatchInfo info = h.sent.stream().filter(e -> e.m() instanceof Message.BatchInfoMsg b && b.info().batchId() == 1)
                .map(e -> ((Message.BatchInfoMsg) e.m()).info()).findFirst().orElseThrow();
        long fence = ReplicaMount.BATCH_ID_EPOCH;
        fence(rl, 5, fence);
        // an LCP of this recovery epoch that excludes the batch: recovery aborts it, nobody may take its BatchInfo now
        h.coord.putLcp(new Coordination.Lcp(fence, 0, io.salus.core.protocol.recovery.RegionLogRecovery
                .emptyVolumeRoot(h.cfg)).signed("v", h.signers.get(h.clientId)));
        rl.receive(h.clientId, resend(fence, info));
        assertResendRefused(rl, 1, "excludes it");
        long fence2 = fence + ReplicaMount.BATCH_ID_EPOCH;
        fence(rl, 6, fence2);
        // a re-send of the earlier mount (stale fence), and one above the fence it holds
        rl.receive(h.clientId, resend(fence, info));
        assertResendRefused(rl, 2, "holds fence");
        rl.receive(h.clientId, resend(fence2 + ReplicaMount.BATCH_ID_EPOCH, info));
        assertResendRefused(rl, 3, "holds fence");
        // signed by a replica, not the client
        rl.receive(h.clientId, new Message.RecoveryBatchInfo("v", fence2, info,
                h.signers.get(l).sign(Message.RecoveryBatchInfo.signedBytes("v", fence2, info))));
        assertResendRefused(rl, 4, "not signed by the client");
        // the BatchInfo changed under the client's signature (one more seq, one more participant)
        BatchInfo longer = new BatchInfo("v", 1, info.firstSeq(), info.lastSeq() + 1, info.participants(),
                info.prevBatchId(), info.prevLeaderRegion(), info.epoch(), info.clientSig());
        rl.receive(h.clientId, resend(fence2, longer));
        assertResendRefused(rl, 5, "not signed by the client");
        BatchInfo wider = new BatchInfo("v", 1, info.firstSeq(), info.lastSeq(), List.of(0, 1),
                info.prevBatchId(), info.prevLeaderRegion(), info.epoch(), info.clientSig());
        rl.receive(h.clientId, resend(fence2, wider));
        assertResendRefused(rl, 6, "not signed by the client");
        // client-signed, but not the batch this replica logged (its entry holds seq 1)
        BatchInfo other = new BatchInfo("v", 1, 2, 2, info.participants(), info.prevBatchId(),
                info.prevLeaderRegion(), info.epoch(), null);
        other = other.withSignature(h.signers.get(h.clientId).sign(other.signedBytes()));
        rl.receive(h.clientId, resend(fence2, other));
        assertResendRefused(rl, 7, "is not this BatchInfo's");
        // a replica of region 1, which neither leads nor logged the batch
        RegionReplica r1 = h.replicas.get(h.configs.get(1).replicas().get(0));
        fence(r1, 6, fence2);
        r1.receive(h.clientId, resend(fence2, info));
        assertEquals(1, r1.recoveryBatchInfosRefused());
        assertTrue(r1.lastRecoveryBatchInfoRefusal().contains("no logged entry"), r1.lastRecoveryBatchInfoRefusal());
        h.drain();
        for (int i = 0; i < 8; i++) { // the participants' votes come again meanwhile: still nothing to decide on
            h.replicas.values().forEach(RegionReplica::tick);
            h.drain();
        }
        assertNull(l0Decision(rl, 1), "nothing signed on a refused BatchInfo");
        assertNull(leader(0).decisionCertificate(1), "no certificate without it");
        // the genuine re-send of the current mount
        rl.receive(h.clientId, resend(fence2, info));
        h.drain();
        for (int i = 0; i < 20 && l0Decision(rl, 1) == null; i++) {
            h.replicas.values().forEach(RegionReplica::tick);
            h.drain();
        }
        assertEquals(1, rl.recoveryBatchInfosTaken());
        assertEquals(7, rl.recoveryBatchInfosRefused());
        assertEquals(CertType.TENTATIVE_COMMIT, l0Decision(rl, 1));
        for (int i = 0; i < 20 && h.configs.get(0).replicas().stream()
                .anyMatch(n -> h.replicas.get(n).decisionCertificate(1) == null); i++) {
            h.replicas.values().forEach(RegionReplica::tick); // the restarted one asks its peers for their tentatives
            h.drain();
        }
        for (int i = 0; i < 3; i++) {
            assertNotNull(leader(i).decisionCertificate(1), "replica " + i + " learned batch 1's decision");
            assertEquals(CertType.COMMIT, leader(i).decisionCertificate(1).type(), "replica " + i + " committed batch 1");
        }
        // sent again, it changes nothing (decided: the same decision is sent again)
        rl.receive(h.clientId, resend(fence2, info));
        assertEquals(1, rl.recoveryBatchInfosTaken());
        assertEquals(CertType.TENTATIVE_COMMIT, l0Decision(rl, 1));
    }

    void fence(RegionReplica r, long nonce, long fence) {
        byte[] qs = h.signers.get(h.clientId).sign(Message.MountQuery.signedBytes("v", nonce, fence));
        r.receive(h.clientId, new Message.MountQuery(nonce, fence, qs));
    }

    Message.RecoveryBatchInfo resend(long fence, BatchInfo info) {
        return new Message.RecoveryBatchInfo("v", fence, info,
                h.signers.get(h.clientId).sign(Message.RecoveryBatchInfo.signedBytes("v", fence, info)));
    }

    static void assertResendRefused(RegionReplica r, long count, String why) {
        assertEquals(count, r.recoveryBatchInfosRefused(), r.lastRecoveryBatchInfoRefusal());
        assertTrue(r.lastRecoveryBatchInfoRefusal().contains(why), r.lastRecoveryBatchInfoRefusal());
        assertEquals(0, r.recoveryBatchInfosTaken());
    }

    /**
     * Review rv19 finding 3 (review rv18r's rule): the mount takes a batch any replica reports "committed" (as a
     * leader replica, {@code RecoveryState.committed}) for one that may still commit, and waits for it. The report is
     * signed by the reporter only, and any replica's counts, also one of a region that does not lead the batch. One
     * faulty replica reporting the stuck batch 2 as committed keeps every mount of the volume waiting for ever.
     */
    @Test
    void oneFaultyReplicaReportingACommitItNeverSignedDoesNotKeepTheMountWaitingForEver() {
        firstWriterDiesWithAPartialBatch();
        NodeId faulty = h.configs.get(1).replicas().get(2); // region 1 does not even lead batch 2
        h.hold = e -> e.from().equals(faulty) && e.m() instanceof Message.RecoveryState;
        VolumeClient w = newWriterWithRecovery();
        w.beginRemount(9);
        ReplicaMount.Outcome o = null;
        for (int i = 0; i < 30; i++) {
            h.drain();
            for (Envelope e : new ArrayList<>(h.held)) {
                Message.RecoveryState x = (Message.RecoveryState) e.m();
                Message.RecoveryState lie = new Message.RecoveryState(x.nonce(), x.volume(), x.region(),
                        x.generation(), x.replica(), x.fenceBelow(), x.pending(), x.batchInfos(), List.of(2L), null);
                h.deliver(new Envelope(e.from(), e.to(), lie.withSignature(h.signers.get(faulty)
                        .sign(lie.signedBytes()))));
            }
            h.held.clear();
            o = w.remountOutcome();
            if (!(o instanceof ReplicaMount.Outcome.Waiting)) {
                break;
            }
            h.drain();
            now += 1000;
            w.tick(now);
            h.replicas.values().forEach(RegionReplica::tick);
        }
        assertInstanceOf(ReplicaMount.Outcome.Mounted.class, o, String.valueOf(o));
    }

    /**
     * Review rv19-3, hostile: the faulty replica of region 1 attaches a proof to its "batch 2 committed" report. None
     * proves a commit by a leader replica of batch 2 (region 0 leads it), so none keeps the mount waiting: the mount
     * completes at the LCP (seq 1) and batch 2 is aborted.
     */
    @Test
    void aCommitProofSignedByTheReporterWithABatchInfoTheClientNeverSignedIsIgnored() {
        firstWriterDiesWithAPartialBatch();
        NodeId faulty = h.configs.get(1).replicas().get(2);
        BatchInfo mine = new BatchInfo("v", 2, 2, 3, List.of(0, 1), 1, 0, null);
        mine = mine.withSignature(h.signers.get(faulty).sign(mine.signedBytes()));
        mountsPastAFaultyCommitProof(faulty, new Message.CommitProof(ownCommit(faulty, 1), mine));
    }

    @Test
    void aGenuineCommitOfAnotherBatchByAnotherReplicaAttachedAsProofIsIgnored() {
        firstWriterDiesWithAPartialBatch();
        NodeId faulty = h.configs.get(1).replicas().get(2);
        NodeId l0 = h.configs.get(0).replicas().get(0);
        Certificate batch1 = h.disks.get(l0).decisions(0).stream().filter(c -> c.type() == CertType.TENTATIVE_COMMIT
                && c.statement(Statement.Decision.class).batchId() == 1).findFirst().orElseThrow();
        mountsPastAFaultyCommitProof(faulty, new Message.CommitProof(batch1, batchInfo(2)));
    }

    /**
     * The faulty replica even holds batch 2's genuine client-signed BatchInfo (leaked to it) and signs a matching
     * TENTATIVE_COMMIT naming its own region as the leader. Region 0's three replicas all logged batch 2's sub-batch
     * naming region 0 as its leader (client-signed; one of them is correct): the claim is not a leader's.
     */
    @Test
    void aLeakedBatchInfoWithTheReportersOwnCommitIsIgnoredWhenARegionShowsAnotherLeader() {
        firstWriterDiesWithAPartialBatch();
        NodeId faulty = h.configs.get(1).replicas().get(2);
        mountsPastAFaultyCommitProof(faulty, new Message.CommitProof(ownCommit(faulty, 1), batchInfo(2)));
    }

    /** A TENTATIVE_COMMIT of batch 2 (seqs 2..3) signed by {@code by}, naming region {@code leader} as its leader. */
    Certificate ownCommit(NodeId by, int leader) {
        return Certificate.sign(CertType.TENTATIVE_COMMIT, new Statement.Decision(true, "v", 2, 2, 3,
                new io.salus.core.cert.RegionId("v", leader), 0), h.signers.get(by));
    }

    BatchInfo batchInfo(long batch) {
        return h.sent.stream().filter(e -> e.m() instanceof Message.BatchInfoMsg b && b.info().batchId() == batch)
                .map(e -> ((Message.BatchInfoMsg) e.m()).info()).findFirst().orElseThrow();
    }

    /** Mounts with {@code faulty}'s recovery states reporting batch 2 committed with {@code proof}, re-signed by it. */
    void mountsPastAFaultyCommitProof(NodeId faulty, Message.CommitProof proof) {
        h.hold = e -> e.from().equals(faulty) && e.m() instanceof Message.RecoveryState;
        VolumeClient w = newWriterWithRecovery();
        w.beginRemount(9);
        ReplicaMount.Outcome o = null;
        int lies = 0;
        for (int i = 0; i < 30; i++) {
            h.drain();
            for (Envelope e : new ArrayList<>(h.held)) {
                Message.RecoveryState x = (Message.RecoveryState) e.m();
                Message.RecoveryState lie = new Message.RecoveryState(x.nonce(), x.volume(), x.region(),
                        x.generation(), x.replica(), x.fenceBelow(), x.pending(), x.batchInfos(), List.of(2L),
                        List.of(proof), null);
                h.deliver(new Envelope(e.from(), e.to(), lie.withSignature(h.signers.get(faulty)
                        .sign(lie.signedBytes()))));
                lies++;
            }
            h.held.clear();
            o = w.remountOutcome();
            if (!(o instanceof ReplicaMount.Outcome.Waiting)) {
                break;
            }
            h.drain();
            now += 1000;
            w.tick(now);
            h.replicas.values().forEach(RegionReplica::tick);
        }
        assertTrue(lies > 0, "the faulty replica's report was delivered");
        var m = assertInstanceOf(ReplicaMount.Outcome.Mounted.class, o, String.valueOf(o));
        assertEquals(1, m.seq());
        assertEquals(List.of(2L), List.copyOf(w.lastMountAborts()));
        for (NodeId r : h.configs.get(0).replicas()) {
            assertEquals(CertType.ABORT, h.replicas.get(r).decisionCertificate(2).type(), r + " aborted batch 2");
        }
    }

    VolumeClient newWriterWithRecoveryNoEpoch() {
        return newWriterWithRecovery();
    }

    @Test
    void aBatchWhoseBatchInfoReachedNoLeaderIsAborted() {
        assertTrue(h.client.submit(List.of(new BlockWrite(1, PipelinedCommitTest.data(1)))) > 0);
        h.drain();
        h.hold = e -> e.m() instanceof Message.BatchInfoMsg;
        assertTrue(h.client.submit(List.of(new BlockWrite(2, PipelinedCommitTest.data(2)),
                new BlockWrite(10, PipelinedCommitTest.data(3)))) > 0);
        h.drain();
        h.held.clear();
        h.hold = e -> false;
        VolumeClient w = newWriterWithRecovery();
        var m = assertInstanceOf(ReplicaMount.Outcome.Mounted.class, mount(w, 9));
        assertEquals(1, m.seq());
        for (int r = 0; r < 2; r++) {
            for (NodeId n : h.configs.get(r).replicas()) {
                assertEquals(CertType.ABORT, h.replicas.get(n).decisionCertificate(2).type(), n + " aborted batch 2");
            }
        }
    }

    /** Later batches of the dead writer after the stuck one are aborted too, whichever way their leaders learn it. */
    @Test
    void everyBatchAfterTheStuckOneIsAbortedAndNothingOfThemIsApplied() {
        assertTrue(h.client.submit(List.of(new BlockWrite(1, PipelinedCommitTest.data(1)))) > 0);
        h.drain();
        h.hold = e -> e.m() instanceof Message.SubBatchMsg s && s.subBatch().batchId() == 2 && s.subBatch().region() == 1;
        assertTrue(h.client.submit(List.of(new BlockWrite(2, PipelinedCommitTest.data(2)),
                new BlockWrite(10, PipelinedCommitTest.data(3)))) > 0);
        // batch 3 led by region 1, reaches both regions
        assertTrue(h.client.submit(List.of(new BlockWrite(12, PipelinedCommitTest.data(4)),
                new BlockWrite(4, PipelinedCommitTest.data(5)))) > 0);
        h.drain();
        h.held.clear();
        h.hold = e -> false;
        assertEquals(1, h.acked.size());
        VolumeClient w = newWriterWithRecovery();
        var m = assertInstanceOf(ReplicaMount.Outcome.Mounted.class, mount(w, 9));
        assertEquals(1, m.seq());
        for (NodeId n : h.configs.get(0).replicas()) {
            assertEquals(1, h.replicas.get(n).appliedSeq(), n + " applied nothing after seq 1");
            assertEquals(CertType.ABORT, h.replicas.get(n).decisionCertificate(2).type(), n + " aborted batch 2");
            assertEquals(CertType.ABORT, h.replicas.get(n).decisionCertificate(3).type(), n + " aborted batch 3");
        }
        for (NodeId n : h.configs.get(1).replicas()) {
            assertEquals(0, h.replicas.get(n).appliedSeq(), n + " logged neither batch");
        }
    }

    /**
     * The mount dies after its abort reached one leader replica of three (one TENTATIVE_ABORT signed, no ABORT
     * certificate): the next mount finds the same LCP recorded, asks again, and completes at it.
     */
    @Test
    void aMountThatDiesMidRecoveryIsCompletedByTheNextOne() {
        firstWriterDiesWithAPartialBatch();
        VolumeClient w1 = newWriterWithRecovery();
        w1.limitRecoverySendsForTest(2); // the fenced query and the abort to the first leader replica, then dead
        ReplicaMount.Outcome o1 = mount(w1, 9);
        assertInstanceOf(ReplicaMount.Outcome.Waiting.class, o1, "the first mount never completes: " + o1);
        assertEquals(1, leader(0).recoveryAbortsSigned());
        assertEquals(0, leader(1).recoveryAbortsSigned() + leader(2).recoveryAbortsSigned());
        for (NodeId r : h.configs.get(0).replicas()) {
            assertNull(h.replicas.get(r).decisionCertificate(2), "no ABORT certificate yet");
        }
        Coordination.Lcp recorded = w1.lastMountLcp();
        assertNotNull(recorded);
        h.net.clear(); // whatever the dead mount had in flight is gone
        VolumeClient w2 = newWriterWithRecovery();
        var m = assertInstanceOf(ReplicaMount.Outcome.Mounted.class, mount(w2, 10));
        assertEquals(recorded, w2.lastMountLcp(), "the second mount continued the recorded decision");
        assertEquals(1, m.seq());
        for (NodeId r : h.configs.get(0).replicas()) {
            assertEquals(CertType.ABORT, h.replicas.get(r).decisionCertificate(2).type());
        }
    }

    /**
     * Review rv18r: a committed batch whose COMMIT certificate has not reached one participant region yet (its
     * decisions delayed; the leaders decided it and so report no BatchInfo) is not a batch that can never commit.
     * On the code before the fix identifyLCP took it for stuck ("no replica of its leader region holds its
     * BatchInfo"), recorded an LCP without it in coordination, and once the delayed COMMIT arrived every mount of
     * that epoch (the next mount picks the same fence: nothing new was logged) was refused for ever.
     */
    @Test
    void aCommittedBatchWhoseCertificateIsStillInFlightIsNotTakenForStuck() {
        assertTrue(h.client.submit(List.of(new BlockWrite(1, PipelinedCommitTest.data(1)))) > 0);
        h.drain();
        java.util.Set<NodeId> region1 = new java.util.HashSet<>(h.configs.get(1).replicas());
        h.hold = e -> e.m() instanceof Message.DecisionMsg && region1.contains(e.to());
        assertTrue(h.client.submit(List.of(new BlockWrite(2, PipelinedCommitTest.data(2)),
                new BlockWrite(10, PipelinedCommitTest.data(3)))) > 0);
        h.drain();
        assertEquals(1, h.acked.size(), "batch 2 is decided COMMIT at its leaders, region 1 has not learned it yet");
        for (int i = 0; i < 3; i++) {
            assertEquals(CertType.COMMIT, leader(i).decisionCertificate(2).type());
        }
        List<Envelope> late = new ArrayList<>(h.held); // the COMMIT to region 1, delayed
        h.held.clear();
        VolumeClient w = newWriterWithRecovery();
        w.beginRemount(9);
        ReplicaMount.Outcome o = null;
        for (int i = 0; i < 3; i++) {
            h.drain();
            o = w.remountOutcome();
            now += 1000;
            w.tick(now);
        }
        h.hold = e -> false;
        late.forEach(h.net::add); // the delayed certificate arrives
        o = mount(w, 9);
        var m = assertInstanceOf(ReplicaMount.Outcome.Mounted.class, o, String.valueOf(o));
        assertEquals(3, m.seq(), "the committed batch 2 (seqs 2..3) is in the mounted volume");
        VolumeClient w2 = newWriterWithRecovery();
        var m2 = assertInstanceOf(ReplicaMount.Outcome.Mounted.class, mount(w2, 10));
        assertEquals(3, m2.seq());
    }

    /**
     * Review rv18r: a faulty participant replica reports an unresolved entry of a batch that does not exist (id 0, no
     * BatchInfo anywhere), below a batch its leaders committed whose COMMIT is still on its way to region 1. Taking
     * the invented batch for the first stuck one, the mount recorded an LCP inside the committed batch (region 0 had
     * applied its seq 2, region 1 not its seq 3), and once the COMMIT arrived every mount of that epoch was refused.
     * The LCP must wait for the batches its leaders committed.
     */
    @Test
    void aFaultyReplicaInventingAnEarlierStuckBatchCannotRecordAnLcpInsideACommittedOne() {
        assertTrue(h.client.submit(List.of(new BlockWrite(1, PipelinedCommitTest.data(1)))) > 0);
        h.drain();
        java.util.Set<NodeId> region1 = new java.util.HashSet<>(h.configs.get(1).replicas());
        NodeId liar = h.configs.get(1).replicas().get(2);
        java.util.function.Predicate<Envelope> liarsTruth = e -> e.m() instanceof Message.RecoveryState s
                && e.from().equals(liar) && !s.lists(0);
        java.util.function.Predicate<Envelope> commitToRegion1 = e -> e.m() instanceof Message.DecisionMsg
                && region1.contains(e.to());
        h.hold = commitToRegion1;
        assertTrue(h.client.submit(List.of(new BlockWrite(2, PipelinedCommitTest.data(2)),
                new BlockWrite(10, PipelinedCommitTest.data(3)))) > 0);
        h.drain();
        for (int i = 0; i < 3; i++) {
            assertEquals(CertType.COMMIT, leader(i).decisionCertificate(2).type());
        }
        h.hold = commitToRegion1.or(liarsTruth);
        VolumeClient w = newWriterWithRecovery();
        w.beginRemount(9);
        ReplicaMount.Outcome o = null;
        for (int i = 0; i < 30 && !(o instanceof ReplicaMount.Outcome.Mounted || o instanceof ReplicaMount.Outcome.Refused); i++) {
            if (i == 4) { // the delayed COMMIT arrives
                h.hold = liarsTruth;
                List<Envelope> late = new ArrayList<>();
                h.held.removeIf(e -> commitToRegion1.test(e) && late.add(e));
                late.forEach(h.net::add);
            }
            h.drain();
            List<Envelope> truth = new ArrayList<>();
            h.held.removeIf(e -> liarsTruth.test(e) && truth.add(e));
            for (Envelope e : truth) {
                Message.RecoveryState s = (Message.RecoveryState) e.m();
                List<Message.PendingEntry> p = new ArrayList<>(s.pending());
                p.add(0, new Message.PendingEntry(0, 0, List.of(9L)));
                Message.RecoveryState lie = new Message.RecoveryState(s.nonce(), s.volume(), s.region(), s.generation(),
                        s.replica(), s.fenceBelow(), p, s.batchInfos(), s.committed(), null);
                h.net.add(new Envelope(liar, e.to(), lie.withSignature(h.signers.get(liar).sign(lie.signedBytes()))));
            }
            h.drain();
            o = w.remountOutcome();
            now += 1000;
            w.tick(now);
            h.replicas.values().forEach(RegionReplica::tick);
        }
        var m = assertInstanceOf(ReplicaMount.Outcome.Mounted.class, o, String.valueOf(o));
        assertEquals(3, m.seq(), "the committed batch 2 (seqs 2..3) is in the mounted volume");
    }

    /**
     * Review rv18r: an abort asked of a region that does not lead the batch (a faulty participant's pending entry can
     * name any leader region, and the orchestrator sends the abort there). Its replicas hold no BatchInfo of the
     * batch and never decided it, so each signed TENTATIVE_ABORT; with three of them the participants took an ABORT
     * certificate of region 1 for batch 2, which region 0 leads and committed: the batch's leaders signed COMMIT,
     * its participants applied ABORT. A decision counts only from the batch's own leader region.
     */
    @Test
    void anAbortSignedByARegionThatDoesNotLeadTheBatchIsNotTaken() {
        assertTrue(h.client.submit(List.of(new BlockWrite(1, PipelinedCommitTest.data(1)))) > 0);
        h.drain();
        h.hold = e -> e.m() instanceof Message.Vote;
        assertTrue(h.client.submit(List.of(new BlockWrite(2, PipelinedCommitTest.data(2)),
                new BlockWrite(10, PipelinedCommitTest.data(3)))) > 0);
        h.drain(); // batch 2 logged in both regions, its votes not yet at its leaders (region 0)
        List<Envelope> votes = new ArrayList<>(h.held);
        h.held.clear();
        long fence = ReplicaMount.BATCH_ID_EPOCH;
        byte[] qs = h.signers.get(h.clientId).sign(Message.MountQuery.signedBytes("v", 5, fence));
        for (NodeId n : h.configs.get(1).replicas()) {
            h.replicas.get(n).receive(h.clientId, new Message.MountQuery(5, fence, qs));
        }
        h.coord.putLcp(new Coordination.Lcp(fence, 1, leader(0).rootRecord().root()).signed("v",
                h.signers.get(h.clientId)));
        byte[] sig = h.signers.get(h.clientId).sign(Message.RecoveryAbort.signedBytes("v", fence, 2, 1, 2, 3));
        for (NodeId n : h.configs.get(1).replicas()) {
            h.replicas.get(n).receive(h.clientId, new Message.RecoveryAbort("v", fence, 2, 1, 2, 3, List.of(), sig));
        }
        h.hold = e -> false;
        votes.forEach(h.net::add);
        h.drain();
        for (int i = 0; i < 3; i++) {
            assertEquals(CertType.TENTATIVE_COMMIT, l0Decision(leader(i), 2), "batch 2's leaders committed it");
        }
        for (int r = 0; r < 2; r++) {
            for (NodeId n : h.configs.get(r).replicas()) {
                Certificate d = h.replicas.get(n).decisionCertificate(2);
                assertNotNull(d, n + " learned batch 2's decision");
                assertEquals(CertType.COMMIT, d.type(), n + " applied the decision of batch 2's leaders: " + d);
            }
        }
    }

    /**
     * Review rv18r: the same wrong-region ABORT certificate (three TENTATIVE_ABORTs of region 1 for batch 2, which
     * region 0 leads) put on a participant replica's disk (a faulty peer's state transfer records the decisions it
     * sends once they verify against their signers' region) is not taken at the replica's restart either.
     */
    @Test
    void aWrongRegionAbortOnTheDiskIsNotTakenAtARestart() {
        assertTrue(h.client.submit(List.of(new BlockWrite(1, PipelinedCommitTest.data(1)))) > 0);
        h.drain();
        h.hold = e -> e.m() instanceof Message.Vote;
        assertTrue(h.client.submit(List.of(new BlockWrite(2, PipelinedCommitTest.data(2)),
                new BlockWrite(10, PipelinedCommitTest.data(3)))) > 0);
        h.drain();
        List<Envelope> votes = new ArrayList<>(h.held);
        h.held.clear();
        long fence = ReplicaMount.BATCH_ID_EPOCH;
        byte[] qs = h.signers.get(h.clientId).sign(Message.MountQuery.signedBytes("v", 5, fence));
        h.coord.putLcp(new Coordination.Lcp(fence, 1, leader(0).rootRecord().root()).signed("v",
                h.signers.get(h.clientId)));
        byte[] sig = h.signers.get(h.clientId).sign(Message.RecoveryAbort.signedBytes("v", fence, 2, 1, 2, 3));
        h.sent.clear();
        for (NodeId n : h.configs.get(1).replicas()) {
            h.replicas.get(n).receive(h.clientId, new Message.MountQuery(5, fence, qs));
            h.replicas.get(n).receive(h.clientId, new Message.RecoveryAbort("v", fence, 2, 1, 2, 3, List.of(), sig));
        }
        java.util.Map<NodeId, Certificate> tentatives = new java.util.LinkedHashMap<>();
        for (Envelope e : h.sent) {
            if (e.m() instanceof Message.DecisionMsg d && d.tentative().type() == CertType.TENTATIVE_ABORT) {
                tentatives.putIfAbsent(e.from(), d.tentative());
            }
        }
        assertEquals(3, tentatives.size(), "region 1's replicas signed an abort of a batch they do not lead");
        Certificate wrong = Certificate.combine(tentatives.values());
        NodeId p = h.configs.get(1).replicas().get(0);
        h.disks.get(p).recordDecision(0, wrong);
        h.net.clear();
        RegionReplica restarted = h.start(h.configs.get(1), p);
        h.hold = e -> false;
        votes.forEach(h.net::add);
        h.drain();
        for (int i = 0; i < 5; i++) {
            h.replicas.values().forEach(RegionReplica::tick);
            h.drain();
        }
        for (int i = 0; i < 3; i++) {
            assertEquals(CertType.TENTATIVE_COMMIT, l0Decision(leader(i), 2), "batch 2's leaders committed it");
        }
        Certificate d = restarted.decisionCertificate(2);
        assertNotNull(d, "the restarted replica learned batch 2's decision");
        assertEquals(CertType.COMMIT, d.type(), "it applied the decision of batch 2's leaders: " + d);
    }

    /**
     * Review rv18r: a replica's mount answers of one mount reordered by the network. Region 1's answers from before
     * batch 1's COMMIT reached it (applied nothing, batch 1 unresolved) arrive after its later ones: the mount took the
     * stale state for region 1's, recorded the LCP below batch 1 (committed at its leaders) and, once region 1's
     * answers were fresh again, was refused for ever (same fence, same recorded LCP). Only a replica's newest answer
     * of a mount counts: its resolved index never goes back.
     */
    @Test
    void aStaleMountAnswerDeliveredLateDoesNotRecordAnLcpBelowACommittedBatch() {
        java.util.Set<NodeId> region1 = new java.util.HashSet<>(h.configs.get(1).replicas());
        java.util.function.Predicate<Envelope> commitToRegion1 = e -> e.m() instanceof Message.DecisionMsg
                && region1.contains(e.to());
        h.hold = commitToRegion1;
        assertTrue(h.client.submit(List.of(new BlockWrite(1, PipelinedCommitTest.data(1)),
                new BlockWrite(9, PipelinedCommitTest.data(2)))) > 0);
        h.drain();
        h.hold = commitToRegion1.or(e -> e.m() instanceof Message.SubBatchMsg s && s.subBatch().region() == 1);
        assertTrue(h.client.submit(List.of(new BlockWrite(2, PipelinedCommitTest.data(3)),
                new BlockWrite(10, PipelinedCommitTest.data(4)))) > 0);
        h.drain();
        h.held.removeIf(e -> e.m() instanceof Message.SubBatchMsg); // the writer died before these left it
        assertEquals(0, h.acked.size());
        h.hold = commitToRegion1;
        VolumeClient w = newWriterWithRecovery();
        w.beginRemount(9);
        List<Envelope> early = new ArrayList<>();
        ReplicaMount.Outcome o = null;
        for (int i = 0; i < 30 && !(o instanceof ReplicaMount.Outcome.Mounted || o instanceof ReplicaMount.Outcome.Refused); i++) {
            int from = h.sent.size();
            h.drain();
            if (i < 3) { // region 1's fenced answers while batch 1's COMMIT is on its way, kept for a late copy
                for (Envelope e : h.sent.subList(from, h.sent.size())) {
                    if (e.m() instanceof Message.MountState s && s.fenceBelow() > 0 && region1.contains(e.from())) {
                        early.add(e);
                    }
                }
            }
            if (i == 3) {
                h.hold = e -> false;
                h.held.forEach(h.net::add);
                h.held.clear();
                h.drain();
                for (int k = 0; k < 3; k++) {
                    h.replicas.values().forEach(RegionReplica::tick);
                    w.tick(now += 1000);
                    h.drain();
                }
                early.forEach(h.net::add); // the stale copies, late
                h.drain();
            }
            o = w.remountOutcome();
            now += 1000;
            w.tick(now);
            h.replicas.values().forEach(RegionReplica::tick);
        }
        var m = assertInstanceOf(ReplicaMount.Outcome.Mounted.class, o, String.valueOf(o));
        assertEquals(2, m.seq(), "batch 1 (seqs 1..2), committed at its leaders, is in the mounted volume");
    }

    /**
     * An LCP recorded in coordination that is not the volume's committed prefix stops the mount; nothing is aborted.
     * Since review rvw23-3 only an LCP the client signed counts (one from another run of the same client, e.g. a
     * recovery of another copy of the volume); an unsigned one is passed over ({@link
     * #anLcpSquattedUnderThePredictableNextFenceDoesNotMakeACleanVolumeUnmountable}).
     */
    @Test
    void aForgedLcpInCoordinationStopsTheMountAndAbortsNothing() {
        firstWriterDiesWithAPartialBatch();
        long fence = ReplicaMount.BATCH_ID_EPOCH; // what the mount will choose: batch ids so far are below 2^32
        h.coord.putLcp(new Coordination.Lcp(fence, 0, io.salus.core.protocol.recovery.RegionLogRecovery
                .emptyVolumeRoot(h.cfg)).signed("v", h.signers.get(h.clientId)));
        VolumeClient w = newWriterWithRecovery();
        var r = assertInstanceOf(ReplicaMount.Outcome.Refused.class, mount(w, 9));
        assertTrue(r.why().contains("coordination holds the LCP seq 0"), r.why());
        for (int i = 0; i < 3; i++) {
            assertEquals(0, leader(i).recoveryAbortsSigned());
        }
    }

    /**
     * Review rvw23-3: the LCP znode is unsigned, first-writer-wins, and its path is predictable: a mount's fence (the
     * recovery epoch) is the next multiple of {@code BATCH_ID_EPOCH} above the highest batch id the replicas report,
     * and every mount checks {@code lcp/<fence>} even when nothing needs recovery. One faulty region server with the
     * coordination credentials (the model {@code Coordination#putCheckpoint} defends against) files any LCP under that
     * fence before the next open: a <em>clean</em> volume (every write committed, the writer closed) is refused, and
     * every later mount picks the same fence again (no batch id moves), so the volume can never be opened again
     * until an operator deletes the znode. Fails today: the mount is Refused ("coordination records the LCP of
     * recovery epoch ..."). Suggested fix: the mounting client signs the LCP it records; a mount and the leader
     * replicas ignore an LCP not signed by the client, and a mount whose fence's path is taken by one moves its fence
     * to the next epoch (the leader replicas hold whatever fence the client's signed query gave them).
     */
    @Test
    void anLcpSquattedUnderThePredictableNextFenceDoesNotMakeACleanVolumeUnmountable() {
        for (int b = 1; b <= 3; b++) {
            assertTrue(h.client.submit(List.of(new BlockWrite(b, PipelinedCommitTest.data(b)))) > 0);
            h.drain();
        }
        assertEquals(3, h.acked.size(), "every write committed: nothing to recover");
        long fence = ReplicaMount.BATCH_ID_EPOCH; // the next open's fence: every batch id is below 2^32
        // a faulty region server files its own value there (any value but the volume's state: here the empty volume),
        // unsigned, and one signed with its own key at the epoch after it
        h.coord.putLcp(new Coordination.Lcp(fence, 0, io.salus.core.protocol.recovery.RegionLogRecovery
                .emptyVolumeRoot(h.cfg)));
        h.coord.putLcp(new Coordination.Lcp(fence + ReplicaMount.BATCH_ID_EPOCH, 0, io.salus.core.protocol.recovery
                .RegionLogRecovery.emptyVolumeRoot(h.cfg)).signed("v", h.signers.get(leader(0).id())));
        for (int attempt = 1; attempt <= 2; attempt++) {
            VolumeClient w = newWriterWithRecovery();
            var o = mount(w, 40 + attempt);
            var m = assertInstanceOf(ReplicaMount.Outcome.Mounted.class, o, "open " + attempt + ": " + o);
            assertEquals(3, m.seq());
        }
    }

    /**
     * The leader replicas check every abort themselves: not signed by the client, a stale fence, a committed batch,
     * no LCP recorded or one that covers the batch, a batch whose BatchInfo they hold without (or with a forged)
     * proof, a range that is not the batch's: each is refused and nothing is signed. The genuine request is signed.
     */
    @Test
    void forgedStaleAndUnprovenAbortsAreRefusedByTheLeaderReplicas() {
        firstWriterDiesWithAPartialBatch();
        VolumeClient w = newWriterWithRecovery();
        w.limitRecoverySendsForTest(0); // records the LCP, sends no abort: the test sends its own
        assertInstanceOf(ReplicaMount.Outcome.Waiting.class, mount(w, 9));
        long fence = ReplicaMount.BATCH_ID_EPOCH;
        assertEquals(1, h.coord.lcp(fence).orElseThrow().seq());
        RegionReplica l0 = leader(0);
        NodeId clientId = h.clientId;
        // the states of region 1's three replicas, as they signed them for the mount: the genuine proof
        List<Message.RecoveryState> proof = new ArrayList<>();
        for (Envelope e : h.sent) {
            if (e.m() instanceof Message.RecoveryState s && s.region() == 1 && s.fenceBelow() == fence
                    && proof.stream().noneMatch(x -> x.replica().equals(s.replica()))) {
                proof.add(s);
            }
        }
        assertEquals(3, proof.size());

        // not signed by the client (a replica's key)
        NodeId rep = h.configs.get(1).primary();
        byte[] bad = h.signers.get(rep).sign(Message.RecoveryAbort.signedBytes("v", fence, 2, 0, 2, 3));
        l0.receive(clientId, new Message.RecoveryAbort("v", fence, 2, 0, 2, 3, proof, bad));
        assertRefused(l0, 1, "not signed by the client");
        // a committed batch: its decision is sent again, never an abort
        l0.receive(clientId, abort(fence, 1, 1, 1, proof));
        assertEquals(CertType.TENTATIVE_COMMIT, l0Decision(l0, 1));
        // stale fences
        l0.receive(clientId, abort(fence - 1, 2, 2, 3, proof));
        assertRefused(l0, 2, "holds fence");
        l0.receive(clientId, abort(fence + ReplicaMount.BATCH_ID_EPOCH, 2, 2, 3, proof));
        assertRefused(l0, 3, "holds fence");
        // a range that is not the batch's (its BatchInfo says 2..3)
        l0.receive(clientId, abort(fence, 2, 1, 3, proof));
        assertRefused(l0, 4, "BatchInfo says seqs 2..3");
        // no proof, and a forged proof (one state re-signed by another replica; one that lists the batch)
        l0.receive(clientId, abort(fence, 2, 2, 3, List.of()));
        assertRefused(l0, 5, "no participant region");
        List<Message.RecoveryState> forged = new ArrayList<>(proof);
        Message.RecoveryState s0 = forged.get(0);
        forged.set(0, s0.withSignature(h.signers.get(h.configs.get(0).primary()).sign(s0.signedBytes())));
        l0.receive(clientId, abort(fence, 2, 2, 3, forged));
        assertRefused(l0, 6, "no participant region");
        List<Message.RecoveryState> listing = new ArrayList<>(proof);
        Message.RecoveryState lied = new Message.RecoveryState(s0.nonce(), s0.volume(), s0.region(), s0.generation(),
                s0.replica(), s0.fenceBelow(), List.of(new Message.PendingEntry(2, 0, List.of(3L))), List.of(), null);
        listing.set(0, lied.withSignature(h.signers.get(s0.replica()).sign(lied.signedBytes())));
        l0.receive(clientId, abort(fence, 2, 2, 3, listing));
        assertRefused(l0, 7, "no participant region");
        assertNull(l0Decision(l0, 2), "nothing signed for batch 2 so far");
        // the genuine request
        l0.receive(clientId, abort(fence, 2, 2, 3, proof));
        assertEquals(1, l0.recoveryAbortsSigned());
        assertEquals(CertType.TENTATIVE_ABORT, l0Decision(l0, 2));
    }

    /** With no LCP recorded for the fence, or one that covers the batch, a leader replica aborts nothing. */
    @Test
    void anAbortWithoutARecordedLcpOrInsideItIsRefused() {
        firstWriterDiesWithAPartialBatch();
        long fence = ReplicaMount.BATCH_ID_EPOCH;
        RegionReplica l0 = leader(0);
        // fence the replica as a mount would, without recording anything
        byte[] qs = h.signers.get(h.clientId).sign(Message.MountQuery.signedBytes("v", 5, fence));
        l0.receive(h.clientId, new Message.MountQuery(5, fence, qs));
        l0.receive(h.clientId, abort(fence, 2, 2, 3, List.of()));
        assertRefused(l0, 1, "no LCP of recovery epoch");
        h.coord.putLcp(new Coordination.Lcp(fence, 3, io.salus.core.protocol.recovery.RegionLogRecovery
                .emptyVolumeRoot(h.cfg)).signed("v", h.signers.get(h.clientId)));
        l0.receive(h.clientId, abort(fence, 2, 2, 3, List.of()));
        assertRefused(l0, 2, "covers its first seq");
        assertEquals(0, l0.recoveryAbortsSigned());
    }

    Message.RecoveryAbort abort(long fence, long batch, long first, long last, List<Message.RecoveryState> proof) {
        byte[] sig = h.signers.get(h.clientId).sign(Message.RecoveryAbort.signedBytes("v", fence, batch, 0, first, last));
        return new Message.RecoveryAbort("v", fence, batch, 0, first, last, proof, sig);
    }

    static void assertRefused(RegionReplica r, long count, String why) {
        assertEquals(count, r.recoveryAbortsRefused(), r.lastRecoveryAbortRefusal());
        assertTrue(r.lastRecoveryAbortRefusal().contains(why), r.lastRecoveryAbortRefusal());
        assertEquals(0, r.recoveryAbortsSigned());
    }

    /** The type of the decision replica {@code r} signed as a leader replica for {@code batch} (from its disk), or null. */
    CertType l0Decision(RegionReplica r, long batch) {
        CertType t = null;
        for (Certificate d : h.disks.get(r.id()).decisions(0)) {
            if ((d.type() == CertType.TENTATIVE_COMMIT || d.type() == CertType.TENTATIVE_ABORT)
                    && d.signers().equals(java.util.Set.of(r.id()))
                    && d.statement(Statement.Decision.class).batchId() == batch) {
                assertNull(t, "one decision per batch");
                t = d.type();
            }
        }
        return t;
    }
}
