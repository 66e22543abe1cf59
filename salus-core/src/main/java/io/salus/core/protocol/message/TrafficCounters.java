package io.salus.core.protocol.message;

import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * Messages and bytes per key (a direction and a message type, e.g. {@code in:peer:SUB_BATCH}), counted by a transport
 * adapter (the HBase replica endpoint counts what its RPCs carry) so that a benchmark can say which message types
 * its network bytes are made of. Thread-safe; counts only, never blocks.
 */
public final class TrafficCounters {
    private final Map<String, LongAdder[]> counts = new ConcurrentHashMap<>();

    /** Adds one message (or call) of {@code bytes} bytes under {@code key}. */
    public void add(String key, long bytes) {
        LongAdder[] c = counts.computeIfAbsent(key, k -> new LongAdder[] {new LongAdder(), new LongAdder()});
        c[0].increment();
        c[1].add(bytes);
    }

    /** Key → {messages, bytes}, sorted by key. */
    public Map<String, long[]> snapshot() {
        Map<String, long[]> m = new TreeMap<>();
        counts.forEach((k, c) -> m.put(k, new long[] {c[0].sum(), c[1].sum()}));
        return m;
    }

    /** Sums {@code add} into {@code into} (several endpoints' counters of one cluster). */
    public static void sumInto(Map<String, long[]> into, Map<String, long[]> add) {
        add.forEach((k, v) -> into.merge(k, v.clone(), (a, b) -> new long[] {a[0] + b[0], a[1] + b[1]}));
    }

    /**
     * The wire type of a {@link MessageCodec#encode} output, read from its type byte without decoding the body
     * ({@code UNKNOWN} for anything that is not a message of this codec version).
     */
    public static String typeOf(byte[] encoded) {
        if (encoded == null || encoded.length < 2) {
            return "UNKNOWN";
        }
        return typeOf(encoded[0], encoded[1]);
    }

    /** As {@link #typeOf(byte[])}, from the encoding's first two bytes (codec version, type code). */
    public static String typeOf(byte version, byte type) {
        if ((version & 0xff) != MessageCodec.VERSION) {
            return "UNKNOWN";
        }
        int code = type & 0xff;
        for (MessageCodec.Type t : MessageCodec.Type.values()) {
            if (t.code() == code) {
                return t.name();
            }
        }
        return "UNKNOWN";
    }

    /** The wire type of {@code m} ({@link MessageCodec.Type#of}). */
    public static String typeOf(Message m) {
        return MessageCodec.Type.of(m).name();
    }
}
