package io.salus.core.hbase.storage;

import io.salus.core.cert.Certificate;
import io.salus.core.merkle.VolumeRootRecord;
import io.salus.core.protocol.message.BatchInfo;
import io.salus.core.protocol.replica.BatchInfoRecord;
import io.salus.core.protocol.replica.RegionSnapshot;
import io.salus.core.protocol.replica.ReplicaDisk;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Options;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.client.HdfsDataOutputStream;

/**
 * A replica's Salus log, decisions and checkpoint files on HDFS ({@link ReplicaDisk}), written with
 * replication 1 and the replica's colocated DataNode as favored node, so no byte of it crosses the
 * network (§3.2, location hints).
 *
 * <p>Construction (for the endpoint):
 * <pre>{@code
 * DistributedFileSystem dfs = (DistributedFileSystem) FileSystem.get(conf);
 * InetSocketAddress dn = new InetSocketAddress(host, dataNodeXferPort);   // null: no hint
 * HdfsReplicaDisk disk = HdfsReplicaDisk.forRegion(dfs, new Path("/salus/logs"), "salus:vol1_r0",
 *         region.getRegionInfo().getEncodedName(), dn);
 * ... new RegionReplica(..., disk, ...);   // its constructor reloads the log through this disk
 * disk.close();                            // on region close
 * }</pre>
 *
 * <p>Layout under the replica's directory {@code <root>/<table>/<encodedRegion>}:
 * <ul>
 * <li>{@code log/g<gen>/seg-<n>.log}: the generation's log, {@link LogFrame frames} whose index is the
 * logical log index; a new segment is started when the disk is reopened and at each
 * {@link #truncateLogPrefix}, so garbage collection deletes whole files. A later frame of the same index
 * replaces an earlier one (last writer wins, as in {@code InMemoryReplicaDisk}).</li>
 * <li>{@code log/g<gen>/prefix}: the highest index garbage-collected (entries at or below it are gone,
 * even those still in a kept segment).</li>
 * <li>{@code decisions/g<gen>/seg-<n>.log}: decision certificates, one frame each; after a TENTATIVE_COMMIT this
 * replica signed as a batch-leader replica, the client-signed BatchInfo it was signed on, a frame of its own
 * ({@link BatchInfoRecord}, review rv20-1; a build before it skips that frame as one that does not decode).</li>
 * <li>{@code state/g<gen>/stored.<through>}: a checkpoint whose blocks are in the replica's versioned region store
 * (issue 27): one frame of metadata (generation, index, last seq, volume-root record, region tree root, store
 * version), ~100 bytes whatever the region holds. Written to a temporary name, hsynced and renamed.</li>
 * <li>{@code state/g<gen>/whole.<through>} and {@code delta.<through>}: snapshots and incremental
 * checkpoints that carry block contents, one frame per file, written to a temporary name, hsynced and renamed
 * (a region store without versions, a generation's starting state, a volume created before issue 27).</li>
 * </ul>
 *
 * <p>Durability: {@link #append}, {@link #recordDecision} and {@link #recordDecisions} return after hsync. Concurrent
 * appenders share hsyncs (group commit): each writes its frame under the generation's lock, then one hsync covers
 * every frame written before it ({@link #appends()} / {@link #hsyncs()} count both). The batch path's group writes,
 * {@link #appendAll} and {@link #recordCommitMarks}, return after hflush (the frames are in the DataNode: they
 * survive a crash of this process, not of the DataNode's machine); {@link #sync} hsyncs each file with frames not
 * hsynced yet (task tput18: a client's FLUSH or FUA write). A segment is hsynced before it is rolled (closed), and
 * never spans two HDFS blocks (its block size is at least {@link #segmentBlockSize}), so the hsync of the active
 * segment's current block covers every frame hflushed before it (a finished block is not fsynced by HDFS).
 *
 * <p>Reopen after a crash: the last segment of a log may still be open under the dead writer's lease;
 * it is recovered ({@code recoverLease}), and a torn tail (the prefix of a frame, from a write that was
 * never hsynced) is truncated away. A complete frame that does not verify, or a damaged frame with
 * bytes after it, is refused with {@link CorruptReplicaLogException} naming file and offset.
 */
public final class HdfsReplicaDisk implements ReplicaDisk, AutoCloseable {
    private static final Pattern SEGMENT = Pattern.compile("seg-(\\d{20})\\.log");
    private static final Pattern STATE = Pattern.compile("(whole|delta|stored)\\.(-?\\d+)");
    /** First long of a stored checkpoint's payload, so that it is never read as a carried one (or the reverse). */
    private static final long STORED_MAGIC = 0x53414c5553435031L; // "SALUSCP1"
    private static final Pattern SAFE = Pattern.compile("[A-Za-z0-9_.:=-]+");
    /** A segment is rolled once it holds this many bytes (so GC can free space in whole files). */
    public static final long DEFAULT_SEGMENT_BYTES = 64L << 20;
    /** How long reopening waits for the NameNode to recover a dead writer's lease. */
    private static final long LEASE_RECOVERY_MS = 300_000;
    /**
     * How long a lease recovery may fail while the last block's replicas are on live DataNodes before the log counts
     * as unreadable (default 60 s: two of the NameNode's 30 s block recovery attempts).
     */
    public static final long STUCK_RECOVERY_DEFAULT_MS = 60_000;
    private long stuckRecoveryMs = STUCK_RECOVERY_DEFAULT_MS;

