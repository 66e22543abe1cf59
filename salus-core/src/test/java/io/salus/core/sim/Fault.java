package io.salus.core.sim;

/** What a faulty machine does. Commission faults model §3.4.1's fault-injection list. */
enum Fault {
    /** Correct (may still crash and restart: a transient omission is not a failure). */
    NONE,
    /** Permanent omission: stops at a random time and never comes back. */
    CRASH_STOP,
    /** Its disk silently corrupts log entries as they are written. */
    CORRUPT_DISK,
    /** Its region server signs a wrong digest in TENTATIVE_LOG_ENTRY (same wrong digest on every faulty node). */
    SIGN_WRONG,
    /** Its region server never forwards sub-batches down the chain. */
    WITHHOLD_FORWARD,
    /** Its region server votes YES and sends TENTATIVE_PUT_SUCCESS right after logging, before consent. */
    LIAR,
    /** Its region server forwards every odd-numbered batch late (only on retransmission): reordering. */
    REORDER_FORWARD,
    /** Its region server's memory corrupts block contents as it applies PUTs. */
    MEMORY_CORRUPT,
    /** Its region server returns corrupted data for GETs. */
    CORRUPT_GET,
    /** Its metadata store answers every recovery query with a signed "no next entry". */
    LIES_NO_NEXT,
    /** Its metadata store answers a recovery query with the LOG_ENTRY of the next position. */
    WRONG_POSITION,
    /** Its region server asks the NameNode to delete its files at a random time. */
    DELETE_FILES,
    /** Its metadata store acknowledges tentative certificates without storing anything. */
    ACK_WITHOUT_STORE,
    /** Its region server votes NO (signed) instead of YES on every third batch it prepares: aborts. */
    VOTES_NO,
    /** As a batch-leader replica it signs COMMIT at once (no votes, no confirmation), and ABORT for every even batch. */
    LEADER_WRONG_DECISION,
    /** As a batch-leader replica it sends COMMIT to some participants and ABORT to others. */
    LEADER_EQUIVOCATES,
    /** Its metadata store answers recovery with genuine but stale proofs: another generation's or region's. */
    STALE_PROOF,
    /** Its disk silently corrupts a block of every checkpoint (flush) file it writes. */
    CORRUPT_CHECKPOINT,
    /** Its region server stops for good; its DataNode and witness store keep serving (Table 3.1 row). */
    RS_CRASH_STOP;

    boolean storeFault() {
        return this == LIES_NO_NEXT || this == WRONG_POSITION || this == ACK_WITHOUT_STORE || this == STALE_PROOF;
    }
}
