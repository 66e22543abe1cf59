package io.salus.core.sim;

import java.util.Set;

/** Runs seeds from the command line (profiling, long soaks): {@code SimMain firstSeed count}. */
public final class SimMain {
    private SimMain() {
    }

    public static void main(String[] args) {
        long first = Long.parseLong(args[0]);
        int n = Integer.parseInt(args[1]);
        long t = System.nanoTime();
        int bad = 0;
        long msgs = 0;
        for (long s = first; s < first + n; s++) {
            SalusSimulation.Result r = new SalusSimulation(s, Set.of()).run();
            msgs += r.messages();
            if (r.violation() != null) {
                bad++;
                System.out.println("seed " + s + " " + r.violation().getMessage());
            }
        }
        System.out.printf("%d scenarios, %d violations, %d messages, %.1f s%n", n, bad, msgs, (System.nanoTime() - t) / 1e9);
    }
}
