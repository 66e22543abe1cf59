package io.salus.core.protocol.recovery;

import io.salus.core.cert.Certificate;
import io.salus.core.cert.RegionId;
import io.salus.core.cert.Statement;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.function.Predicate;

/** {@link Coordination} in memory. Thread-safe (synchronized). */
public final class InMemoryCoordination implements Coordination {
    /** Every filed checkpoint of a region, newest first (see {@link Coordination#newestFirst}). */
    private final Map<RegionId, List<Filed>> checkpoints = new HashMap<>();
    private final Map<Long, Map<Integer, RegionReport>> reports = new HashMap<>();
    private final Map<Long, Lcp> lcps = new HashMap<>();

    private record Filed(Certificate cert, Statement.Checkpoint st, byte[] digest) {
    }

    @Override
    public synchronized void putCheckpoint(Certificate c) {
        Statement.Checkpoint st = c.statement(Statement.Checkpoint.class);
        Filed f = new Filed(c, st, Coordination.digest(c));
        List<Filed> all = checkpoints.computeIfAbsent(st.region(), r -> new ArrayList<>());
        for (Filed o : all) {
            if (MessageDigest.isEqual(o.digest(), f.digest())) {
                return; // filed already
            }
        }
        all.add(f);
        all.sort((x, y) -> Coordination.newestFirst(x.st(), x.digest(), y.st(), y.digest()));
    }

    @Override
    public synchronized Optional<Certificate> latestCheckpoint(RegionId region, Predicate<Certificate> valid) {
        for (Filed f : checkpoints.getOrDefault(region, List.of())) {
            if (valid.test(f.cert())) {
                return Optional.of(f.cert());
            }
        }
        return Optional.empty();
    }

    @Override
    public synchronized int pruneCheckpoints(RegionId region, Predicate<Certificate> valid) {
        List<Filed> all = checkpoints.getOrDefault(region, List.of());
        Statement.Checkpoint keep = null;
        for (Filed f : all) {
            if (valid.test(f.cert())) {
                keep = f.st();
                break;
            }
        }
        if (keep == null) {
            return 0;
        }
        Statement.Checkpoint latest = keep;
        int before = all.size();
        all.removeIf(f -> Coordination.olderThan(f.st(), latest));
        return before - all.size();
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
