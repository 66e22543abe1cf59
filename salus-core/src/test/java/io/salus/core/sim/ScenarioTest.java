package io.salus.core.sim;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * One named behaviour per test ({@link Scenario#all()}: the protocol rows of Table 3.1 and the
 * issue-11 behaviours), each over its own seeds ({@code -Dsalus.sim.scenarioSeeds=N}, default 20).
 * The invariants are the simulator's (every event); each scenario must also show that its fault or
 * abort actually happened, so a scenario that silently stops exercising its behaviour fails.
 */
class ScenarioTest {
    static Stream<Scenario> scenarios() {
        return Scenario.all().stream();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("scenarios")
    void scenarioHoldsTheInvariants(Scenario sc) {
        int n = Integer.getInteger("salus.sim.scenarioSeeds", 20);
        List<String> failures = new ArrayList<>();
        Map<String, Long> stats = new TreeMap<>();
        for (long seed = 1; seed <= n; seed++) {
            SalusSimulation.Result r = new SalusSimulation(seed, sc).run();
            r.stats().forEach((k, v) -> stats.merge(k, (long) v, Long::sum));
            if (r.violation() != null) {
                failures.add("seed " + seed + " VIOLATION " + r.violation().getMessage() + " [" + r.description() + "]");
            }
        }
        System.out.println("scenario " + sc + ": " + n + " seeds, " + failures.size() + " violations, " + stats);
        assertTrue(failures.isEmpty(), sc + ": " + failures.size() + " violations, first: "
                + (failures.isEmpty() ? "" : failures.get(0)));
        for (String key : sc.expect()) {
            assertTrue(stats.getOrDefault(key, 0L) > 0, sc + " never produced " + key + " in " + n + " seeds: " + stats);
        }
    }
}
