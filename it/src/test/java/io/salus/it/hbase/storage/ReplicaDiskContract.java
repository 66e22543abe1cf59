package io.salus.it.hbase.storage;

import static org.junit.jupiter.api.Assertions.*;

import io.salus.core.cert.CertType;
import io.salus.core.cert.Certificate;
import io.salus.core.cert.RegionId;
import io.salus.core.cert.Statement;
import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.NodeKeys;
import io.salus.core.crypto.SignatureScheme;
import io.salus.core.merkle.Hash;
import io.salus.core.merkle.VolumeRootRecord;
import io.salus.core.protocol.replica.RegionSnapshot;
import io.salus.core.protocol.replica.ReplicaDisk;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * The behaviour every {@link ReplicaDisk} keeps, as {@code InMemoryReplicaDisk} defines it (the simulator's
 * disk): one class run against the in-memory disk and against {@code HdfsReplicaDisk} on a MiniDFSCluster.
 * {@link #fresh()} gives an empty disk; {@link #reopen} the same files seen by a new instance (for the
 * in-memory disk, the same object).
 */
abstract class ReplicaDiskContract {
    abstract ReplicaDisk fresh() throws Exception;

    abstract ReplicaDisk reopen(ReplicaDisk d) throws Exception;

    /** Checkpoint files (whole snapshots and deltas) the disk holds for the generation. */
    abstract int checkpointFiles(ReplicaDisk d, long generation) throws Exception;

    static byte[] entry(long i, int len) {
        byte[] b = new byte[len];
        for (int k = 0; k < len; k++) {
            b[k] = (byte) (i * 31 + k);
        }
        return b;
    }

    static Certificate decision(long batchId, boolean commit) {
        NodeKeys k = NodeKeys.deterministic(SignatureScheme.HMAC_SHA256, NodeId.of("rs1"), 7);
        Statement.Decision st = new Statement.Decision(commit, "vol", batchId, batchId, batchId, new RegionId("vol", 0), 1);
        return Certificate.sign(commit ? CertType.TENTATIVE_COMMIT : CertType.TENTATIVE_ABORT, st, k.signer());
    }

    static VolumeRootRecord record(long seq) {
        byte[] r = new byte[Hash.LENGTH];
        r[0] = (byte) seq;
        return new VolumeRootRecord(Hash.of(r), seq);
    }

    @Test
    void appendReadLastIndexAcrossReopen() throws Exception {
        ReplicaDisk d = fresh();
        assertEquals(-1, d.lastIndex(1));
        assertNull(d.read(1, 0));
        for (long i = 0; i < 10; i++) {
            d.append(1, i, entry(i, 100 + (int) i));
        }
        d.append(2, 0, entry(99, 5)); // generations are separate logs
        d = reopen(d);
        assertEquals(9, d.lastIndex(1));
        assertEquals(0, d.lastIndex(2));
        for (long i = 0; i < 10; i++) {
            assertArrayEquals(entry(i, 100 + (int) i), d.read(1, i), "index " + i);
        }
        assertArrayEquals(entry(99, 5), d.read(2, 0));
        assertNull(d.read(1, 10));
        // appending after a reopen continues the same log
        d.append(1, 10, entry(10, 7));
        d = reopen(d);
        assertEquals(10, d.lastIndex(1));
        assertArrayEquals(entry(10, 7), d.read(1, 10));
        assertArrayEquals(entry(3, 103), d.read(1, 3));
    }

    @Test
    void laterAppendOfAnIndexReplacesTheEarlierOne() throws Exception {
        ReplicaDisk d = fresh();
        d.append(1, 0, entry(0, 10));
        d.append(1, 1, entry(1, 10));
        d.append(1, 1, entry(77, 12));
        d = reopen(d);
        assertArrayEquals(entry(77, 12), d.read(1, 1));
        assertEquals(1, d.lastIndex(1));
    }

    @Test
    void truncateLogPrefixForgetsEntriesThroughTheIndexAndKeepsTheRest() throws Exception {
        ReplicaDisk d = fresh();
        for (long i = 0; i < 8; i++) {
            d.append(1, i, entry(i, 50));
        }
        d.truncateLogPrefix(1, 4);
        for (long i = 0; i <= 4; i++) {
            assertNull(d.read(1, i), "index " + i);
        }
        d.append(1, 8, entry(8, 50));
        d = reopen(d);
        for (long i = 0; i <= 4; i++) {
            assertNull(d.read(1, i), "index " + i + " after reopen");
        }
        for (long i = 5; i <= 8; i++) {
            assertArrayEquals(entry(i, 50), d.read(1, i), "index " + i);
        }
        assertEquals(8, d.lastIndex(1));
    }

