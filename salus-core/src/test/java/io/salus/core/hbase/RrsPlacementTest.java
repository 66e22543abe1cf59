package io.salus.core.hbase;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.hadoop.hbase.ServerName;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.RegionInfo;
import org.apache.hadoop.hbase.client.RegionInfoBuilder;
import org.junit.jupiter.api.Test;

/** The pure placement planner; the cluster behaviour is tested in it's SalusOnHBaseTest on a mini cluster. */
class RrsPlacementTest {
    private static final ServerName A = ServerName.valueOf("a", 16020, 1);
    private static final ServerName B = ServerName.valueOf("b", 16020, 1);
    private static final ServerName C = ServerName.valueOf("c", 16020, 1);
    private static final ServerName D = ServerName.valueOf("d", 16020, 1);

    private static List<RrsPlacement.Replica> rrs(int i, ServerName... servers) {
        List<RrsPlacement.Replica> out = new ArrayList<>();
        for (int r = 0; r < servers.length; r++) {
            RegionInfo ri = RegionInfoBuilder.newBuilder(TableName.valueOf("salus", "v_r" + r))
                    .setStartKey(VolumeGeometry.rowKey(i * 16L)).build();
            out.add(new RrsPlacement.Replica(ri, servers[r]));
        }
        return out;
    }

    /** Applies a plan and returns each RRS's servers afterwards. */
    private static List<Set<ServerName>> after(List<List<RrsPlacement.Replica>> sets, RrsPlacement.Plan plan) {
        Map<String, ServerName> moved = new HashMap<>();
        plan.moves().forEach(m -> moved.put(m.region().getEncodedName(), m.to()));
        List<Set<ServerName>> out = new ArrayList<>();
        for (List<RrsPlacement.Replica> s : sets) {
            Set<ServerName> servers = new HashSet<>();
            s.forEach(r -> servers.add(moved.getOrDefault(r.region().getEncodedName(), r.server())));
            out.add(servers);
        }
        return out;
    }

    @Test
    void allThreeOnOneServerAreSpreadOverThree() {
        List<List<RrsPlacement.Replica>> sets = List.of(rrs(0, A, A, A), rrs(1, A, B, C));
        RrsPlacement.Plan plan = RrsPlacement.plan(sets, List.of(A, B, C), new HashMap<>());
        assertEquals(1, plan.violations());
        assertEquals(2, plan.moves().size(), "r1 and r2 of RRS 0 move; r0 stays");
        assertTrue(plan.moves().stream().allMatch(m -> m.from().equals(A)));
        after(sets, plan).forEach(s -> assertEquals(3, s.size(), "distinct after the plan: " + s));
    }

    @Test
    void twoMovesOfOneRrsNeverShareATargetEvenWhenOneServerIsFarEmptier() {
        Map<ServerName, Integer> load = new HashMap<>(Map.of(A, 3, B, 0, C, 50));
        List<List<RrsPlacement.Replica>> sets = List.of(rrs(0, A, A, A));
        RrsPlacement.Plan plan = RrsPlacement.plan(sets, List.of(A, B, C), load);
        assertEquals(2, plan.moves().size());
        assertEquals(Set.of(A, B, C), after(sets, plan).get(0));
    }

    @Test
    void targetIsTheLeastLoadedServerOutsideTheRrs() {
        Map<ServerName, Integer> load = new HashMap<>(Map.of(A, 5, B, 5, C, 9, D, 1));
        RrsPlacement.Plan plan = RrsPlacement.plan(List.of(rrs(0, A, A, B)), List.of(A, B, C, D), load);
        assertEquals(1, plan.moves().size());
        assertEquals(D, plan.moves().get(0).to());
        assertEquals(4, load.get(A));
        assertEquals(2, load.get(D));
    }

    @Test
    void twoLiveServersCannotHoldThreeReplicasApart() {
        RrsPlacement.Plan plan = RrsPlacement.plan(List.of(rrs(0, A, A, B)), List.of(A, B), new HashMap<>());
        assertEquals(1, plan.violations());
        assertEquals(1, plan.unfixable());
        assertEquals(List.of(), plan.moves());
    }

    @Test
    void anRrsWithAReplicaOnADeadOrNoServerIsLeftToHBaseAssignment() {
        RrsPlacement.Plan plan = RrsPlacement.plan(List.of(rrs(0, A, A, C), rrs(1, A, null, B)), List.of(A, B, D),
                new HashMap<>());
        assertEquals(2, plan.unsettled());
        assertEquals(List.of(), plan.moves());
    }

    @Test
    void distinctPlacementNeedsNoMove() {
        RrsPlacement.Plan plan = RrsPlacement.plan(List.of(rrs(0, A, B, C), rrs(1, C, A, B)), List.of(A, B, C),
                new HashMap<>());
        assertEquals(0, plan.violations());
        assertEquals(List.of(), plan.moves());
    }
}
