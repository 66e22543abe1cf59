package io.salus.it.salus;

import io.salus.core.crypto.NodeId;
import io.salus.core.hbase.endpoint.ReplicaFaultInjector;
import io.salus.core.protocol.replica.ReplicaHooks;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Test fault injection (the mini cluster's region servers run in the test JVM): replicas in {@link #corrupt}
 * answer GETs with one bit of the data flipped, keeping the honest proof, so the client's end-to-end check fails.
 * Inert while the set is empty.
 */
public final class LyingReplicas implements ReplicaFaultInjector {
  static final Set<NodeId> corrupt = ConcurrentHashMap.newKeySet();

  @Override
  public ReplicaHooks hooks(NodeId replica) {
    return new ReplicaHooks() {
      @Override
      public byte[] onGetReply(byte[] data) {
        if (!corrupt.contains(replica)) {
          return data;
        }
        byte[] d = data.clone();
        d[0] ^= 1;
        return d;
      }
    };
  }
}
