package io.salus.core.sim;

import java.util.EnumSet;
import java.util.List;
import java.util.Set;

/**
 * A named behaviour the simulator exercises (Kafka RaftEventSimulationTest style: one scenario per
 * behaviour, the invariants are shared). Each scenario fixes which faults the seeded run may draw and
 * which adversarial events it forces; everything else (topology, network, timing) stays seeded.
 *
 * @param faults        faults drawn for machines (NONE alone: no faulty machine)
 * @param faultyPerRrs  faulty machines per RRS: -1 random 0..2, otherwise exactly this many
 * @param clientCrash   the client crashes and restarts mid-stream (mount protocol)
 * @param malformed     the client also sends malformed requests
 * @param recoveryLoss  recovery queries and reads are lost (recovery retries)
 * @param forgingMaster the Master hands new replicas forged proofs
 * @param expect        counter that must be non-zero over the scenario's seeds ("fault:X", "abort:X")
 */
record Scenario(String name, Set<Fault> faults, int faultyPerRrs, boolean clientCrash, boolean malformed,
                boolean recoveryLoss, boolean forgingMaster, List<String> expect) {

    static Scenario of(String name, Set<Fault> faults, int faultyPerRrs, String... expect) {
        return new Scenario(name, faults, faultyPerRrs, false, false, false, false, List.of(expect));
    }

    Scenario withClientCrash() {
        return new Scenario(name, faults, faultyPerRrs, true, malformed, recoveryLoss, forgingMaster, expect);
    }

    Scenario withMalformedClient() {
        return new Scenario(name, faults, faultyPerRrs, clientCrash, true, recoveryLoss, forgingMaster, expect);
    }

    Scenario withAdversarialMaster() {
        return new Scenario(name, faults, faultyPerRrs, clientCrash, malformed, true, true, expect);
    }

    @Override
    public String toString() {
        return name;
    }

    /** The protocol rows of Table 3.1 (Salus column: GET fresh, PUT ordered) and the issue-11 behaviours. */
    static List<Scenario> all() {
        return List.of(
                // Table 3.1: client crash and restart
                of("table3.1-client-crash-restart", EnumSet.of(Fault.NONE), 0, "fault:CLIENT_CRASH_RESTART")
                        .withClientCrash(),
                // Table 3.1: one or two DataNode (machine) permanent crashes
                of("table3.1-permanent-crashes", EnumSet.of(Fault.CRASH_STOP), 2, "fault:CRASH_STOP"),
                // Table 3.1: corruption of one or two replicas of the log or the checkpoint
                of("table3.1-log-and-checkpoint-corruption", EnumSet.of(Fault.CORRUPT_DISK, Fault.CORRUPT_CHECKPOINT),
                        2, "fault:CORRUPT_DISK", "fault:CORRUPT_CHECKPOINT"),
                // Table 3.1: three region-server permanent crashes (their DataNodes survive)
                of("table3.1-three-region-server-crashes", EnumSet.of(Fault.RS_CRASH_STOP), 3, "fault:RS_CRASH_STOP"),
                // Table 3.1: two region-server arbitrary failures that may affect their DataNodes
                of("table3.1-two-arbitrary-region-servers", EnumSet.of(Fault.CORRUPT_DISK, Fault.SIGN_WRONG,
                        Fault.WITHHOLD_FORWARD, Fault.LIAR, Fault.REORDER_FORWARD, Fault.MEMORY_CORRUPT,
                        Fault.CORRUPT_GET, Fault.DELETE_FILES), 2, "recovery:run"),
                // Table 3.1: client crash + two region servers whose DataNodes miss a suffix of the data
                of("table3.1-client-crash-and-withheld-suffix", EnumSet.of(Fault.WITHHOLD_FORWARD), 2,
                        "fault:CLIENT_CRASH_RESTART", "fault:WITHHOLD_FORWARD").withClientCrash(),
                of("faulty-batch-leaders", EnumSet.of(Fault.LEADER_WRONG_DECISION, Fault.LEADER_EQUIVOCATES), 2,
                        "fault:LEADER_WRONG_DECISION", "fault:LEADER_EQUIVOCATES"),
                of("no-votes-and-aborts", EnumSet.of(Fault.VOTES_NO), 1, "abort:NO_VOTE",
                        "abort:FOLLOWS_ABORTED_BATCH"),
                of("malformed-client", EnumSet.of(Fault.NONE), 0, "abort:MALFORMED_CLIENT_REQUEST")
                        .withMalformedClient(),
                of("adversarial-recovery", EnumSet.of(Fault.STALE_PROOF, Fault.LIES_NO_NEXT, Fault.WRONG_POSITION,
                        Fault.CRASH_STOP), 2, "fault:FORGED_RECOVERY_PROOF", "recovery:retry", "fault:STALE_PROOF")
                        .withAdversarialMaster());
    }
}
