package io.salus.core.crypto;

import java.nio.charset.StandardCharsets;

/**
 * A node's well-known identity (region server replica, DataNode store, witness, client). It salts
 * weak signatures and names the key in {@link KeyDirectory}. At most 255 UTF-8 bytes.
 */
public record NodeId(String name) implements Comparable<NodeId> {
    public NodeId {
        if (name == null || name.isEmpty()) {
            throw new IllegalArgumentException("node id must be a non-empty string");
        }
        if (name.getBytes(StandardCharsets.UTF_8).length > 255) {
            throw new IllegalArgumentException("node id longer than 255 UTF-8 bytes: " + name.substring(0, 40) + "...");
        }
    }

    public static NodeId of(String name) {
        return new NodeId(name);
    }

    public byte[] utf8() {
        return name.getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public int compareTo(NodeId o) {
        return name.compareTo(o.name);
    }

    @Override
    public String toString() {
        return name;
    }
}
