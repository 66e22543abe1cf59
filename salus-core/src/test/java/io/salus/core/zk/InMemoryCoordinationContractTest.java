package io.salus.core.zk;

import io.salus.core.protocol.recovery.Coordination;
import io.salus.core.protocol.recovery.InMemoryCoordination;

/** The {@link CoordinationContract} against the simulator's in-memory store (one object is one store). */
class InMemoryCoordinationContractTest extends CoordinationContract {
    @Override
    Coordination newStore() {
        return new InMemoryCoordination();
    }

    @Override
    Coordination peer(Coordination c) {
        return c;
    }
}
