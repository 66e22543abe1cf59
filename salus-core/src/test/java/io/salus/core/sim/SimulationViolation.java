package io.salus.core.sim;

/** An invariant or liveness violation found by the simulator. */
final class SimulationViolation extends RuntimeException {
    final String invariant;

    SimulationViolation(String invariant, String detail) {
        super(invariant + ": " + detail);
        this.invariant = invariant;
    }
}
