package io.salus.it.hbase.storage;

import io.salus.core.protocol.replica.InMemoryReplicaDisk;
import io.salus.core.protocol.replica.ReplicaDisk;

/** The contract against the simulator's disk (the reference behaviour; no cluster needed). */
class InMemoryReplicaDiskContractTest extends ReplicaDiskContract {
    @Override
    ReplicaDisk fresh() {
        return new InMemoryReplicaDisk();
    }

    @Override
    ReplicaDisk reopen(ReplicaDisk d) {
        return d;
    }

    @Override
    int checkpointFiles(ReplicaDisk d, long generation) {
        return ((InMemoryReplicaDisk) d).checkpointFiles(generation);
    }
}