    private final DistributedFileSystem fs;
    private final Path dir;
    private final InetSocketAddress[] favored;
    private final long segmentBytes;
    private final Map<Long, FramedLog> logs = new HashMap<>();
    private final Map<Long, FramedLog> decisionLogs = new HashMap<>();
    private final AtomicLong appends = new AtomicLong();
    private final AtomicLong hsyncs = new AtomicLong();
    private final AtomicLong logHsyncs = new AtomicLong();
    private final AtomicLong hflushes = new AtomicLong();
    private final AtomicLong syncCalls = new AtomicLong();
    /**
     * This disk object's incarnation, in its temporary file names ({@code .delta.<k>.<incarnation>.tmp},
     * {@code .prefix.<incarnation>.tmp}): a replica reopened over the same directory (a new incarnation) and its old
     * incarnation's checkpoint writer still running never write the same temporary file (rec15: with one shared
     * name, the old writer's create-with-overwrite deleted the new one's temporary file between its hsync and its
     * rename, so the new incarnation's checkpoint write failed, or the old writer renamed the new one's half-written
     * file into place).
     */
    private final String incarnation = java.util.UUID.randomUUID().toString().substring(0, 8);
    /** Tests: runs with the temporary file of a state write after its hsync, before its rename. */
    private volatile java.util.function.Consumer<Path> beforeStateRename;
    /** Serialises checkpoint-file GC with the reads that compose a state from those files. */
    private final Object stateLock = new Object();

    /**
     * The disk of one replica region: {@code <root>/<table>/<encodedRegion>}. {@code table} is the replica
     * table's name (e.g. {@code salus:vol1_r0}; {@code :} becomes {@code =}), {@code favoredDataNode} the
     * transfer address of the DataNode on the region server's host (null: no hint).
     */
    public static HdfsReplicaDisk forRegion(DistributedFileSystem fs, Path root, String table, String encodedRegion,
                                            InetSocketAddress favoredDataNode) {
        String t = table.replace(':', '=');
        if (!SAFE.matcher(t).matches() || !SAFE.matcher(encodedRegion).matches()) {
            throw new IllegalArgumentException("table '" + table + "' and region '" + encodedRegion
                    + "' must be HBase names ([A-Za-z0-9_.:=-]+) to bind the log path to them");
        }
        return new HdfsReplicaDisk(fs, new Path(new Path(root, t), encodedRegion), favoredDataNode, DEFAULT_SEGMENT_BYTES);
    }

    public HdfsReplicaDisk(DistributedFileSystem fs, Path dir, InetSocketAddress favoredDataNode, long segmentBytes) {
        if (segmentBytes <= LogFrame.HEADER) {
            throw new IllegalArgumentException("segment size " + segmentBytes + " must exceed a frame header");
        }
        this.fs = fs;
        this.dir = dir;
        this.favored = favoredDataNode == null ? null : new InetSocketAddress[] {favoredDataNode};
        this.segmentBytes = segmentBytes;
    }

    public Path directory() {
        return dir;
    }

    /** Sets how long a lease recovery may fail on live DataNodes before the log is unreadable (tests). */
    public HdfsReplicaDisk stuckRecoveryAfter(long millis) {
        this.stuckRecoveryMs = millis;
        return this;
    }

    /** This disk object's incarnation (in its temporary file names). */
    public String incarnation() {
        return incarnation;
    }

    /** Tests: {@code hook} runs with the temporary file of each snapshot/checkpoint write between hsync and rename. */
    public void beforeStateRenameForTests(java.util.function.Consumer<Path> hook) {
        this.beforeStateRename = hook;
    }

    /** Entries appended (log entries and decisions) since this disk was opened. */
    public long appends() {
        return appends.get();
    }

    /** hsync calls that made appended records durable; {@code appends()/hsyncs()} is the group-commit factor. */
    public long hsyncs() {
        return hsyncs.get();
    }

    /** hsyncs of log segments (not decision records or state files): made by {@link #sync}, a roll, or {@link #append}. */
    public long logHsyncs() {
        return logHsyncs.get();
    }

    /** hflushes of the batch path's group writes ({@link #appendAll}, {@link #recordCommitMarks}). */
    public long hflushes() {
        return hflushes.get();
    }

    /** {@link #sync} calls (a client's FLUSH or FUA write reached this replica). */
    public long syncs() {
        return syncCalls.get();
    }

    /**
     * The HDFS block size of a log or decision segment: at least the file system's default, and above the largest a
     * segment gets (it is rolled once it holds {@code segmentBytes}; one more frame, at most a 64-block sub-batch of
     * 256 KiB blocks, may follow), rounded up to a MiB. A segment must fit one block: hflushed frames of a finished
     * block are never fsynced by the DataNode, and a later hsync reaches only the current block.
     */
    long segmentBlockSize(Path p) {
        long need = segmentBytes + MAX_FRAME_SLACK;
        long mib = 1L << 20;
        return Math.max(fs.getDefaultBlockSize(p), (need + mib - 1) / mib * mib);
    }

    /** Room above {@code segmentBytes} in a segment's block: a frame larger than this starts a new segment. */
    static final long MAX_FRAME_SLACK = 32L << 20;

    /** The files of the generation's log, oldest first (for tests and GC accounting). */
    public List<Path> logSegments(long generation) {
        return log(generation).segmentPaths();
    }

    // ------------------------------------------------------------------ log

    @Override
    public void append(long generation, long index, byte[] entry) {
        log(generation).append(index, entry);
    }

    /**
     * Group commit of the batch path: every frame is written, then one hflush (per segment written to) covers them
     * all; {@link #sync} makes them durable against a machine crash.
     */
    @Override
    public void appendAll(long generation, List<Long> indexes, List<byte[]> entries) {
        log(generation).appendAll(indexes, entries, false);
    }

    /** hsyncs the generation's active log and decision segments if they hold frames not hsynced yet. */
    @Override
    public void sync(long generation) {
        syncCalls.incrementAndGet();
        try {
            log(generation).syncActive();
            decisions(generation, true).syncActive();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot sync " + dir + " generation " + generation, e);
        }
    }

    @Override
    public byte[] read(long generation, long index) {
        return log(generation).read(index);
    }

    @Override
    public long lastIndex(long generation) {
        return log(generation).lastIndex();
    }

    @Override
    public void truncateLogPrefix(long generation, long throughIndex) {
        log(generation).truncatePrefix(throughIndex);
    }

    /**
     * Fault injection for crash tests: writes {@code bytes} at the end of the generation's log and
     * hflushes them to the DataNode without hsync (a torn frame, or a frame not yet durable).
     */
    public void appendRawUnsynced(long generation, byte[] bytes) {
        log(generation).appendRaw(bytes);
    }

    // ------------------------------------------------------------------ decisions

