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

    @Test
    void replacementMovesTheSuspectToAServerOutsideTheRrs() throws Exception {
        List<RrsPlacement.Replica> set = rrs(0, A, B, C);
        List<RrsPlacement.Move> moves = RrsPlacement.planReplacement(set, Map.of(1, B), List.of(A, B, C, D),
                new HashMap<>(Map.of(A, 1, B, 1, C, 1)));
        assertEquals(1, moves.size());
        assertEquals(set.get(1).region(), moves.get(0).region());
        assertEquals(B, moves.get(0).from());
        assertEquals(D, moves.get(0).to(), "the only live server outside the RRS");
    }

    @Test
    void twoSuspectsOfOneRrsGetTwoDistinctServers() throws Exception {
        ServerName e = ServerName.valueOf("e", 16020, 1);
        List<RrsPlacement.Move> moves = RrsPlacement.planReplacement(rrs(0, A, B, C), Map.of(0, A, 2, C),
                List.of(A, B, C, D, e), new HashMap<>(Map.of(D, 0, e, 5)));
        assertEquals(2, moves.size());
        assertEquals(D, moves.get(0).to(), "least loaded first");
        assertEquals(e, moves.get(1).to(), "never the server just chosen for the other replica");
    }

    @Test
    void replacementWithoutASpareServerIsRefusedNamingTheFix() {
        RrsPlacement.ReplacementRefused e = org.junit.jupiter.api.Assertions.assertThrows(
                RrsPlacement.ReplacementRefused.class, () -> RrsPlacement.planReplacement(rrs(0, A, B, C),
                        Map.of(0, A), List.of(A, B, C), new HashMap<>()));
        assertTrue(e.getMessage().contains("Start another region server"), e.getMessage());
    }

    @Test
    void aSuspectNotOnTheNamedServerIsRefused() {
        // replica 0 is on A; naming B (which hosts replica 1) or D (outside the RRS) must not move anything
        for (ServerName wrong : List.of(B, D)) {
            RrsPlacement.ReplacementRefused e = org.junit.jupiter.api.Assertions.assertThrows(
                    RrsPlacement.ReplacementRefused.class, () -> RrsPlacement.planReplacement(rrs(0, A, B, C),
                            Map.of(0, wrong), List.of(A, B, C, D), new HashMap<>()));
            assertTrue(e.getMessage().contains("not on " + wrong), e.getMessage());
        }
        org.junit.jupiter.api.Assertions.assertThrows(RrsPlacement.ReplacementRefused.class,
                () -> RrsPlacement.planReplacement(rrs(0, A, B, C), Map.of(3, A), List.of(A, B, C, D),
                        new HashMap<>()));
    }
}
