package io.salus.core.protocol.client;

import io.salus.core.merkle.Hash;
import io.salus.core.merkle.MerkleTree;
import io.salus.core.crypto.NodeId;
import io.salus.core.protocol.ProtocolConfig;
import io.salus.core.protocol.message.Message;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The last step of a mount (§3.3.3): the leaf hashes of every region, fetched a range at a time from one replica of
 * the region and written straight into the new volume tree, checked against the region root the region's three
 * replicas signed. The client's memory stays bounded by the ranges in flight, whatever the volume holds (issue 27:
 * every {@link Message.MountState} used to carry its region's leaves, so a mount held them three times over and every
 * retransmitted query made every replica scan and send its whole region again).
 *
 * <p>Per region: the ranges [from, from + {@link Message.LeafQuery#MAX_BLOCKS}) of its blocks are asked of one
 * replica (the region's first asked is its index modulo 3, spreading the load), at most {@link #WINDOW} ranges in
 * flight over the whole volume, each asked again after the retransmission period. When all ranges of a region have
 * arrived, the region's node of the volume tree must equal the signed region root; if it does not, or the replica
 * answered with another region root, or it did not answer {@link #SILENT_ROUNDS} periods in a row, its leaves are
 * taken out of the tree again and the next replica is asked. A region none of whose three replicas' leaves build
 * the signed root refuses the mount (its stored state does not check).
 *
 * <p>Single-threaded: used by {@link ReplicaMount} on the client's thread.
 */
final class MountLeafFetch {
    /** Leaf ranges in flight at most, over the whole volume (bounds the client's memory for the chunks). */
    static final int WINDOW = 8;
    /** Retransmission periods without an answer from a region's replica before the next replica is asked. */
    static final int SILENT_ROUNDS = 4;

    private final ProtocolConfig cfg;
    private final long nonce;
    private final MerkleTree tree;
    private final Map<Integer, RegionFetch> fetches = new TreeMap<>();
    /** Regions whose leaves in {@link #tree} build the root here. */
    private final Map<Integer, Hash> verified = new HashMap<>();
    private final List<Map.Entry<NodeId, Message>> sends = new ArrayList<>();
    private int inFlight;
    private long chunksTaken;

    /** One region's fetch in progress: the root to reach, the replica asked, the ranges asked and not yet answered. */
    private static final class RegionFetch {
        final int region;
        final Hash root;
        final List<NodeId> replicas;
        final long blocks;
        /** Replicas whose leaves did not build the root (or that answered with another root). */
        final java.util.Set<NodeId> mismatched = new java.util.HashSet<>();
        int source;
        long nextFrom;
        /** Asked ranges not answered yet: from → the time asked. */
        final Map<Long, Long> asked = new TreeMap<>();
        long lastAnswerAt;
        boolean touched;

        RegionFetch(int region, Hash root, List<NodeId> replicas, long blocks, long now) {
            this.region = region;
            this.root = root;
            this.replicas = List.copyOf(replicas);
            this.blocks = blocks;
            this.source = region % replicas.size();
            this.lastAnswerAt = now;
        }

        NodeId source() {
            return replicas.get(source);
        }
    }

    MountLeafFetch(ProtocolConfig cfg, long nonce, MerkleTree tree) {
        this.cfg = cfg;
        this.nonce = nonce;
        this.tree = tree;
    }

    /** The volume tree being built (complete once every region is {@link #verified}). */
    MerkleTree tree() {
        return tree;
    }

    /** True if region {@code r}'s leaves in the tree build {@code root}. */
    boolean verified(int r, Hash root) {
        return root.equals(verified.get(r));
    }

    int verifiedRegions() {
        return verified.size();
    }

    /** Leaf ranges taken into the tree so far (tests, the driver's log). */
    long chunksTaken() {
        return chunksTaken;
    }

    /**
     * Region {@code r}'s three replicas signed the same settled state with region root {@code root}: its leaves are
     * wanted (a no-op if they are verified or being fetched for that root; a fetch for another root starts over).
     */
    void want(int r, Hash root, List<NodeId> replicas, long now) {
        if (verified(r, root)) {
            return;
        }
        RegionFetch f = fetches.get(r);
        if (f != null && f.root.equals(root)) {
            return;
        }
        if (f != null) {
            drop(f);
        }
        if (verified.remove(r) != null || f != null) {
            clearRegion(r); // the region's agreed state changed since: its leaves in the tree are not it any more
        }
        long inRegion = Math.min(cfg.layout().blocksPerRegion(), cfg.layout().volumeBlocks() - cfg.layout().firstBlock(r));
        fetches.put(r, new RegionFetch(r, root, replicas, inRegion, now));
    }

    /**
     * A refusal (the region and why) if some region's three replicas all sent leaves that do not build its signed
     * root, else null.
     */
    String refusal() {
        for (RegionFetch f : fetches.values()) {
            if (f.mismatched.size() == f.replicas.size()) {
                return "region " + f.region + ": no replica sent leaf hashes that hash to the region root its three"
                        + " replicas signed (" + f.root + "); the region's stored state does not check: repair it from"
                        + " a correct replica before mounting";
            }
        }
        return null;
    }

    /** Takes a replica's leaf range if it is one this fetch asked of it. */
    void offer(NodeId from, Message.LeafChunk c, long now) {
        RegionFetch f = fetches.get(c.region());
        if (f == null || c.nonce() != nonce || !c.volume().equals(cfg.volume()) || !from.equals(f.source())
                || !f.asked.containsKey(c.fromBlock()) || c.toBlock() != Math.min(f.blocks, c.fromBlock()
                + Message.LeafQuery.MAX_BLOCKS)) {
            return; // late, duplicate, from another replica, or for a range not asked
        }
        f.asked.remove(c.fromBlock());
        inFlight--;
        f.lastAnswerAt = now;
        if (!c.regionRoot().equals(f.root) || !c.leaves().isEmpty() && (c.leaves().firstKey() < c.fromBlock()
                || c.leaves().lastKey() >= c.toBlock())) {
            nextSource(f, now, true); // not the state it signed, or leaves outside the range it was asked: not used
            return;
        }
        if (!c.leaves().isEmpty()) {
            f.touched = true;
            tree.setLeaves(cfg.layout().firstBlock(f.region), c.leaves());
        }
        chunksTaken++;
        if (f.asked.isEmpty() && f.nextFrom >= f.blocks) {
            if (tree.node(cfg.layout().regionLevel(), f.region).equals(f.root)) {
                fetches.remove(f.region);
                verified.put(f.region, f.root);
            } else {
                nextSource(f, now, true);
            }
        }
    }

    /**
     * The leaf queries to send now: new ranges up to the window, and ranges asked a retransmission period ago
     * (again, or of the next replica after {@link #SILENT_ROUNDS} silent periods).
     */
    List<Map.Entry<NodeId, Message>> takeSends(long now, long retransmitEvery) {
        for (RegionFetch f : new ArrayList<>(fetches.values())) {
            if (f.mismatched.size() == f.replicas.size()) {
                continue; // refused
            }
            if (!f.asked.isEmpty() && now - f.lastAnswerAt >= SILENT_ROUNDS * Math.max(1, retransmitEvery)) {
                nextSource(f, now, false); // silent, not lying: it may be asked again later
            }
            for (Map.Entry<Long, Long> e : f.asked.entrySet()) {
                if (now - e.getValue() >= retransmitEvery) {
                    e.setValue(now);
                    ask(f, e.getKey());
                }
            }
        }
        for (RegionFetch f : fetches.values()) {
            while (inFlight < WINDOW && f.nextFrom < f.blocks && f.mismatched.size() < f.replicas.size()) {
                long from = f.nextFrom;
                f.nextFrom = Math.min(f.blocks, from + Message.LeafQuery.MAX_BLOCKS);
                f.asked.put(from, now);
                inFlight++;
                ask(f, from);
            }
        }
        List<Map.Entry<NodeId, Message>> out = new ArrayList<>(sends);
        sends.clear();
        return out;
    }

    /** The replicas asked for leaves now (a transport that polls for replies polls these). */
    List<NodeId> asked() {
        List<NodeId> l = new ArrayList<>();
        for (RegionFetch f : fetches.values()) {
            if (!f.asked.isEmpty()) {
                l.add(f.source());
            }
        }
        return l;
    }

    private void ask(RegionFetch f, long from) {
        long to = Math.min(f.blocks, from + Message.LeafQuery.MAX_BLOCKS);
        sends.add(Map.entry(f.source(), new Message.LeafQuery(nonce, f.region, from, to)));
    }

    /**
     * The current replica's leaves leave the tree and the next replica not known to lie is asked; {@code lied}: its
     * leaves did not build the root (it is not asked again), else it was silent.
     */
    private void nextSource(RegionFetch f, long now, boolean lied) {
        if (lied) {
            f.mismatched.add(f.source());
        }
        drop(f);
        if (f.touched) {
            clearRegion(f.region);
            f.touched = false;
        }
        f.nextFrom = 0;
        f.lastAnswerAt = now;
        for (int i = 1; i <= f.replicas.size(); i++) {
            int s = (f.source + i) % f.replicas.size();
            if (!f.mismatched.contains(f.replicas.get(s))) {
                f.source = s;
                return;
            }
        }
    }

    private void drop(RegionFetch f) {
        inFlight -= f.asked.size();
        f.asked.clear();
    }

    /**
     * Takes region {@code r}'s leaves out of the tree: walks its subtree down the nodes that are not empty (cost in
     * proportion to the leaves set, no state kept beside the tree) and sets those leaves to the empty leaf.
     */
    private void clearRegion(int r) {
        int top = cfg.layout().regionLevel();
        long first = cfg.layout().firstBlock(r);
        List<Long> set = new ArrayList<>();
        java.util.ArrayDeque<long[]> stack = new java.util.ArrayDeque<>();
        stack.push(new long[] {top, r});
        while (!stack.isEmpty()) {
            long[] n = stack.pop();
            int level = (int) n[0];
            long index = n[1];
            if (index >= (tree.leafCount() + (1L << level) - 1) >>> level
                    || tree.node(level, index).equals(tree.emptyHash(level))) {
                continue;
            }
            if (level == 0) {
                set.add(index);
            } else {
                stack.push(new long[] {level - 1, index << 1});
                stack.push(new long[] {level - 1, (index << 1) | 1});
            }
        }
        Map<Long, Hash> empty = new TreeMap<>();
        for (long b : set) {
            empty.put(b - first, tree.emptyHash(0));
            if (empty.size() == Message.LeafQuery.MAX_BLOCKS) {
                tree.setLeaves(first, empty);
                empty.clear();
            }
        }
        if (!empty.isEmpty()) {
            tree.setLeaves(first, empty);
        }
    }
}