    @Override
    public void recordDecision(long generation, Certificate decision) {
        // numbered under the log's lock: lastIndex() only learns a record after its hsync, so numbering
        // from it let concurrent recorders share a number and the later frame replace the earlier one
        decisions(generation, true).appendNext(decision.encode());
    }

    /** Group commit: each decision numbered under the log's lock as in {@link #recordDecision}, one hsync for all. */
    @Override
    public void recordDecisions(long generation, List<Certificate> decisions) {
        decisions(generation, true).appendAll(null, encoded(decisions), true);
    }

    /** As {@link #recordDecisions}, one hflush for all (the batch path's commit marks); {@link #sync} hsyncs them. */
    @Override
    public void recordCommitMarks(long generation, List<Certificate> marks) {
        decisions(generation, true).appendAll(null, encoded(marks), false);
    }

    /**
     * Review rv20-1: the leader decisions and, after each TENTATIVE_COMMIT, its BatchInfo ({@link BatchInfoRecord}),
     * numbered under the log's lock as {@link #recordDecision}'s, one hsync for all.
     */
    @Override
    public void recordLeaderDecisions(long generation, List<Certificate> decisions, List<BatchInfo> infos) {
        decisions(generation, true).appendAll(null, BatchInfoRecord.leaderDecisionRecords(decisions, infos), true);
    }

    /** The BatchInfo records among the decision records, as stored (not verified); damaged ones are skipped. */
    @Override
    public List<BatchInfo> decisionBatchInfos(long generation) {
        return BatchInfoRecord.batchInfos(decisions(generation, true).readAll());
    }

    private static List<byte[]> encoded(List<Certificate> decisions) {
        List<byte[]> encoded = new ArrayList<>(decisions.size());
        for (Certificate d : decisions) {
            encoded.add(d.encode());
        }
        return encoded;
    }

    /** Decodes what was stored; a record that verifies (CRC) but does not decode is skipped, not trusted. */
    @Override
    public List<Certificate> decisions(long generation) {
        // (after a compaction the numbers start far above 0: never loop over them)
        return BatchInfoRecord.decisions(decisions(generation, true).readAll());
    }

    /**
     * Decision GC ({@link ReplicaDisk#compactDecisions}): under the decision log's lock, the active segment is
     * rolled, the records {@code keep} accepts are written (in recording order, numbered after every record
     * written so far) to a new segment that is hsynced and closed, and only then are the older segments deleted.
     * A crash before the deletes leaves the kept records twice (reloading a decision twice is harmless).
     */
    @Override
    public void compactDecisions(long generation, java.util.function.Predicate<Certificate> keep) {
        // a record that does not decode proves nothing (decisions() skips it too): dropped; a BatchInfo goes with its
        // TENTATIVE_COMMIT
        decisions(generation, true).compact(records -> BatchInfoRecord.kept(records, keep));
    }

    /** The files of the generation's decision records, oldest first (tests and GC accounting). */
    public List<Path> decisionSegments(long generation) {
        return decisions(generation, true).segmentPaths();
    }

    // ------------------------------------------------------------------ snapshots and checkpoints

    @Override
    public void writeSnapshot(RegionSnapshot s) {
        writeState(s.generation(), "whole." + s.throughIndex(), s);
    }

    @Override
    public void writeCheckpoint(long generation, long throughIndex, long lastSeq, Map<Long, byte[]> changed,
                                VolumeRootRecord rootRecord) {
        writeState(generation, "delta." + throughIndex,
                new RegionSnapshot(generation, throughIndex, lastSeq, changed, rootRecord));
    }

    @Override
    public void writeStoredCheckpoint(long generation, long throughIndex, long lastSeq, Map<Long, byte[]> changed,
                                      VolumeRootRecord rootRecord, io.salus.core.merkle.Hash regionRoot,
                                      long storeVersion) {
        writeState(generation, "stored." + throughIndex, RegionSnapshot.stored(generation, throughIndex, lastSeq,
                rootRecord, regionRoot, storeVersion));
    }

    @Override
    public RegionSnapshot readSnapshot(long generation, long throughIndex) {
        synchronized (stateLock) {
            return composeSnapshot(generation, throughIndex);
        }
    }

    /**
     * Checkpoint GC ({@link ReplicaDisk#collectCheckpoints}): only if this disk holds its own checkpoint through
     * {@code throughIndex}. Once {@link ReplicaDisk#DELTAS_PER_WHOLE} deltas follow the latest whole snapshot at or
     * below the index, the state through it is composed and written as {@code whole.<throughIndex>} (temporary name,
     * hsync, rename) before anything is deleted; then every whole snapshot below the latest one at or below the
     * index, and every delta below it, is deleted. A crash between the two steps only leaves files to delete.
     */
    @Override
    public void collectCheckpoints(long generation, long throughIndex) {
        synchronized (stateLock) {
            Path sd = stateDir(generation);
            TreeMap<Long, Path> wholes = new TreeMap<>();
            TreeMap<Long, Path> deltas = new TreeMap<>();
            for (FileStatus st : list(sd)) {
                Matcher m = STATE.matcher(st.getPath().getName());
                if (m.matches()) {
                    (m.group(1).equals("whole") ? wholes : deltas).put(Long.parseLong(m.group(2)), st.getPath());
                }
            }
            if (exists(new Path(sd, "stored." + throughIndex))) {
                // a stored checkpoint through the index is the whole state by itself: every file below it goes
                try {
                    for (FileStatus st : list(sd)) {
                        Matcher m = STATE.matcher(st.getPath().getName());
                        if (m.matches() && Long.parseLong(m.group(2)) < throughIndex) {
                            fs.delete(st.getPath(), false);
                        }
                    }
                } catch (IOException e) {
                    throw new UncheckedIOException("cannot garbage-collect the checkpoints of " + sd + " below "
                            + throughIndex, e);
                }
                return;
            }
            if (!wholes.containsKey(throughIndex) && !deltas.containsKey(throughIndex)) {
                return; // not this disk's own checkpoint through the index: nothing is collected
            }
            Long whole = wholes.floorKey(throughIndex);
            int since = (whole == null ? deltas.headMap(throughIndex, true)
                    : deltas.subMap(whole, false, throughIndex, true)).size();
            if ((whole == null || whole < throughIndex) && since >= DELTAS_PER_WHOLE) {
                RegionSnapshot s = composeSnapshot(generation, throughIndex);
                if (s == null) {
                    return;
                }
                writeState(generation, "whole." + throughIndex, s);
                wholes.put(throughIndex, new Path(sd, "whole." + throughIndex));
                whole = throughIndex;
            }
            if (whole == null) {
                return; // the deltas compose from the generation's empty start: all are needed
            }
            try {
                for (Path p : wholes.headMap(whole, false).values()) {
                    fs.delete(p, false);
                }
                for (Path p : deltas.headMap(whole, false).values()) {
                    fs.delete(p, false);
                }
            } catch (IOException e) {
                throw new UncheckedIOException("cannot garbage-collect the checkpoints of " + sd + " below " + whole, e);
            }
        }
    }

