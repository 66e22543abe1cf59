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
    SKIP_GET_VERIFICATION,
    /** Participants form a COMMIT/ABORT certificate from 2 matching leader tentatives instead of 3. */
    DECISION_FROM_TWO_LEADER_TENTATIVES,
    /** A replica votes YES after 4 of the 5 metadata holders acknowledged its LOG_ENTRY instead of all 5. */
    VOTE_AFTER_FOUR_STORE_ACKS,
    /** A witness store combines and acknowledges a LOG_ENTRY from 2 matching tentatives instead of 3. */
    WITNESS_TWO_OF_THREE,
    /** Recovery accepts NO_NEXT_ENTRY answers without checking their region and generation. */
    RECOVERY_UNBOUND_NO_NEXT_ENTRY,
    /** Recovery accepts a base CHECKPOINT certificate signed by anyone, of any generation. */
    RECOVERY_UNBOUND_CHECKPOINT,
    /** Recovery accepts an ABORT proof without checking who signed it. */
    RECOVERY_UNBOUND_ABORT
}
