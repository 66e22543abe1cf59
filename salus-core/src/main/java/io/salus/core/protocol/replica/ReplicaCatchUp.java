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
 * protocol's retransmissions then bring: the chain predecessor resends what is unresolved);</li>
 * <li>every decision carries its three leader signatures (generation checked), every writer fence the client's.</li>
 * </ul>
 * Installing writes the state as a whole snapshot at the certified index, the entries at their indexes and the
 * decisions to the replica's own disk, and the state into its region store; the replica then starts from that
 * disk as after any restart ({@link RegionReplica#verifiedBase}, then the replay of the certified entries).
 */
public final class ReplicaCatchUp {
    private ReplicaCatchUp() {
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
        long gen = rrs.generation();
        RegionSnapshot s = disk.readSnapshot(gen, throughIndex);
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
     * @throws RecoveryException naming what does not check; nothing is written then
     */
    public static Installed install(ProtocolConfig cfg, RrsConfig rrs, NodeId clientId, Verifier verifier,
                                    Verifier replicaVerifier, Membership membership, Coordination coordination,
                                    ReplicaDisk disk, RegionStore store, Message.StateTransfer x)
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
        long first = cfg.layout().firstBlock(region);
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
            if (!sb.volume().equals(cfg.volume()) || sb.region() != region || sb.clientSig() == null
                    || !replicaVerifier.verify(clientId, sb.signedBytes(), sb.clientSig())) {
                throw new RecoveryException(rrs.region() + ": transferred log entry " + idx
                        + " is not a client-signed sub-batch of this region");
            }
            for (int i = 0; i < sb.puts().size(); i++) {
                Put p = sb.puts().get(i);
                if (p.block() < first || p.block() >= first + cfg.layout().blocksPerRegion()
                        || p.data().length != cfg.blockSize() || !cfg.hash().leafHash(p.data()).equals(p.dataHash())
                        || i > 0 && p.prevNum() != sb.puts().get(i - 1).seq()) {
                    throw new RecoveryException(rrs.region() + ": transferred log entry " + idx + " has an invalid put");
                }
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
        // everything checks: write it (the snapshot first, so a crash in between leaves a disk that verifies)
        disk.writeSnapshot(s);
        for (int j = 0; j < x.entries().size(); j++) {
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
        return new Installed(x.throughIndex(), blocks.size(), entries.size(), decisions.size());
    }
}
