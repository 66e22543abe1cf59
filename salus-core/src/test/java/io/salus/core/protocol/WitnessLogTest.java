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
import io.salus.core.merkle.HashAlgorithm;
import io.salus.core.protocol.witness.InMemoryCertificateStore;
import io.salus.core.protocol.witness.WitnessLog;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class WitnessLogTest {
    final RegionId region = new RegionId("v", 0);
    final KeyDirectory dir = new KeyDirectory(SignatureScheme.HMAC_SHA256);
    final List<NodeKeys> rs = List.of(key("rs0"), key("rs1"), key("rs2"));
    final NodeKeys outsider = key("rs9");
    final NodeKeys w = key("w0");
    final InMemoryCertificateStore store = new InMemoryCertificateStore();
    final WitnessLog log = new WitnessLog(w.signer(), dir, store,
            (r, g) -> g == 4 ? Set.of(rs.get(0).id(), rs.get(1).id(), rs.get(2).id()) : null);

    NodeKeys key(String n) {
        NodeKeys k = NodeKeys.deterministic(SignatureScheme.HMAC_SHA256, NodeId.of(n), 3);
        dir.register(k);
        return k;
    }

    Certificate tentative(NodeKeys k, long index, int digestSeed) {
        return Certificate.sign(CertType.TENTATIVE_LOG_ENTRY, new Statement.LogEntry(region, 4, index,
                HashAlgorithm.SHA256.hash(new byte[] {(byte) digestSeed}), 10), k.signer());
    }

    @Test
    void combinesThreeMatchingTentativesOnly() {
        assertEquals(WitnessLog.Offer.PENDING, log.offer(tentative(rs.get(0), 0, 1)));
        assertEquals(WitnessLog.Offer.PENDING, log.offer(tentative(rs.get(1), 0, 2)), "different digest");
        assertEquals(WitnessLog.Offer.REJECTED, log.offer(tentative(outsider, 0, 1)), "not an RRS member");
        assertEquals(WitnessLog.Offer.PENDING, log.offer(tentative(rs.get(2), 0, 1)));
        assertEquals(0, store.size());
        assertEquals(WitnessLog.Offer.PENDING, log.offer(tentative(rs.get(1), 1, 1)), "other slot");
        // rs1 already voted a different digest at index 0: no LOG_ENTRY can form there
        assertEquals(WitnessLog.Offer.PENDING, log.offer(tentative(rs.get(1), 0, 1)));

        log.offer(tentative(rs.get(0), 1, 1));
        assertEquals(WitnessLog.Offer.STORED, log.offer(tentative(rs.get(2), 1, 1)));
        Certificate le = log.query(region, 4, 1);
        assertEquals(CertType.LOG_ENTRY, le.type());
        assertTrue(le.verify(dir, Set.of(rs.get(0).id(), rs.get(1).id(), rs.get(2).id())));
        Certificate q = log.query(region, 4, 0); // (this seals index 0 of generation 4 here)
        assertEquals(CertType.NO_NEXT_ENTRY, q.type());
        assertTrue(q.verify(dir, Set.of(w.id())));
        assertEquals(WitnessLog.Offer.STORED, log.offer(tentative(rs.get(0), 1, 1)), "repeat acks again");
        assertEquals(WitnessLog.Offer.REJECTED, log.offer(tentative(rs.get(0), 1, 7)), "conflicts with stored");
        assertEquals(WitnessLog.Offer.REJECTED, log.offer(Certificate.sign(CertType.TENTATIVE_LOG_ENTRY,
                new Statement.LogEntry(region, 5, 0, HashAlgorithm.SHA256.hash(new byte[1]), 1),
                rs.get(0).signer())), "unknown generation");
    }

    /**
     * Review: a NO_NEXT_ENTRY is a signed promise ("no entry at index, nor after it"). With the
     * recovery orchestrator in main code, recovery runs while the old replicas may still be running
     * (a partitioned region server, a client still retransmitting). A holder that told recovery
     * "nothing at 3" and then stores and acknowledges a LOG_ENTRY at 3 lets the old replicas collect
     * their 5 acks, vote YES, commit and acknowledge a write that the recovered log (and the LCP)
     * do not contain: the new generation starts without an acknowledged write.
     */
    @Test
    void aSlotAnsweredWithNoNextEntryStaysEmpty() {
        Certificate end = log.query(region, 4, 3);
        assertEquals(CertType.NO_NEXT_ENTRY, end.type());
        for (NodeKeys r : rs) {
            assertNotEquals(WitnessLog.Offer.STORED, log.offer(tentative(r, 3, 1)),
                    "stored an entry where it had signed that there is none");
        }
        assertEquals(CertType.NO_NEXT_ENTRY, log.query(region, 4, 3).type());
        for (NodeKeys r : rs) { // nor after it, in that generation
            assertNotEquals(WitnessLog.Offer.STORED, log.offer(tentative(r, 4, 1)), "stored past the sealed index");
        }
        // a fresh WitnessLog over the same store (the witness restarted) keeps the promise too
        WitnessLog restarted = new WitnessLog(w.signer(), dir, store,
                (r, g) -> g == 4 ? Set.of(rs.get(0).id(), rs.get(1).id(), rs.get(2).id()) : null);
        Certificate combined = null;
        java.util.List<Certificate> t = new java.util.ArrayList<>();
        for (NodeKeys r : rs) {
            t.add(tentative(r, 3, 1));
        }
        combined = Certificate.combine(t);
        assertEquals(WitnessLog.Offer.REJECTED, restarted.offer(combined));
    }

    /**
     * Issue 14 item 1, witness GC: LOG_ENTRY certificates are dropped only through a CHECKPOINT certificate that
     * verifies here, signed by the three replicas of the generation it names. Forged (an outsider's or a garbage third
     * signature), partly signed (one TENTATIVE_CHECKPOINT), tampered (a real certificate's signatures over a higher
     * index), another type (a LOG_ENTRY), stale (generation 5's log named, signed by generation 4's replicas, one of
     * which generation 5 replaced) and unknown-generation certificates drop nothing; the real one drops its own log's
     * entries through its index and nothing of the other generation.
     */
    @Test
    void onlyAVerifiedCheckpointCertificateDropsLogEntries() {
        NodeKeys replacement = key("rs3");
        InMemoryCertificateStore st = new InMemoryCertificateStore();
        WitnessLog wl = new WitnessLog(w.signer(), dir, st, (r, g) -> g == 4
                ? Set.of(rs.get(0).id(), rs.get(1).id(), rs.get(2).id())
                : g == 5 ? Set.of(rs.get(0).id(), rs.get(1).id(), replacement.id()) : null);
        for (long gen : new long[] {4, 5}) {
            List<NodeKeys> members = gen == 4 ? rs : List.of(rs.get(0), rs.get(1), replacement);
            for (long i = 0; i < 6; i++) {
                for (NodeKeys k : members) {
                    wl.offer(Certificate.sign(CertType.TENTATIVE_LOG_ENTRY, new Statement.LogEntry(region, gen, i,
                            HashAlgorithm.SHA256.hash(new byte[] {(byte) i}), 10), k.signer()));
                }
            }
        }
        assertEquals(12, st.size());
        var root = HashAlgorithm.SHA256.hash(new byte[] {1});
        Statement.Checkpoint through3 = new Statement.Checkpoint(region, 4, 3, 40, root, root);
        Certificate real = Certificate.combine(List.of(
                Certificate.sign(CertType.TENTATIVE_CHECKPOINT, through3, rs.get(0).signer()),
                Certificate.sign(CertType.TENTATIVE_CHECKPOINT, through3, rs.get(1).signer()),
                Certificate.sign(CertType.TENTATIVE_CHECKPOINT, through3, rs.get(2).signer())));
        List<Certificate.Sig> two = real.signatures().subList(0, 2);
        List<Certificate.Sig> withOutsider = new java.util.ArrayList<>(two);
        withOutsider.addAll(Certificate.sign(CertType.TENTATIVE_CHECKPOINT, through3, outsider.signer()).signatures());
        List<Certificate.Sig> withGarbage = new java.util.ArrayList<>(two);
        withGarbage.add(new Certificate.Sig(rs.get(2).id(), new byte[real.signatures().get(2).bytes().length]));
        Statement.Checkpoint gen5 = new Statement.Checkpoint(region, 5, 5, 60, root, root);
        Statement.Checkpoint gen6 = new Statement.Checkpoint(region, 6, 5, 60, root, root);
        List<Certificate> bad = List.of(
                Certificate.of(CertType.CHECKPOINT, real.scheme(), through3, withOutsider),
                Certificate.of(CertType.CHECKPOINT, real.scheme(), through3, withGarbage),
                Certificate.sign(CertType.TENTATIVE_CHECKPOINT, through3, rs.get(0).signer()),
                Certificate.of(CertType.CHECKPOINT, real.scheme(), new Statement.Checkpoint(region, 4, 5, 40, root,
                        root), real.signatures()),
                wl.query(region, 4, 2),
                Certificate.combine(List.of(
                        Certificate.sign(CertType.TENTATIVE_CHECKPOINT, gen5, rs.get(0).signer()),
                        Certificate.sign(CertType.TENTATIVE_CHECKPOINT, gen5, rs.get(1).signer()),
                        Certificate.sign(CertType.TENTATIVE_CHECKPOINT, gen5, rs.get(2).signer()))),
                Certificate.combine(List.of(
                        Certificate.sign(CertType.TENTATIVE_CHECKPOINT, gen6, rs.get(0).signer()),
                        Certificate.sign(CertType.TENTATIVE_CHECKPOINT, gen6, rs.get(1).signer()),
                        Certificate.sign(CertType.TENTATIVE_CHECKPOINT, gen6, rs.get(2).signer()))));
        for (Certificate c : bad) {
            assertFalse(wl.truncate(c), "accepted " + c);
            assertEquals(12, st.size(), "dropped entries for " + c);
        }
        assertTrue(wl.truncate(real));
        for (long i = 0; i < 6; i++) {
            assertEquals(i > 3, st.get(region, 4, i).isPresent(), "generation 4 index " + i);
            assertTrue(st.get(region, 5, i).isPresent(), "generation 5 index " + i + " (another log)");
        }
    }
}
