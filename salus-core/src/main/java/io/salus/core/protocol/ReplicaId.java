package io.salus.core.protocol;

import io.salus.core.cert.RegionId;
import io.salus.core.crypto.NodeId;

/**
 * One replica: a region server <em>and</em> the region it serves. A region server can host
 * replicas of several regions (even several participant regions of one batch); its signing key is
 * the server's ({@link NodeId}), but votes, decisions and requests are per replica.
 */
public record ReplicaId(RegionId region, NodeId server) {
    @Override
    public String toString() {
        return server + "@" + region;
    }
}