    @Test
    void decisionsComeBackInRecordingOrder() throws Exception {
        ReplicaDisk d = fresh();
        assertEquals(List.of(), d.decisions(1));
        d.recordDecision(1, decision(5, true));
        d.recordDecision(1, decision(3, false));
        d.recordDecision(2, decision(9, true));
        d = reopen(d);
        d.recordDecision(1, decision(6, true));
        List<Certificate> got = reopen(d).decisions(1);
        assertEquals(List.of(5L, 3L, 6L), got.stream().map(c -> c.statement(Statement.Decision.class).batchId()).toList());
        assertEquals(CertType.TENTATIVE_ABORT, got.get(1).type());
        assertArrayEquals(decision(5, true).encode(), got.get(0).encode());
        assertEquals(1, reopen(d).decisions(2).size());
    }

    @Test
    void checkpointsComposeFromTheStartingSnapshotAndTheDeltas() throws Exception {
        ReplicaDisk d = fresh();
        d.writeSnapshot(new RegionSnapshot(1, -1, 10, Map.of(0L, entry(0, 16), 1L, entry(1, 16)), record(10)));
        d.writeCheckpoint(1, 3, 12, Map.of(1L, entry(11, 16), 2L, entry(2, 16)), record(12));
        d.writeCheckpoint(1, 7, 15, Map.of(3L, entry(3, 16)), record(15));
        d = reopen(d);
        RegionSnapshot s = d.readSnapshot(1, 7);
        assertEquals(15, s.lastSeq());
        assertEquals(record(15), s.rootRecord());
        Map<Long, byte[]> want = new TreeMap<>(Map.of(0L, entry(0, 16), 1L, entry(11, 16), 2L, entry(2, 16), 3L, entry(3, 16)));
        assertEquals(want.keySet(), s.blocks().keySet());
        want.forEach((k, v) -> assertArrayEquals(v, s.blocks().get(k), "block " + k));
        RegionSnapshot at3 = d.readSnapshot(1, 3);
        assertArrayEquals(entry(11, 16), at3.blocks().get(1L));
        assertNull(at3.blocks().get(3L));
        assertEquals(12, at3.lastSeq());
        assertNull(d.readSnapshot(1, 5), "no checkpoint at 5");
        assertEquals(10, d.readSnapshot(1, -1).lastSeq());
        assertNull(d.readSnapshot(2, -1));
        // a whole snapshot at an index answers directly
        d.writeSnapshot(new RegionSnapshot(1, 9, 20, Map.of(4L, entry(4, 16)), record(20)));
        assertEquals(Map.of(4L, 0).keySet(), reopen(d).readSnapshot(1, 9).blocks().keySet());
    }

    /**
     * Issue 14 item 1: checkpoint GC keeps the latest whole snapshot at or below the certified index and the deltas
     * after it (a new whole snapshot every DELTAS_PER_WHOLE deltas), so the files stay bounded however many
     * checkpoints pass, and the state through every certified index (and the next, uncertified ones) still composes,
     * also after reopen. A collect for an index this disk has no checkpoint of (it is not its own) does nothing.
     */
    @Test
    void checkpointGcKeepsALatestWholeSnapshotAndTheDeltasAfterIt() throws Exception {
        ReplicaDisk d = fresh();
        d.writeSnapshot(new RegionSnapshot(1, -1, 0, Map.of(0L, entry(0, 16)), record(0)));
        Map<Long, byte[]> want = new TreeMap<>(Map.of(0L, entry(0, 16)));
        int most = 0;
        long last = -1;
        for (int c = 0; c < 30; c++) {
            long k = 4L * c + 3;
            d.collectCheckpoints(1, k); // not written yet: nothing is collected
            Map<Long, byte[]> changed = Map.of((long) (c % 5), entry(100 + c, 16), 7L, entry(200 + c, 16));
            d.writeCheckpoint(1, k, 10 + c, changed, record(10 + c));
            want.putAll(changed);
            if (c > 0) {
                d.collectCheckpoints(1, last); // the certificate lags the latest checkpoint by one
            }
            most = Math.max(most, checkpointFiles(d, 1));
            RegionSnapshot s = d.readSnapshot(1, k);
            assertNotNull(s, "state through " + k + " after GC through " + last);
            assertEquals(10 + c, s.lastSeq());
            assertEquals(want.keySet(), s.blocks().keySet());
            want.forEach((b, v) -> assertArrayEquals(v, s.blocks().get(b), "block " + b + " through " + k));
            last = k;
        }
        assertTrue(most <= ReplicaDisk.DELTAS_PER_WHOLE + 3, most + " checkpoint files for 30 checkpoints: they"
                + " accumulate");
        d = reopen(d);
        RegionSnapshot s = d.readSnapshot(1, last);
        assertEquals(want.keySet(), s.blocks().keySet());
        want.forEach((b, v) -> assertArrayEquals(v, s.blocks().get(b), "block " + b + " after reopen"));
        d.collectCheckpoints(1, last);
        assertNotNull(d.readSnapshot(1, last));
    }

