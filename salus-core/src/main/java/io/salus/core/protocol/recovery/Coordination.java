package io.salus.core.protocol.recovery;

import io.salus.core.cert.Certificate;
import io.salus.core.cert.RegionId;
import io.salus.core.merkle.Hash;
import java.util.Map;
import java.util.Optional;

/**
 * The trusted coordination service of §3.3.4 (ZooKeeper for LCP coordination, NameNode xattrs for
 * checkpoint certificates). {@link InMemoryCoordination} now; the ZooKeeper/NameNode implementation
 * comes with the HBase integration.
 */
public interface Coordination {
    /** What one RRS reports for identifyLCP: its checkpointed (committed) seq and prepared seqs. */
    record RegionReport(long committedSeq, java.util.SortedSet<Long> preparedSeqs) {
    }

    /** The agreed longest committable prefix: last seq and the volume root after it. */
    record Lcp(long epoch, long seq, Hash root) {
    }

    /** Stores a CHECKPOINT certificate if it is newer (generation, then index) than the stored one. */
    void putCheckpoint(Certificate checkpoint);

    Optional<Certificate> latestCheckpoint(RegionId region);

    /** An RRS writes its report for recovery {@code epoch}. */
    void report(long epoch, int region, RegionReport report);

    /** All reports of {@code epoch} (the "file is complete" once every region has one). */
    Map<Integer, RegionReport> reports(long epoch);

    /** Records the LCP of {@code lcp.epoch()} (first writer wins). Returns the stored value. */
    Lcp putLcp(Lcp lcp);

    Optional<Lcp> lcp(long epoch);
}
