package io.salus.it.hbase.endpoint;

import io.salus.core.crypto.NodeId;
import io.salus.core.hbase.endpoint.ReplicaFaultInjector;
import io.salus.core.protocol.message.Message;
import io.salus.core.protocol.replica.ReplicaHooks;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Test fault injection for the mini cluster (its region servers run in the test JVM, so the test switches faults
 * on and off through these sets): replicas in {@link #corrupt} return GET data with one bit flipped (the proof stays
 * the honest one, so the client's end-to-end check fails); replicas in {@link #silent} never send a GET reply;
 * replicas in {@link #mountLiars} sign a forged region root (one bit flipped) when a new writer asks for their state
 * at mount; the servers in {@link #withholdWriteReplies} withhold their replicas' replies to writes. Inert while the
 * sets are empty. Used by the endpoint tests and by the SalusVolume tests (it.salus).
 */
public final class GetFaults implements ReplicaFaultInjector {
    public static final Set<NodeId> corrupt = ConcurrentHashMap.newKeySet();
    public static final Set<NodeId> silent = ConcurrentHashMap.newKeySet();
    public static final Set<NodeId> mountLiars = ConcurrentHashMap.newKeySet();
  /**
   * Region servers (full server names) whose replicas withhold their replies to writes (PUT tentative outcomes and
   * FLUSH confirmations) from the client: a server fault, so a replica moved off such a server answers again.
   */
  public static final Set<String> withholdWriteReplies = ConcurrentHashMap.newKeySet();

  private volatile String server;

  @Override
  public void hostedOn(String server) {
    this.server = server;
  }

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

            @Override
            public Message.MountState mountReport(Message.MountState honest) {
                if (!mountLiars.contains(replica)) {
                    return honest;
                }
                byte[] root = honest.regionRoot().bytes().clone();
                root[0] ^= 1;
                return honest.withRegionRoot(io.salus.core.merkle.Hash.of(root));
            }
        };
    }

    @Override
    public boolean dropToClient(NodeId from, Message m) {
        if ((m instanceof Message.PutReply || m instanceof Message.FlushReply) && server != null
        && withholdWriteReplies.contains(server)) {
      return true;
    }
    return m instanceof Message.GetReply && silent.contains(from);
    }
}
