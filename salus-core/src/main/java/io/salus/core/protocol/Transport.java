package io.salus.core.protocol;

import io.salus.core.crypto.NodeId;
import io.salus.core.protocol.message.Message;

/** Outgoing messages of a protocol node. Delivery is unreliable; the simulator or RPC layer implements it. */
public interface Transport {
    void send(NodeId to, Message m);
}
