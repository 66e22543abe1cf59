package io.salus.core.protocol.recovery;

import io.salus.core.cert.CertType;
import io.salus.core.cert.Certificate;
import io.salus.core.cert.Statement;
import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.Signer;
import io.salus.core.crypto.Verifier;
import io.salus.core.merkle.Hash;
import io.salus.core.merkle.MerkleTree;
import io.salus.core.merkle.VolumeRootRecord;
import io.salus.core.protocol.Membership;
import io.salus.core.protocol.ProtocolConfig;
import io.salus.core.protocol.RrsConfig;
import io.salus.core.protocol.message.Put;
import io.salus.core.protocol.recovery.RegionLogRecovery.RecoveredEntry;
import io.salus.core.protocol.recovery.RegionLogRecovery.RecoveredLog;
import io.salus.core.protocol.replica.RegionSnapshot;
import java.util.HashMap;
import java.util.Map;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * identifyLCP and rebuildVolume (§3.3.4 steps 3–4), and the new RRS's unanimous adoption of the
 * rebuilt region state as the first checkpoint of the next log generation.
 */
public final class VolumeRecovery {
    private VolumeRecovery() {
    }

    /** What an RRS reports for identifyLCP from its recovered log. */
    public static Coordination.RegionReport report(RecoveredLog log) {
        SortedSet<Long> prepared = new TreeSet<>(log.seqs());
        return new Coordination.RegionReport(log.base().lastSeq(), prepared);
    }

    /**
     * identifyLCP: everything up to the largest committed (checkpointed) seq is committable; extend
     * while the next seq is prepared in some region.
     */
    public static long identifyLcp(Map<Integer, Coordination.RegionReport> reports) {
        long m = 0;
        SortedSet<Long> prepared = new TreeSet<>();
        for (Coordination.RegionReport r : reports.values()) {
            m = Math.max(m, r.committedSeq());
            prepared.addAll(r.preparedSeqs());
        }
        long n = m;
        while (prepared.contains(n + 1)) {
            n++;
        }
        return n;
    }

    /** The region state after applying the recovered log up to and including seq {@code lcp}. */
    public static RegionSnapshot rebuildRegion(ProtocolConfig cfg, RecoveredLog log, long lcp, long newGeneration) {
        Map<Long, byte[]> blocks = new TreeMap<>(log.base().blocks());
        VolumeRootRecord rec = log.base().rootRecord();
        long first = cfg.layout().firstBlock(log.old().region().index());
        // a failed write never comes back, nor anything logged after it (docs/protocol.md, "semantics
        // of a failed write")
        for (RecoveredEntry e : log.preparedEntries()) {
            for (Put p : e.subBatch().puts()) {
                if (p.seq() <= lcp) {
                    blocks.put(p.block() - first, p.data());
                    rec = rec.newer(new VolumeRootRecord(p.volumeRoot(), p.seq()));
                }
            }
        }
        return new RegionSnapshot(newGeneration, -1, rec.seq(), blocks, rec);
    }

    /** The root the client's volume tree had after seq {@code lcp} (0: empty volume). */
    public static Hash lcpRoot(ProtocolConfig cfg, Map<Integer, RecoveredLog> logs, long lcp) throws RecoveryException {
        if (lcp == 0) {
            return RegionLogRecovery.emptyVolumeRoot(cfg);
        }
        for (RecoveredLog log : logs.values()) {
            if (log.base().rootRecord().seq() == lcp) {
                return log.base().rootRecord().root();
            }
            // the prepared entries only: a later writer reuses the seqs of the aborted entries after the LCP of its
            // mount, so an aborted entry may hold a PUT with the same seq and another root (review rv19)
            for (RecoveredEntry e : log.preparedEntries()) {
                for (Put p : e.subBatch().puts()) {
                    if (p.seq() == lcp) {
                        return p.volumeRoot();
                    }
                }
            }
        }
        throw new RecoveryException("no region holds the PUT with LCP seq " + lcp);
    }

    /**
     * Result of identifyLCP + rebuildVolume. {@code logs} are the recovered logs with every region's
     * ABORT proofs shared (what the new replicas endorse).
     */
    public record Rebuilt(Coordination.Lcp lcp, Map<Integer, RegionSnapshot> regions, Map<Integer, RecoveredLog> logs) {
    }

