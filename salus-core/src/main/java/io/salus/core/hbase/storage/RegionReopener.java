package io.salus.core.hbase.storage;

import java.io.IOException;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One replica region incarnation's request to the master to reopen its region (issue 14, task inst20), made again
 * until the region was reopened. What it replaced asked at most six times, 5 s apart, over the region server's own
 * connection, and assigned the region only after its own unassign had succeeded. In a lost-disk run (task disk19's
 * {@code salus-rebuild-disk19-run3}) that left a replica region closed for good: the region server that first asked
 * aborted with its unassign still queued at the master; the master ran it 26 s later, after the region had been
 * reassigned, and closed the new incarnation (a plain unassign never reopens); that incarnation's own request then
 * found the region CLOSED ("Unexpected state for state=CLOSED") six times and gave up, and the old server's retries all
 * failed with "connection is closed". Now each attempt:
 * <ol>
 * <li>uses a fresh connection ({@link Master}), so the closed connection of an aborted server is not reused;</li>
 * <li>stops if the table is disabled or gone (nothing to reopen);</li>
 * <li>while this incarnation is still open: unassigns it (in place) or moves it (a master-side close and open);
 *     an unassign the master rejects because the region is not open any more goes on to the next step;</li>
 * <li>once this incarnation is closed: done if a later incarnation is open ({@link Master#reopened}), else
 *     assigns the region (the master opens it on its last server);</li>
 * </ol>
 * with a backoff from {@code firstBackoffMs} doubling to {@code maxBackoffMs} between attempts, each failure logged,
 * until the region was reopened or {@code giveUpMs} passed (logged as an error: the region may stay closed).
 * No HBase type here: the adapter ({@link HdfsReplicaStorage}) supplies {@link Master} over the HBase Admin API.
 */
public final class RegionReopener {
    private static final Logger LOG = LoggerFactory.getLogger(RegionReopener.class);

    /** The master, as one attempt sees it (a fresh connection per attempt; closed after it). */
    public interface Master extends AutoCloseable {
        /** True if the region's table is disabled or does not exist any more. */
        boolean tableGone() throws IOException;

        /** Closes the region (no reopen). */
        void unassign() throws IOException;

        /** Moves the region to another server (the master closes and opens it). */
        void move() throws IOException;

        /** Opens the closed region (on its last server). */
        void assign() throws IOException;

        /** True if an incarnation of the region later than the requesting one is open on a live server. */
        boolean reopened() throws IOException;

        /** True if {@code e}, thrown by {@link #unassign} or {@link #move}, says the region is not open (closed). */
        boolean notOpen(IOException e);

        @Override
        void close() throws IOException;
    }

    /** Opens a {@link Master} for one attempt. */
    public interface MasterFactory {
        Master open() throws IOException;
    }

    /** How the request ended. */
    public enum Outcome {
        /** This request's assign or move reopened the region. */
        REOPENED,
        /** A later incarnation was found open (someone else reopened it). */
        REOPENED_ELSEWHERE,
        /** The table is disabled or deleted: nothing to reopen. */
        TABLE_GONE,
        /** {@code giveUpMs} passed. */
        GAVE_UP,
        /** The requesting thread was interrupted. */
        INTERRUPTED
    }

    /** Sleeps (tests replace it). */
    public interface Sleeper {
        void sleep(long millis) throws InterruptedException;
    }

    private final String region;
    private final boolean inPlace;
    private final MasterFactory masters;
    private final BooleanSupplier incarnationClosed;
    private final long firstBackoffMs;
    private final long maxBackoffMs;
    private final long giveUpMs;
    private final java.util.function.LongSupplier clock;
    private final Sleeper sleeper;
    private volatile int attempts;

    /**
     * @param region            the region's name in log lines
     * @param inPlace           unassign and assign (true) or move (false)
     * @param incarnationClosed true once the requesting incarnation of the region is closed
     */
    public RegionReopener(String region, boolean inPlace, MasterFactory masters, BooleanSupplier incarnationClosed,
                          long firstBackoffMs, long maxBackoffMs, long giveUpMs, java.util.function.LongSupplier clock,
                          Sleeper sleeper) {
        this.region = region;
        this.inPlace = inPlace;
        this.masters = masters;
        this.incarnationClosed = incarnationClosed;
        this.firstBackoffMs = firstBackoffMs;
        this.maxBackoffMs = maxBackoffMs;
        this.giveUpMs = giveUpMs;
        this.clock = clock;
        this.sleeper = sleeper;
    }

    /** Attempts made so far. */
    public int attempts() {
        return attempts;
    }

    /** Asks until the region was reopened (or the table is gone, or {@code giveUpMs} passed); returns how it ended. */
    public Outcome run() {
        long start = clock.getAsLong();
        long backoff = firstBackoffMs;
        while (true) {
            attempts++;
            try (Master m = masters.open()) {
                Outcome o = attempt(m);
                if (o != null) {
                    LOG.warn("Salus region {}: {} after {} attempt(s)", region, describe(o), attempts);
                    return o;
                }
            } catch (IOException | RuntimeException e) {
                LOG.warn("Salus region {}: reopen attempt {} failed ({}); asking again in {} ms", region, attempts,
                        e.toString(), backoff);
            }
            if (clock.getAsLong() - start + backoff > giveUpMs) {
                LOG.error("Salus region {}: not reopened after {} attempts in {} ms: giving up; the replica serves"
                        + " nothing until someone reopens its region", region, attempts, clock.getAsLong() - start);
                return Outcome.GAVE_UP;
            }
            try {
                sleeper.sleep(backoff);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return Outcome.INTERRUPTED;
            }
            backoff = Math.min(maxBackoffMs, backoff * 2);
        }
    }

    /** One attempt: the outcome, or null to ask again (the reason was logged or thrown). */
    private Outcome attempt(Master m) throws IOException {
        if (m.tableGone()) {
            return Outcome.TABLE_GONE;
        }
        if (!incarnationClosed.getAsBoolean()) {
            try {
                if (inPlace) {
                    m.unassign();
                } else {
                    m.move();
                    return Outcome.REOPENED; // the master closed and opened it
                }
            } catch (IOException e) {
                if (!m.notOpen(e)) {
                    throw e;
                }
                LOG.warn("Salus region {}: the master says it is not open ({}): assigning it", region, e.toString());
            }
        }
        if (m.reopened()) {
            return Outcome.REOPENED_ELSEWHERE;
        }
        m.assign();
        return Outcome.REOPENED;
    }

    private static String describe(Outcome o) {
        return switch (o) {
            case REOPENED -> "reopened";
            case REOPENED_ELSEWHERE -> "open again as a later incarnation (reopened by someone else)";
            case TABLE_GONE -> "its table is disabled or deleted: not reopened";
            default -> o.name();
        };
    }
}
