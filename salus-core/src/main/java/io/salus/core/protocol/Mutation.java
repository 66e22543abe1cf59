package io.salus.core.protocol;

/**
 * Deliberate protocol bugs for mutation testing ONLY (see docs/mutations.md). Each one disables a
 * check the safety argument relies on; the simulator must catch every one of them. Production
 * configurations never enable any: {@link ProtocolConfig#mutations()} is empty unless a test sets it.
 */
public enum Mutation {
    /** Replicas accept a sub-batch without checking its prevNum against the last accepted PUT. */
    SKIP_PREVNUM_CHECK,
    /** Witness stores form LOG_ENTRY, and the client forms PUT_SUCCESS, from 2 of 3 matching tentatives. */
    TWO_OF_THREE_CONSENT,
    /** Replicas vote YES after their own log write, without storing certificates on the 5 stores. */
    SKIP_WITNESS_STORES,
    /** The batch leader commits without the previous batch leader's COMMIT-CONFIRMATION. */
    COMMIT_WITHOUT_CONFIRMATION,
    /** Log recovery accepts a LOG_ENTRY certificate without checking it names the requested position. */
    REPLAY_WITHOUT_POSITION_CHECK,
    /** Log recovery stops at the first signed "no next entry" instead of needing three. */
    STOP_AT_FIRST_NO_NEXT_ENTRY,
    /** The client accepts a GET reply without checking it against its volume tree. */
    SKIP_GET_VERIFICATION
}