    private RegionSnapshot composeSnapshot(long generation, long throughIndex) {
        Path sd = stateDir(generation);
        RegionSnapshot stored = readState(new Path(sd, "stored." + throughIndex));
        if (stored != null) {
            return stored;
        }
        RegionSnapshot whole = readState(new Path(sd, "whole." + throughIndex));
        if (whole != null) {
            return whole;
        }
        TreeMap<Long, Path> deltas = new TreeMap<>();
        long from = -1; // the latest whole snapshot below the index: the generation's start, or a peer catch-up's
        for (FileStatus st : list(sd)) {
            Matcher m = STATE.matcher(st.getPath().getName());
            if (m.matches() && m.group(1).equals("delta")) {
                deltas.put(Long.parseLong(m.group(2)), st.getPath());
            } else if (m.matches() && m.group(1).equals("whole") && Long.parseLong(m.group(2)) < throughIndex) {
                from = Math.max(from, Long.parseLong(m.group(2)));
            }
        }
        if (!deltas.containsKey(throughIndex)) {
            return null;
        }
        RegionSnapshot start = readState(new Path(sd, "whole." + from));
        Map<Long, byte[]> blocks = new TreeMap<>(start == null ? Map.of() : start.blocks());
        RegionSnapshot last = null;
        for (Path p : deltas.subMap(from, false, throughIndex, true).values()) {
            last = readState(p);
            blocks.putAll(last.blocks());
        }
        return new RegionSnapshot(generation, throughIndex, last.lastSeq(), blocks, last.rootRecord());
    }

    /** The highest through-index of a checkpoint (delta) file of the generation, or -1. */
    public long latestCheckpoint(long generation) {
        long best = -1;
        for (FileStatus st : list(stateDir(generation))) {
            Matcher m = STATE.matcher(st.getPath().getName());
            if (m.matches() && !m.group(1).equals("whole")) {
                best = Math.max(best, Long.parseLong(m.group(2)));
            }
        }
        return best;
    }

    private Path stateDir(long generation) {
        return new Path(dir, "state/g" + generation);
    }

    private void writeState(long generation, String name, RegionSnapshot s) {
        synchronized (stateLock) {
            writeStateLocked(generation, name, s);
        }
    }

