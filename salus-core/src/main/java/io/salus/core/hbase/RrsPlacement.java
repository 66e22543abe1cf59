package io.salus.core.hbase;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.hadoop.hbase.ServerName;
import org.apache.hadoop.hbase.client.RegionInfo;

/**
 * The placement rule for replicated region server sets: the three replica regions of one RRS (region {@code i} of
 * {@code _r0}, {@code _r1}, {@code _r2}) must sit on three distinct region servers. Given where they are, plans the
 * moves that restore the rule: a replica colocated with a lower-numbered replica of its RRS moves to the live
 * server, not hosting another replica of that RRS, with the fewest Salus replica regions (counting planned moves).
 * Pure: no I/O; {@link RrsPlacementReconciler} reads the cluster and executes the plan.
 */
public final class RrsPlacement {
    /** One replica region and the server it is open on ({@code null} when unassigned). */
    public record Replica(RegionInfo region, ServerName server) {
    }

    /** Move {@code region} from {@code from} to {@code to}. */
    public record Move(RegionInfo region, ServerName from, ServerName to) {
    }

    /** The planned moves, plus the RRSs that cannot be fixed now (too few live servers) or are still in flux. */
    public record Plan(List<Move> moves, int violations, int unfixable, int unsettled) {
    }

    private RrsPlacement() {
    }

    /**
     * @param rrsSets each element is one RRS: its replicas in replica order (r0, r1, r2)
     * @param live the live region servers
     * @param load Salus replica regions per server now (updated in place with the planned moves)
     */
    public static Plan plan(List<List<Replica>> rrsSets, Collection<ServerName> live, Map<ServerName, Integer> load) {
        Set<ServerName> liveSet = new HashSet<>(live);
        Map<ServerName, Integer> counts = new HashMap<>();
        for (ServerName s : liveSet) {
            counts.put(s, load.getOrDefault(s, 0));
        }
        List<Move> moves = new ArrayList<>();
        int violations = 0;
        int unfixable = 0;
        int unsettled = 0;
        for (List<Replica> rrs : rrsSets) {
            if (rrs.stream().anyMatch(r -> r.server() == null || !liveSet.contains(r.server()))) {
                unsettled++; // being (re)assigned: HBase's assignment finishes first, the next pass looks again
                continue;
            }
            Set<ServerName> used = new HashSet<>();
            List<Replica> colocated = new ArrayList<>();
            for (Replica r : rrs) {
                if (!used.add(r.server())) {
                    colocated.add(r);
                }
            }
            if (colocated.isEmpty()) {
                continue;
            }
            violations++;
            for (Replica r : colocated) {
                ServerName target = null;
                for (ServerName s : liveSet) {
                    if (used.contains(s)) {
                        continue;
                    }
                    if (target == null || counts.get(s) < counts.get(target)
                            || (counts.get(s).equals(counts.get(target)) && s.compareTo(target) < 0)) {
                        target = s;
                    }
                }
                if (target == null) {
                    unfixable++;
                    break;
                }
                used.add(target);
                counts.merge(target, 1, Integer::sum);
                counts.merge(r.server(), -1, Integer::sum);
                moves.add(new Move(r.region(), r.server(), target));
            }
        }
        load.clear();
        load.putAll(counts);
        return new Plan(List.copyOf(moves), violations, unfixable, unsettled);
    }
}
