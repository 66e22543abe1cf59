package io.salus.core.protocol.witness;

import io.salus.core.cert.CertType;
import io.salus.core.cert.Certificate;
import io.salus.core.cert.RegionId;
import io.salus.core.cert.Statement;
import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.Signer;
import io.salus.core.crypto.Verifier;
import io.salus.core.protocol.Mutation;
import io.salus.core.protocol.Tentatives;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.BiFunction;

/**
 * The logic of a metadata store (the witness store next to each replica's DataNode, and the two
 * standalone witnesses): collect TENTATIVE_LOG_ENTRY certificates, and once all three replicas of
 * the region's RRS have signed the same statement, combine them into a LOG_ENTRY certificate, store
 * it and acknowledge. Answers recovery queries with the stored LOG_ENTRY or a signed NO_NEXT_ENTRY.
 *
 * <p>Pure logic: storage is a {@link CertificateStore}; membership is a function from (region,
 * log generation) to the node ids of that generation's three replicas (null if unknown). Not
 * thread-safe (wrap calls in a lock).
 */
public final class WitnessLog {
    /** Result of offering a tentative certificate. */
    public enum Offer { REJECTED, PENDING, STORED }

    private record Slot(RegionId region, long generation, long index) {
    }

    private final Signer signer;
    private final Verifier verifier;
    private final CertificateStore store;
    private final BiFunction<RegionId, Long, Set<NodeId>> members;
    private final Tentatives<Slot> pending = new Tentatives<>();
    private final int need;
    /** Per (region, generation): the lowest index answered NO_NEXT_ENTRY here; nothing is stored at or after it. */
    private final Map<Log, Long> sealedFrom = new HashMap<>();
    /** Per (region, generation): the index a verified CHECKPOINT certificate truncated through ({@link #truncate}). */
    private final Map<Log, Long> truncatedThrough = new HashMap<>();

    private record Log(RegionId region, long generation) {
    }

    public WitnessLog(Signer signer, Verifier verifier, CertificateStore store,
                      BiFunction<RegionId, Long, Set<NodeId>> members) {
        this(signer, verifier, store, members, Set.of());
    }

    /** @param mutations test-only {@link Mutation}s (empty in production) */
    public WitnessLog(Signer signer, Verifier verifier, CertificateStore store,
                      BiFunction<RegionId, Long, Set<NodeId>> members, Set<Mutation> mutations) {
        this.need = mutations.contains(Mutation.WITNESS_TWO_OF_THREE) ? 2 : Tentatives.UNANIMOUS;
        this.signer = signer;
        this.verifier = verifier;
        this.store = store;
        this.members = members;
    }

    public NodeId id() {
        return signer.id();
    }

    public CertificateStore store() {
        return store;
    }

    /**
     * Offers a TENTATIVE_LOG_ENTRY (or an already-combined LOG_ENTRY). Returns STORED once a
     * LOG_ENTRY for that slot is durably stored (also for repeated offers), PENDING while waiting for
     * the other replicas, REJECTED for bad signatures, non-members or a slot already holding a
     * different entry.
     */
    public Offer offer(Certificate c) {
        if (c.type() != CertType.TENTATIVE_LOG_ENTRY && c.type() != CertType.LOG_ENTRY) {
            return Offer.REJECTED;
        }
        Statement.LogEntry st = c.statement(Statement.LogEntry.class);
        Set<NodeId> rrs = members.apply(st.region(), st.generation());
        if (rrs == null || !c.verify(verifier, rrs)) {
            return Offer.REJECTED;
        }
        Slot slot = new Slot(st.region(), st.generation(), st.index());
        Optional<Certificate> existing = store.get(slot.region, slot.generation, slot.index);
        if (existing.isPresent()) {
            // a stored NO_NEXT_ENTRY (the slot's seal) never equals a log entry's statement
            return existing.get().statement().equals(st) ? Offer.STORED : Offer.REJECTED;
        }
        Long truncated = truncatedThrough.get(new Log(slot.region, slot.generation));
        if (truncated != null && slot.index <= truncated) {
            return Offer.REJECTED; // covered by a CHECKPOINT: no replica needs it stored again
        }
        Long sealed = sealedFrom.get(new Log(slot.region, slot.generation));
        if (sealed != null && slot.index >= sealed) {
            return Offer.REJECTED; // signed "no entry at the sealed index nor after it" for this generation
        }
        if (c.type() == CertType.LOG_ENTRY) {
            store.putIfAbsent(slot.region, slot.generation, slot.index, c);
            pending.forget(slot);
            return Offer.STORED;
        }
        Certificate logEntry = Tentatives.combineIfEnough(pending.offer(slot, c), need);
        if (logEntry != null) {
            store.putIfAbsent(slot.region, slot.generation, slot.index, logEntry);
            pending.forget(slot);
            return Offer.STORED;
        }
        return Offer.PENDING;
    }

