package io.salus.core.protocol.client;

import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.Verifier;
import io.salus.core.merkle.Hash;
import io.salus.core.merkle.InMemoryNodeStore;
import io.salus.core.merkle.MerkleTree;
import io.salus.core.merkle.VolumeRootRecord;
import io.salus.core.protocol.Membership;
import io.salus.core.protocol.ProtocolConfig;
import io.salus.core.protocol.RrsConfig;
import io.salus.core.protocol.message.Message;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The client mount protocol against the replicas (§3.3.3), for a new writer of an existing volume: every replica
 * of every region reports its region's state ({@link Message.MountState}), signed and bound to the mount's nonce.
 * Two rounds: the first learns the highest batch id any replica knows and picks the fence (the first batch id of
 * the next {@link #BATCH_ID_EPOCH}); the second, signed by the client, fences the previous writer at every replica
 * (no sub-batch of it is logged any more) and collects the states the mount is built from. Because nothing new can
 * be logged after the fence, a region whose logged entries are all decided ("settled") cannot change any more, so
 * answers taken at different times describe one state of the volume.
 * A region's state is accepted only when its three replicas signed the same state (unanimous consent: at least one
 * of them is correct) and nothing they logged is still undecided; a region whose replicas signed different states
 * for the same log position is refused, naming the region and the replicas. The volume tree is rebuilt from one
 * replica's leaf hashes that hash to the signed region root, and checked (by {@link VolumeClient}) against the
 * newest root record: the volume root the client itself put into its last committed PUT. So the mounted volume
 * is exactly the committed prefix the replicas certify, or the mount stops.
 *
 * <p>What this does not do (yet): resolve a previous writer's batches that can never be decided (a sub-batch
 * that reached only some of its regions): such a region keeps the mount {@link Outcome.Waiting}, and the caller
 * gives up with the reason. That needs identifyLCP and aborting the batches after it (§3.3.4, issue 14).
 *
 * <p>Single-threaded: used by {@link VolumeClient} on its caller's thread.
 */
public final class ReplicaMount {
    /** What a mount has reached. */
    public sealed interface Outcome {
        /** Answers are missing, or a region is not settled yet; {@code why} names the region. */
        record Waiting(String why) implements Outcome {
        }

        /** The mount stops: {@code why} names the region and what does not check. Nothing was installed. */
        record Refused(String why) implements Outcome {
        }

        /** Every region is certified by its three replicas (internal: {@link VolumeClient} installs it). */
        record Ready(long seq, Hash root, int newestRegion, long nextBatchId,
                     Map<Integer, VolumeClient.RegionView> views, long[] lastAcceptedSeq) implements Outcome {
        }

        /** Installed: the volume is at {@code seq} / {@code root}; the next batch id is {@code nextBatchId}. */
        record Mounted(long seq, Hash root, long nextBatchId) implements Outcome {
        }
    }

    /**
     * Batch ids of one mount start at a multiple of this above every batch id a replica knows, so a late message
     * of the previous writer (a batch id it had issued that no replica had seen yet) never names a batch of the
     * new one.
     */
    public static final long BATCH_ID_EPOCH = 1L << 32;

    private final ProtocolConfig cfg;
    private final Membership membership;
    private final Verifier verifier;
    private final long nonce;
    private final io.salus.core.crypto.Signer signer;
    /** 0 while learning the batch ids the replicas know; then the fence every answer must carry. */
    private long fence;
    private boolean askAllNow;
    /** Per region, per replica: its latest verified answer. */
    private final Map<Integer, Map<NodeId, Message.MountState>> answers = new HashMap<>();
    long sentAt;

    ReplicaMount(ProtocolConfig cfg, Membership membership, Verifier verifier, io.salus.core.crypto.Signer signer,
                 long nonce) {
        this.signer = signer;
        this.cfg = cfg;
        this.membership = membership;
        this.verifier = verifier;
        this.nonce = nonce;
    }

