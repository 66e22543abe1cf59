package io.salus.core.protocol.client;

import io.salus.core.merkle.Hash;
import io.salus.core.merkle.MerkleTree;
import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.Verifier;
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
 * flight over the whole volume and {@link #REGION_WINDOW} per region, each asked again after the retransmission
 * period. A chunk counts only if its replica signed it (the transport's sender is not proof: review of this fetch);
 * one for another region root is not an answer (the replica's state may have moved since; a late chunk of a root the
 * region had before). A signed chunk whose leaves cannot be the region's (a leaf outside the range asked, an all-zero
 * hash) is proof its replica lies. When all ranges of a region have arrived, the region's node of the volume tree
 * must equal the signed region root; if it does not (the replica lied) or a range stays unanswered
 * {@link #SILENT_ROUNDS} periods after it was first asked (silent), the leaves this replica gave are taken out of the
 * tree again (every block it set, tracked) and the next replica is asked. The replicas a silent server hosts are
 * asked last in every region of the fetch until it answers again. A region all three of whose replicas lied
 * refuses the mount (its stored state does not check).
 *
 * <p>Single-threaded: used by {@link ReplicaMount} on the client's thread.
 */
final class MountLeafFetch {
    /** Leaf ranges in flight at most, over the whole volume (bounds the client's memory for the chunks). */
    static final int WINDOW = 8;
    /** Leaf ranges in flight at most per region (a slow replica does not hold the whole window). */
    static final int REGION_WINDOW = 4;
    /** Retransmission periods without an answer from a region's replica before the next replica is asked. */
    static final int SILENT_ROUNDS = 4;

    private final ProtocolConfig cfg;
    private final Verifier verifier;
    private final long nonce;
    private final MerkleTree tree;
    private final Map<Integer, RegionFetch> fetches = new TreeMap<>();
    /** Regions whose leaves in {@link #tree} build the root here. */
    private final Map<Integer, Hash> verified = new HashMap<>();
    private final List<Map.Entry<NodeId, Message>> sends = new ArrayList<>();
    /**
     * Replicas that left a range unanswered for {@link #SILENT_ROUNDS} periods, in any region of this fetch, and have
     * answered nothing since: asked last in every region (one server holds a replica of every region; forgetting its
     * silence per region cost the silence period once per region it was first asked for, ~120 s for a 32-region
     * volume, review rv37). Kept per hosting server ({@link #hostOf}): a real volume's replicas have one id per region
     * ({@code <volume>/<region>/r<k>}), so a silence remembered per id was forgotten in the next region (review rv38).
     */
    private final java.util.Set<Object> silent = new java.util.HashSet<>();
    /**
     * The server hosting a replica (any key equal for the replicas one server hosts; the replica's own id where the
     * caller knows no more): the protocol names replicas, the client's adapter knows where they run.
     */
    private final java.util.function.Function<NodeId, ?> hostOf;
    private int inFlight;

    /** One region's fetch in progress: the root to reach, the replica asked, the ranges asked and not yet answered. */
    private static final class RegionFetch {
        final int region;
        final Hash root;
        final List<NodeId> replicas;
        final long blocks;
        /** Replicas that signed leaves which cannot be the region's or do not build its root. */
        final java.util.Set<NodeId> mismatched = new java.util.HashSet<>();
        int source;
        long nextFrom;
        /** Asked ranges not answered yet: from → {first asked, last sent}. */
        final Map<Long, long[]> asked = new TreeMap<>();
        /** The blocks (local) the current replica's chunks set in the tree: what a switch takes out again. */
        final java.util.BitSet set;

        RegionFetch(int region, Hash root, List<NodeId> replicas, long blocks) {
            this.region = region;
            this.root = root;
            this.replicas = List.copyOf(replicas);
            this.blocks = blocks;
            this.source = region % replicas.size();
            this.set = new java.util.BitSet(); // grows with the leaves set (not sized up front: 32 MB at 1 TiB, review rv37)
        }

        NodeId source() {
            return replicas.get(source);
        }
    }

    MountLeafFetch(ProtocolConfig cfg, Verifier verifier, long nonce, MerkleTree tree) {
        this(cfg, verifier, nonce, tree, n -> n);
    }

    /** @param hostOf the server hosting a replica, or null if not known (then the replica's id stands for it) */
    MountLeafFetch(ProtocolConfig cfg, Verifier verifier, long nonce, MerkleTree tree,
                   java.util.function.Function<NodeId, ?> hostOf) {
        this.hostOf = hostOf;
        this.cfg = cfg;
        this.verifier = verifier;
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

    /**
     * Region {@code r}'s three replicas signed the same settled state with region root {@code root}: its leaves are
     * wanted (a no-op if they are verified or being fetched for that root; a fetch for another root starts over).
     */
    void want(int r, Hash root, List<NodeId> replicas) {
        if (verified(r, root)) {
            return;
        }
        RegionFetch f = fetches.get(r);
        if (f != null && f.root.equals(root)) {
            return;
        }
        if (f != null) {
            drop(f);
            clearSet(f);
        }
        if (verified.remove(r) != null) {
            clearRegion(r); // the region's agreed state changed since: its leaves in the tree are not it any more
        }
        RegionFetch n = new RegionFetch(r, root, replicas, ReplicaMount.blocksInRegion(cfg, r));
        fetches.put(r, n);
        replicas.forEach(this::host); // pinned now, while the locations are cached (the mount query just went out)
        if (isSilent(n.source())) {
            pickSource(n);
        }
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

    /** Takes a replica's leaf range if it is one this fetch asked of it, signed by it, for the region's agreed root. */
    void offer(NodeId from, Message.LeafChunk c, long now) {
        RegionFetch f = fetches.get(c.region());
        if (f == null || c.nonce() != nonce || !c.volume().equals(cfg.volume()) || !from.equals(f.source())
                || !f.asked.containsKey(c.fromBlock()) || c.toBlock() != Math.min(f.blocks, c.fromBlock()
                + Message.LeafQuery.MAX_BLOCKS)) {
            return; // late, duplicate, from another replica, or for a range not asked
        }
        if (c.signature() == null || !verifier.verify(from, c.signedBytes(), c.signature())) {
            return; // not the replica's answer (a reply's sender is the transport's word)
        }
        if (!c.regionRoot().equals(f.root)) {
            return; // another state of the region: not an answer (the range stays asked; silence passes it over)
        }
        f.asked.remove(c.fromBlock());
        inFlight--;
        silent.remove(host(from)); // its server answers (again)
        if (!leavesInRange(c)) {
            nextSource(f, true); // signed leaves that cannot be the region's
            return;
        }
        if (!c.leaves().isEmpty()) {
            c.leaves().keySet().forEach(k -> f.set.set((int) (long) k));
            try {
                tree.setLeaves(cfg.layout().firstBlock(f.region), c.leaves());
            } catch (IllegalArgumentException e) {
                nextSource(f, true); // a leaf the tree cannot hold: taken out again, with whatever it set
                return;
            }
        }
        if (f.asked.isEmpty() && f.nextFrom >= f.blocks) {
            if (tree.node(cfg.layout().regionLevel(), f.region).equals(f.root)) {
                fetches.remove(f.region);
                verified.put(f.region, f.root);
            } else {
                nextSource(f, true);
            }
        }
    }

    /**
     * True if every leaf of {@code c} is a block of the range it answers, with a hash a tree can hold (an all-zero
     * hash is what the client's mapped tree store reads as empty: it refuses it, and a refusal half-way through a chunk
     * left a leaf in the tree without its parents, review of this fetch).
     */
    private static boolean leavesInRange(Message.LeafChunk c) {
        if (!c.leaves().isEmpty() && (c.leaves().firstKey() < c.fromBlock() || c.leaves().lastKey() >= c.toBlock())) {
            return false;
        }
        for (Hash h : c.leaves().values()) {
            if (java.util.Arrays.equals(h.bytes(), ZERO)) {
                return false;
            }
        }
        return true;
    }

    private static final byte[] ZERO = new byte[Hash.LENGTH];

    /**
     * The leaf queries to send now: new ranges up to the window, and ranges asked a retransmission period ago
     * (again, or of the next replica after {@link #SILENT_ROUNDS} silent periods).
     */
    List<Map.Entry<NodeId, Message>> takeSends(long now, long retransmitEvery) {
        for (RegionFetch f : new ArrayList<>(fetches.values())) {
            if (f.mismatched.size() == f.replicas.size()) {
                continue; // refused
            }
            long silentAfter = SILENT_ROUNDS * Math.max(1, retransmitEvery);
            if (f.asked.values().stream().anyMatch(t -> now - t[0] >= silentAfter)) {
                nextSource(f, false); // silent, not lying: it may be asked again later
            } else if (isSilent(f.source()) && hasOtherSource(f)) {
                nextSource(f, false); // silent in another region since this one asked it
            }
            for (Map.Entry<Long, long[]> e : f.asked.entrySet()) {
                if (now - e.getValue()[1] >= retransmitEvery) {
                    e.getValue()[1] = now;
                    ask(f, e.getKey());
                }
            }
        }
        for (RegionFetch f : fetches.values()) {
            while (inFlight < WINDOW && f.asked.size() < REGION_WINDOW && f.nextFrom < f.blocks
                    && f.mismatched.size() < f.replicas.size()) {
                long from = f.nextFrom;
                f.nextFrom = Math.min(f.blocks, from + Message.LeafQuery.MAX_BLOCKS);
                f.asked.put(from, new long[] {now, now});
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
    private void nextSource(RegionFetch f, boolean lied) {
        if (lied) {
            f.mismatched.add(f.source());
        } else {
            silent.add(host(f.source()));
        }
        drop(f);
        clearSet(f);
        f.nextFrom = 0;
        pickSource(f);
    }

    /**
     * Makes the region's source the next replica (after the current one) not known to lie and not {@link #silent};
     * if every such replica is silent, the next one not known to lie (silence may have been the network's).
     */
    private void pickSource(RegionFetch f) {
        for (boolean avoidSilent : new boolean[] {true, false}) {
            for (int i = 1; i <= f.replicas.size(); i++) {
                int s = (f.source + i) % f.replicas.size();
                if (usable(f, f.replicas.get(s), avoidSilent)) {
                    f.source = s;
                    return;
                }
            }
        }
    }

    /** True if a replica of the region other than its source is neither known to lie nor {@link #silent}. */
    private boolean hasOtherSource(RegionFetch f) {
        for (NodeId n : f.replicas) {
            if (!n.equals(f.source()) && usable(f, n, true)) {
                return true;
            }
        }
        return false;
    }

    /** Whether {@code n} may be the region's source: not known to lie, and ({@code avoidSilent}) not silent. */
    private boolean usable(RegionFetch f, NodeId n, boolean avoidSilent) {
        return !f.mismatched.contains(n) && !(avoidSilent && isSilent(n));
    }

    private boolean isSilent(NodeId n) {
        return silent.contains(host(n));
    }

    /**
     * The server hosting {@code n}, as first named during this fetch (pinned: a client's location cache drops the
     * entry of a server that failed, the server a silence was recorded for; review of rv38's fix).
     */
    private Object host(NodeId n) {
        Object h = hosts.get(n);
        if (h == null) {
            h = hostOf.apply(n);
            if (h == null) {
                return n;
            }
            hosts.put(n, h);
        }
        return h;
    }

    private final Map<NodeId, Object> hosts = new HashMap<>();

    private void drop(RegionFetch f) {
        inFlight -= f.asked.size();
        f.asked.clear();
    }

    /** Takes the leaves the current replica's chunks set out of the tree again (set to the empty leaf). */
    private void clearSet(RegionFetch f) {
        emptyLeaves(cfg.layout().firstBlock(f.region), f.set.stream().asLongStream().iterator());
        f.set.clear();
    }

    /** Sets the region's local blocks {@code blocks} (from {@code first}) to the empty leaf, a range's worth at a time. */
    private void emptyLeaves(long first, java.util.PrimitiveIterator.OfLong blocks) {
        Map<Long, Hash> empty = new TreeMap<>();
        while (blocks.hasNext()) {
            empty.put(blocks.nextLong(), tree.emptyHash(0));
            if (empty.size() == Message.LeafQuery.MAX_BLOCKS || !blocks.hasNext()) {
                tree.setLeaves(first, empty);
                empty.clear();
            }
        }
    }

    /**
     * Takes a verified region {@code r}'s leaves out of the tree (every node of it consistent): walks its subtree down
     * the nodes that are not empty (cost in proportion to the leaves set, no state kept beside the tree) and sets those
     * leaves to the empty leaf.
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
        emptyLeaves(first, set.stream().mapToLong(b -> b - first).iterator());
    }
}
