package io.salus.core.protocol.replica;

import io.salus.core.cert.CertType;
import io.salus.core.cert.Certificate;
import io.salus.core.cert.Statement;
import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.Verifier;
import io.salus.core.merkle.VolumeRootRecord;
import io.salus.core.protocol.Membership;
import io.salus.core.protocol.ProtocolConfig;
import io.salus.core.protocol.RrsConfig;
import io.salus.core.protocol.message.Message;
import io.salus.core.protocol.message.Put;
import io.salus.core.protocol.message.SubBatch;
import io.salus.core.protocol.recovery.Coordination;
import io.salus.core.protocol.recovery.RecoveryException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * Catch-up of a replica from a peer replica of its RRS at region open (issue 14, §3.3.4 "recovery of one
 * replica"): the reopened replica's own disk does not hold the state the latest CHECKPOINT certificate of its
 * generation certifies (its log and checkpoint files lost with a DataNode disk, or never written there), so
 * {@link RegionReplica#verifiedBase} refuses it. Instead of never serving (which stalls every write of the volume:
 * a commit needs the YES of all three replicas), it asks its peers ({@link Message.StateRequest}) and installs the
 * first {@link Message.StateTransfer} that checks:
 * <ul>
 * <li>the region state through the certified index matches the certificate (region tree root, last seq, root
 * record): a peer cannot make it take a state the three replicas did not sign;</li>
 * <li>every log entry after it is client-signed, of this region, with whole valid blocks, and the entries continue
 * each other's prevNum chain: a peer cannot invent or alter a write (it could only leave entries out, which the
 * protocol's retransmissions then bring: the chain predecessor resends what is unresolved); only the entries up to
 * the first one that is not both decided (its COMMIT or ABORT certificate) and {@linkplain Corroboration
 * corroborated} at its index beyond the one peer's word (its LOG_ENTRY certificate, read from a metadata holder
 * without sealing the slot, or the same bytes at the same index in the other peer's transfer) are taken (review
 * rvw22: a faulty peer could put a client-signed sub-batch no other replica logged, the volume's previous writer's
 * that only it had, in a committed one's place, first undecided, then with a genuine ABORT certificate of the
 * previous writer's batch; a COMMIT certificate does not bind an index either);</li>
 * <li>every decision carries its three leader signatures (generation checked), every writer fence the client's.</li>
 * </ul>
 * Installing writes the state as a whole snapshot at the certified index, the entries at their indexes and the
 * decisions to the replica's own disk, and the state into its region store; the replica then starts from that
 * disk as after any restart ({@link RegionReplica#verifiedBase}, then the replay of the certified entries).
 *
 * <p>A replica that does start from its own disk but whose log ends before entries its peers resolved (its log lost
 * before its region's first certificate, review rv15 finding 2, or lost after its surviving checkpoint) catches up
 * its log while serving, with the same messages: {@link #continuation} is what it may take from a transfer.
 */
public final class ReplicaCatchUp {
    private ReplicaCatchUp() {
    }

    /**
     * Evidence, beyond the word of the peer that transferred it, that a log entry ({@code bytes}) is at {@code index}
     * of a correct replica's log of this generation. A client signature, the prevNum chain and a decision do not
     * give it: both writers of a volume sign with the one client key, and a previous writer's sub-batch that only a
     * faulty replica holds continues the same chain as the committed entry in its place (review rvw22, findings 2
     * and 2b). Two kinds count ({@link PeerTransfers#corroboration}):
     * <ul>
     * <li>a LOG_ENTRY certificate of the slot with the entry's digest and length, signed by the three replicas of
     * the generation ({@link #logEntryProves}), read from a metadata holder without sealing ({@link LogEntryReader}).
     * Every committed entry has one (a replica votes YES only after its five holders stored it) until the checkpoint
     * after it is collected; an aborted one if all three replicas logged it;</li>
     * <li>the other peer transferred the same bytes at the same index: a replica catching up lost its log (a fault),
     * so at most one of its two peers is faulty and the two agree only on what a correct replica logged. This covers
     * an aborted entry its two peers logged and the catching-up replica never did (no LOG_ENTRY formed), and the
     * witnesses being unreachable.</li>
     * </ul>
     */
    @FunctionalInterface
    public interface Corroboration {
        /** Nothing is corroborated: no entry is taken. */
        Corroboration NONE = (index, bytes) -> false;

        boolean corroborated(long index, byte[] bytes);
    }

    /**
     * True if {@code c} is the LOG_ENTRY certificate of exactly ({@code rrs}'s region, its generation, {@code index})
     * for {@code bytes} (digest and length), signed by the generation's three replicas.
     */
    public static boolean logEntryProves(ProtocolConfig cfg, RrsConfig rrs, Verifier verifier, Certificate c,
                                         long index, byte[] bytes) {
        if (c == null || !io.salus.core.protocol.recovery.RegionLogRecovery.logEntryAt(verifier, rrs, c, index)) {
            return false; // not the slot's certificate (recovery's check: type, region, generation, index, signers)
        }
        Statement.LogEntry st = c.statement(Statement.LogEntry.class);
        return st.length() == bytes.length && st.digest().equals(cfg.hash().hash(bytes));
    }

    /** The corroboration of a LOG_ENTRY certificate read through {@code reader} ({@link #logEntryProves}). */
    public static Corroboration certifiedBy(ProtocolConfig cfg, RrsConfig rrs, Verifier verifier,
                                            LogEntryReader reader) {
        return (index, bytes) -> {
            try {
                return reader.read(rrs.region(), rrs.generation(), index,
                        c -> logEntryProves(cfg, rrs, verifier, c, index, bytes)) != null;
            } catch (RuntimeException e) {
                return false; // no holder answered: not corroborated (asked again with the next transfer)
            }
        };
    }

    /** What an install wrote. */
    public record Installed(long throughIndex, int blocks, int entries, int decisions) {
    }

    /**
     * The latest CHECKPOINT certificate of {@code rrs}'s own generation (the state a catch-up must reach), or null
     * if there is none of that generation (then a catch-up cannot help: generation 0 with no certificate starts
     * empty, and a replaced generation must not restart).
     */
    public static Statement.Checkpoint certified(RrsConfig rrs, Verifier verifier, Membership membership,
                                                 Coordination coordination) {
        return coordination.latestCheckpoint(rrs.region(), Coordination.signedByItsGeneration(verifier, membership))
                .map(c -> c.statement(Statement.Checkpoint.class))
                .filter(cp -> cp.generation() == rrs.generation())
                .orElse(null);
    }

    /**
     * A peer's answer: its state through {@code throughIndex} (read from its disk), its log entries after it as
     * far as they are contiguous, and its recorded decisions for those entries' batches plus its highest writer
     * fence. Null if its disk has no checkpoint through that index.
     */
    public static Message.StateTransfer answer(ProtocolConfig cfg, RrsConfig rrs, ReplicaDisk disk, long throughIndex) {
        return answer(rrs, disk, stateThrough(cfg, rrs, disk, throughIndex), throughIndex);
    }

    /** The disk's state through {@code throughIndex} (generation 0 through -1: empty), or null. */
    private static RegionSnapshot stateThrough(ProtocolConfig cfg, RrsConfig rrs, ReplicaDisk disk, long throughIndex) {
        long gen = rrs.generation();
        RegionSnapshot s = disk.readSnapshot(gen, throughIndex);
        if (s == null && throughIndex < 0 && gen == 0) {
            // generation 0 starts empty (no file of it): a replica that asks through index -1 (its region has no
            // CHECKPOINT certificate yet) gets the log from index 0
            s = RegionSnapshot.empty(0, io.salus.core.protocol.recovery.RegionLogRecovery.emptyVolumeRoot(cfg));
        }
        return s;
    }

    /**
     * {@link #answer} from state {@code s} (null: no answer). A stored checkpoint (issue 27: its blocks are in the
     * replica's store) is answered <b>without blocks</b>: its log and decisions only (what a serving replica's
     * continuation takes); a replica rebuilt from it takes the certified state's leaf hashes and then its blocks in
     * bounded chunks ({@link #answerMetadata}, {@link #answerBlocks}), never the region in one message.
     */
    private static Message.StateTransfer answer(RrsConfig rrs, ReplicaDisk disk, RegionSnapshot s, long throughIndex) {
        long gen = rrs.generation();
        if (s == null) {
            return null;
        }
        List<Message.StateBlock> blocks = new ArrayList<>();
        s.blocks().forEach((k, v) -> blocks.add(new Message.StateBlock(k, v)));
        List<byte[]> entries = new ArrayList<>();
        Set<Long> batches = new HashSet<>();
        for (long i = throughIndex + 1; i <= disk.lastIndex(gen); i++) {
            byte[] b = disk.read(gen, i);
            if (b == null) {
                break;
            }
            try {
                batches.add(SubBatch.decode(b).batchId());
            } catch (RuntimeException e) {
                break; // a torn local tail: what follows is not sent
            }
            entries.add(b);
        }
        List<Certificate> decisions = new ArrayList<>();
        Set<String> seen = new HashSet<>();
        Certificate fence = null;
        for (Certificate d : disk.decisions(gen)) {
            if (d.type() == CertType.WRITER_EPOCH) {
                if (fence == null || d.statement(Statement.WriterEpoch.class).epoch()
                        > fence.statement(Statement.WriterEpoch.class).epoch()) {
                    fence = d;
                }
            } else if ((d.type() == CertType.COMMIT || d.type() == CertType.ABORT)
                    && batches.contains(d.statement(Statement.Decision.class).batchId())
                    && seen.add(Arrays.toString(d.encode()))) {
                decisions.add(d);
            }
        }
        if (fence != null) {
            decisions.add(fence);
        }
        return new Message.StateTransfer(rrs.region().index(), gen, throughIndex, s.lastSeq(), s.rootRecord().root(),
                s.rootRecord().seq(), blocks, entries, decisions);
    }

    /**
     * Checks {@code x} (see the class comment) and installs it on {@code disk} and {@code store} (null: the
     * replica's state is rebuilt from the disk's snapshot).
     *
     * @param verifier       checks the CHECKPOINT certificates in coordination (as {@link RegionReplica#verifiedBase})
     * @param replicaVerifier checks client and leader signatures (as the replica does)
     * @param corroboration   which transferred entries are at their index beyond the peer's word
     * @throws RecoveryException naming what does not check; nothing is written then
     */
    public static Installed install(ProtocolConfig cfg, RrsConfig rrs, NodeId clientId, Verifier verifier,
                                    Verifier replicaVerifier, Membership membership, Coordination coordination,
                                    ReplicaDisk disk, RegionStore store, Corroboration corroboration,
                                    Message.StateTransfer x)
            throws RecoveryException {
        long gen = rrs.generation();
        int region = rrs.region().index();
        if (x.region() != region || x.generation() != gen) {
            throw new RecoveryException("a state transfer for region " + x.region() + " generation " + x.generation()
                    + ", not " + rrs.region() + " generation " + gen);
        }
        Statement.Checkpoint cp = certified(rrs, verifier, membership, coordination);
        if (cp == null || cp.throughIndex() != x.throughIndex()) {
            throw new RecoveryException(rrs.region() + ": the transfer is through index " + x.throughIndex()
                    + ", the latest CHECKPOINT certificate of generation " + gen + " through "
                    + (cp == null ? "(none)" : cp.throughIndex()));
        }
        Map<Long, byte[]> blocks = new TreeMap<>();
        for (Message.StateBlock b : x.blocks()) {
            if (b.localBlock() < 0 || b.localBlock() >= cfg.layout().blocksPerRegion()
                    || b.data().length != cfg.blockSize()) {
                throw new RecoveryException(rrs.region() + ": transferred block " + b.localBlock() + " of "
                        + b.data().length + " bytes is not a block of the region");
            }
            blocks.put(b.localBlock(), b.data());
        }
        RegionSnapshot s = new RegionSnapshot(gen, x.throughIndex(), x.lastSeq(), blocks,
                new VolumeRootRecord(x.recordRoot(), x.recordSeq()));
        String why = s.mismatch(cp, cfg.hash(), cfg.blockSize(), cfg.layout());
        if (why != null) {
            throw new RecoveryException(rrs.region() + ": the transferred state is not the certified one: " + why);
        }
        List<Certificate> decisions = checkedLog(cfg, rrs, clientId, replicaVerifier, membership, cp, x);
        int taken = decidedPrefix(x, decisions, corroboration);
        // everything checks: write it (the snapshot first, so a crash in between leaves a disk that verifies)
        disk.writeSnapshot(s);
        writeLog(disk, gen, x, taken, decisions);
        if (store != null) {
            boolean changed = false;
            for (Map.Entry<Long, byte[]> b : blocks.entrySet()) {
                if (!Arrays.equals(store.read(b.getKey()), b.getValue())) {
                    store.apply(b.getKey(), b.getValue());
                    changed = true;
                }
            }
            if (changed) {
                store.markDurable(); // the store holds at least the base from now on, as a restart requires
            }
        }
        return new Installed(x.throughIndex(), blocks.size(), taken, decisions.size());
    }


    /**
     * Checks the log part of {@code x} against the certificate {@code cp}: every entry a client-signed sub-batch of
     * the region continuing the prevNum chain from the certified last seq; returns the decisions that verify (COMMIT/
     * ABORT with their three leader signatures, client-signed writer fences); the others are left out.
     */
    private static List<Certificate> checkedLog(ProtocolConfig cfg, RrsConfig rrs, NodeId clientId,
                                                Verifier replicaVerifier, Membership membership,
                                                Statement.Checkpoint cp, Message.StateTransfer x)
            throws RecoveryException {
        List<SubBatch> entries = new ArrayList<>();
        for (byte[] b : x.entries()) {
            SubBatch sb;
            try {
                sb = SubBatch.decode(b);
            } catch (RuntimeException e) {
                throw new RecoveryException(rrs.region() + ": transferred log entry " + (x.throughIndex() + 1
                        + entries.size()) + " does not decode: " + e.getMessage());
            }
            long idx = x.throughIndex() + 1 + entries.size();
            String bad = entryProblem(cfg, rrs, clientId, replicaVerifier, sb);
            if (bad != null) {
                throw new RecoveryException(rrs.region() + ": transferred log entry " + idx + " " + bad);
            }
            // the first entry continues the certified state (entry k of a checkpoint through k is committed, so its
            // last seq is the certified last seq): without it, a peer leaving out the first entry(ies) made the
            // replica log the next one at their index and apply it without them (review rv15)
            long chained = entries.isEmpty() ? cp.lastSeq() : entries.get(entries.size() - 1).lastSeq();
            if (sb.puts().get(0).prevNum() != chained) {
                throw new RecoveryException(rrs.region() + ": transferred log entry " + idx
                        + " does not continue the previous entry's prevNum chain");
            }
            entries.add(sb);
        }
        List<Certificate> decisions = new ArrayList<>();
        for (Certificate d : x.decisions()) {
            if (d.type() == CertType.WRITER_EPOCH) {
                Statement.WriterEpoch we = d.statement(Statement.WriterEpoch.class);
                if (we.volume().equals(cfg.volume()) && d.verify(replicaVerifier, Set.of(clientId))) {
                    decisions.add(d);
                }
                continue;
            }
            if (d.type() != CertType.COMMIT && d.type() != CertType.ABORT) {
                continue;
            }
            Statement.Decision st = d.statement(Statement.Decision.class);
            int leader = st.leader().index();
            if (st.volume().equals(cfg.volume()) && leader >= 0 && leader < cfg.regionCount()
                    && st.generation() == membership.current(leader).generation()
                    && d.verify(replicaVerifier, membership.current(leader).replicaSet())) {
                decisions.add(d);
            }
        }
        return decisions;
    }

    /**
     * How many of {@code x}'s entries (checked by {@link #checkedLog}) are taken: the longest prefix whose every entry
     * comes with a verified COMMIT or ABORT certificate covering its batch, leader region and seqs and is
     * {@linkplain Corroboration corroborated} at its index (review rvw22). Otherwise an entry is one peer's word
     * only: a faulty peer could put there a client-signed sub-batch no other replica logged (the volume's previous
     * writer's, sent only to it) in place of the committed one, which the replica could then never log at that
     * index. What is left out the replica takes while serving ({@link #continuation}, once corroborated) or its
     * honest peers' chain predecessor retransmits (unresolved entries).
     */
    private static int decidedPrefix(Message.StateTransfer x, List<Certificate> decisions,
                                     Corroboration corroboration) {
        int taken = 0;
        for (byte[] b : x.entries()) {
            SubBatch sb = SubBatch.decode(b); // decoded and checked by checkedLog
            boolean decided = false;
            for (Certificate d : decisions) {
                if (d.type() != CertType.COMMIT && d.type() != CertType.ABORT) {
                    continue;
                }
                Statement.Decision st = d.statement(Statement.Decision.class);
                if (st.batchId() == sb.batchId() && st.leader().index() == sb.leaderRegion()
                        && st.firstSeq() <= sb.firstSeq() && st.lastSeq() >= sb.lastSeq()) {
                    decided = true;
                    break;
                }
            }
            if (!decided || !corroboration.corroborated(x.throughIndex() + 1 + taken, b)) {
                break;
            }
            taken++;
        }
        return taken;
    }

    /**
     * Writes the first {@code taken} entries of {@code x} at their indexes (where the disk holds other bytes) and the
     * new decisions.
     */
    private static void writeLog(ReplicaDisk disk, long gen, Message.StateTransfer x, int taken,
                                 List<Certificate> decisions) {
        for (int j = 0; j < taken; j++) {
            long idx = x.throughIndex() + 1 + j;
            byte[] mine = disk.read(gen, idx);
            if (mine == null || !Arrays.equals(mine, x.entries().get(j))) {
                disk.append(gen, idx, x.entries().get(j));
            }
        }
        Set<String> have = new HashSet<>();
        for (Certificate d : disk.decisions(gen)) {
            have.add(Arrays.toString(d.encode()));
        }
        for (Certificate d : decisions) {
            if (have.add(Arrays.toString(d.encode()))) {
                disk.recordDecision(gen, d);
            }
        }
    }

    // ------------------------------------------------------------------ rebuild while serving (issue 14 item 3)

    /**
     * A peer's answer to the first phase of a rebuild ({@link Message.RebuildRequest} with no block): as
     * {@link #answer}, with the leaf hash of every block of the state instead of the blocks. Null if its disk has no
     * checkpoint through that index.
     */
    public static Message.StateTransfer answerMetadata(ProtocolConfig cfg, RrsConfig rrs, ReplicaDisk disk,
                                                       long throughIndex) {
        return answerMetadata(cfg, rrs, disk, null, throughIndex);
    }

    /** {@link #answerMetadata}, by a replica over {@code store} (a stored checkpoint's leaves come from it). */
    public static Message.StateTransfer answerMetadata(ProtocolConfig cfg, RrsConfig rrs, ReplicaDisk disk,
                                                       RegionStore store, long throughIndex) {
        RegionSnapshot s = stateThrough(cfg, rrs, disk, throughIndex);
        Message.StateTransfer full = answer(rrs, disk, s, throughIndex);
        if (full == null) {
            return null;
        }
        java.util.TreeMap<Long, io.salus.core.merkle.Hash> leaves = new java.util.TreeMap<>();
        if (s.isStored() && store != null) {
            leaves.putAll(store.leafHashesAt(s.stored().storeVersion()));
        }
        for (Message.StateBlock b : full.blocks()) {
            leaves.put(b.localBlock(), cfg.hash().leafHash(b.data()));
        }
        if (leaves.isEmpty()) {
            return full; // nothing written: the whole transfer is the metadata
        }
        return new Message.StateTransfer(full.region(), full.generation(), full.throughIndex(), full.lastSeq(),
                full.recordRoot(), full.recordSeq(), List.of(), full.entries(), full.decisions(), leaves);
    }

    /**
     * A peer's answer to the second phase ({@link Message.RebuildRequest} with blocks): those of the asked blocks its
     * state through {@code throughIndex} holds. Null if its disk has no checkpoint through that index.
     */
    public static Message.RebuildBlocks answerBlocks(RrsConfig rrs, ReplicaDisk disk, long throughIndex,
                                                     List<Long> asked) {
        return answerBlocks(rrs, disk, null, throughIndex, asked);
    }

    /** {@link #answerBlocks}, by a replica over {@code store} (a stored checkpoint's blocks are read from it). */
    public static Message.RebuildBlocks answerBlocks(RrsConfig rrs, ReplicaDisk disk, RegionStore store,
                                                     long throughIndex, List<Long> asked) {
        RegionSnapshot s = disk.readSnapshot(rrs.generation(), throughIndex);
        if (s == null || s.isStored() && store == null) {
            return null;
        }
        List<Message.StateBlock> blocks = new ArrayList<>();
        for (long k : new java.util.TreeSet<>(asked)) {
            byte[] d = s.isStored() ? store.readAt(s.stored().storeVersion(), k) : s.blocks().get(k);
            if (d != null) {
                blocks.add(new Message.StateBlock(k, d));
            }
        }
        return new Message.RebuildBlocks(rrs.region().index(), rrs.generation(), throughIndex, blocks);
    }

    /** What the first phase of a rebuild installed: the certified state's leaf hashes (to fetch their blocks). */
    public record MetadataInstalled(long throughIndex, long lastSeq, VolumeRootRecord rootRecord,
                                    java.util.SortedMap<Long, io.salus.core.merkle.Hash> leaves, int entries,
                                    int decisions) {
    }

    /**
     * The first phase of a rebuild while serving: checks a metadata transfer {@code x} ({@link Message.StateTransfer#
     * metadataOnly}) as {@link #install} checks a whole one, except that the region tree built from its leaf hashes
     * must give the certified region root (the blocks come later, each checked against its leaf); then writes the log
     * entries after the checkpoint and the decisions to {@code disk} (not the checkpoint: the disk gets it once every
     * block is there) and sets {@code store}'s tree to the leaves without the blocks ({@link RegionStore#setLeaves}).
     *
     * @throws RecoveryException naming what does not check; nothing is written then
     */
    public static MetadataInstalled installMetadata(ProtocolConfig cfg, RrsConfig rrs, NodeId clientId,
                                                    Verifier verifier, Verifier replicaVerifier,
                                                    Membership membership, Coordination coordination,
                                                    ReplicaDisk disk, RegionStore store, Corroboration corroboration,
                                                    Message.StateTransfer x)
            throws RecoveryException {
        long gen = rrs.generation();
        if (x.region() != rrs.region().index() || x.generation() != gen || !x.blocks().isEmpty()) {
            throw new RecoveryException("a metadata transfer for region " + x.region() + " generation "
                    + x.generation() + " with " + x.blocks().size() + " blocks, not " + rrs.region() + " generation "
                    + gen + " with none");
        }
        Statement.Checkpoint cp = certified(rrs, verifier, membership, coordination);
        if (cp == null || cp.throughIndex() != x.throughIndex()) {
            throw new RecoveryException(rrs.region() + ": the transfer is through index " + x.throughIndex()
                    + ", the latest CHECKPOINT certificate of generation " + gen + " through "
                    + (cp == null ? "(none)" : cp.throughIndex()));
        }
        VolumeRootRecord record = new VolumeRootRecord(x.recordRoot(), x.recordSeq());
        if (x.lastSeq() != cp.lastSeq() || !record.equals(cp.rootRecord())) {
            throw new RecoveryException(rrs.region() + ": the transferred last seq " + x.lastSeq()
                    + " / volume-root record differ from the certified " + cp.lastSeq() + " / " + cp.rootRecord());
        }
        io.salus.core.merkle.MerkleTree t = cfg.layout().newRegionTree(cfg.hash(), cfg.blockSize(),
                new io.salus.core.merkle.InMemoryNodeStore());
        // a leaf equal to the empty leaf (an all-zero block) is what an unwritten block has already: it is left out,
        // not fetched. Kept, a faulty peer could name a never-written block with it (the root is the same) and the
        // rebuild would wait for ever for a block no honest peer holds: no checkpoint signed, GETs of it dropped
        // (review rvw23-1). A block written with zeros reads as zeros without it too.
        io.salus.core.merkle.Hash emptyLeaf = cfg.hash().leafHash(new byte[cfg.blockSize()]);
        java.util.SortedMap<Long, io.salus.core.merkle.Hash> leaves = new TreeMap<>();
        for (Map.Entry<Long, io.salus.core.merkle.Hash> l : x.leaves().entrySet()) {
            if (l.getKey() < 0 || l.getKey() >= cfg.layout().blocksPerRegion()) {
                throw new RecoveryException(rrs.region() + ": transferred leaf " + l.getKey()
                        + " is not a block of the region");
            }
            if (!l.getValue().equals(emptyLeaf)) {
                leaves.put(l.getKey(), l.getValue());
                t.setLeaf(l.getKey(), l.getValue());
            }
        }
        if (!t.root().equals(cp.regionRoot())) {
            throw new RecoveryException(rrs.region() + ": the transferred leaf hashes give the region root " + t.root()
                    + ", not the certified " + cp.regionRoot());
        }
        List<Certificate> decisions = checkedLog(cfg, rrs, clientId, replicaVerifier, membership, cp, x);
        int taken = decidedPrefix(x, decisions, corroboration);
        writeLog(disk, gen, x, taken, decisions);
        store.setLeaves(leaves);
        return new MetadataInstalled(x.throughIndex(), x.lastSeq(), record, leaves, taken,
                decisions.size());
    }

    /**
     * Why {@code sb} is not a client-signed sub-batch of {@code rrs}'s region with whole valid blocks and an unbroken
     * prevNum chain inside it, or null if it is.
     */
    static String entryProblem(ProtocolConfig cfg, RrsConfig rrs, NodeId clientId, Verifier replicaVerifier,
                               SubBatch sb) {
        if (!sb.volume().equals(cfg.volume()) || sb.region() != rrs.region().index() || sb.clientSig() == null
                || sb.puts().isEmpty() || !replicaVerifier.verify(clientId, sb.signedBytes(), sb.clientSig())) {
            return "is not a client-signed sub-batch of this region";
        }
        long first = cfg.layout().firstBlock(rrs.region().index());
        for (int i = 0; i < sb.puts().size(); i++) {
            Put p = sb.puts().get(i);
            if (p.block() < first || p.block() >= first + cfg.layout().blocksPerRegion()
                    || p.data().length != cfg.blockSize() || !cfg.hash().leafHash(p.data()).equals(p.dataHash())
                    || i > 0 && p.prevNum() != sb.puts().get(i - 1).seq()) {
                return "has an invalid put";
            }
        }
        return null;
    }

    /** A transferred log entry that continues a serving replica's own log, and the decision that resolves it. */
    public record Continued(long index, SubBatch sb, byte[] bytes, Certificate decision) {
    }

    /** What a serving replica may take from a peer's transfer: entries that continue its log, the newest fence. */
    public record Continuation(List<Continued> entries, Certificate fence) {
    }

    /**
     * The part of a peer's transfer {@code x} that a <em>serving</em> replica may append to its own log (review rv15
     * finding 2: a replica whose log ends before entries its peers resolved, e.g. one reopened without its log before
     * its region's first CHECKPOINT certificate, otherwise waits for predecessors nobody sends again). Nothing in
     * {@code x} is taken on the peer's word; the region state in it is ignored (the replica keeps its own, verified
     * at open). Taken, in log order from {@code nextIndex} (the replica's next log index): each entry while
     * <ul>
     * <li>it is a client-signed sub-batch of this region with valid blocks ({@link #entryProblem});</li>
     * <li>its first prevNum is the last seq of the entry before it, the first one's the replica's own last accepted
     * seq {@code lastSeq}: nothing can be skipped or put in another place;</li>
     * <li>it comes with its COMMIT or ABORT certificate (three leader signatures, the leader region's current
     * generation) covering its batch, seq range and leader region: a peer cannot make the replica log, let alone
     * apply, a sub-batch that was not decided. Entries still undecided at the peer are not taken: the chain
     * predecessor (or the client, to the primary) retransmits them as long as they are unresolved;</li>
     * <li>it is {@linkplain Corroboration corroborated} at its index (review rvw22 finding 2b: a decided sub-batch
     * of the previous writer that only a faulty peer logged continues the same chain);</li>
     * <li>its batch is not in the replica's log already ({@code logged}).</li>
     * </ul>
     * The first entry that fails ends the continuation (a faulty peer can only make it shorter). {@code fence}: the
     * highest client-signed WRITER_EPOCH certificate in {@code x}, or null.
     */
    public static Continuation continuation(ProtocolConfig cfg, RrsConfig rrs, NodeId clientId,
                                            Verifier replicaVerifier, Membership membership, Message.StateTransfer x,
                                            long nextIndex, long lastSeq, java.util.function.LongPredicate logged,
                                            Corroboration corroboration) {
        Certificate fence = null;
        Map<Long, List<Certificate>> decided = new java.util.HashMap<>();
        for (Certificate d : x.decisions()) {
            if (d.type() == CertType.WRITER_EPOCH) {
                Statement.WriterEpoch we = d.statement(Statement.WriterEpoch.class);
                if (we.volume().equals(cfg.volume()) && (fence == null
                        || we.epoch() > fence.statement(Statement.WriterEpoch.class).epoch())
                        && d.verify(replicaVerifier, Set.of(clientId))) {
                    fence = d;
                }
            } else if (d.type() == CertType.COMMIT || d.type() == CertType.ABORT) {
                decided.computeIfAbsent(d.statement(Statement.Decision.class).batchId(), b -> new ArrayList<>()).add(d);
            }
        }
        List<Continued> out = new ArrayList<>();
        long chained = lastSeq;
        for (int j = 0; j < x.entries().size(); j++) {
            long idx = x.throughIndex() + 1 + j;
            if (idx < nextIndex) {
                continue; // the replica has its own entry there
            }
            if (idx != nextIndex + out.size()) {
                break; // the transfer starts after the replica's log ends: nothing continues it
            }
            byte[] b = x.entries().get(j);
            SubBatch sb;
            try {
                sb = SubBatch.decode(b);
            } catch (RuntimeException e) {
                break;
            }
            if (entryProblem(cfg, rrs, clientId, replicaVerifier, sb) != null || sb.puts().get(0).prevNum() != chained
                    || logged.test(sb.batchId())) {
                break;
            }
            Certificate decision = null;
            for (Certificate d : decided.getOrDefault(sb.batchId(), List.of())) {
                Statement.Decision st = d.statement(Statement.Decision.class);
                int leader = st.leader().index();
                if (st.volume().equals(cfg.volume()) && leader == sb.leaderRegion() && leader >= 0
                        && leader < cfg.regionCount() && st.firstSeq() <= sb.firstSeq() && st.lastSeq() >= sb.lastSeq()
                        && st.generation() == membership.current(leader).generation()
                        && d.verify(replicaVerifier, membership.current(leader).replicaSet())) {
                    decision = d;
                    break;
                }
            }
            if (decision == null || !corroboration.corroborated(idx, b)) {
                break;
            }
            out.add(new Continued(idx, sb, b, decision));
            chained = sb.lastSeq();
        }
        return new Continuation(out, fence);
    }
}