    /** The query to send now: unfenced while learning, then fenced and signed by the client. */
    Message.MountQuery query() {
        if (fence == 0) {
            return new Message.MountQuery(nonce, 0, null);
        }
        return new Message.MountQuery(nonce, fence, signer.sign(Message.MountQuery.signedBytes(cfg.volume(), nonce,
                fence)));
    }

    /** Every replica, once, right after the fence was chosen (the fenced query goes to all); else empty. */
    List<NodeId> takeAskAll() {
        if (!askAllNow) {
            return List.of();
        }
        askAllNow = false;
        List<NodeId> l = new ArrayList<>();
        for (int r = 0; r < cfg.regionCount(); r++) {
            l.addAll(membership.current(r).replicas());
        }
        return l;
    }

    /** Takes a replica's answer if it is for this mount, from a replica of its region, and signed by it. */
    void offer(NodeId from, Message.MountState s) {
        if (s.nonce() != nonce || s.fenceBelow() < fence || !s.volume().equals(cfg.volume()) || s.region() < 0 || s.region() >= cfg.regionCount()
                || s.signature() == null) {
            return;
        }
        RrsConfig rrs = membership.current(s.region());
        if (!rrs.replicas().contains(from) || s.generation() != rrs.generation()
                || !verifier.verify(from, s.signedBytes(), s.signature())) {
            return;
        }
        answers.computeIfAbsent(s.region(), k -> new LinkedHashMap<>()).put(from, s);
    }

    /** The replicas to ask again: those that have not answered, and every replica of a region not settled yet. */
    List<NodeId> toAsk() {
        List<NodeId> l = new ArrayList<>();
        for (int r = 0; r < cfg.regionCount(); r++) {
            Map<NodeId, Message.MountState> a = answers.getOrDefault(r, Map.of());
            boolean settled = a.size() == 3 && a.values().stream().allMatch(Message.MountState::settled)
                    && agree(a);
            for (NodeId n : membership.current(r).replicas()) {
                if (!settled || !a.containsKey(n)) {
                    l.add(n);
                }
            }
        }
        return l;
    }

    private static boolean agree(Map<NodeId, Message.MountState> a) {
        Message.MountState first = a.values().iterator().next();
        return a.values().stream().allMatch(first::sameState);
    }

    Outcome outcome() {
        if (fence == 0) {
            return learnFence();
        }
        Map<Integer, VolumeClient.RegionView> views = new HashMap<>();
        long[] accepted = new long[cfg.regionCount()];
        VolumeRootRecord newest = null;
        int newestRegion = 0;
        for (int r = 0; r < cfg.regionCount(); r++) {
            Map<NodeId, Message.MountState> a = answers.getOrDefault(r, Map.of());
            String lie = contradiction(r, a);
            if (lie != null) {
                return new Outcome.Refused(lie);
            }
            if (a.size() < 3) {
                return new Outcome.Waiting("region " + r + ": " + a.size() + " of its 3 replicas answered the mount query"
                        + " (missing: " + missing(r, a) + ")");
            }
            if (!agree(a) || !a.values().stream().allMatch(Message.MountState::settled)) {
                return new Outcome.Waiting("region " + r + " is not settled: its replicas report " + a.values()
                        + "; waiting for the previous writer's last batches to be decided (a batch that reached only"
                        + " some of its regions is never decided: that needs recovery, identifyLCP + abort, not built)");
            }
            Message.MountState s = a.values().iterator().next();
            if (s.lastAcceptedSeq() != s.appliedSeq() || s.recordSeq() != s.appliedSeq()) {
                return new Outcome.Refused("region " + r + " ends with log entries that were not applied (accepted"
                        + " seq " + s.lastAcceptedSeq() + ", applied seq " + s.appliedSeq() + ", root record seq "
                        + s.recordSeq() + "): its last batches were aborted; mounting such a volume needs recovery"
                        + " (identifyLCP), not built");
            }
            Map<Long, Hash> leaves = null;
            for (Message.MountState c : a.values()) {
                MerkleTree rt = cfg.layout().newRegionTree(cfg.hash(), cfg.blockSize(), new InMemoryNodeStore());
                c.leafHashes().forEach(rt::setLeaf);
                if (rt.root().equals(s.regionRoot())) {
                    leaves = c.leafHashes();
                    break;
                }
            }
            if (leaves == null) {
                return new Outcome.Refused("region " + r + ": no replica sent leaf hashes that hash to the region root"
                        + " its three replicas signed (" + s.regionRoot() + "); the region's stored state does not"
                        + " check: repair it from a correct replica before mounting");
            }
            VolumeRootRecord rec = new VolumeRootRecord(s.recordRoot(), s.recordSeq());
            views.put(r, new VolumeClient.RegionView(s.regionRoot(), rec, leaves, null));
            accepted[r] = s.lastAcceptedSeq();
            if (newest == null || newest.newer(rec) != newest) {
                newest = rec;
                newestRegion = r;
            }
        }
        return new Outcome.Ready(newest.seq(), newest.root(), newestRegion, fence, views, accepted);
    }

