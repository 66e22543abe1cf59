package io.salus.core.protocol;

import io.salus.core.cert.RegionId;
import io.salus.core.crypto.NodeId;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The machines serving one region in one log generation: three region-server replicas in chain
 * order (replica i is colocated with DataNode store {@code stores.get(i)}), and two standalone
 * witnesses. The five metadata holders are the three DataNode-side stores plus the two witnesses.
 */
public record RrsConfig(RegionId region, long generation, List<NodeId> replicas, List<NodeId> stores,
                        List<NodeId> witnesses) {
    public RrsConfig {
        if (replicas.size() != 3 || stores.size() != 3 || witnesses.size() != 2) {
            throw new IllegalArgumentException("an RRS has 3 replicas, 3 DataNode stores and 2 witnesses");
        }
        replicas = List.copyOf(replicas);
        stores = List.copyOf(stores);
        witnesses = List.copyOf(witnesses);
    }

    /**
     * remapRegion (§3.3.4 step 1): the configuration of the next log generation on replacement
     * machines. The old machines must already be disabled (leases relinquished or expired); their
     * stores stay readable for recoverRegionLog.
     *
     * @throws IllegalArgumentException if a new region server is one of the old ones (the faulty
     *                                  set must be swapped out)
     */
    public RrsConfig remap(List<NodeId> newReplicas, List<NodeId> newStores, List<NodeId> newWitnesses) {
        for (NodeId n : newReplicas) {
            if (replicas.contains(n)) {
                throw new IllegalArgumentException("remap of " + region + " keeps region server " + n
                        + "; swap out every server of the RRS");
            }
        }
        return new RrsConfig(region, generation + 1, newReplicas, newStores, newWitnesses);
    }

    public NodeId primary() {
        return replicas.get(0);
    }

    /** The next replica in the chain, or null for the tail. */
    public NodeId next(NodeId replica) {
        int i = replicas.indexOf(replica);
        return i >= 0 && i < 2 ? replicas.get(i + 1) : null;
    }

    /** The previous replica in the chain, or null for the primary (and for a node not in the RRS). */
    public NodeId previous(NodeId replica) {
        int i = replicas.indexOf(replica);
        return i > 0 ? replicas.get(i - 1) : null;
    }

    public Set<NodeId> replicaSet() {
        return new HashSet<>(replicas);
    }

    /** The 3 DataNode stores then the 2 witnesses. */
    public List<NodeId> metadataHolders() {
        List<NodeId> all = new ArrayList<>(stores);
        all.addAll(witnesses);
        return all;
    }
}
