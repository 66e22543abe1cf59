package io.salus.core.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import io.salus.core.protocol.Mutation;
import java.util.EnumSet;
import java.util.Set;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Mutation evidence (docs/mutations.md): each deliberate protocol bug, switched on through the
 * test-only {@link Mutation} set, must be caught by the simulator's invariants within a bounded
 * number of seeds; the same fault profile without the mutation must stay clean.
 */
class MutationTest {
    static final int MAX_SEEDS = 600;
    static final int CLEAN_SEEDS = 65; // 13 profiles x 65 ~ the 7 x 120 seeds this took before issue 11

    /** Faults that give each mutation a chance to matter (all are also in the regular seed mix). */
    static Set<Fault> profile(Mutation m) {
        return switch (m) {
            case SKIP_PREVNUM_CHECK, SKIP_WITNESS_STORES, COMMIT_WITHOUT_CONFIRMATION -> EnumSet.of(Fault.NONE);
            case TWO_OF_THREE_CONSENT -> EnumSet.of(Fault.LIAR, Fault.SIGN_WRONG);
            case REPLAY_WITHOUT_POSITION_CHECK -> EnumSet.of(Fault.WRONG_POSITION, Fault.CRASH_STOP);
            case STOP_AT_FIRST_NO_NEXT_ENTRY -> EnumSet.of(Fault.LIES_NO_NEXT, Fault.CRASH_STOP);
            case SKIP_GET_VERIFICATION -> EnumSet.of(Fault.CORRUPT_GET);
            case DECISION_FROM_TWO_LEADER_TENTATIVES -> EnumSet.of(Fault.LEADER_WRONG_DECISION);
            case VOTE_AFTER_FOUR_STORE_ACKS -> EnumSet.of(Fault.NONE);
            case WITNESS_TWO_OF_THREE -> EnumSet.of(Fault.SIGN_WRONG, Fault.CRASH_STOP);
            case RECOVERY_UNBOUND_NO_NEXT_ENTRY -> EnumSet.of(Fault.STALE_PROOF, Fault.CRASH_STOP);
            // the forging Master (drawn in profiles of two or more faults) presents these proofs
            case RECOVERY_UNBOUND_CHECKPOINT, RECOVERY_UNBOUND_ABORT -> EnumSet.of(Fault.CRASH_STOP, Fault.VOTES_NO);
        };
    }

    static boolean forced(Mutation m) {
        return !profile(m).contains(Fault.NONE);
    }

    @ParameterizedTest
    @EnumSource(Mutation.class)
    void simulatorCatchesMutation(Mutation m) {
        SalusSimulation.Result caught = null;
        int tried = 0;
        for (long seed = 1; seed <= MAX_SEEDS && caught == null; seed++) {
            tried++;
            SalusSimulation.Result r = new SalusSimulation(seed, Set.of(m), profile(m), forced(m)).run();
            if (r.violation() != null) {
                caught = r;
            }
        }
        assertNotNull(caught, m + " survived " + MAX_SEEDS + " seeds: the simulator does not detect it");
        System.out.println("mutation " + m + " caught after " + tried + " seed(s): seed " + caught.seed() + " -> "
                + caught.violation().getMessage() + "\n  reproduce: " + SalusSimulationTest.repro(caught.seed(), m));
    }

    @ParameterizedTest
    @EnumSource(Mutation.class)
    void sameProfileWithoutMutationIsClean(Mutation m) {
        int violations = 0;
        String first = null;
        for (long seed = 1; seed <= CLEAN_SEEDS; seed++) {
            SalusSimulation.Result r = new SalusSimulation(seed, Set.of(), profile(m), forced(m)).run();
            if (r.violation() != null) {
                violations++;
                if (first == null) {
                    first = "seed " + seed + ": " + r.violation().getMessage();
                }
            }
        }
        assertEquals(0, violations, "profile of " + m + " without the mutation: " + first);
    }
}