    /**
     * Recovery query: the stored LOG_ENTRY at the position, or a signed NO_NEXT_ENTRY. A NO_NEXT_ENTRY
     * is a promise ("no entry at this index nor after it, in this generation"), so answering one seals
     * the generation here at that index: the certificate is stored durably in the slot before it is
     * returned (a restarted holder keeps the promise for the slot, and answers the same way), and no
     * LOG_ENTRY of that generation is stored at or after the index afterwards. Old replicas still
     * running can then never collect the 5 acknowledgements for an entry the recovered log lacks.
     */
    public Certificate query(RegionId region, long generation, long index) {
        Long truncated = truncatedThrough.get(new Log(region, generation));
        if (truncated != null && index <= truncated) {
            // a NO_NEXT_ENTRY here would be false (later entries are stored) and would seal the live generation
            throw new IllegalArgumentException("index " + index + " of " + region + " generation " + generation
                    + " is covered by a CHECKPOINT (truncated through " + truncated + "): query after the region's"
                    + " latest checkpoint certificate");
        }
        Optional<Certificate> c = store.get(region, generation, index);
        if (c.isPresent()) {
            return c.get();
        }
        Certificate none = Certificate.sign(CertType.NO_NEXT_ENTRY, new Statement.NoNextEntry(region, generation, index),
                signer);
        store.putIfAbsent(region, generation, index, none);
        sealedFrom.merge(new Log(region, generation), index, Math::min);
        pending.forgetIf(s -> s.region.equals(region) && s.generation == generation && s.index >= index);
        return store.get(region, generation, index).orElse(none);
    }

    /**
     * Garbage collection (issue 14 item 1): drops the LOG_ENTRY certificates of the checkpoint's log at or below its
     * index, and the tentatives pending there, <b>only</b> for a CHECKPOINT certificate that verifies here: type
     * CHECKPOINT, signed by every replica of the region's RRS in the generation it names (the same membership the
     * LOG_ENTRY certificates of that log were checked against). Its three replicas signed only once each one's
     * checkpoint through the index was durable, so no replica needs an entry at or below it from a witness any more.
     * Anything else (a forged or partly signed certificate, another type, a generation this witness does not know,
     * signers of another generation) drops nothing. Seals ({@code NO_NEXT_ENTRY}) above the index stay.
     *
     * @return true if the certificate verified (and what it covers was dropped)
     */
    public boolean truncate(Certificate checkpoint) {
        if (checkpoint.type() != CertType.CHECKPOINT) {
            return false;
        }
        Statement.Checkpoint st = checkpoint.statement(Statement.Checkpoint.class);
        Set<NodeId> rrs = members.apply(st.region(), st.generation());
        if (rrs == null || !checkpoint.verify(verifier, rrs)) {
            return false;
        }
        store.truncatePrefix(st.region(), st.generation(), st.throughIndex());
        dropPendingThrough(st.region(), st.generation(), st.throughIndex());
        truncatedThrough.merge(new Log(st.region(), st.generation()), st.throughIndex(), Math::max);
        return true;
    }

    /** Slots whose tentatives still wait for the other replicas. */
    public int pendingCount() {
        return pending.size();
    }

    /** Forgets pending tentatives of a log at or below an index (a checkpoint covers them). */
    public void dropPendingThrough(RegionId region, long generation, long throughIndex) {
        pending.forgetIf(s -> s.region.equals(region) && s.generation == generation
                && s.index <= throughIndex);
    }

    /**
     * Keeps at most {@code max} pending slots, forgetting those of the lowest generation and index
     * first (the ones least likely to still complete). Returns how many were dropped.
     */
    public int dropOldestPending(int max) {
        int excess = pending.size() - max;
        if (excess <= 0) {
            return 0;
        }
        List<Slot> oldest = pending.slots().stream()
                .sorted(java.util.Comparator.comparingLong(Slot::generation)
                        .thenComparingLong(Slot::index))
                .limit(excess).toList();
        oldest.forEach(pending::forget);
        return oldest.size();
    }

    /** Forgets pending tentatives (crash: they were never durable). */
    public void dropPending() {
        pending.forgetIf(k -> true);
    }
}
