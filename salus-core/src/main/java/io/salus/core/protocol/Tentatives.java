package io.salus.core.protocol;

import io.salus.core.cert.Certificate;
import io.salus.core.crypto.NodeId;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/**
 * Unanimous consent, written once: collects tentative certificates per slot (a batch, a log
 * position, a checkpoint index), at most one per signer (the first one counts; a second, different
 * one from the same signer is equivocation and never replaces it), and reports which of them match a
 * given tentative in type and statement. Three matching tentatives from the three members of an RRS
 * form the combined certificate (LOG_ENTRY, PUT_SUCCESS, COMMIT/ABORT, CHECKPOINT).
 *
 * <p>Callers check each tentative's signature and signer set before offering it. Not thread-safe.
 */
public final class Tentatives<K> {
    /** Signatures of one RRS needed for a combined certificate. */
    public static final int UNANIMOUS = 3;

    private final Map<K, Map<NodeId, Certificate>> bySlot = new HashMap<>();

    /**
     * Adds {@code t} (signed by one node) to {@code slot} and returns the held tentatives matching
     * it, including itself when it was accepted. The list is combinable once its size reaches
     * {@link #UNANIMOUS}.
     */
    public List<Certificate> offer(K slot, Certificate t) {
        Map<NodeId, Certificate> m = bySlot.computeIfAbsent(slot, k -> new LinkedHashMap<>());
        m.putIfAbsent(t.signatures().get(0).signer(), t);
        return matching(m.values(), t);
    }

    /**
     * The combined certificate once {@code matching} holds {@code need} tentatives, else null.
     * {@code need} is {@link #UNANIMOUS} in every correct configuration; a smaller value is only ever
     * passed under a test {@link Mutation}, and then yields an under-signed combined certificate
     * (which is exactly the bug the mutation plants).
     */
    public static Certificate combineIfEnough(List<Certificate> matching, int need) {
        if (matching.size() < need) {
            return null;
        }
        if (matching.size() >= UNANIMOUS) {
            return Certificate.combine(matching.subList(0, UNANIMOUS));
        }
        List<Certificate.Sig> sigs = new ArrayList<>();
        matching.forEach(c -> sigs.addAll(c.signatures()));
        Certificate first = matching.get(0);
        return Certificate.of(first.type().combined(), first.scheme(), first.statement(), sigs);
    }

    /** Number of distinct signers that sent a tentative for the slot (matching or not). */
    public int signers(K slot) {
        Map<NodeId, Certificate> m = bySlot.get(slot);
        return m == null ? 0 : m.size();
    }

    public void forget(K slot) {
        bySlot.remove(slot);
    }

    public void forgetIf(Predicate<K> p) {
        bySlot.keySet().removeIf(p);
    }

    /** Slots with tentatives held (memory accounting, tests). */
    /** The slots that hold tentatives (a read-only view). */
    public java.util.Set<K> slots() {
        return java.util.Collections.unmodifiableSet(bySlot.keySet());
    }

    public int size() {
        return bySlot.size();
    }

    /** The certificates in {@code held} whose type and statement equal {@code t}'s. */
    public static List<Certificate> matching(Collection<Certificate> held, Certificate t) {
        List<Certificate> out = new ArrayList<>();
        for (Certificate c : held) {
            if (c.type() == t.type() && c.statement().equals(t.statement())) {
                out.add(c);
            }
        }
        return out;
    }
}