    /**
     * A batch's ABORT certificate may have been recorded by only one participant region's replicas;
     * it proves every sub-batch of the batch aborted. Shares all proven aborts across the regions: those bound to a
     * recovered entry and every ABORT the old replicas recorded ({@link RecoveredLog#recordedAborts}), also one whose
     * region's entry of the batch is not in the recovered log. A participant region answers PUT_FAILED once its
     * entry's ABORT mark is durable, which needs only its replicas' own logs, not the entry's LOG_ENTRY certificate
     * at the holders; and another participant region writes its marks in log order, so its entry of the batch may be
     * recovered unmarked behind an undecided batch. Sharing only the bound aborts let the LCP take such a batch's
     * writes back after the client was told it failed (task sim19).
     */
    public static Map<Integer, RecoveredLog> shareAborts(ProtocolConfig cfg, Verifier verifier, Membership membership,
                                                         Map<Integer, RecoveredLog> logs) {
        java.util.LinkedHashSet<Certificate> aborts = new java.util.LinkedHashSet<>();
        for (RecoveredLog l : logs.values()) {
            for (RecoveredEntry e : l.entries()) {
                if (e.aborted()) {
                    aborts.add(e.abort());
                }
            }
            aborts.addAll(l.recordedAborts());
        }
        Map<Integer, RecoveredLog> out = new TreeMap<>();
        logs.forEach((r, l) -> out.put(r, RegionLogRecovery.withAborts(cfg, verifier, membership, l, aborts)));
        return out;
    }

    /**
     * Shares the proven aborts across regions, reports each region, identifies the LCP, records it in coordination, rebuilds every region and
     * checks that the region roots rebuild the LCP root (mount-protocol check).
     */
    public static Rebuilt identifyAndRebuild(ProtocolConfig cfg, Verifier verifier, Membership membership,
                                             Coordination coord, long epoch, Map<Integer, RecoveredLog> recovered)
            throws RecoveryException {
        Map<Integer, RecoveredLog> logs = shareAborts(cfg, verifier, membership, recovered);
        for (Map.Entry<Integer, RecoveredLog> e : logs.entrySet()) {
            coord.report(epoch, e.getKey(), report(e.getValue()));
        }
        Map<Integer, Coordination.RegionReport> reports = coord.reports(epoch);
        if (reports.size() != cfg.regionCount()) {
            throw new RecoveryException("LCP file incomplete: " + reports.size() + " of " + cfg.regionCount()
                    + " regions reported");
        }
        long lcp = identifyLcp(reports);
        Coordination.Lcp agreed = coord.putLcp(new Coordination.Lcp(epoch, lcp, lcpRoot(cfg, logs, lcp)));
        Map<Integer, RegionSnapshot> regions = new TreeMap<>();
        Map<Long, Hash> roots = new HashMap<>();
        for (Map.Entry<Integer, RecoveredLog> e : logs.entrySet()) {
            RegionSnapshot s = rebuildRegion(cfg, e.getValue(), agreed.seq(), e.getValue().old().generation() + 1);
            regions.put(e.getKey(), s);
            roots.put((long) e.getKey(), s.regionRoot(cfg.hash(), cfg.blockSize(), cfg.layout()));
        }
        Hash rebuilt = MerkleTree.rootFromRegionRoots(cfg.hash(), cfg.blockSize(), cfg.layout().volumeBlocks(),
                cfg.layout().regionLevel(), roots);
        if (!rebuilt.equals(agreed.root())) {
            throw new RecoveryException("rebuildVolume: region roots give " + rebuilt + ", LCP root is "
                    + agreed.root());
        }
        return new Rebuilt(agreed, regions, logs);
    }

    /**
     * What one replica of the new RRS does to consent: check that the log is of the previous
     * generation of its own region as {@code membership} records it (not a configuration the
     * orchestrator made up), verify the recovered log independently,
     * rebuild the region state itself, and sign TENTATIVE_CHECKPOINT(new generation, -1, seq, root).
     * Three matching tentatives form the generation's first CHECKPOINT certificate.
     */
    public static Certificate endorse(ProtocolConfig cfg, Verifier verifier, NodeId clientId, Signer signer,
                                      RrsConfig newConfig, Membership membership,
                                      RecoveredLog log, Coordination.Lcp lcp)
            throws RecoveryException {
        RrsConfig previous = membership.config(newConfig.region(), newConfig.generation() - 1);
        if (!log.old().region().equals(newConfig.region()) || log.old().generation() != newConfig.generation() - 1
                || !log.old().equals(previous)) {
            throw new RecoveryException(newConfig.region() + " generation " + newConfig.generation()
                    + ": the recovered log is of " + log.old().region() + " generation " + log.old().generation()
                    + " with replicas " + log.old().replicas() + ", not of the previous generation " + previous);
        }
        RegionLogRecovery.verify(cfg, verifier, clientId, membership, log);
        RegionSnapshot s = rebuildRegion(cfg, log, lcp.seq(), newConfig.generation());
        return Certificate.sign(CertType.TENTATIVE_CHECKPOINT, new Statement.Checkpoint(newConfig.region(),
                newConfig.generation(), -1, s.lastSeq(), s.regionRoot(cfg.hash(), cfg.blockSize(), cfg.layout()),
                s.rootRecord().root()), signer);
    }
}
