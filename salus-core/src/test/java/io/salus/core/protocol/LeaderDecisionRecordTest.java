package io.salus.core.protocol;

import static org.junit.jupiter.api.Assertions.*;

import io.salus.core.cert.CertType;
import io.salus.core.cert.Certificate;
import io.salus.core.cert.RegionId;
import io.salus.core.cert.Statement;
import io.salus.core.crypto.NodeId;
import io.salus.core.protocol.client.BlockWrite;
import io.salus.core.protocol.message.BatchInfo;
import io.salus.core.protocol.message.Message;
import io.salus.core.protocol.replica.BatchInfoRecord;
import io.salus.core.protocol.replica.InMemoryReplicaDisk;
import io.salus.core.protocol.replica.RegionReplica;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

/**
 * Review rv20-1: a leader replica records the client-signed BatchInfo with its TENTATIVE_COMMIT and takes it back at a
 * restart, only if the client signed it and it is its COMMIT's. The disk round trip (with and without a BatchInfo,
 * records written before rv20-1, compaction, a reader that does not know the record) and the replica's reload of
 * genuine, forged, foreign and damaged records, over the harness of {@link PipelinedCommitTest} (real replicas,
 * client and in-memory disks).
 */
class LeaderDecisionRecordTest {
    final PipelinedCommitTest h = new PipelinedCommitTest();

    Certificate tentative(boolean commit, long batch, long first, long last) {
        NodeId me = h.configs.get(0).replicas().get(0);
        return Certificate.sign(commit ? CertType.TENTATIVE_COMMIT : CertType.TENTATIVE_ABORT,
                new Statement.Decision(commit, "v", batch, first, last, new RegionId("v", 0), 0), h.signers.get(me));
    }

    BatchInfo signedInfo(long batch, long first, long last, List<Integer> participants) {
        BatchInfo i = new BatchInfo("v", batch, first, last, participants, -1, -1, 0, null);
        return i.withSignature(h.signers.get(h.clientId).sign(i.signedBytes()));
    }

    @Test
    void aLeaderDecisionRoundTripsWithAndWithoutItsBatchInfo() {
        InMemoryReplicaDisk d = new InMemoryReplicaDisk();
        Certificate c1 = tentative(true, 1, 1, 2);
        Certificate a2 = tentative(false, 2, 3, 3);
        Certificate c3 = tentative(true, 3, 4, 4);
        BatchInfo i1 = signedInfo(1, 1, 2, List.of(0, 1));
        d.recordDecision(0, tentative(true, 0, 0, 0)); // a record as written before rv20-1: no BatchInfo
        d.recordLeaderDecisions(0, List.of(c1, a2), Arrays.asList(i1, null));
        d.recordLeaderDecision(0, c3, null);
        assertEquals(List.of(tentative(true, 0, 0, 0), c1, a2, c3), d.decisions(0), "the decisions, as before");
        assertEquals(List.of(i1), d.decisionBatchInfos(0), "the BatchInfo, signature and all");
        assertArrayEquals(i1.clientSig(), d.decisionBatchInfos(0).get(0).clientSig());
        assertEquals(List.of(), d.decisionBatchInfos(1), "per generation");
        // the record right after its COMMIT, and one a reader that knows nothing of it (a build before rv20-1, which
        // decodes every decision record as a certificate) skips, reading every decision unchanged
        List<byte[]> raw = d.decisionRecordBytes(0);
        assertEquals(5, raw.size());
        assertTrue(BatchInfoRecord.is(raw.get(2)));
        List<Certificate> oldReader = new ArrayList<>();
        for (byte[] b : raw) {
            try {
                oldReader.add(Certificate.decode(b));
            } catch (RuntimeException e) {
                // skipped, as decisions() always did with a record that does not decode
            }
        }
        assertEquals(d.decisions(0), oldReader);
        // compaction: a BatchInfo goes with its COMMIT
        d.compactDecisions(0, c -> c.statement(Statement.Decision.class).batchId() != 3);
        assertEquals(List.of(i1), d.decisionBatchInfos(0));
        d.compactDecisions(0, c -> c.statement(Statement.Decision.class).batchId() != 1);
        assertEquals(List.of(), d.decisionBatchInfos(0), "collected with its COMMIT");
        assertEquals(List.of(tentative(true, 0, 0, 0), a2), d.decisions(0));
        // a damaged BatchInfo record is skipped (the COMMIT loads without it), never an error
        d.recordLeaderDecision(0, c1, i1);
        d.rewriteDecisionRecords(0, b -> BatchInfoRecord.is(b) ? Arrays.copyOf(b, b.length - 3) : b);
        assertEquals(List.of(), d.decisionBatchInfos(0));
        assertEquals(List.of(tentative(true, 0, 0, 0), a2, c1), d.decisions(0));
    }

    /** Region 0's leader replica 0 after batch 1 (block 1, seq 1) committed; its disk holds COMMIT + BatchInfo. */
    NodeId commitOneBatch() {
        assertTrue(h.client.submit(List.of(new BlockWrite(1, PipelinedCommitTest.data(1)))) > 0);
        h.drain();
        assertEquals(1, h.acked.size());
        NodeId n = h.configs.get(0).replicas().get(0);
        assertEquals(1, h.disks.get(n).decisionBatchInfos(0).size(), "recorded with the COMMIT");
        return n;
    }

