package io.salus.core.protocol.replica;

import io.salus.core.crypto.NodeId;
import io.salus.core.protocol.message.Message;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The log entries of the latest state transfer each peer sent a replica catching up (one transfer per peer: what
 * it holds is bounded by the log after one checkpoint), so that an entry one peer transfers is
 * {@linkplain ReplicaCatchUp.Corroboration corroborated} when the other peer transferred the same bytes at the same
 * index, or else by a LOG_ENTRY certificate read from a metadata holder (review rvw22 finding 2b). Used on one
 * thread (the replica's event loop, or its host's while it catches up at open).
 */
public final class PeerTransfers {
    private record Heard(long throughIndex, List<byte[]> entries) {
    }

    private final Map<NodeId, Heard> heard = new HashMap<>();
    private final ReplicaCatchUp.Corroboration certified;

    /** @param certified what proves an entry without the other peer (a LOG_ENTRY read, or {@code NONE}) */
    public PeerTransfers(ReplicaCatchUp.Corroboration certified) {
        this.certified = certified;
    }

    /** Remembers {@code x}'s log entries as {@code peer}'s latest (its earlier transfer is forgotten). */
    public void heard(NodeId peer, Message.StateTransfer x) {
        heard.put(peer, new Heard(x.throughIndex(), x.entries()));
    }

    /**
     * The corroboration of entries {@code from} transfers: another peer's latest transfer holds the same bytes at
     * the index, or the LOG_ENTRY certificate proves them.
     */
    public ReplicaCatchUp.Corroboration corroboration(NodeId from) {
        return (index, bytes) -> {
            for (Map.Entry<NodeId, Heard> h : heard.entrySet()) {
                if (h.getKey().equals(from)) {
                    continue;
                }
                long j = index - h.getValue().throughIndex() - 1;
                if (j >= 0 && j < h.getValue().entries().size()
                        && Arrays.equals(h.getValue().entries().get((int) j), bytes)) {
                    return true;
                }
            }
            return certified.corroborated(index, bytes);
        };
    }

    /** Forgets every transfer (the replica is no longer behind). */
    public void clear() {
        heard.clear();
    }
}
