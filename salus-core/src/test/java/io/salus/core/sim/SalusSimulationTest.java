package io.salus.core.sim;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.salus.core.protocol.Mutation;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Runs many seeded scenarios of the whole protocol (default 10,000; {@code -Dsalus.sim.seeds=N} or {@code -Dsalus.sim.scenarios=N},
 * {@code -Dsalus.sim.firstSeed=S}). A failing seed prints a one-line reproduction command;
 * {@code -Dsalus.sim.seed=N} runs exactly that seed; {@code -Dsalus.sim.mutation=M} switches a
 * {@link Mutation} on, with the fault profile {@link MutationTest} uses for it.
 */
class SalusSimulationTest {
    static String repro(long seed, Mutation m) {
        return "mvn -B -o -pl salus-core test -Dtest=SalusSimulationTest#seededScenarios -Dsalus.sim.seed=" + seed
                + (m == null ? "" : " -Dsalus.sim.mutation=" + m);
    }

    static java.util.Map<String, Long> filter(java.util.Map<String, Long> stats, String prefix) {
        java.util.Map<String, Long> out = new java.util.TreeMap<>();
        stats.forEach((k, v) -> {
            if (k.startsWith(prefix)) {
                out.put(k.substring(prefix.length()), v);
            }
        });
        return out;
    }

    @Test
    void seededScenarios() {
        String one = System.getProperty("salus.sim.seed");
        String mut = System.getProperty("salus.sim.mutation");
        Mutation mutation = mut == null || mut.isEmpty() ? null : Mutation.valueOf(mut);
        long first = one != null ? Long.parseLong(one) : Long.getLong("salus.sim.firstSeed", 1);
        int n = one != null ? 1 : Integer.getInteger("salus.sim.seeds", Integer.getInteger("salus.sim.scenarios", 10_000));
        long start = System.nanoTime();
        List<String> failures = new ArrayList<>();
        long recoveries = 0;
        long messages = 0;
        long acked = 0;
        int threads = Integer.getInteger("salus.sim.threads", 2);
        final Mutation mm = mutation;
        List<SalusSimulation.Result> results;
        java.util.concurrent.ForkJoinPool pool = new java.util.concurrent.ForkJoinPool(threads);
        try {
            results = pool.submit(() -> java.util.stream.LongStream.range(first, first + n).parallel()
                    .mapToObj(seed -> (mm == null ? new SalusSimulation(seed, Set.of())
                            : new SalusSimulation(seed, Set.of(mm), MutationTest.profile(mm), MutationTest.forced(mm)))
                            .run())
                    .collect(java.util.stream.Collectors.toList())).join();
        } finally {
            pool.shutdown();
        }
        java.util.Map<String, Long> stats = new java.util.TreeMap<>();
        for (SalusSimulation.Result r : results) {
            r.stats().forEach((k, v) -> stats.merge(k, (long) v, Long::sum));
            long seed = r.seed();
            recoveries += r.recoveries();
            messages += r.messages();
            acked += r.ackedBatches();
            if (r.violation() != null) {
                String line = "seed " + seed + " VIOLATION " + r.violation().getMessage() + " [" + r.description()
                        + "]\n  reproduce: " + repro(seed, mutation);
                failures.add(line);
                System.out.println(line);
                if (one != null && r.violation().getCause() != null) {
                    r.violation().getCause().printStackTrace(System.out);
                }
            } else if (one != null) {
                System.out.println("seed " + seed + " OK [" + r.description() + "] recoveries=" + r.recoveries()
                        + " messages=" + r.messages());
            }
        }
        double secs = (System.nanoTime() - start) / 1e9;
        System.out.printf("salus simulation: %d scenarios, %d violations, %d recoveries, %d batches acked, %d messages,"
                + " %.1f s%n", n, failures.size(), recoveries, acked, messages, secs);
        System.out.println("salus simulation: faults injected " + filter(stats, "fault:"));
        System.out.println("salus simulation: aborts seen " + filter(stats, "abort:"));
        System.out.println("salus simulation: recovery " + filter(stats, "recovery:"));
        assertTrue(failures.isEmpty(), failures.size() + " violations, first: " + (failures.isEmpty() ? ""
                : failures.get(0)));
        if (one == null && n >= 200) {
            // a seed set in which no batch ever aborts does not test the abort path at all
            for (String kind : List.of("abort:NO_VOTE", "abort:MALFORMED_CLIENT_REQUEST", "abort:FOLLOWS_ABORTED_BATCH")) {
                assertTrue(stats.getOrDefault(kind, 0L) > 0, "no " + kind + " in " + n + " seeds: " + stats);
            }
        }
    }
}