    /**
     * Issue 14 item 1: decision compaction keeps, in recording order, exactly what it is told to, across reopen;
     * records made after it come after the kept ones.
     */
    @Test
    void compactDecisionsKeepsWhatItIsToldInOrder() throws Exception {
        ReplicaDisk d = fresh();
        for (long b = 0; b < 40; b++) {
            d.recordDecision(1, decision(b, b % 3 != 0));
        }
        d.recordDecision(2, decision(7, true));
        d.compactDecisions(1, c -> {
            long b = c.statement(Statement.Decision.class).batchId();
            return b >= 30 || b % 10 == 0;
        });
        List<Long> want = new java.util.ArrayList<>(List.of(0L, 10L, 20L, 30L, 31L, 32L, 33L, 34L, 35L, 36L, 37L, 38L,
                39L));
        assertEquals(want, ids(d.decisions(1)));
        d.recordDecision(1, decision(40, true));
        want.add(40L);
        d = reopen(d);
        assertEquals(want, ids(d.decisions(1)));
        assertEquals(CertType.TENTATIVE_ABORT, d.decisions(1).get(0).type());
        assertEquals(List.of(7L), ids(d.decisions(2)), "another generation is not touched");
        d.compactDecisions(1, c -> true);
        assertEquals(want, ids(reopen(d).decisions(1)));
    }

    static io.salus.core.protocol.message.BatchInfo info(long batchId) {
        NodeKeys c = NodeKeys.deterministic(SignatureScheme.HMAC_SHA256, NodeId.of("client"), 7);
        var i = new io.salus.core.protocol.message.BatchInfo("vol", batchId, batchId, batchId, List.of(0, 1), -1, -1,
                3, null);
        return i.withSignature(c.signer().sign(i.signedBytes()));
    }

    /**
     * Review rv20-1: a leader decision recorded with its client-signed BatchInfo comes back with it, byte for byte,
     * across reopen; one recorded without (an ABORT, or a record written before rv20-1 with recordDecision) loads as
     * before; the decisions themselves are unchanged; compaction keeps a BatchInfo exactly while it keeps its COMMIT.
     */
    @Test
    void leaderDecisionsKeepTheirBatchInfoAcrossReopenAndCompaction() throws Exception {
        ReplicaDisk d = fresh();
        assertEquals(List.of(), d.decisionBatchInfos(1));
        d.recordDecision(1, decision(1, true)); // as before rv20-1: no BatchInfo
        d.recordLeaderDecisions(1, List.of(decision(2, true), decision(3, false), decision(4, true)),
                java.util.Arrays.asList(info(2), null, info(4)));
        d.recordLeaderDecision(1, decision(5, true), info(5));
        d = reopen(d);
        assertEquals(List.of(1L, 2L, 3L, 4L, 5L), ids(d.decisions(1)), "the decisions, as without BatchInfos");
        assertEquals(List.of(info(2), info(4), info(5)), d.decisionBatchInfos(1));
        assertArrayEquals(info(4).clientSig(), d.decisionBatchInfos(1).get(1).clientSig());
        assertEquals(List.of(), d.decisionBatchInfos(2), "per generation");
        d.compactDecisions(1, c -> c.statement(Statement.Decision.class).batchId() != 4);
        d = reopen(d);
        assertEquals(List.of(1L, 2L, 3L, 5L), ids(d.decisions(1)));
        assertEquals(List.of(info(2), info(5)), d.decisionBatchInfos(1), "collected with its COMMIT");
    }

    static List<Long> ids(List<Certificate> l) {
        return l.stream().map(c -> c.statement(Statement.Decision.class).batchId()).toList();
    }
}
