package io.salus.core.protocol.recovery;

import io.salus.core.cert.Certificate;
import io.salus.core.cert.RegionId;
import io.salus.core.cert.Statement;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/** {@link Coordination} in memory. Thread-safe (synchronized). */
public final class InMemoryCoordination implements Coordination {
    private final Map<RegionId, Certificate> checkpoints = new HashMap<>();
    private final Map<Long, Map<Integer, RegionReport>> reports = new HashMap<>();
    private final Map<Long, Lcp> lcps = new HashMap<>();

    @Override
    public synchronized void putCheckpoint(Certificate c) {
        Statement.Checkpoint st = c.statement(Statement.Checkpoint.class);
        Certificate old = checkpoints.get(st.region());
        if (old != null) {
            Statement.Checkpoint o = old.statement(Statement.Checkpoint.class);
            if (o.generation() > st.generation()
                    || (o.generation() == st.generation() && o.throughIndex() >= st.throughIndex())) {
                return;
            }
        }
        checkpoints.put(st.region(), c);
    }

    @Override
    public synchronized Optional<Certificate> latestCheckpoint(RegionId region) {
        return Optional.ofNullable(checkpoints.get(region));
    }

    @Override
    public synchronized void report(long epoch, int region, RegionReport report) {
        reports.computeIfAbsent(epoch, e -> new TreeMap<>()).put(region, report);
    }

    @Override
    public synchronized Map<Integer, RegionReport> reports(long epoch) {
        return new TreeMap<>(reports.getOrDefault(epoch, Map.of()));
    }

    @Override
    public synchronized Lcp putLcp(Lcp lcp) {
        return lcps.computeIfAbsent(lcp.epoch(), e -> lcp);
    }

    @Override
    public synchronized Optional<Lcp> lcp(long epoch) {
        return Optional.ofNullable(lcps.get(epoch));
    }
}
