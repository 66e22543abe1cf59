package io.salus.core.protocol.replica;

import io.salus.core.cert.Certificate;
import io.salus.core.cert.RegionId;
import java.util.function.Predicate;

/**
 * Reads what the metadata holders of a region store at one log slot <b>without sealing it</b> (the witness wire
 * protocol's unsigned, read-only QUERY; an in-process store's {@code get}): the LOG_ENTRY certificate that combines
 * the three replicas' TENTATIVE_LOG_ENTRY for (region, generation, index), or null if no holder answered or none
 * stores one that {@code proves} accepts. Unlike recovery's query (rule 15: a NO_NEXT_ENTRY seals the slot) a read changes nothing at the holder,
 * so a serving replica may use it. Each answer is one holder's word: {@code proves} verifies it
 * ({@link ReplicaCatchUp#logEntryProves}), and a holder's answer it refuses does not hide another holder's.
 *
 * <p>A replica catching up from a peer uses it to tell an ABORTed entry that all three replicas logged at an index
 * from one only a faulty peer puts there (review rvw22, finding 2b). Implementations may block (a remote witness read
 * with the holder's timeout); they are called only for ABORT-decided entries of a peer's transfer.
 */
@FunctionalInterface
public interface LogEntryReader {
    /** Reads nothing: entries are then proven only by the other peer's transfer. */
    LogEntryReader NONE = (region, generation, index, proves) -> null;

    /** The first certificate a holder stores at the slot that {@code proves} accepts, or null. */
    Certificate read(RegionId region, long generation, long index, Predicate<Certificate> proves);
}
