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
        Certificate q = log.query(region, 4, 0);
        assertEquals(CertType.NO_NEXT_ENTRY, q.type());
        assertTrue(q.verify(dir, Set.of(w.id())));

        log.offer(tentative(rs.get(0), 1, 1));
        assertEquals(WitnessLog.Offer.STORED, log.offer(tentative(rs.get(2), 1, 1)));
        Certificate le = log.query(region, 4, 1);
        assertEquals(CertType.LOG_ENTRY, le.type());
        assertTrue(le.verify(dir, Set.of(rs.get(0).id(), rs.get(1).id(), rs.get(2).id())));
        assertEquals(WitnessLog.Offer.STORED, log.offer(tentative(rs.get(0), 1, 1)), "repeat acks again");
        assertEquals(WitnessLog.Offer.REJECTED, log.offer(tentative(rs.get(0), 1, 7)), "conflicts with stored");
        assertEquals(WitnessLog.Offer.REJECTED, log.offer(Certificate.sign(CertType.TENTATIVE_LOG_ENTRY,
                new Statement.LogEntry(region, 5, 0, HashAlgorithm.SHA256.hash(new byte[1]), 1),
                rs.get(0).signer())), "unknown generation");
    }
}