    private void writeStateLocked(long generation, String name, RegionSnapshot s) {
        Path sd = stateDir(generation);
        Path tmp = new Path(sd, "." + name + "." + incarnation + ".tmp");
        Path dst = new Path(sd, name);
        try {
            try (FSDataOutputStream out = create(tmp, true)) {
                out.write(LogFrame.encode(s.throughIndex(), encodeSnapshot(s)));
                hsync(out);
            }
            java.util.function.Consumer<Path> hook = beforeStateRename;
            if (hook != null) {
                hook.accept(tmp);
            }
            fs.rename(tmp, dst, Options.Rename.OVERWRITE);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + dst, e);
        }
    }

    private RegionSnapshot readState(Path p) {
        try {
            if (!fs.exists(p)) {
                return null;
            }
            long len = fs.getFileStatus(p).getLen();
            try (FSDataInputStream in = fs.open(p)) {
                LogFrame.Frame f = LogFrame.read(in, 0, len, p.toString());
                if (f == null || f.end() != len) {
                    throw new CorruptReplicaLogException(p + ": checkpoint file of " + len
                            + " bytes is not exactly one complete frame (files are renamed into place only after"
                            + " hsync, so this is damage). Restore the region from a peer replica.");
                }
                return decodeSnapshot(f.payload(), p);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + p, e);
        }
    }

    static byte[] encodeSnapshot(RegionSnapshot s) {
        ByteArrayOutputStream bo = new ByteArrayOutputStream();
        try (DataOutputStream o = new DataOutputStream(bo)) {
            if (s.isStored()) {
                o.writeLong(STORED_MAGIC);
                o.writeLong(s.generation());
                o.writeLong(s.throughIndex());
                o.writeLong(s.lastSeq());
                o.write(s.rootRecord().encode());
                o.write(s.stored().regionRoot().bytes());
                o.writeLong(s.stored().storeVersion());
                return bo.toByteArray();
            }
            o.writeLong(s.generation());
            o.writeLong(s.throughIndex());
            o.writeLong(s.lastSeq());
            o.write(s.rootRecord().encode());
            o.writeInt(s.blocks().size());
            for (Map.Entry<Long, byte[]> e : s.blocks().entrySet()) {
                o.writeLong(e.getKey());
                o.writeInt(e.getValue().length);
                o.write(e.getValue());
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bo.toByteArray();
    }

    static RegionSnapshot decodeSnapshot(byte[] b, Path p) {
        try {
            ByteBuffer in = ByteBuffer.wrap(b);
            if (p.getName().startsWith("stored.")) {
                if (in.getLong() != STORED_MAGIC) {
                    throw new IllegalArgumentException("not a stored checkpoint");
                }
                long gen = in.getLong();
                long through = in.getLong();
                long lastSeq = in.getLong();
                byte[] rr = new byte[VolumeRootRecord.ENCODED_LENGTH];
                in.get(rr);
                byte[] root = new byte[io.salus.core.merkle.Hash.LENGTH];
                in.get(root);
                long version = in.getLong();
                if (in.hasRemaining()) {
                    throw new IllegalArgumentException(in.remaining() + " bytes after the record");
                }
                return RegionSnapshot.stored(gen, through, lastSeq, VolumeRootRecord.decode(rr),
                        io.salus.core.merkle.Hash.of(root), version);
            }
            long gen = in.getLong();
            long through = in.getLong();
            long lastSeq = in.getLong();
            byte[] rr = new byte[VolumeRootRecord.ENCODED_LENGTH];
            in.get(rr);
            int n = in.getInt();
            Map<Long, byte[]> blocks = new TreeMap<>();
            for (int i = 0; i < n; i++) {
                long k = in.getLong();
                byte[] v = new byte[in.getInt()];
                in.get(v);
                blocks.put(k, v);
            }
            return new RegionSnapshot(gen, through, lastSeq, blocks, VolumeRootRecord.decode(rr));
        } catch (RuntimeException e) {
            throw new CorruptReplicaLogException(p + ": checkpoint frame verifies but does not decode (" + e
                    + "); written by an incompatible version? Restore the region from a peer replica.");
        }
    }

    // ------------------------------------------------------------------ plumbing

    private synchronized FramedLog log(long generation) {
        return logs.computeIfAbsent(generation, g -> new FramedLog(new Path(dir, "log/g" + g), true));
    }

    private synchronized FramedLog decisions(long generation, boolean create) {
        return decisionLogs.computeIfAbsent(generation, g -> new FramedLog(new Path(dir, "decisions/g" + g), false));
    }

    private boolean exists(Path p) {
        try {
            return fs.exists(p);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot stat " + p, e);
        }
    }

    private FileStatus[] list(Path d) {
        try {
            return fs.exists(d) ? fs.listStatus(d) : new FileStatus[0];
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list " + d, e);
        }
    }

    private FSDataOutputStream create(Path p, boolean overwrite) throws IOException {
        return fs.create(p, FsPermission.getFileDefault(), overwrite, 64 * 1024, (short) 1,
                fs.getDefaultBlockSize(p), null, favored);
    }

    private FSDataOutputStream createSegment(Path p) throws IOException {
        return fs.create(p, FsPermission.getFileDefault(), false, 64 * 1024, (short) 1, segmentBlockSize(p), null,
                favored);
    }

    private void hsync(FSDataOutputStream out) throws IOException {
        if (out instanceof HdfsDataOutputStream h) {
            h.hsync(EnumSet.of(HdfsDataOutputStream.SyncFlag.UPDATE_LENGTH));
        } else {
            out.hsync();
        }
        hsyncs.incrementAndGet();
    }

    /** Waits until the NameNode has recovered the lease of a file a dead writer left open. */
    private void recoverLease(Path p) throws IOException {
        long start = System.currentTimeMillis();
        long deadline = start + LEASE_RECOVERY_MS;
        while (!fs.isFileClosed(p)) {
            if (fs.recoverLease(p)) {
                return;
            }
            // the last block's only replica went with a DataNode's disk (replication 1): block recovery has no replica
            // to work from and the NameNode never closes the file; say so at once (the replica's open moves the disk
            // aside and catches up from a peer) instead of waiting out LEASE_RECOVERY_MS
            String lost = io.salus.core.hbase.SalusStoreQuarantine.lost(fs, p.toUri().getPath());
            if (lost != null) {
                throw new org.apache.hadoop.hdfs.BlockMissingException(p.toUri().getPath(), "the previous writer's"
                        + " lease cannot be recovered: " + lost, 0);
            }
            if (System.currentTimeMillis() - start > stuckRecoveryMs && lastBlockOnLiveDataNodes(p)) {
                // 8 GiB restart run, cycle 6: a kill -9 left the last block's only replica without its meta file; the
                // DataNode reports it with generation stamp 0, every block recovery fails ("replica.getGeneration
                // Stamp() < block.getGenerationStamp()") and the file never closes. The region's open waited out
                // LEASE_RECOVERY_MS and `salus up` failed ("regions were not all online within 180 s"). Unreadable
                // like a damaged log: the replica's open moves the log aside (not deleted) and catches up from a peer.
                throw new CorruptReplicaLogException(p + ": the previous writer's lease is not recovered after "
                        + (System.currentTimeMillis() - start) + " ms although its last block's DataNodes are live (the"
                        + " block recovery fails there, e.g. a replica a crash left without its meta file); the log"
                        + " cannot be read to its end. Restore the region from a peer replica.");
            }
            if (System.currentTimeMillis() > deadline) {
                throw new IOException(p + ": the NameNode did not recover the previous writer's lease within "
                        + LEASE_RECOVERY_MS + " ms; is the DataNode holding its last block down?");
            }
            try {
                Thread.sleep(200);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new InterruptedIOException("interrupted while recovering the lease of " + p);
            }
        }
    }

    /**
     * The length of a file a dead writer left open as the NameNode knows it: its complete blocks plus the last block's
     * length as the writer's last {@code hsync} (with UPDATE_LENGTH, {@link #hsync}) reported it; 0 if not known.
     */
    private long syncedLength(Path p) {
        try {
            org.apache.hadoop.hdfs.protocol.LocatedBlocks lbs = fs.getClient().getLocatedBlocks(p.toUri().getPath(), 0,
                    Long.MAX_VALUE);
            org.apache.hadoop.hdfs.protocol.LocatedBlock last = lbs.getLastLocatedBlock();
            return lbs.getFileLength() + (lbs.isLastBlockComplete() || last == null ? 0 : last.getBlockSize());
        } catch (IOException | RuntimeException notKnown) {
            return 0;
        }
    }

    /** Whether the last block of {@code p} has replicas and every one is on a DataNode the NameNode counts as live. */
    private boolean lastBlockOnLiveDataNodes(Path p) {
        try {
            org.apache.hadoop.hdfs.protocol.LocatedBlock last = fs.getClient().getLocatedBlocks(p.toUri().getPath(), 0,
                    Long.MAX_VALUE).getLastLocatedBlock();
            if (last == null || last.getLocations().length == 0) {
                return false;
            }
            java.util.Set<String> live = io.salus.core.hbase.SalusStoreQuarantine.liveDataNodes(fs);
            for (var loc : last.getLocations()) {
                if (!live.contains(loc.getDatanodeUuid())) {
                    return false;
                }
            }
            return true;
        } catch (IOException | RuntimeException notKnown) {
            return false;
        }
    }

    /**
     * Moves this disk's whole directory aside to {@code dest} (never deletes it) and starts over empty: what the
     * replica writes from now on goes to a new directory at the same path. For a disk that cannot be read (an HDFS
     * checksum error, a block with no readable replica, a damaged frame): the replica then catches up from a peer
     * (issue 14). Returns false if the directory did not exist.
     */
    public synchronized boolean quarantine(Path dest) {
        for (FramedLog l : logs.values()) {
            l.abandonActive();
        }
        for (FramedLog l : decisionLogs.values()) {
            l.abandonActive();
        }
        logs.clear();
        decisionLogs.clear();
        try {
            return io.salus.core.hbase.SalusStoreQuarantine.moveAside(fs, dir, dest);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot move the replica's disk " + dir + " aside to " + dest, e);
        }
    }

    @Override
    public synchronized void close() {
        for (FramedLog l : logs.values()) {
            l.closeActive();
        }
        for (FramedLog l : decisionLogs.values()) {
            l.closeActive();
        }
    }

    private record Loc(Path path, long offset, int length) {
    }

    /** An open segment: frames written, and how far hsync has made them durable. */
    private final class Segment {
        final Path path;
        final FSDataOutputStream out;
        final Object syncLock = new Object();
        volatile long written; // updated under the owning FramedLog's lock, after the bytes are in the stream
        long maxIndex = -1;
        volatile long synced;
        /** How far hflush (or hsync) made the frames reach the DataNode. */
        volatile long flushed;
        /** The segment's HDFS block size: it is rolled before a frame would cross it. */
        final long blockSize;
        boolean closed;

        Segment(Path path, FSDataOutputStream out, long blockSize) {
            this.path = path;
            this.out = out;
            this.blockSize = blockSize;
        }
    }

    /** A sequence of segment files of frames (a generation's log, or its decisions). */
    private final class FramedLog {
        final Path ldir;
        final boolean gcable;
        final TreeMap<Long, Loc> index = new TreeMap<>();
        /** Segment path to the highest index in it, for GC. */
        final TreeMap<Long, Path> segments = new TreeMap<>();
        final Map<Path, Long> segmentMax = new HashMap<>();
        long nextSegment;
        long prefixThrough = -1;
        /** Highest index of any frame written or scanned (including frames whose hsync is still under way). */
        long highestWritten = -1;
        /** Frames written and not yet in the index (their hsync is under way). */
        int inFlight;
        Segment active;

        FramedLog(Path ldir, boolean gcable) {
            this.ldir = ldir;
            this.gcable = gcable;
            try {
                load();
            } catch (IOException e) {
                throw new UncheckedIOException("cannot open the replica log " + ldir, e);
            }
        }

        private void load() throws IOException {
            if (!fs.exists(ldir)) {
                return;
            }
            Path prefix = new Path(ldir, "prefix");
            if (fs.exists(prefix)) {
                try (FSDataInputStream in = fs.open(prefix)) {
                    LogFrame.Frame f = LogFrame.read(in, 0, fs.getFileStatus(prefix).getLen(), prefix.toString());
                    if (f == null) {
                        throw new CorruptReplicaLogException(prefix + ": truncated GC marker (it is renamed into"
                                + " place after hsync, so this is damage). Restore the region from a peer replica.");
                    }
                    prefixThrough = f.index();
                }
            }
            for (FileStatus st : fs.listStatus(ldir)) {
                Matcher m = SEGMENT.matcher(st.getPath().getName());
                if (m.matches()) {
                    segments.put(Long.parseLong(m.group(1)), st.getPath());
                }
            }
            if (!segments.isEmpty()) {
                nextSegment = segments.lastKey() + 1;
            }
            for (Map.Entry<Long, Path> s : segments.entrySet()) {
                boolean last = s.getKey().equals(segments.lastKey());
                scan(s.getValue(), last);
            }
        }

        /** Scans one segment into the index; the last one may end in a torn tail, which is cut off. */
        private void scan(Path p, boolean last) throws IOException {
            // a segment its writer closed was hsynced first (roll); one a dead writer left open may end in frames it
            // only hflushed (the batch path), which the lease recovery does not make durable either
            boolean deadWriter = last && !fs.isFileClosed(p);
            long synced = deadWriter ? syncedLength(p) : -1;
            if (last) {
                recoverLease(p);
            }
            long len = fs.getFileStatus(p).getLen();
            if (len < synced) {
                // review of the 8 GiB restart run: a replica a crash left without its meta file is dropped by the block
                // recovery ("syncList=[]", the block deleted, the file closed at 0 bytes): frames hsynced (and acted
                // on) before the crash would be gone without a word
                throw new CorruptReplicaLogException(p + ": the previous writer's lease recovery left " + len
                        + " bytes of the " + synced + " it had hsynced (the last block's replica could not be"
                        + " recovered). Restore the region from a peer replica.");
            }
            long off = 0;
            long max = -1;
            try (FSDataInputStream in = fs.open(p)) {
                while (off < len) {
                    LogFrame.Frame f = LogFrame.read(in, off, len, p.toString());
                    if (f == null) {
                        if (!last) {
                            throw new CorruptReplicaLogException(p + ": incomplete frame at byte " + off + " of " + len
                                    + " in a segment that is not the last one (a later segment was started, so this"
                                    + " file was complete once). Restore the region from a peer replica.");
                        }
                        break;
                    }
                    if (f.index() > prefixThrough) {
                        index.put(f.index(), new Loc(p, off, f.payload().length));
                    }
                    max = Math.max(max, f.index());
                    highestWritten = Math.max(highestWritten, f.index());
                    off = f.end();
                }
            }
            if (off < len) {
                // torn tail: the prefix of a frame that was never hsynced (so never acknowledged)
                if (!fs.truncate(p, off)) {
                    recoverLease(p); // truncate finishes with block recovery; wait for the file to close
                }
            }
            if (deadWriter && off > 0) {
                // review rvw22: hsync what the dead writer left (acknowledged writes and commit marks it had only
                // hflushed) before anything is served: a FLUSH answered by this incarnation hsyncs only its own
                // segments, so it completed while those frames were in the DataNodes' memory only
                try (FSDataOutputStream out = fs.append(p)) {
                    hsync(out);
                    if (gcable) {
                        logHsyncs.incrementAndGet();
                    }
                }
            }
            segmentMax.put(p, max);
        }

        synchronized long lastIndex() {
            return index.isEmpty() ? -1 : index.lastKey();
        }

        synchronized List<Path> segmentPaths() {
            return new ArrayList<>(segments.values());
        }

        private Segment activeForAppend(int frameBytes) throws IOException {
            if (active != null && (active.written >= segmentBytes || active.written + frameBytes > active.blockSize)) {
                roll(); // full, or the frame would cross into a second HDFS block (see segmentBlockSize)
            }
            if (active == null) {
                Path p = new Path(ldir, String.format("seg-%020d.log", nextSegment));
                segments.put(nextSegment++, p);
                segmentMax.put(p, -1L);
                active = new Segment(p, createSegment(p), segmentBlockSize(p));
            }
            return active;
        }

        /** hsyncs the active segment if it holds frames not hsynced yet (rolled segments were hsynced at the roll). */
        void syncActive() throws IOException {
            Segment s;
            long end;
            synchronized (this) {
                s = active;
                if (s == null) {
                    return;
                }
                end = s.written;
            }
            syncTo(s, end);
        }

        void append(long idx, byte[] entry) {
            append(idx, false, entry);
        }

        /** Appends at the index after the highest one written (numbered under the lock: decisions). */
        void appendNext(byte[] entry) {
            append(-1, true, entry);
        }

        private void append(long idx, boolean next, byte[] entry) {
            Segment s;
            long off;
            long end;
            boolean counted = false;
            try {
                synchronized (this) {
                    inFlight++;
                    counted = true;
                    if (next) {
                        idx = highestWritten + 1;
                    }
                    highestWritten = Math.max(highestWritten, idx);
                    byte[] frame = LogFrame.encode(idx, entry);
                    s = activeForAppend(frame.length);
                    off = s.written;
                    s.out.write(frame);
                    s.written += frame.length;
                    end = s.written;
                    s.maxIndex = Math.max(s.maxIndex, idx);
                    segmentMax.put(s.path, s.maxIndex);
                }
                syncTo(s, end);
            } catch (IOException | RuntimeException e) {
                throw appendFailed(counted, e, "cannot append index " + idx + " to " + ldir);
            }
            synchronized (this) {
                inFlight--;
                if (idx > prefixThrough) { // a concurrent truncateLogPrefix may have passed it already
                    index.put(idx, new Loc(s.path, off, entry.length));
                }
            }
            appends.incrementAndGet();
        }

        /**
         * Writes every entry's frame (at {@code indexes.get(i)}, or numbered after the highest written if
         * {@code indexes} is null), then makes them all durable with one hsync per segment they went to (a roll in
         * between hsyncs the segment it closes), then indexes them. Returns once all are durable.
         */
        void appendAll(List<Long> indexes, List<byte[]> entries, boolean hsync) {
            if (entries.isEmpty()) {
                return;
            }
            long[] idx = new long[entries.size()];
            Segment[] seg = new Segment[entries.size()];
            long[] off = new long[entries.size()];
            Map<Segment, Long> ends = new java.util.LinkedHashMap<>();
            boolean counted = false;
            try {
                synchronized (this) {
                    // in flight until indexed, as append's: compact() must not rewrite and delete a segment holding
                    // frames written here but not indexed yet (they would be lost, and indexed at a deleted file)
                    inFlight++;
                    counted = true;
                    for (int i = 0; i < entries.size(); i++) {
                        idx[i] = indexes == null ? highestWritten + 1 : indexes.get(i);
                        highestWritten = Math.max(highestWritten, idx[i]);
                        byte[] frame = LogFrame.encode(idx[i], entries.get(i));
                        Segment s = activeForAppend(frame.length);
                        seg[i] = s;
                        off[i] = s.written;
                        s.out.write(frame);
                        s.written += frame.length;
                        ends.put(s, s.written);
                        s.maxIndex = Math.max(s.maxIndex, idx[i]);
                        segmentMax.put(s.path, s.maxIndex);
                    }
                }
                for (Map.Entry<Segment, Long> e : ends.entrySet()) {
                    if (hsync) {
                        syncTo(e.getKey(), e.getValue());
                    } else {
                        flushTo(e.getKey(), e.getValue());
                    }
                }
            } catch (IOException | RuntimeException e) {
                throw appendFailed(counted, e, "cannot append " + entries.size() + " entries to " + ldir);
            }
            synchronized (this) {
                inFlight--;
                for (int i = 0; i < entries.size(); i++) {
                    if (idx[i] > prefixThrough) { // a concurrent truncateLogPrefix may have passed it already
                        index.put(idx[i], new Loc(seg[i].path, off[i], entries.get(i).length));
                    }
                }
            }
            appends.addAndGet(entries.size());
        }

        /** A failed append: no longer in flight (if it was counted); the exception to throw. */
        private RuntimeException appendFailed(boolean counted, Exception e, String what) {
            if (counted) {
                synchronized (this) {
                    inFlight--;
                }
            }
            return e instanceof RuntimeException r ? r : new UncheckedIOException(what, (IOException) e);
        }

        /** Group commit: one hsync makes every frame written before it durable. */
        private void syncTo(Segment s, long end) throws IOException {
            synchronized (s.syncLock) {
                if (s.synced >= end || s.closed) {
                    return;
                }
                long target = s.written; // bytes already in the stream; never take the log's lock here
                hsync(s.out);
                if (gcable) {
                    logHsyncs.incrementAndGet();
                }
                s.synced = target;
                s.flushed = Math.max(s.flushed, target);
            }
        }

        /** Group commit without hsync: one hflush puts every frame written before it in the DataNode. */
        private void flushTo(Segment s, long end) throws IOException {
            synchronized (s.syncLock) {
                if (s.flushed >= end || s.closed) {
                    return;
                }
                long target = s.written;
                s.out.hflush();
                hflushes.incrementAndGet();
                s.flushed = target;
            }
        }

        void appendRaw(byte[] bytes) {
            try {
                synchronized (this) {
                    Segment s = activeForAppend(bytes.length);
                    s.out.write(bytes);
                    s.written += bytes.length;
                    s.out.hflush();
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }

        byte[] read(long idx) {
            Loc l;
            synchronized (this) {
                l = index.get(idx);
            }
            if (l == null) {
                return null;
            }
            return readAt(idx, l);
        }

        private byte[] readAt(long idx, Loc l) {
            try (FSDataInputStream in = fs.open(l.path())) {
                return readFrom(in, idx, l);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read index " + idx + " from " + l.path(), e);
            }
        }

        private byte[] readFrom(FSDataInputStream in, long idx, Loc l) throws IOException {
            in.seek(l.offset());
            LogFrame.Frame f = LogFrame.read(in, l.offset(), l.offset() + LogFrame.HEADER + l.length(),
                    l.path().toString());
            if (f == null || f.index() != idx) {
                throw new CorruptReplicaLogException(l.path() + ": the frame at byte " + l.offset()
                        + " is not index " + idx + " any more; the file changed under the replica.");
            }
            return f.payload();
        }

        /** Every record, in index order, each segment opened once (not once per record, as {@link #read}). */
        synchronized List<byte[]> readAll() {
            List<byte[]> out = new ArrayList<>(index.size());
            Map<Path, FSDataInputStream> open = new HashMap<>();
            try {
                for (Map.Entry<Long, Loc> e : index.entrySet()) {
                    FSDataInputStream in = open.get(e.getValue().path());
                    if (in == null) {
                        in = fs.open(e.getValue().path());
                        open.put(e.getValue().path(), in);
                    }
                    out.add(readFrom(in, e.getKey(), e.getValue()));
                }
                return out;
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read " + ldir, e);
            } finally {
                for (FSDataInputStream in : open.values()) {
                    try {
                        in.close();
                    } catch (IOException ignored) {
                        // read-only stream
                    }
                }
            }
        }

        /** Rolls the active segment (hsync, close): the next append starts a new file. */
        private void roll() throws IOException {
            Segment s = active;
            if (s == null) {
                return;
            }
            synchronized (s.syncLock) {
                if (s.synced < s.written) {
                    hsync(s.out);
                    if (gcable) {
                        logHsyncs.incrementAndGet();
                    }
                }
                s.out.close();
                s.synced = s.written;
                s.closed = true;
            }
            active = null;
        }

        void truncatePrefix(long through) {
            if (!gcable) {
                throw new IllegalStateException("decisions are not garbage-collected by log index");
            }
            try {
                synchronized (this) {
                    if (through <= prefixThrough) {
                        return;
                    }
                    // the marker first: a crash after it and before the deletes only leaves files to delete
                    Path tmp = new Path(ldir, ".prefix." + incarnation + ".tmp");
                    try (FSDataOutputStream out = create(tmp, true)) {
                        out.write(LogFrame.encode(through, new byte[0]));
                        hsync(out);
                    }
                    fs.rename(tmp, new Path(ldir, "prefix"), Options.Rename.OVERWRITE);
                    prefixThrough = through;
                    index.headMap(through, true).clear();
                    roll();
                    var it = segments.entrySet().iterator();
                    while (it.hasNext()) {
                        Path p = it.next().getValue();
                        if (segmentMax.getOrDefault(p, -1L) <= through) {
                            fs.delete(p, false);
                            segmentMax.remove(p);
                            it.remove();
                        }
                    }
                }
            } catch (IOException e) {
                throw new UncheckedIOException("cannot garbage-collect " + ldir + " through " + through, e);
            }
        }

        /**
         * Keeps only the records {@code keep} returns (given all of them in order, it returns those kept, in order):
         * written to a new segment first, then the old ones deleted.
         */
        void compact(java.util.function.UnaryOperator<List<byte[]>> keep) {
            try {
                synchronized (this) {
                    if (inFlight > 0) {
                        return; // a frame written but not indexed yet would be lost with its segment: next time
                    }
                    List<byte[]> all = readAll();
                    List<Path> old = new ArrayList<>(segments.values());
                    if (old.isEmpty()) {
                        return;
                    }
                    List<byte[]> kept = keep.apply(all);
                    if (kept.size() == all.size()) {
                        return; // nothing to collect
                    }
                    roll();
                    TreeMap<Long, Loc> fresh = new TreeMap<>();
                    if (!kept.isEmpty()) {
                        Path p = new Path(ldir, String.format("seg-%020d.log", nextSegment));
                        segments.put(nextSegment++, p);
                        long off = 0;
                        long max = -1;
                        try (FSDataOutputStream out = create(p, false)) {
                            for (byte[] b : kept) {
                                long idx = ++highestWritten;
                                byte[] frame = LogFrame.encode(idx, b);
                                out.write(frame);
                                fresh.put(idx, new Loc(p, off, b.length));
                                off += frame.length;
                                max = idx;
                            }
                            hsync(out);
                        }
                        segmentMax.put(p, max);
                    }
                    index.clear();
                    index.putAll(fresh);
                    var it = segments.entrySet().iterator();
                    while (it.hasNext()) {
                        Path p = it.next().getValue();
                        if (old.contains(p)) {
                            fs.delete(p, false);
                            segmentMax.remove(p);
                            it.remove();
                        }
                    }
                }
            } catch (IOException e) {
                throw new UncheckedIOException("cannot compact " + ldir, e);
            }
        }

        /** Closes the active segment, if any, ignoring errors (the directory is being moved aside). */
        synchronized void abandonActive() {
            try {
                roll();
            } catch (IOException | RuntimeException e) {
                active = null;
            }
        }

        synchronized void closeActive() {
            try {
                roll();
            } catch (IOException e) {
                throw new UncheckedIOException("cannot close " + ldir, e);
            }
        }
    }
}