    /** Restarts {@code n} after {@code f} rewrote its decision records; its fenced mount answer. */
    Message.RecoveryState restartAndReport(NodeId n, UnaryOperator<byte[]> f) {
        h.disks.get(n).rewriteDecisionRecords(0, f);
        RegionReplica r = h.start(h.configs.get(0), n);
        long fence = io.salus.core.protocol.client.ReplicaMount.BATCH_ID_EPOCH;
        byte[] qs = h.signers.get(h.clientId).sign(Message.MountQuery.signedBytes("v", 5, fence));
        h.sent.clear();
        r.receive(h.clientId, new Message.MountQuery(5, fence, qs));
        return h.sent.stream().filter(e -> e.from().equals(n) && e.m() instanceof Message.RecoveryState)
                .map(e -> (Message.RecoveryState) e.m()).reduce((a, b) -> b).orElseThrow();
    }

    static UnaryOperator<byte[]> replaceInfo(UnaryOperator<BatchInfo> f) {
        return b -> BatchInfoRecord.is(b) ? BatchInfoRecord.encode(f.apply(BatchInfoRecord.decode(b))) : b;
    }

    @Test
    void aRestartedLeaderReplicaReportsItsCommitWithTheReloadedBatchInfo() {
        NodeId n = commitOneBatch();
        BatchInfo genuine = h.disks.get(n).decisionBatchInfos(0).get(0);
        Message.RecoveryState s = restartAndReport(n, b -> b);
        assertEquals(1, h.replicas.get(n).batchInfosReloaded());
        assertEquals(List.of(1L), s.committed());
        assertEquals(genuine, s.commitProofs().get(0).info(), "the proof carries the reloaded BatchInfo");
    }

    @Test
    void aRecordWithoutBatchInfoLoadsItsCommitWithoutOne() {
        NodeId n = commitOneBatch();
        Message.RecoveryState s = restartAndReport(n, b -> BatchInfoRecord.is(b) ? null : b); // as before rv20-1
        assertEquals(0, h.replicas.get(n).batchInfosReloaded());
        assertEquals(0, h.replicas.get(n).batchInfosRefusedAtReload());
        assertEquals(List.of(1L), s.committed(), "the COMMIT itself is reloaded as before");
        assertNull(s.commitProofs().get(0).info());
    }

    @Test
    void aBatchInfoRecordWithABadSignatureIsNotUsed() {
        NodeId n = commitOneBatch();
        Message.RecoveryState s = restartAndReport(n, replaceInfo(i -> {
            byte[] sig = i.clientSig().clone();
            sig[0] ^= 1;
            return i.withSignature(sig);
        }));
        RegionReplica r = h.replicas.get(n);
        assertEquals(0, r.batchInfosReloaded());
        assertEquals(1, r.batchInfosRefusedAtReload());
        assertTrue(r.lastReloadedBatchInfoRefusal().contains("not signed by the client"),
                r.lastReloadedBatchInfoRefusal());
        assertEquals(List.of(1L), s.committed());
        assertNull(s.commitProofs().get(0).info(), "the forged BatchInfo is not reported");
    }

    @Test
    void aClientSignedBatchInfoThatIsNotTheCommitsIsNotUsed() {
        NodeId n = commitOneBatch();
        // genuinely client-signed, but other seqs than the COMMIT's (another batch's, or a stale one)
        Message.RecoveryState s = restartAndReport(n, replaceInfo(i -> signedInfo(i.batchId(), 1, 2,
                i.participants())));
        assertEquals(1, h.replicas.get(n).batchInfosRefusedAtReload());
        assertTrue(h.replicas.get(n).lastReloadedBatchInfoRefusal().contains("not the BatchInfo of its COMMIT"),
                h.replicas.get(n).lastReloadedBatchInfoRefusal());
        assertNull(s.commitProofs().get(0).info());
        // one of a batch this replica never committed (no COMMIT of its own on the disk for it)
        NodeId m = h.configs.get(0).replicas().get(1);
        Message.RecoveryState s2 = restartAndReport(m, replaceInfo(i -> signedInfo(7, 1, 1, i.participants())));
        assertEquals(1, h.replicas.get(m).batchInfosRefusedAtReload());
        assertTrue(h.replicas.get(m).lastReloadedBatchInfoRefusal().contains("no COMMIT"),
                h.replicas.get(m).lastReloadedBatchInfoRefusal());
        assertNull(s2.commitProofs().get(0).info());
        // one whose participants leave out this region (it cannot be the BatchInfo its leader region got)
        NodeId k = h.configs.get(0).replicas().get(2);
        restartAndReport(k, replaceInfo(i -> signedInfo(i.batchId(), i.firstSeq(), i.lastSeq(), List.of(1))));
        assertEquals(1, h.replicas.get(k).batchInfosRefusedAtReload());
    }
}