    /**
     * First round: once every replica answered, the fence is the first batch id of the epoch after every batch id
     * any replica knows (the highest any replica reports: a replica that under-reports changes nothing, one that
     * over-reports only skips ids). The fenced query then goes to every replica; from its answers on, no
     * sub-batch of the previous writer is logged any more, so a settled region stays as it is.
     */
    private Outcome learnFence() {
        long maxBatch = 0;
        for (int r = 0; r < cfg.regionCount(); r++) {
            Map<NodeId, Message.MountState> a = answers.getOrDefault(r, Map.of());
            if (a.size() < 3) {
                return new Outcome.Waiting("region " + r + ": " + a.size() + " of its 3 replicas answered the mount"
                        + " query (missing: " + missing(r, a) + ")");
            }
            for (Map.Entry<NodeId, Message.MountState> e : a.entrySet()) {
                if (e.getValue().lastBatchId() < 0 || e.getValue().lastBatchId() > Long.MAX_VALUE - 2 * BATCH_ID_EPOCH) {
                    return new Outcome.Refused("region " + r + ": replica " + e.getKey() + " reports batch id "
                            + e.getValue().lastBatchId() + ", outside 0.." + (Long.MAX_VALUE - 2 * BATCH_ID_EPOCH)
                            + ": it is faulty; replace it (recovery) and mount again");
                }
                maxBatch = Math.max(maxBatch, e.getValue().lastBatchId());
            }
        }
        fence = (Math.floorDiv(maxBatch, BATCH_ID_EPOCH) + 1) * BATCH_ID_EPOCH;
        answers.clear();
        askAllNow = true;
        return new Outcome.Waiting("fencing the previous writer below batch id " + fence);
    }

    /**
     * Proof that a replica of region {@code r} lies (or its state is corrupted): two settled replicas that
     * resolved the same log index report different states. Honest replicas apply the same committed entries in
     * the same log order, so their states at one index are equal.
     */
    private static String contradiction(int r, Map<NodeId, Message.MountState> a) {
        List<Map.Entry<NodeId, Message.MountState>> l = new ArrayList<>(a.entrySet());
        for (int i = 0; i < l.size(); i++) {
            for (int j = i + 1; j < l.size(); j++) {
                Message.MountState x = l.get(i).getValue();
                Message.MountState y = l.get(j).getValue();
                if (x.settled() && y.settled() && x.committedIndex() == y.committedIndex() && !x.sameState(y)) {
                    return "region " + r + ": its replicas signed different states for the same log position "
                            + x.committedIndex() + " (" + l.get(i).getKey() + ": " + x + "; " + l.get(j).getKey()
                            + ": " + y + "). At least one of them is faulty; the volume is not mounted. Replace the"
                            + " faulty replica of region " + r + " (recovery) and mount again";
                }
            }
        }
        return null;
    }

    private List<NodeId> missing(int r, Map<NodeId, Message.MountState> a) {
        List<NodeId> m = new ArrayList<>();
        for (NodeId n : membership.current(r).replicas()) {
            if (!a.containsKey(n)) {
                m.add(n);
            }
        }
        return m;
    }
}
