package io.salus.core.protocol.replica;

import io.salus.core.cert.Certificate;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A {@link ReplicaDisk} in memory (simulator, unit tests). Everything written is "synced". Thread-safe: the endpoint
 * writes log appends, commit marks and checkpoints from other threads than the replica's loop.
 */
public class InMemoryReplicaDisk implements ReplicaDisk {
    protected final Map<Long, TreeMap<Long, byte[]>> logs = new HashMap<>();
    protected final Map<String, RegionSnapshot> snapshots = new HashMap<>();
    protected final Map<Long, List<byte[]>> decisionRecords = new HashMap<>();

    @Override
    public synchronized void recordDecision(long generation, Certificate decision) {
        decisionRecords.computeIfAbsent(generation, g -> new ArrayList<>()).add(decision.encode());
    }

    /** Review rv20-1: each decision, and after a TENTATIVE_COMMIT its BatchInfo as a {@link BatchInfoRecord}. */
    @Override
    public synchronized void recordLeaderDecisions(long generation, List<Certificate> decisions,
                                                   List<io.salus.core.protocol.message.BatchInfo> infos) {
        decisionRecords.computeIfAbsent(generation, g -> new ArrayList<>())
                .addAll(BatchInfoRecord.leaderDecisionRecords(decisions, infos));
    }

    @Override
    public synchronized List<io.salus.core.protocol.message.BatchInfo> decisionBatchInfos(long generation) {
        return BatchInfoRecord.batchInfos(decisionRecords.getOrDefault(generation, List.of()));
    }

    /** Decodes what was stored; an unreadable record (corrupted file) is skipped, not trusted. */
    @Override
    public synchronized List<Certificate> decisions(long generation) {
        return BatchInfoRecord.decisions(decisionRecords.getOrDefault(generation, List.of()));
    }

    private final java.util.concurrent.atomic.AtomicLong syncs = new java.util.concurrent.atomic.AtomicLong();
    private final java.util.concurrent.atomic.AtomicLong syncedAppends = new java.util.concurrent.atomic.AtomicLong();

    /** {@link #sync} calls (a client's FLUSH reached this replica). */
    public long syncs() {
        return syncs.get();
    }

    /**
     * Log entries that were durable against a machine crash when they returned ({@link #append}), as opposed to the
     * batch path's group writes ({@link #appendAll}), which wait for {@link #sync}.
     */
    public long syncedAppends() {
        return syncedAppends.get();
    }

    @Override
    public void sync(long generation) {
        syncs.incrementAndGet();
    }

    @Override
    public synchronized void appendAll(long generation, List<Long> indexes, List<byte[]> entries) {
        for (int i = 0; i < entries.size(); i++) {
            logs.computeIfAbsent(generation, g -> new TreeMap<>()).put(indexes.get(i), entries.get(i).clone());
        }
    }

    @Override
    public synchronized void recordCommitMarks(long generation, List<Certificate> marks) {
        for (Certificate d : marks) {
            decisionRecords.computeIfAbsent(generation, g -> new ArrayList<>()).add(d.encode());
        }
    }

    @Override
    public synchronized void append(long generation, long index, byte[] entry) {
        syncedAppends.incrementAndGet();
        logs.computeIfAbsent(generation, g -> new TreeMap<>()).put(index, entry.clone());
    }

    @Override
    public synchronized byte[] read(long generation, long index) {
        TreeMap<Long, byte[]> l = logs.get(generation);
        byte[] b = l == null ? null : l.get(index);
        return b == null ? null : b.clone();
    }

    @Override
    public synchronized long lastIndex(long generation) {
        TreeMap<Long, byte[]> l = logs.get(generation);
        return l == null || l.isEmpty() ? -1 : l.lastKey();
    }

    @Override
    public synchronized void writeSnapshot(RegionSnapshot s) {
        snapshots.put(s.generation() + ":" + s.throughIndex(), s);
    }

    /** Per generation: checkpoint deltas by index (only the blocks changed since the previous one). */
    protected final Map<Long, TreeMap<Long, RegionSnapshot>> deltas = new HashMap<>();

    @Override
    public synchronized void writeCheckpoint(long generation, long throughIndex, long lastSeq,
                                             Map<Long, byte[]> changed,
                                             io.salus.core.merkle.VolumeRootRecord rootRecord) {
        Map<Long, byte[]> copy = new HashMap<>();
        changed.forEach((k, v) -> copy.put(k, v.clone()));
        deltas.computeIfAbsent(generation, g -> new TreeMap<>()).put(throughIndex,
                new RegionSnapshot(generation, throughIndex, lastSeq, copy, rootRecord));
    }

    @Override
    public synchronized RegionSnapshot readSnapshot(long generation, long throughIndex) {
        RegionSnapshot whole = snapshots.get(generation + ":" + throughIndex);
        if (whole != null) {
            return whole;
        }
        TreeMap<Long, RegionSnapshot> d = deltas.get(generation);
        if (d == null || !d.containsKey(throughIndex)) {
            return null;
        }
        // compose: the latest whole snapshot below the index (the generation's starting one, or one installed by a
        // catch-up from a peer, ReplicaCatchUp) then every delta after it through the index
        long from = -1;
        for (String k : snapshots.keySet()) {
            String[] gi = k.split(":");
            long i = Long.parseLong(gi[1]);
            if (Long.parseLong(gi[0]) == generation && i < throughIndex && i > from) {
                from = i;
            }
        }
        RegionSnapshot start = snapshots.get(generation + ":" + from);
        Map<Long, byte[]> blocks = new TreeMap<>(start == null ? Map.of() : start.blocks());
        for (RegionSnapshot delta : d.subMap(from, false, throughIndex, true).values()) {
            blocks.putAll(delta.blocks());
        }
        RegionSnapshot last = d.get(throughIndex);
        return new RegionSnapshot(generation, throughIndex, last.lastSeq(), blocks, last.rootRecord());
    }

