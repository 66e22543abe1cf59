package io.salus.core.protocol.witness;

import io.salus.core.cert.CertType;
import io.salus.core.cert.Certificate;
import io.salus.core.cert.RegionId;
import io.salus.core.cert.Statement;
import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.Signer;
import io.salus.core.crypto.Verifier;
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
    private final Map<Slot, Map<NodeId, Certificate>> pending = new HashMap<>();

    public WitnessLog(Signer signer, Verifier verifier, CertificateStore store,
                      BiFunction<RegionId, Long, Set<NodeId>> members) {
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
            return existing.get().statement().equals(st) ? Offer.STORED : Offer.REJECTED;
        }
        if (c.type() == CertType.LOG_ENTRY) {
            store.putIfAbsent(slot.region, slot.generation, slot.index, c);
            pending.remove(slot);
            return Offer.STORED;
        }
        Map<NodeId, Certificate> bySigner = pending.computeIfAbsent(slot, k -> new HashMap<>());
        NodeId who = c.signatures().get(0).signer();
        bySigner.putIfAbsent(who, c);
        List<Certificate> matching = new ArrayList<>();
        for (Certificate t : bySigner.values()) {
            if (t.statement().equals(st)) {
                matching.add(t);
            }
        }
        if (matching.size() == CertType.RRS_SIZE) {
            store.putIfAbsent(slot.region, slot.generation, slot.index, Certificate.combine(matching));
            pending.remove(slot);
            return Offer.STORED;
        }
        return Offer.PENDING;
    }

    /** Recovery query: the stored LOG_ENTRY at the position, or a signed NO_NEXT_ENTRY. */
    public Certificate query(RegionId region, long generation, long index) {
        Optional<Certificate> c = store.get(region, generation, index);
        return c.orElseGet(() -> Certificate.sign(CertType.NO_NEXT_ENTRY,
                new Statement.NoNextEntry(region, generation, index), signer));
    }

    /** Slots whose tentatives still wait for the other replicas. */
    public int pendingCount() {
        return pending.size();
    }

    /** Forgets pending tentatives of a log at or below an index (a checkpoint covers them). */
    public void dropPendingThrough(RegionId region, long generation, long throughIndex) {
        pending.keySet().removeIf(s -> s.region.equals(region) && s.generation == generation
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
        List<Slot> oldest = pending.keySet().stream()
                .sorted(java.util.Comparator.comparingLong(Slot::generation)
                        .thenComparingLong(Slot::index))
                .limit(excess).toList();
        oldest.forEach(pending::remove);
        return oldest.size();
    }

    /** Forgets pending tentatives (crash: they were never durable). */
    public void dropPending() {
        pending.clear();
    }
}
