package io.salus.core.hbase.storage;

import static org.junit.jupiter.api.Assertions.*;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * A replica region's reopen request (task inst20) is asked again until the region was reopened. Task disk19's
 * lost-disk run ({@code salus-rebuild-disk19-run3}) left replica 3/0 closed for good: its first request (from a region
 * server that then aborted) went over that server's connection ("connection is closed" on every attempt) and its
 * queued unassign closed the region's next incarnation; that incarnation's own request assigned only after its own
 * unassign succeeded, which the master refused six times ("Unexpected state for state=CLOSED"), and stopped.
 * Here the master is a model of the region's state at the master; the HBase side (a fresh Admin connection per
 * attempt) is {@code HdfsReplicaStorage.AdminMaster}, exercised by {@code SalusReopenLivenessTest} on a mini cluster.
 */
class RegionReopenerTest {
    enum State { OPEN_MINE, CLOSING, CLOSED, OPEN_LATER }

    /** The region at the master, the connections opened, and what was asked. */
    static class Model {
        State state = State.OPEN_MINE;
        boolean tableGone;
        /** Connections that fail to open (an aborted server's), then every later one works. */
        int brokenConnections;
        /** Unassigns answered "in transition" before one is accepted. */
        int inTransition;
        int opened;
        final List<String> calls = new ArrayList<>();
        final AtomicLong now = new AtomicLong();
        final List<Long> sleeps = new ArrayList<>();

        RegionReopener.Master open() throws IOException {
            opened++;
            if (brokenConnections-- > 0) {
                throw new IOException("connection is closed");
            }
            return new RegionReopener.Master() {
                @Override
                public boolean tableGone() {
                    return tableGone;
                }

                @Override
                public void unassign() throws IOException {
                    calls.add("unassign");
                    if (inTransition-- > 0) {
                        throw new IOException("is currently in transition");
                    }
                    if (state != State.OPEN_MINE && state != State.OPEN_LATER) {
                        throw new IOException("Unexpected state for state=" + state);
                    }
                    state = State.CLOSED;
                }

                @Override
                public void move() throws IOException {
                    calls.add("move");
                    if (state != State.OPEN_MINE && state != State.OPEN_LATER) {
                        throw new IOException("Unexpected state for state=" + state);
                    }
                    state = State.OPEN_LATER;
                }

                @Override
                public void assign() throws IOException {
                    calls.add("assign");
                    if (state != State.CLOSED) {
                        throw new IOException("Unexpected state for state=" + state);
                    }
                    state = State.OPEN_LATER;
                }

                @Override
                public boolean reopened() {
                    return state == State.OPEN_LATER;
                }

                @Override
                public boolean notOpen(IOException e) {
                    return e.getMessage().startsWith("Unexpected state");
                }

                @Override
                public void close() {
                }
            };
        }

        boolean incarnationClosed() {
            return state != State.OPEN_MINE;
        }

        RegionReopener reopener(boolean inPlace, long giveUpMs) {
            return new RegionReopener("r", inPlace, this::open, this::incarnationClosed, 1_000, 30_000, giveUpMs,
                    now::get, ms -> {
                        sleeps.add(ms);
                        now.addAndGet(ms);
                    });
        }
    }

    @Test
    void aClosedConnectionIsNotReusedAndTheRequestOutlastsSixAttempts() {
        Model m = new Model();
        m.brokenConnections = 8; // the old code's six attempts over one closed connection all failed
        RegionReopener r = m.reopener(true, 30 * 60_000L);
        assertEquals(RegionReopener.Outcome.REOPENED, r.run());
        assertEquals(9, r.attempts());
        assertEquals(9, m.opened, "a fresh connection for every attempt");
        assertEquals(List.of("unassign", "assign"), m.calls);
        assertEquals(State.OPEN_LATER, m.state);
        assertEquals(List.of(1_000L, 2_000L, 4_000L, 8_000L, 16_000L, 30_000L, 30_000L, 30_000L), m.sleeps,
                "doubling backoff, capped");
    }

    @Test
    void aRegionSomeoneElseClosedIsAssignedNotLeftClosed() {
        // run3: another incarnation's stale unassign closed the region; this incarnation's request came after
        Model m = new Model();
        m.state = State.CLOSED;
        RegionReopener r = m.reopener(true, 30 * 60_000L);
        assertEquals(RegionReopener.Outcome.REOPENED, r.run());
        assertEquals(List.of("assign"), m.calls, "closed already: assigned, not unassigned again");
        assertEquals(State.OPEN_LATER, m.state);
        assertEquals(1, r.attempts());
    }

    @Test
    void anUnassignRefusedBecauseTheRegionIsNotOpenGoesOnToAssign() {
        // the requesting incarnation does not know yet that it was closed: the master's refusal says so
        Model m = new Model() {
            @Override
            boolean incarnationClosed() {
                return false;
            }
        };
        m.state = State.CLOSED;
        RegionReopener r = m.reopener(true, 30 * 60_000L);
        assertEquals(RegionReopener.Outcome.REOPENED, r.run());
        assertEquals(List.of("unassign", "assign"), m.calls);
        assertEquals(State.OPEN_LATER, m.state);
    }

    @Test
    void aRegionInTransitionIsAskedAgain() {
        Model m = new Model();
        m.inTransition = 3;
        RegionReopener r = m.reopener(true, 30 * 60_000L);
        assertEquals(RegionReopener.Outcome.REOPENED, r.run());
        assertEquals(List.of("unassign", "unassign", "unassign", "unassign", "assign"), m.calls);
        assertEquals(List.of(1_000L, 2_000L, 4_000L), m.sleeps);
    }

    @Test
    void aLaterIncarnationAlreadyOpenIsNotClosedAgain() {
        // e.g. the old incarnation of an aborted server: the master reassigned the region meanwhile
        Model m = new Model();
        m.state = State.OPEN_LATER;
        RegionReopener r = m.reopener(true, 30 * 60_000L);
        assertEquals(RegionReopener.Outcome.REOPENED_ELSEWHERE, r.run());
        assertEquals(List.of(), m.calls);
    }

    @Test
    void aMoveIsOneRequestToTheMaster() {
        Model m = new Model();
        RegionReopener r = m.reopener(false, 30 * 60_000L);
        assertEquals(RegionReopener.Outcome.REOPENED, r.run());
        assertEquals(List.of("move"), m.calls);
    }

    @Test
    void aDisabledOrDeletedTableIsNotReopened() {
        Model m = new Model();
        m.tableGone = true;
        m.state = State.CLOSED;
        RegionReopener r = m.reopener(true, 30 * 60_000L);
        assertEquals(RegionReopener.Outcome.TABLE_GONE, r.run());
        assertEquals(List.of(), m.calls);
        assertEquals(State.CLOSED, m.state);
    }

    @Test
    void itGivesUpOnlyAtItsDeadline() {
        Model m = new Model();
        m.brokenConnections = Integer.MAX_VALUE;
        RegionReopener r = m.reopener(true, 10 * 60_000L);
        assertEquals(RegionReopener.Outcome.GAVE_UP, r.run());
        assertTrue(m.now.get() <= 10 * 60_000L, "not past the deadline: " + m.now.get());
        assertTrue(m.now.get() > 10 * 60_000L - 30_000L, "asked until the deadline: " + m.now.get());
        assertTrue(r.attempts() > 6, "more than the old six attempts: " + r.attempts());
    }
}
