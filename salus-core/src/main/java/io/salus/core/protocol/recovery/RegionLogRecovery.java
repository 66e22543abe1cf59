package io.salus.core.protocol.recovery;

import io.salus.core.cert.CertType;
import io.salus.core.cert.Certificate;
import io.salus.core.cert.RegionId;
import io.salus.core.cert.Statement;
import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.Verifier;
import io.salus.core.merkle.Hash;
import io.salus.core.protocol.Membership;
import io.salus.core.protocol.Mutation;
import io.salus.core.protocol.ProtocolConfig;
import io.salus.core.protocol.RrsConfig;
import io.salus.core.protocol.message.SubBatch;
import io.salus.core.protocol.replica.RegionSnapshot;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * recoverRegionLog (§3.3.4 step 2). Starting after the region's latest CHECKPOINT certificate (whose
 * snapshot is read from any DataNode whose logical digest matches), for each position ask the 5
 * metadata holders of the old configuration and take the first 3 valid answers: a LOG_ENTRY for that
 * exact position signed by the 3 old replicas, or a NO_NEXT_ENTRY signed by the answering holder. If
 * any answer is a LOG_ENTRY, read the bytes from any DataNode whose bytes match its digest; if all
 * three say "no next entry", the log ends. The result carries its proofs so that every replica of the
 * new RRS checks it independently ({@link #verify}) before unanimously adopting it.
 */
public final class RegionLogRecovery {
    private RegionLogRecovery() {
    }

    /** A DataNode-side store or witness being asked; null answer = no response. */
    public interface MetadataHolder {
        NodeId id();

        Certificate query(RegionId region, long generation, long index);
    }

    /** A DataNode holding a replica's files of the old configuration; null answers = unavailable. */
    public interface DataSource {
        byte[] readEntry(long generation, long index);

        RegionSnapshot readSnapshot(long generation, long throughIndex);

        /**
         * The decision records of the replica's generation ({@link
         * io.salus.core.protocol.replica.ReplicaDisk#decisions}); null or empty if unavailable.
         */
        List<Certificate> readDecisions(long generation);
    }

    /**
     * A recovered log entry. {@code abort} is the batch leader's ABORT certificate for its batch if
     * one of the old replicas recorded it (the entry was logged, then aborted), else null. {@code commit} is the
     * batch leader's COMMIT certificate for its batch if one of the old replicas recorded it as the entry's commit
     * mark, else null (review rv19: what keeps an entry logged after an aborted one in the prepared prefix, see
     * {@link RecoveredLog#preparedEntries}).
     */
    public record RecoveredEntry(long index, Certificate logEntry, byte[] bytes, SubBatch subBatch,
                                 Certificate abort, Certificate commit) {
        public RecoveredEntry(long index, Certificate logEntry, byte[] bytes, SubBatch subBatch) {
            this(index, logEntry, bytes, subBatch, null, null);
        }

        public RecoveredEntry(long index, Certificate logEntry, byte[] bytes, SubBatch subBatch, Certificate abort) {
            this(index, logEntry, bytes, subBatch, abort, null);
        }

        public boolean aborted() {
            return abort != null;
        }

        /** True if a recorded COMMIT certificate of its batch is bound to it (checked by {@link #decisionProblem}). */
        public boolean committed() {
            return commit != null;
        }
    }

    /**
     * The recovered region log with its proofs. {@code recordedAborts} are the ABORT certificates of this volume
     * that the old replicas recorded ({@link DataSource#readDecisions}), whether or not they bind to an entry of
     * this log: a participant region may record a batch's ABORT for an entry recovery does not find in its log (the
     * entry never got its LOG_ENTRY certificate at the holders) while another participant region's entry of the same
     * batch is recovered without a mark (its marks are written in log order, behind an undecided batch).
     * {@link VolumeRecovery#shareAborts} gives them to every region; each binds only if {@link #abortProblem} accepts it.
     */
    public record RecoveredLog(RrsConfig old, RegionSnapshot base, Certificate baseCertificate,
                               List<RecoveredEntry> entries, List<Certificate> endProof,
                               List<Certificate> recordedAborts) {
        public RecoveredLog(RrsConfig old, RegionSnapshot base, Certificate baseCertificate,
                            List<RecoveredEntry> entries, List<Certificate> endProof) {
            this(old, base, baseCertificate, entries, endProof, List.of());
        }

        /**
         * The prepared seqs: those of the recovered entries before the first entry proven aborted.
         * Every later entry belongs to a later batch (the prevNum chain orders the log), which the
         * COMMIT-CONFIRMATION chain aborted too, so it is not prepared either.
         */
        public SortedSeqs seqs() {
            SortedSeqs s = new SortedSeqs();
            for (RecoveredEntry e : preparedEntries()) {
                e.subBatch().puts().forEach(p -> s.add(p.seq()));
            }
            return s;
        }

        /**
         * The entries before the first one proven aborted, and after it those of a new batch chain: from the first
         * entry proven committed (a recorded COMMIT certificate of its batch) or of a higher batch-id epoch. Within one writer's batch chain every entry after an aborted one is aborted
         * too (COMMIT-CONFIRMATION), but a later writer (a mount that aborted the previous writer's batches after its
         * LCP, or the same client remounted after a proven abort) starts a new chain in the same log generation, right
         * after the aborted entries (review rv19 finding 1: a full recovery before the region's next checkpoint
         * dropped that writer's acknowledged batches). An acknowledged sub-batch always has its COMMIT mark on its
         * region's DataNodes (each replica records it before it answers PUT_SUCCESS); one of the aborted chain never
         * has one (its leaders sign ABORT).
         */
        public List<RecoveredEntry> preparedEntries() {
            List<RecoveredEntry> out = new ArrayList<>();
            long skippedEpoch = -1; // the batch-id epoch of the aborted chain being skipped, -1: none
            for (RecoveredEntry e : entries) {
                long epoch = Math.floorDiv(e.subBatch().batchId(),
                        io.salus.core.protocol.client.ReplicaMount.BATCH_ID_EPOCH);
                if (e.aborted()) {
                    skippedEpoch = Math.max(skippedEpoch, epoch);
                    continue;
                }
                if (skippedEpoch >= 0) {
                    if (!e.committed() && epoch <= skippedEpoch) {
                        continue; // a later batch of the aborted chain (or not known to be of a new one)
                    }
                    // a new chain: a later writer's batch ids start at its mount's fence, in a higher batch-id epoch
                    // (ReplicaMount.BATCH_ID_EPOCH); a client remounted without a fence continues its ids, but an
                    // entry of its new chain with a COMMIT proof ends the aborted one (every entry of that chain
                    // precedes it in the log: the client sends none of it again once remounted)
                    skippedEpoch = -1;
                }
                out.add(e);
            }
            return out;
        }
    }

    /** A sorted set of seqs. */
    public static final class SortedSeqs extends java.util.TreeSet<Long> {
    }

    /**
     * Recovers the log of {@code old}'s region.
     *
     * @param checkpoint latest CHECKPOINT certificate of the region (required for generation &gt; 0)
     * @param holders    the 5 metadata holders, in the order their answers arrive
     * @param dataNodes  the 3 DataNodes of the old configuration, in the order they are tried
     */
    public static RecoveredLog recover(ProtocolConfig cfg, Verifier verifier, NodeId clientId, Membership membership,
                                       RrsConfig old,
                                       Optional<Certificate> checkpoint, List<MetadataHolder> holders,
                                       List<DataSource> dataNodes) throws RecoveryException {
        RegionId region = old.region();
        long gen = old.generation();
        RegionSnapshot base;
        Certificate baseCert = null;
        if (checkpoint.isPresent() && checkpoint.get().statement(Statement.Checkpoint.class).generation() == gen) {
            baseCert = checkpoint.get();
            Statement.Checkpoint cp = baseCert.statement(Statement.Checkpoint.class);
            String why = checkpointProblem(cfg, verifier, old, baseCert);
            if (why != null) {
                throw new RecoveryException(region + ": the latest checkpoint certificate is not usable: " + why);
            }
            base = null;
            for (DataSource d : dataNodes) {
                RegionSnapshot s = d.readSnapshot(gen, cp.throughIndex());
                // the certificate binds the snapshot's volume-root record (seq and root): one DataNode
                // cannot make recovery adopt a forged LCP root or the new replicas wait for a later seq
                if (s != null && s.mismatch(cp, cfg.hash(), cfg.blockSize(), cfg.layout()) == null) {
                    base = s;
                    break;
                }
            }
            if (base == null) {
                throw new RecoveryException(region + ": no DataNode has the checkpoint matching " + cp);
            }
        } else if (gen == 0) {
            base = RegionSnapshot.empty(0, emptyVolumeRoot(cfg));
        } else {
            throw new RecoveryException(region + ": no checkpoint certificate for generation " + gen);
        }
        List<RecoveredEntry> entries = new ArrayList<>();
        long index = base.throughIndex() + 1;
        long expectedPrev = base.lastSeq();
        while (true) {
            List<Certificate> valid = new ArrayList<>();
            for (MetadataHolder h : holders) {
                if (valid.size() == 3) {
                    break;
                }
                Certificate c;
                try {
                    c = h.query(region, gen, index);
                } catch (RuntimeException e) {
                    continue; // garbage answer
                }
                if (c != null && validAnswer(cfg, verifier, old, h.id(), c, index)) {
                    valid.add(c);
                    if (cfg.mutated(Mutation.STOP_AT_FIRST_NO_NEXT_ENTRY) && c.type() == CertType.NO_NEXT_ENTRY) {
                        break;
                    }
                }
            }
            Certificate logEntry = null;
            for (Certificate c : valid) {
                if (c.type() == CertType.LOG_ENTRY) {
                    logEntry = c;
                    break;
                }
            }
            if (logEntry == null) {
                boolean stopEarly = cfg.mutated(Mutation.STOP_AT_FIRST_NO_NEXT_ENTRY) && !valid.isEmpty();
                if (valid.size() < 3 && !stopEarly) {
                    throw new RecoveryException(region + ": only " + valid.size() + " valid answers for log index "
                            + index + " (need 3)");
                }
                List<Certificate> recorded = recordedDecisions(cfg, old, dataNodes);
                List<Certificate> recordedAborts = ofType(recorded, CertType.ABORT);
                RecoveredLog log = new RecoveredLog(old, base, baseCert, withCommits(cfg, verifier, membership, old,
                        entries, ofType(recorded, CertType.COMMIT)), valid, recordedAborts);
                return withAborts(cfg, verifier, membership, log, recordedAborts);
            }
            Statement.LogEntry st = logEntry.statement(Statement.LogEntry.class);
            RecoveredEntry e = null;
            for (DataSource d : dataNodes) {
                byte[] b = d.readEntry(gen, st.index());
                if (b != null && b.length == st.length() && cfg.hash().hash(b).equals(st.digest())) {
                    SubBatch sb;
                    try {
                        sb = SubBatch.decode(b);
                    } catch (IllegalArgumentException ex) {
                        continue;
                    }
                    e = new RecoveredEntry(index, logEntry, b, sb);
                    break;
                }
            }
            if (e == null) {
                throw new RecoveryException(region + ": no DataNode holds bytes matching " + st);
            }
            if (!cfg.mutated(Mutation.REPLAY_WITHOUT_POSITION_CHECK)
                    && e.subBatch().puts().get(0).prevNum() != expectedPrev) {
                throw new RecoveryException(region + ": entry " + index + " does not follow seq " + expectedPrev);
            }
            expectedPrev = e.subBatch().lastSeq();
            entries.add(e);
            index++;
        }
    }

    /**
     * The log with every entry marked aborted for which one of {@code aborts} is a valid proof (see
     * {@link #abortProblem}). Used to share the ABORT certificates one region's replicas recorded
     * with the other participant regions of the same batch.
     */
    public static RecoveredLog withAborts(ProtocolConfig cfg, Verifier verifier, Membership membership,
                                          RecoveredLog log, java.util.Collection<Certificate> aborts) {
        List<RecoveredEntry> out = new ArrayList<>();
        for (RecoveredEntry e : log.entries()) {
            Certificate abort = e.abort() != null ? e.abort()
                    : bound(cfg, verifier, membership, log.old(), e.subBatch(), aborts, CertType.ABORT);
            out.add(new RecoveredEntry(e.index(), e.logEntry(), e.bytes(), e.subBatch(), abort, e.commit()));
        }
        return new RecoveredLog(log.old(), log.base(), log.baseCertificate(), out, log.endProof(),
                log.recordedAborts());
    }

    /**
     * The ABORT and COMMIT certificates of this volume among the decision records of {@code old}'s DataNodes (each
     * distinct one once; every DataNode read once). Not checked here: one counts only where {@link #decisionProblem}
     * binds it to an entry.
     */
    private static List<Certificate> recordedDecisions(ProtocolConfig cfg, RrsConfig old, List<DataSource> dataNodes) {
        java.util.LinkedHashSet<Certificate> records = new java.util.LinkedHashSet<>();
        for (DataSource d : dataNodes) {
            List<Certificate> r;
            try {
                r = d.readDecisions(old.generation());
            } catch (RuntimeException e) {
                continue; // unreadable: as if unavailable
            }
            if (r != null) {
                for (Certificate c : r) {
                    if (c != null && (c.type() == CertType.ABORT || c.type() == CertType.COMMIT)
                            && c.statement(Statement.Decision.class).volume().equals(cfg.volume())) {
                        records.add(c);
                    }
                }
            }
        }
        return List.copyOf(records);
    }

    private static List<Certificate> ofType(List<Certificate> records, CertType type) {
        return records.stream().filter(c -> c.type() == type).toList();
    }

    /** The first of {@code records} that {@link #decisionProblem} binds to {@code sb} as a {@code type}, or null. */
    private static Certificate bound(ProtocolConfig cfg, Verifier verifier, Membership membership, RrsConfig old,
                                     SubBatch sb, java.util.Collection<Certificate> records, CertType type) {
        for (Certificate c : records) {
            if (decisionProblem(cfg, verifier, membership, old, sb, c, type) == null) {
                return c;
            }
        }
        return null;
    }

    /** Binds to each entry a recorded COMMIT certificate of its batch that {@link #decisionProblem} accepts. */
    private static List<RecoveredEntry> withCommits(ProtocolConfig cfg, Verifier verifier, Membership membership,
                                                    RrsConfig old, List<RecoveredEntry> entries,
                                                    List<Certificate> records) {
        Map<Long, List<Certificate>> byBatch = new HashMap<>();
        for (Certificate c : records) {
            byBatch.computeIfAbsent(c.statement(Statement.Decision.class).batchId(), k -> new ArrayList<>()).add(c);
        }
        List<RecoveredEntry> out = new ArrayList<>();
        for (RecoveredEntry e : entries) {
            Certificate commit = bound(cfg, verifier, membership, old, e.subBatch(),
                    byBatch.getOrDefault(e.subBatch().batchId(), List.of()), CertType.COMMIT);
            out.add(new RecoveredEntry(e.index(), e.logEntry(), e.bytes(), e.subBatch(), e.abort(), commit));
        }
        return out;
    }

    /**
     * Why {@code c} does not prove that {@code sb} (logged in generation {@code old.generation()})
     * was aborted, or null if it does: an ABORT certificate of the volume for the sub-batch's batch,
     * covering its seqs, from its leader region, signed by that region's three replicas of the same
     * generation, decided in that generation (recovery remaps every region, so the leader's generation is
     * the log's).
     */
    static String abortProblem(ProtocolConfig cfg, Verifier verifier, Membership membership, RrsConfig old,
                               SubBatch sb, Certificate c) {
        return decisionProblem(cfg, verifier, membership, old, sb, c, CertType.ABORT);
    }

    /** As {@link #abortProblem}, for a certificate of {@code type} (ABORT or COMMIT). */
    static String decisionProblem(ProtocolConfig cfg, Verifier verifier, Membership membership, RrsConfig old,
                                  SubBatch sb, Certificate c, CertType type) {
        if (c.type() != type) {
            return "a " + c.type() + " is not a " + type + " certificate";
        }
        boolean unbound = type == CertType.ABORT && cfg.mutated(Mutation.RECOVERY_UNBOUND_ABORT);
        Statement.Decision st = c.statement(Statement.Decision.class);
        if (!st.volume().equals(cfg.volume()) || st.batchId() != sb.batchId() || st.firstSeq() > sb.firstSeq()
                || st.lastSeq() < sb.lastSeq() || !st.leader().volume().equals(cfg.volume())
                || st.leader().index() != sb.leaderRegion()) {
            return "it decides " + st + ", not batch " + sb.batchId() + " seqs " + sb.firstSeq() + ".."
                    + sb.lastSeq() + " led by region " + sb.leaderRegion();
        }
        if (st.generation() != old.generation() && !unbound) {
            return "it was decided in generation " + st.generation() + ", the entry was logged in "
                    + old.generation();
        }
        RrsConfig leader = membership.config(st.leader(), old.generation());
        if (leader == null) {
            return "no configuration of leader region " + st.leader() + " in generation " + old.generation();
        }
        if (!c.verify(verifier, unbound ? null : leader.replicaSet())) {
            return "it is not signed by the leader region's replicas " + leader.replicas();
        }
        return null;
    }

    private static boolean validAnswer(ProtocolConfig cfg, Verifier verifier, RrsConfig old, NodeId holder,
                                       Certificate c, long index) {
        if (c.type() == CertType.NO_NEXT_ENTRY) {
            return noNextEntryAt(cfg, verifier, old, c, index, Set.of(holder));
        }
        if (c.type() == CertType.LOG_ENTRY) {
            if (cfg.mutated(Mutation.REPLAY_WITHOUT_POSITION_CHECK)) {
                return c.statement(Statement.LogEntry.class).region().equals(old.region())
                        && c.verify(verifier, old.replicaSet());
            }
            return logEntryAt(verifier, old, c, index);
        }
        return false;
    }

    /**
     * A LOG_ENTRY certificate bound to exactly (region, generation, index) of {@code old}, signed by
     * the three replicas of that generation.
     */
    public static boolean logEntryAt(Verifier verifier, RrsConfig old, Certificate c, long index) {
        if (c.type() != CertType.LOG_ENTRY) {
            return false;
        }
        Statement.LogEntry st = c.statement(Statement.LogEntry.class);
        return st.region().equals(old.region()) && st.generation() == old.generation() && st.index() == index
                && c.verify(verifier, old.replicaSet());
    }

    /**
     * A NO_NEXT_ENTRY bound to exactly (region, generation, index) of {@code old}, signed by one of
     * {@code signers} (a subset of the generation's five metadata holders).
     */
    static boolean noNextEntryAt(ProtocolConfig cfg, Verifier verifier, RrsConfig old, Certificate c, long index,
                                 Set<NodeId> signers) {
        if (c.type() != CertType.NO_NEXT_ENTRY) {
            return false;
        }
        Statement.NoNextEntry st = c.statement(Statement.NoNextEntry.class);
        boolean bound = cfg.mutated(Mutation.RECOVERY_UNBOUND_NO_NEXT_ENTRY)
                || st.region().equals(old.region()) && st.generation() == old.generation();
        return bound && st.index() == index
                && old.metadataHolders().containsAll(signers) && c.verify(verifier, signers);
    }

    /**
     * Why a base CHECKPOINT certificate is not bound to {@code old} (type, region, generation and the
     * generation's three replicas as signers), or null if it is.
     */
    static String checkpointProblem(ProtocolConfig cfg, Verifier verifier, RrsConfig old, Certificate c) {
        if (cfg.mutated(Mutation.RECOVERY_UNBOUND_CHECKPOINT)) {
            return c.verify(verifier) ? null : "bad signatures";
        }
        if (c.type() != CertType.CHECKPOINT) {
            return "a " + c.type() + " is not a CHECKPOINT certificate";
        }
        Statement.Checkpoint cp = c.statement(Statement.Checkpoint.class);
        if (!cp.region().equals(old.region())) {
            return "it is for region " + cp.region() + ", not " + old.region();
        }
        if (cp.generation() != old.generation()) {
            return "it is for generation " + cp.generation() + ", not " + old.generation();
        }
        if (!c.verify(verifier, old.replicaSet())) {
            return "its signatures are not those of the generation's replicas " + old.replicas();
        }
        return null;
    }

    /**
     * The check each replica of the new RRS performs on a recovered log before consenting: base
     * certificate and snapshot digest, every LOG_ENTRY's signatures, position and data digest, the
     * client signature and prevNum chain of every entry, and three distinct signed "no next entry"
     * answers at the end.
     */
    public static void verify(ProtocolConfig cfg, Verifier verifier, NodeId clientId, Membership membership,
                              RecoveredLog log)
            throws RecoveryException {
        RrsConfig old = log.old();
        RegionSnapshot base = log.base();
        if (log.baseCertificate() != null) {
            String why = checkpointProblem(cfg, verifier, old, log.baseCertificate());
            if (why != null) {
                throw new RecoveryException(old.region() + ": base checkpoint certificate refused: " + why);
            }
            Statement.Checkpoint cp = log.baseCertificate().statement(Statement.Checkpoint.class);
            if (cp.throughIndex() != base.throughIndex() || cp.lastSeq() != base.lastSeq()
                    || !cp.rootRecord().equals(base.rootRecord())
                    || base.generation() != old.generation()
                    || !base.regionRoot(cfg.hash(), cfg.blockSize(), cfg.layout()).equals(cp.regionRoot())) {
                throw new RecoveryException(old.region() + ": base snapshot does not match its checkpoint");
            }
        } else if (old.generation() != 0 || !base.blocks().isEmpty()) {
            throw new RecoveryException(old.region() + ": base without checkpoint certificate");
        }
        long index = base.throughIndex() + 1;
        long prev = base.lastSeq();
        for (RecoveredEntry e : log.entries()) {
            Statement.LogEntry st = e.logEntry().statement(Statement.LogEntry.class);
            boolean positionOk = logEntryAt(verifier, old, e.logEntry(), index) && e.index() == index
                    && e.subBatch().puts().get(0).prevNum() == prev;
            if (!e.logEntry().verify(verifier, old.replicaSet()) || !st.region().equals(old.region())
                    || !e.subBatch().volume().equals(old.region().volume())
                    || e.subBatch().region() != old.region().index()
                    || (!positionOk && !cfg.mutated(Mutation.REPLAY_WITHOUT_POSITION_CHECK))
                    || !cfg.hash().hash(e.bytes()).equals(st.digest())
                    || !verifier.verify(clientId, e.subBatch().signedBytes(), e.subBatch().clientSig())) {
                throw new RecoveryException(old.region() + ": recovered entry " + index + " fails verification");
            }
            if (e.aborted()) {
                String why = abortProblem(cfg, verifier, membership, old, e.subBatch(), e.abort());
                if (why != null) {
                    throw new RecoveryException(old.region() + ": recovered entry " + index
                            + " is marked aborted without proof: " + why);
                }
            }
            if (e.committed()) {
                // (it keeps an entry after an aborted one in the prepared prefix: never on the orchestrator's word)
                String why = decisionProblem(cfg, verifier, membership, old, e.subBatch(), e.commit(), CertType.COMMIT);
                if (why != null) {
                    throw new RecoveryException(old.region() + ": recovered entry " + index
                            + " is marked committed without proof: " + why);
                }
            }
            prev = e.subBatch().lastSeq();
            index++;
        }
        Set<NodeId> enders = new HashSet<>();
        for (Certificate c : log.endProof()) {
            if (c.type() == CertType.NO_NEXT_ENTRY
                    && noNextEntryAt(cfg, verifier, old, c, index, new HashSet<>(old.metadataHolders()))) {
                enders.add(c.signatures().get(0).signer());
            }
        }
        if (enders.size() < 3 && !cfg.mutated(Mutation.STOP_AT_FIRST_NO_NEXT_ENTRY)) {
            throw new RecoveryException(old.region() + ": end of log not proven by 3 signed \"no next entry\"");
        }
    }

    /** Root of an entirely unwritten volume. */
    public static Hash emptyVolumeRoot(ProtocolConfig cfg) {
        return new io.salus.core.merkle.MerkleTree(cfg.hash(), cfg.blockSize(), cfg.layout().volumeBlocks()).root();
    }
}
