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
                ServerName target = leastLoaded(liveSet, used, counts);
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

    /** The live server not in {@code excluded} with the fewest Salus replica regions (ties: the lowest name). */
    private static ServerName leastLoaded(Set<ServerName> live, Set<ServerName> excluded,
            Map<ServerName, Integer> counts) {
        ServerName target = null;
        for (ServerName s : live) {
            if (excluded.contains(s)) {
                continue;
            }
            int c = counts.getOrDefault(s, 0);
            if (target == null || c < counts.getOrDefault(target, 0)
                    || (c == counts.getOrDefault(target, 0) && s.compareTo(target) < 0)) {
                target = s;
            }
        }
        return target;
    }

    /** A replacement request that cannot be carried out; the message names why and the fix. */
    public static final class ReplacementRefused extends Exception {
        private static final long serialVersionUID = 1L;

        public ReplacementRefused(String message) {
            super(message);
        }
    }

    /**
     * RRS replacement (paper §3.2, §3.3.4 step 1): moves for the suspect replicas of one RRS. Each suspect replica
     * {@code k} moves to a live server that hosts no replica of this RRS (now or planned) and is not a suspect
     * server, the least loaded first (the placement rule stays: three distinct servers).
     *
     * @param rrs the RRS's replicas in replica order (r0, r1, r2) with their current servers
     * @param suspects replica index to the server the requester saw it on
     * @param live the live region servers
     * @param load Salus replica regions per server now
     * @throws ReplacementRefused if a suspect names a replica index outside 0..2 or a server that does not host
     *                            that replica now, or if no server can take a suspect replica
     */
    public static List<Move> planReplacement(List<Replica> rrs, Map<Integer, ServerName> suspects,
            Collection<ServerName> live, Map<ServerName, Integer> load) throws ReplacementRefused {
        if (suspects.isEmpty()) {
            throw new ReplacementRefused("the request names no suspect replica");
        }
        Set<ServerName> excluded = new HashSet<>(suspects.values());
        for (Map.Entry<Integer, ServerName> e : suspects.entrySet()) {
            int k = e.getKey();
            if (k < 0 || k >= rrs.size()) {
                throw new ReplacementRefused("replica " + k + " does not exist (an RRS has replicas 0.." + (rrs.size()
                        - 1) + ")");
            }
            ServerName now = rrs.get(k).server();
            if (now == null || !now.equals(e.getValue())) {
                throw new ReplacementRefused("replica " + k + " (" + rrs.get(k).region().getRegionNameAsString()
                        + ") is " + (now == null ? "not open on any server" : "on " + now) + ", not on "
                        + e.getValue() + ": nothing to replace (already replaced or being reassigned, or the"
                        + " request names a server that does not host it)");
            }
        }
        for (Replica r : rrs) {
            if (r.server() != null) {
                excluded.add(r.server());
            }
        }
        Set<ServerName> liveSet = new HashSet<>(live);
        Map<ServerName, Integer> counts = new HashMap<>(load);
        List<Move> moves = new ArrayList<>();
        for (Map.Entry<Integer, ServerName> e : new java.util.TreeMap<>(suspects).entrySet()) {
            ServerName target = leastLoaded(liveSet, excluded, counts);
            if (target == null) {
                throw new ReplacementRefused("no live region server can take replica " + e.getKey() + ": each of the "
                        + liveSet.size() + " live server(s) " + new java.util.TreeSet<>(liveSet) + " already hosts a"
                        + " replica of this RRS or is suspect. Start another region server (replacing a replica"
                        + " needs a live server outside the RRS) and ask again");
            }
            excluded.add(target);
            counts.merge(target, 1, Integer::sum);
            moves.add(new Move(rrs.get(e.getKey()).region(), e.getValue(), target));
        }
        return List.copyOf(moves);
    }
}
