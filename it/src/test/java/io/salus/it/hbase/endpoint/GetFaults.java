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
 * at mount; the servers in {@link #withholdWriteReplies} withhold their replicas' replies to writes; the servers in
 * {@link #reorderForwards} reorder the sub-batches their replicas forward down the chain. Inert while the sets are
 * empty. Used by the endpoint tests and by the SalusVolume tests (it.salus).
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

  /**
   * Region servers (full server names) whose replicas reorder the client's writes they pass down the chain: every
   * other sub-batch a replica there forwards to its successor is held back and sent right after the next (another)
   * sub-batch it forwards to that successor (the later one first). Copies of the held sub-batch (retransmissions) are
   * dropped meanwhile; once it has been held {@link #MAX_HOLD_MS}, a copy releases it (no later sub-batch came: the
   * client's pipeline waits for it). Retransmissions are not held again. A server fault, like
   * {@link #withholdWriteReplies}.
   */
  public static final Set<String> reorderForwards = ConcurrentHashMap.newKeySet();
  public static final long MAX_HOLD_MS = 2000;
  /** Sub-batches held back, over all servers. */
  public static final java.util.concurrent.atomic.AtomicLong held = new java.util.concurrent.atomic.AtomicLong();
  /** Held sub-batches sent after a later one (another batch overtook them), over all servers. */
  public static final java.util.concurrent.atomic.AtomicLong reordered = new java.util.concurrent.atomic.AtomicLong();

  private volatile String server;
  /** Per (sender, successor): the sub-batch held back, and since when. */
  private final java.util.Map<java.util.List<NodeId>, Message.SubBatchMsg> holding = new java.util.HashMap<>();
  private final java.util.Map<java.util.List<NodeId>, Long> heldSince = new java.util.HashMap<>();
  private final Set<Long> seen = new java.util.HashSet<>();
  private long forwards;

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
    public synchronized java.util.List<Message> toPeer(NodeId from, NodeId to, Message m) {
        if (!(m instanceof Message.SubBatchMsg sb)) {
            return java.util.List.of(m);
        }
        java.util.List<NodeId> key = java.util.List.of(from, to);
        Message.SubBatchMsg h = holding.get(key);
        boolean faulty = server != null && reorderForwards.contains(server);
        if (h != null) {
            if (h.subBatch().batchId() != sb.subBatch().batchId()) { // the later one first, then the held one
                holding.remove(key);
                reordered.incrementAndGet();
                return java.util.List.of(m, h);
            }
            if (faulty && System.currentTimeMillis() - heldSince.get(key) < MAX_HOLD_MS) {
                return java.util.List.of(); // a copy of the held one: kept back too
            }
            holding.remove(key);
            return java.util.List.of(h);
        }
        if (!faulty) {
            return java.util.List.of(m);
        }
        if (seen.size() > 100_000) {
            seen.clear();
        }
        if (seen.add(sb.subBatch().batchId()) && forwards++ % 2 == 0) {
            holding.put(key, sb);
            heldSince.put(key, System.currentTimeMillis());
            held.incrementAndGet();
            return java.util.List.of();
        }
        return java.util.List.of(m);
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
