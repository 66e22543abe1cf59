package io.salus.core.hbase.endpoint;

import io.salus.core.crypto.NodeId;
import io.salus.core.protocol.message.Message;
import io.salus.core.protocol.replica.ReplicaHooks;

/**
 * <b>Tests only</b>: makes hosted replicas faulty on a real cluster (the simulator's {@link ReplicaHooks}, plus
 * withholding replies to the client). Named by class in {@link #CLASS_KEY}; unset (production) means
 * {@link #NONE}, and nothing else in the endpoint changes behaviour.
 */
public interface ReplicaFaultInjector {
    /** Configuration key (tests only): a class implementing this interface with a public no-argument constructor. */
    String CLASS_KEY = "salus.endpoint.test.fault-injector";

    ReplicaFaultInjector NONE = new ReplicaFaultInjector() {
    };

    /** The hooks of a hosted replica. */
    default ReplicaHooks hooks(NodeId replica) {
        return ReplicaHooks.NONE;
    }

    /**
     * Called once, right after the endpoint created this injector, with the region server it runs on (its full server
     * name): a fault that belongs to a server, not to a replica, stays there when the replica moves. Default: nothing.
     */
    default void hostedOn(String server) {
    }

    /**
     * The messages to send now in place of {@code m}, which a hosted node sends to another node (a replica or a
     * metadata holder; not the client): a faulty server may hold a message back (none now) and send it after a later
     * one (that one first). Default: {@code m} alone, at once.
     */
    default java.util.List<Message> toPeer(NodeId from, NodeId to, Message m) {
        return java.util.List.of(m);
    }

    /** True to drop a message a hosted node sends to the client. */
    default boolean dropToClient(NodeId from, Message m) {
        return false;
    }
}