    @Override
    public synchronized void truncateLogPrefix(long generation, long throughIndex) {
        TreeMap<Long, byte[]> l = logs.get(generation);
        if (l != null) {
            l.headMap(throughIndex, true).clear();
        }
    }

    @Override
    public void collectCheckpoints(long generation, long throughIndex) {
        TreeMap<Long, RegionSnapshot> d = deltas.computeIfAbsent(generation, g -> new TreeMap<>());
        if (!snapshots.containsKey(generation + ":" + throughIndex) && !d.containsKey(throughIndex)) {
            return; // not this disk's own checkpoint through the index: nothing is collected
        }
        Long whole = null; // the latest whole snapshot at or below the index
        for (String k : snapshots.keySet()) {
            String[] gi = k.split(":");
            long i = Long.parseLong(gi[1]);
            if (Long.parseLong(gi[0]) == generation && i <= throughIndex && (whole == null || i > whole)) {
                whole = i;
            }
        }
        int since = (whole == null ? d.headMap(throughIndex, true) : d.subMap(whole, false, throughIndex, true)).size();
        if ((whole == null || whole < throughIndex) && since >= DELTAS_PER_WHOLE) {
            writeSnapshot(readSnapshot(generation, throughIndex));
            whole = throughIndex;
        }
        if (whole == null) {
            return; // the deltas compose from the empty start: all are needed
        }
        long w = whole;
        snapshots.keySet().removeIf(k -> k.startsWith(generation + ":") && Long.parseLong(k.split(":")[1]) < w);
        d.headMap(w, false).clear();
    }

    @Override
    public synchronized void compactDecisions(long generation, java.util.function.Predicate<Certificate> keep) {
        List<byte[]> l = decisionRecords.get(generation);
        if (l == null) {
            return;
        }
        List<byte[]> kept = BatchInfoRecord.kept(l, keep);
        l.clear();
        l.addAll(kept);
    }

    /** The stored decision records of the generation, raw, in order (tests: the record format). */
    public synchronized List<byte[]> decisionRecordBytes(long generation) {
        List<byte[]> out = new ArrayList<>();
        decisionRecords.getOrDefault(generation, List.of()).forEach(b -> out.add(b.clone()));
        return out;
    }

    /**
     * Fault injection: replaces each stored decision record of the generation by {@code f}'s result, dropping it if
     * that is null (a damaged or faulty disk: a forged {@link BatchInfoRecord}, a record written before one existed).
     */
    public synchronized void rewriteDecisionRecords(long generation, java.util.function.UnaryOperator<byte[]> f) {
        List<byte[]> l = decisionRecords.get(generation);
        if (l == null) {
            return;
        }
        List<byte[]> out = new ArrayList<>();
        for (byte[] b : l) {
            byte[] r = f.apply(b.clone());
            if (r != null) {
                out.add(r);
            }
        }
        l.clear();
        l.addAll(out);
    }

    /** Checkpoint files (whole snapshots and deltas) held for the generation (tests: GC keeps them bounded). */
    public int checkpointFiles(long generation) {
        int n = deltas.getOrDefault(generation, new TreeMap<>()).size();
        for (String k : snapshots.keySet()) {
            if (k.startsWith(generation + ":")) {
                n++;
            }
        }
        return n;
    }

    /** Decision records held for the generation. */
    public int decisionRecords(long generation) {
        return decisionRecords.getOrDefault(generation, List.of()).size();
    }

    /** Log entries held for the generation. */
    public int logEntries(long generation) {
        TreeMap<Long, byte[]> l = logs.get(generation);
        return l == null ? 0 : l.size();
    }

    /** Fault injection: flips a byte of a stored entry (silent disk corruption). */
    public synchronized boolean corruptEntry(long generation, long index, int byteOffset) {
        TreeMap<Long, byte[]> l = logs.get(generation);
        byte[] b = l == null ? null : l.get(index);
        if (b == null || b.length == 0) {
            return false;
        }
        b[Math.floorMod(byteOffset, b.length)] ^= 0x5a;
        return true;
    }

    /**
     * Fault injection: flips a byte of one block stored in the checkpoint (or whole snapshot) through
     * {@code throughIndex} (silent corruption of a flushed file). False if it holds no block.
     */
    public synchronized boolean corruptCheckpoint(long generation, long throughIndex) {
        RegionSnapshot s = snapshots.get(generation + ":" + throughIndex);
        if (s == null) {
            TreeMap<Long, RegionSnapshot> d = deltas.get(generation);
            s = d == null ? null : d.get(throughIndex);
        }
        if (s == null || s.blocks().isEmpty()) {
            return false;
        }
        byte[] b = s.blocks().values().iterator().next();
        b[b.length / 2] ^= 0x5a;
        return true;
    }

    /** Fault injection: deletes all files (a faulty region server asking the NameNode to delete them). */
    public synchronized void deleteAll() {
        logs.clear();
        snapshots.clear();
        deltas.clear();
        decisionRecords.clear();
    }
}
