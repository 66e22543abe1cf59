package io.salus.it.hbase.storage;

import static org.junit.jupiter.api.Assertions.*;

import io.salus.core.hbase.storage.CorruptReplicaLogException;
import io.salus.core.hbase.storage.HdfsReplicaDisk;
import io.salus.core.hbase.storage.LogFrame;
import io.salus.core.protocol.replica.RegionSnapshot;
import io.salus.core.protocol.replica.ReplicaDisk;
import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.BlockLocation;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.log4j.Level;
import org.apache.log4j.LogManager;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@link HdfsReplicaDisk} on a real MiniDFSCluster with three DataNodes (one cluster for the class): the
 * {@link ReplicaDiskContract}, crashes between two steps (a frame written but never hsynced, a torn last
 * frame), mid-file corruption, group commit, and the favored DataNode holding every block of a replica's
 * files. A crash is a writer whose DFS client aborts its open streams without completing the files (the
 * NameNode still holds its lease), as when the region server's JVM dies.
 */
class HdfsReplicaDiskTest extends ReplicaDiskContract {
    private static MiniDFSCluster cluster;
    private static DistributedFileSystem fs;
    private static final Path ROOT = new Path("/salus/logs");

    @BeforeAll
    static void start() throws Exception {
        LogManager.getRootLogger().setLevel(Level.WARN);
        Configuration conf = new Configuration();
        File base = new File("target/test-data/" + UUID.randomUUID());
        conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, base.getAbsolutePath());
        conf.setInt("dfs.namenode.http-address.port", 0);
        cluster = new MiniDFSCluster.Builder(conf).numDataNodes(3).build();
        cluster.waitActive();
        fs = cluster.getFileSystem();
    }

    @AfterAll
    static void stop() {
        if (cluster != null) {
            cluster.shutdown(true);
        }
    }

    private static HdfsReplicaDisk disk(DistributedFileSystem f, Path dir, InetSocketAddress favored) {
        return new HdfsReplicaDisk(f, dir, favored, HdfsReplicaDisk.DEFAULT_SEGMENT_BYTES);
    }

    @Override
    ReplicaDisk fresh() {
        return disk(fs, new Path(ROOT, UUID.randomUUID().toString()), null);
    }

    @Override
    ReplicaDisk reopen(ReplicaDisk d) {
        HdfsReplicaDisk h = (HdfsReplicaDisk) d;
        h.close();
        return disk(fs, h.directory(), null);
    }

    @Override
    int checkpointFiles(ReplicaDisk d, long generation) throws IOException {
        Path sd = new Path(((HdfsReplicaDisk) d).directory(), "state/g" + generation);
        int n = 0;
        if (fs.exists(sd)) {
            for (var st : fs.listStatus(sd)) {
                if (!st.getPath().getName().startsWith(".")) {
                    n++;
                }
            }
        }
        return n;
    }

    /**
     * Issue 14 item 1: a decision compaction deletes the old segment files (the kept records are in a new one, hsynced
     * before the deletes), and the bytes on HDFS shrink.
     */
    @Test
    void decisionCompactionDeletesTheOldSegments() throws Exception {
        HdfsReplicaDisk d = disk(fs, new Path(ROOT, "decision-gc"), null);
        for (long b = 0; b < 60; b++) {
            d.recordDecision(1, decision(b, true));
        }
        List<Path> before = d.decisionSegments(1);
        long bytesBefore = 0;
        for (Path p : before) {
            bytesBefore += fs.getFileStatus(p).getLen();
        }
        d.compactDecisions(1, c -> c.statement(io.salus.core.cert.Statement.Decision.class).batchId() >= 55);
        for (Path p : before) {
            assertFalse(fs.exists(p), p + " still on HDFS after the compaction");
        }
        long bytesAfter = 0;
        for (Path p : d.decisionSegments(1)) {
            bytesAfter += fs.getFileStatus(p).getLen();
        }
        assertTrue(bytesAfter * 5 < bytesBefore, bytesAfter + " bytes of decision records after keeping 5 of 60 ("
                + bytesBefore + " before)");
        d.recordDecision(1, decision(60, true));
        d.close();
        HdfsReplicaDisk back = disk(fs, d.directory(), null);
        assertEquals(List.of(55L, 56L, 57L, 58L, 59L, 60L), ids(back.decisions(1)));
        back.close();
    }

    /** A DFS client of its own (a region server process), so its crash is not the test's client's. */
    private static DistributedFileSystem newClient() throws IOException {
        return (DistributedFileSystem) FileSystem.newInstance(cluster.getConfiguration(0));
    }

    /** The process dies: open streams are aborted (nothing completed, buffered bytes lost, lease kept). */
    private static void crash(DistributedFileSystem client) {
        client.getClient().closeAllFilesBeingWritten(true);
    }

    /**
     * Review rvw22: the batch path only hflushes log entries and commit marks (acknowledged writes, durable against a
     * process crash), and a client's FLUSH asks the replica to hsync them. When the region server process crashed in
     * between, the reopened disk scanned the dead writer's segments (lease recovered, so closed and never hsynced: the
     * DataNodes do not fsync a block on its recovery) and started new ones; its {@code sync} (the FLUSH, answered by the
     * new incarnation) hsynced only those new segments, so the FLUSH completed while the acknowledged writes' frames
     * were still only in the DataNodes' memory: a power loss then lost writes a completed FLUSH covered. The reopened
     * disk must have hsynced what it recovered by the time its first {@code sync} returns.
     */
    @Test
    void aFlushAfterAProcessCrashHsyncsTheFramesTheDeadWriterOnlyHflushed() throws Exception {
        Path dir = new Path(ROOT, "reopen-then-flush");
        DistributedFileSystem rs = newClient();
        HdfsReplicaDisk d = disk(rs, dir, null);
        d.append(1, 0, entry(0, 700)); // hsynced
        d.recordDecision(1, decision(100, true)); // hsynced
        d.appendAll(1, List.of(1L, 2L), List.of(entry(1, 700), entry(2, 700))); // the batch path: hflush only
        d.recordCommitMarks(1, List.of(decision(1, true), decision(2, true))); // hflush only
        crash(rs);
        HdfsReplicaDisk back = disk(fs, dir, null);
        assertArrayEquals(entry(2, 700), back.read(1, 2), "the hflushed entry survived the process crash");
        assertEquals(java.util.Set.of(1L, 2L, 100L), new java.util.TreeSet<>(ids(back.decisions(1))));
        back.sync(1); // the client's FLUSH, answered by the new incarnation
        assertTrue(back.hsyncs() >= 2, "the FLUSH completed with " + back.hsyncs() + " hsync(s) since the reopen: the"
                + " dead writer's log and decision segments, whose last frames it had only hflushed, were not hsynced");
        back.append(1, 3, entry(3, 700)); // the recovered segments stay readable and the log goes on
        back.close();
        HdfsReplicaDisk again = disk(fs, dir, null);
        for (long i = 0; i <= 3; i++) {
            assertArrayEquals(entry(i, 700), again.read(1, i), "index " + i);
        }
        again.close();
        rs.close();
    }

    /**
     * The 8 GiB restart run (issue 27), cycle 6: a {@code kill -9} of the whole stack left the last block of a Salus log
     * segment on its only DataNode without its meta file. Two outcomes, both reproduced here: (1) the restarted
     * DataNode knows the replica's generation stamp (its replica cache), and the block recovery drops the replica
     * ("syncList=[]"), deletes the block and closes the file at 0 bytes: the frames hsynced before the crash vanished
     * and the disk read an empty log without a word; (2) it does not (the run: no cache after a kill -9, stamp 0),
     * every block recovery fails there and the file never closes: the reopened disk waited out its 300 s lease
     * recovery inside the region's open and {@code salus up} gave up ("regions were not all online within 180 s").
     * Now both are a log that cannot be read (the replica's open moves it aside and catches up from a peer).
     */
    @Test
    void aLastBlockReplicaACrashLeftWithoutItsMetaFileMakesTheLogUnreadableNotShorterNorStuck() throws Exception {
        // (1) the block recovery drops the replica: the log would silently lose its hsynced frames
        Path dir1 = new Path(ROOT, "meta-lost-dropped");
        Path seg1 = crashedSegmentWithoutMeta(dir1, false);
        HdfsReplicaDisk back1 = disk(fs, dir1, null);
        CorruptReplicaLogException e1 = assertThrows(CorruptReplicaLogException.class, () -> back1.lastIndex(1),
                "a recovery that cut hsynced frames is a damaged log, not a shorter one");
        assertTrue(e1.getMessage().contains("bytes of the"), e1.getMessage());
        assertTrue(fs.isFileClosed(seg1) && fs.getFileStatus(seg1).getLen() == 0,
                "the fault acted: the recovery closed " + seg1 + " at " + fs.getFileStatus(seg1).getLen() + " bytes");

        // (2) the block recovery fails for ever: the open must not wait for it
        Path dir2 = new Path(ROOT, "meta-lost-stuck");
        Path seg2 = crashedSegmentWithoutMeta(dir2, true);
        HdfsReplicaDisk back2 = disk(fs, dir2, null).stuckRecoveryAfter(5_000);
        long t0 = System.currentTimeMillis();
        CorruptReplicaLogException e2 = assertThrows(CorruptReplicaLogException.class, () -> back2.lastIndex(1),
                "the log whose last block cannot be recovered is unreadable, not waited for");
        long took = System.currentTimeMillis() - t0;
        assertTrue(e2.getMessage().contains("lease is not recovered"), e2.getMessage());
        assertFalse(fs.isFileClosed(seg2), "the fault acted: the NameNode could not recover the lease of " + seg2);
        assertTrue(took < 120_000, "found unreadable after " + took + " ms");
    }

    /**
     * Five hsynced frames in a log segment, then the writer's process dies; the DataNode holding the segment's only
     * replica is stopped, the replica's meta file deleted (and with {@code noReplicaCache} the DataNode's replica cache,
     * as after a kill -9), and the DataNode started again. Returns the segment.
     */
    private static Path crashedSegmentWithoutMeta(Path dir, boolean noReplicaCache) throws Exception {
        DistributedFileSystem rs = newClient();
        HdfsReplicaDisk d = disk(rs, dir, null);
        for (long i = 0; i < 5; i++) {
            d.append(1, i, entry(i, 300));
        }
        crash(rs);
        Path seg = null;
        for (var st : fs.listStatus(new Path(dir, "log/g1"))) {
            if (st.getPath().getName().startsWith("seg-")) {
                seg = st.getPath();
            }
        }
        assertNotNull(seg, "a log segment under " + dir);
        var last = fs.getClient().getLocatedBlocks(seg.toUri().getPath(), 0, Long.MAX_VALUE).getLastLocatedBlock();
        assertEquals(1, last.getLocations().length, "the segment's block has one replica");
        int dn = -1;
        for (int i = 0; i < cluster.getDataNodes().size(); i++) {
            if (cluster.getDataNodes().get(i).getDatanodeUuid().equals(last.getLocations()[0].getDatanodeUuid())) {
                dn = i;
            }
        }
        assertTrue(dn >= 0, "the DataNode holding " + last.getBlock());
        var replica = cluster.getMaterializedReplica(dn, last.getBlock());
        MiniDFSCluster.DataNodeProperties props = cluster.stopDataNode(dn);
        replica.deleteMeta();
        if (noReplicaCache) {
            // every DataNode's replica cache file (read only at a DataNode's start; the stopped one wrote its own at
            // its shutdown): the DataNode indexes shift with each restart, so all of them, found by name
            try (var files = java.nio.file.Files.walk(java.nio.file.Path.of(cluster.getDataDirectory()))) {
                for (java.nio.file.Path f : files.filter(f -> f.getFileName().toString().equals("replicas")).toList()) {
                    java.nio.file.Files.delete(f);
                }
            }
        }
        assertTrue(cluster.restartDataNode(props, true), "DataNode " + dn + " restarted");
        cluster.waitActive();
        rs.close();
        return seg;
    }

    @Test
    void crashAfterAnUnsyncedFrameKeepsEveryHsyncedEntry() throws Exception {
        Path dir = new Path(ROOT, "crash-unsynced");
        DistributedFileSystem rs = newClient();
        HdfsReplicaDisk d = disk(rs, dir, null);
        for (long i = 0; i < 20; i++) {
            d.append(1, i, entry(i, 300));
        }
        // step 1 of the next append done (frame reached the DataNode by hflush), step 2 (hsync) never
        d.appendRawUnsynced(1, LogFrame.encode(20, entry(20, 300)));
        crash(rs);
        HdfsReplicaDisk back = disk(fs, dir, null);
        assertTrue(back.lastIndex(1) >= 19, "lost hsynced entries: last index " + back.lastIndex(1));
        for (long i = 0; i < 20; i++) {
            assertArrayEquals(entry(i, 300), back.read(1, i), "index " + i);
        }
        if (back.lastIndex(1) == 20) { // it may survive (it was on the DataNode), but then intact
            assertArrayEquals(entry(20, 300), back.read(1, 20));
        }
        back.append(1, 21, entry(21, 300));
        back.close();
        HdfsReplicaDisk again = disk(fs, dir, null);
        assertArrayEquals(entry(21, 300), again.read(1, 21));
        assertArrayEquals(entry(7, 300), again.read(1, 7));
        again.close();
        rs.close();
    }

    @Test
    void tornLastFrameIsCutOffAndTheLogStaysUsableAcrossReopens() throws Exception {
        Path dir = new Path(ROOT, "crash-torn");
        DistributedFileSystem rs = newClient();
        HdfsReplicaDisk d = disk(rs, dir, null);
        for (long i = 0; i < 10; i++) {
            d.append(1, i, entry(i, 200));
        }
        byte[] frame = LogFrame.encode(10, entry(10, 200));
        byte[] torn = java.util.Arrays.copyOf(frame, frame.length / 2); // half a frame reached the DataNode
        d.appendRawUnsynced(1, torn);
        crash(rs);
        HdfsReplicaDisk back = disk(fs, dir, null);
        assertEquals(9, back.lastIndex(1));
        for (long i = 0; i < 10; i++) {
            assertArrayEquals(entry(i, 200), back.read(1, i), "index " + i);
        }
        back.append(1, 10, entry(10, 200));
        back.append(1, 11, entry(11, 200));
        back.close();
        // the torn bytes were truncated, not left in the middle of the log: a second reopen still reads
        HdfsReplicaDisk again = disk(fs, dir, null);
        assertEquals(11, again.lastIndex(1));
        for (long i = 0; i < 12; i++) {
            assertArrayEquals(entry(i, 200), again.read(1, i), "index " + i);
        }
        again.close();
        rs.close();
    }

    @Test
    void corruptionInTheMiddleOfTheLogIsRefusedNamingFileAndOffset() throws Exception {
        Path dir = new Path(ROOT, "corrupt-mid");
        HdfsReplicaDisk d = disk(fs, dir, null);
        for (long i = 0; i < 10; i++) {
            d.append(1, i, entry(i, 100));
        }
        d.close();
        Path seg = d.logSegments(1).get(0);
        byte[] all;
        try (FSDataInputStream in = fs.open(seg)) {
            all = in.readAllBytes();
        }
        long frame = LogFrame.HEADER + 100;
        int at = (int) (3 * frame + LogFrame.HEADER + 10); // a payload byte of index 3
        all[at] ^= 0x40;
        try (FSDataOutputStream out = fs.create(seg, true)) { // a faulty server rewrote the file
            out.write(all);
        }
        CorruptReplicaLogException e = assertThrows(CorruptReplicaLogException.class, () -> disk(fs, dir, null).lastIndex(1));
        assertTrue(e.getMessage().contains(seg.getName()) && e.getMessage().contains("index 3")
                && e.getMessage().contains("byte " + 3 * frame), e.getMessage());
    }

    @Test
    void concurrentAppendersShareHsyncs() throws Exception {
        HdfsReplicaDisk d = disk(fs, new Path(ROOT, "group-commit"), null);
        int threads = 8;
        int each = 40;
        ExecutorService ex = Executors.newFixedThreadPool(threads);
        AtomicInteger next = new AtomicInteger();
        List<Future<?>> fs1 = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            fs1.add(ex.submit(() -> {
                for (int k = 0; k < each; k++) {
                    long i = next.getAndIncrement();
                    d.append(1, i, entry(i, 4096));
                }
                return null;
            }));
        }
        for (Future<?> f : fs1) {
            f.get();
        }
        ex.shutdown();
        long appends = d.appends();
        long hsyncs = d.hsyncs();
        System.out.printf("group commit: %d appends, %d hsyncs, %.2f entries per hsync (%d threads)%n",
                appends, hsyncs, (double) appends / hsyncs, threads);
        assertEquals(threads * each, appends);
        assertTrue(hsyncs <= appends);
        d.close();
        HdfsReplicaDisk back = disk(fs, d.directory(), null);
        assertEquals(threads * each - 1, back.lastIndex(1));
        for (long i = 0; i < threads * each; i++) {
            assertArrayEquals(entry(i, 4096), back.read(1, i), "index " + i);
        }
    }

    /**
     * Task tput17: the endpoint's disk writer hands a group of log entries to {@code appendAll} and a group of commit
     * marks to {@code recordCommitMarks} (task tput18: {@code recordDecisions} before). Task tput18: each group is
     * covered by one hflush (per segment) and no hsync, so the batch path does not wait for the DataNode's disk; it
     * survives a crash of the writing process: the process crashes right after (its streams aborted, nothing closed)
     * and a reopen reads every entry and decision, also for a group that crossed segment rolls (a roll hsyncs the
     * segment it closes). {@code sync} (a client's FLUSH) then hsyncs the log and the decision records once each, and
     * nothing when nothing new was written.
     */
    @Test
    void appendAllAndCommitMarksShareOneHflushNoHsyncAndSurviveAProcessCrash() throws Exception {
        for (long segment : new long[] {HdfsReplicaDisk.DEFAULT_SEGMENT_BYTES, 4096}) {
            Path dir = new Path(ROOT, "append-all-" + segment);
            DistributedFileSystem rs = newClient();
            HdfsReplicaDisk d = new HdfsReplicaDisk(rs, dir, null, segment);
            d.append(1, 0, entry(0, 700)); // opens the segment
            d.recordDecision(1, decision(100, true)); // a leader's decision record: hsynced at once
            long h0 = d.hsyncs();
            long l0 = d.logHsyncs();
            long f0 = d.hflushes();
            List<Long> idx = new ArrayList<>();
            List<byte[]> entries = new ArrayList<>();
            for (long i = 1; i <= 30; i++) {
                idx.add(i);
                entries.add(entry(i, 700));
            }
            d.appendAll(1, idx, entries);
            long groupHflushes = d.hflushes() - f0;
            List<io.salus.core.cert.Certificate> marks = new ArrayList<>();
            for (long b = 0; b < 10; b++) {
                marks.add(decision(b, true));
            }
            long f1 = d.hflushes();
            d.recordCommitMarks(1, marks);
            long markHflushes = d.hflushes() - f1;
            System.out.printf("segment %d: 30 entries with %d hflush(es), 10 marks with %d; hsyncs %d%n", segment,
                    groupHflushes, markHflushes, d.hsyncs() - h0);
            if (segment == HdfsReplicaDisk.DEFAULT_SEGMENT_BYTES) {
                assertEquals(1, groupHflushes, "one hflush for the group of entries");
                assertEquals(1, markHflushes, "one hflush for the group of marks");
                assertEquals(h0, d.hsyncs(), "no hsync on the batch path");
                assertEquals(l0, d.logHsyncs());
                d.sync(1);
                assertEquals(h0 + 2, d.hsyncs(), "a sync hsyncs the log and the decision records");
                assertEquals(l0 + 1, d.logHsyncs());
                d.sync(1);
                assertEquals(h0 + 2, d.hsyncs(), "nothing new: no hsync");
                d.appendAll(1, List.of(31L), List.of(entry(31, 700)));
                d.sync(1);
                assertEquals(h0 + 3, d.hsyncs(), "only the log has new frames");
                assertEquals(3, d.syncs());
            } else {
                // every frame of 700 bytes fills a 4 KiB segment after 6: the rolls hsync the segments they close
                assertTrue(d.logHsyncs() > l0, "rolled segments are hsynced");
                d.appendAll(1, List.of(31L), List.of(entry(31, 700)));
            }
            assertEquals(43, d.appends(), "appends counted (32 entries, 11 decisions)");
            crash(rs);
            HdfsReplicaDisk back = disk(fs, dir, null);
            assertEquals(31, back.lastIndex(1));
            for (long i = 0; i <= 31; i++) {
                assertArrayEquals(entry(i, 700), back.read(1, i), "segment " + segment + ", index " + i);
            }
            java.util.Set<Long> ids = new java.util.TreeSet<>();
            back.decisions(1).forEach(c -> ids.add(c.statement(io.salus.core.cert.Statement.Decision.class).batchId()));
            assertEquals(java.util.Set.of(0L, 1L, 2L, 3L, 4L, 5L, 6L, 7L, 8L, 9L, 100L), ids);
            back.close();
            rs.close();
        }
    }

    /**
     * Review finding: recordDecision numbered the record lastIndex()+1 outside the log's lock, and the index
     * only learns a record after its hsync; concurrent recorders (the endpoint's handler threads) took the
     * same number, and the later frame replaced the earlier one: an hsynced decision vanished on reopen.
     */
    @Test
    void concurrentDecisionRecordersLoseNoDecision() throws Exception {
        HdfsReplicaDisk d = disk(fs, new Path(ROOT, "decisions-race"), null);
        int threads = 6;
        int each = 15;
        ExecutorService ex = Executors.newFixedThreadPool(threads);
        List<Future<?>> fs1 = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int tt = t;
            fs1.add(ex.submit(() -> {
                for (int k = 0; k < each; k++) {
                    d.recordDecision(1, decision(tt * 1000L + k, true));
                }
                return null;
            }));
        }
        for (Future<?> f : fs1) {
            f.get();
        }
        ex.shutdown();
        java.util.Set<Long> want = new java.util.TreeSet<>();
        for (int t = 0; t < threads; t++) {
            for (int k = 0; k < each; k++) {
                want.add(t * 1000L + k);
            }
        }
        java.util.function.Function<List<io.salus.core.cert.Certificate>, java.util.Set<Long>> ids = l -> {
            java.util.Set<Long> s = new java.util.TreeSet<>();
            l.forEach(c -> s.add(c.statement(io.salus.core.cert.Statement.Decision.class).batchId()));
            return s;
        };
        assertEquals(want, ids.apply(d.decisions(1)), "decisions lost while the disk is open");
        d.close();
        HdfsReplicaDisk back = disk(fs, d.directory(), null);
        List<io.salus.core.cert.Certificate> got = back.decisions(1);
        assertEquals(threads * each, got.size(), "decision records after reopen");
        assertEquals(want, ids.apply(got), "decisions lost after reopen");
        back.close();
    }

    /**
     * Review (held up): checkpoint files and the GC marker are written to a temporary name; one a dead region server
     * left open under its lease (here the old fixed name {@code .delta.<k>.tmp}, {@code .prefix.tmp}) does not block
     * the replica reopened elsewhere. Since rec15 the names carry the disk's incarnation, so a reopened disk never
     * writes the dead server's file at all (before, create with overwrite deleted it; with overwrite=false it would
     * have blocked).
     */
    @Test
    void aTemporaryFileLeftOpenByADeadWriterDoesNotBlockTheNextCheckpointOrGc() throws Exception {
        Path dir = new Path(ROOT, "crash-tmp");
        DistributedFileSystem rs = newClient();
        HdfsReplicaDisk first = disk(rs, dir, null);
        for (long i = 0; i < 6; i++) {
            first.append(1, i, entry(i, 100));
        }
        // the dead server was writing checkpoint 5 and the GC marker through 5 when it died
        FSDataOutputStream cp = rs.create(new Path(dir, "state/g1/.delta.5.tmp"), true);
        cp.write(new byte[10]);
        cp.hflush();
        FSDataOutputStream gc = rs.create(new Path(dir, "log/g1/.prefix.tmp"), true);
        gc.write(new byte[10]);
        gc.hflush();
        crash(rs);
        HdfsReplicaDisk back = disk(fs, dir, null);
        back.writeCheckpoint(1, 5, 6, Map.of(3L, entry(3, 64)), record(6));
        assertArrayEquals(entry(3, 64), back.readSnapshot(1, 5).blocks().get(3L));
        back.truncateLogPrefix(1, 5);
        assertNull(back.read(1, 5));
        back.append(1, 6, entry(6, 100));
        back.close();
        HdfsReplicaDisk again = disk(fs, dir, null);
        assertNull(again.read(1, 4), "the GC marker survives reopen");
        assertArrayEquals(entry(6, 100), again.read(1, 6));
        again.close();
        rs.close();
    }

    /**
     * rec15: two incarnations of one replica write the same checkpoint at once (its region reopened on the same
     * region server over the same directory while the old incarnation's checkpoint writer still runs). With one
     * temporary name per checkpoint ({@code .delta.<k>.tmp}), the old writer's create-with-overwrite deleted the
     * reopened incarnation's temporary file between its hsync and its rename, so the reopened incarnation's checkpoint
     * write failed (or, the other way round, a writer renamed the other's half-written file into place). The names
     * now carry each disk's incarnation: both writes complete, and the last rename wins.
     */
    @Test
    void twoIncarnationsWritingOneCheckpointDoNotShareATemporaryFile() throws Exception {
        Path dir = new Path(ROOT, "two-incarnations");
        HdfsReplicaDisk old = disk(fs, dir, null);
        HdfsReplicaDisk reopened = disk(fs, dir, null);
        List<Path> temporary = new ArrayList<>();
        old.beforeStateRenameForTests(temporary::add);
        reopened.beforeStateRenameForTests(tmp -> {
            temporary.add(tmp);
            // the old incarnation's lingering writer writes checkpoint 5 now, between our hsync and our rename
            old.writeCheckpoint(1, 5, 6, Map.of(2L, entry(2, 64)), record(6));
        });
        try {
            reopened.writeCheckpoint(1, 5, 6, Map.of(3L, entry(3, 64)), record(6));
        } catch (RuntimeException e) {
            fail("the reopened incarnation's checkpoint write failed while the old incarnation wrote the same"
                    + " checkpoint (temporary files " + temporary + "): " + e);
        }
        assertEquals(2, temporary.size());
        assertNotEquals(temporary.get(0), temporary.get(1), "each incarnation writes its own temporary file");
        RegionSnapshot s = reopened.readSnapshot(1, 5);
        assertArrayEquals(entry(3, 64), s.blocks().get(3L), "the last rename (the reopened incarnation's) wins");
        assertNull(s.blocks().get(2L), "nothing of the old incarnation's checkpoint is mixed in");
        old.close();
        reopened.close();
    }

    /**
     * Review (held up): appenders racing with garbage collection (small segments, so appends roll segments while
     * GC rolls and deletes them): every entry above the last GC point stays readable, before and after reopen.
     */
    @Test
    void concurrentAppendsAndGarbageCollectionKeepEveryEntryAboveThePrefix() throws Exception {
        HdfsReplicaDisk d = new HdfsReplicaDisk(fs, new Path(ROOT, "append-gc-race"), null, 4096);
        int threads = 4;
        int each = 40;
        AtomicInteger next = new AtomicInteger();
        ExecutorService ex = Executors.newFixedThreadPool(threads + 1);
        List<Future<?>> all = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            all.add(ex.submit(() -> {
                for (int k = 0; k < each; k++) {
                    long i = next.getAndIncrement();
                    d.append(1, i, entry(i, 700));
                }
                return null;
            }));
        }
        java.util.concurrent.atomic.AtomicLong gcThrough = new java.util.concurrent.atomic.AtomicLong(-1);
        all.add(ex.submit(() -> {
            while (next.get() < threads * each) {
                long through = next.get() - 20; // well behind the appenders (entries below are checkpointed)
                if (through > gcThrough.get()) {
                    d.truncateLogPrefix(1, through);
                    gcThrough.set(through);
                }
                Thread.sleep(5);
            }
            return null;
        }));
        for (Future<?> f : all) {
            f.get();
        }
        ex.shutdown();
        long prefix = gcThrough.get();
        assertTrue(prefix >= 0, "GC never ran: the race was not exercised");
        for (long i = prefix + 1; i < threads * each; i++) {
            assertArrayEquals(entry(i, 700), d.read(1, i), "index " + i + " (GC through " + prefix + ")");
        }
        d.close();
        HdfsReplicaDisk back = new HdfsReplicaDisk(fs, d.directory(), null, 4096);
        for (long i = prefix + 1; i < threads * each; i++) {
            assertArrayEquals(entry(i, 700), back.read(1, i), "after reopen: index " + i + " (GC through " + prefix + ")");
        }
        assertNull(back.read(1, prefix));
        back.close();
    }

    @Test
    void garbageCollectionDeletesWholeSegmentFiles() throws Exception {
        HdfsReplicaDisk d = disk(fs, new Path(ROOT, "gc"), null);
        for (long i = 0; i < 5; i++) {
            d.append(1, i, entry(i, 10));
        }
        List<Path> before = d.logSegments(1);
        assertEquals(1, before.size());
        d.truncateLogPrefix(1, 4); // everything in the first segment: the file goes
        assertFalse(fs.exists(before.get(0)), "segment of entries 0..4 still on HDFS");
        d.append(1, 5, entry(5, 10));
        d.append(1, 6, entry(6, 10));
        d.truncateLogPrefix(1, 5); // the second segment holds 6 too: it stays
        assertEquals(1, d.logSegments(1).size());
        d.close();
        HdfsReplicaDisk back = disk(fs, d.directory(), null);
        assertNull(back.read(1, 5));
        assertArrayEquals(entry(6, 10), back.read(1, 6));
    }

    @Test
    void everyBlockOfAReplicasFilesIsOnItsFavoredDataNode() throws Exception {
        for (DataNode dn : cluster.getDataNodes()) {
            InetSocketAddress favored = dn.getXferAddress();
            for (int rep = 0; rep < 2; rep++) {
                Path dir = new Path(ROOT, "favored-" + favored.getPort() + "-" + rep);
                HdfsReplicaDisk d = disk(fs, dir, favored);
                for (long i = 0; i < 4; i++) {
                    d.append(1, i, entry(i, 64 * 1024));
                }
                d.recordDecision(1, decision(1, true));
                d.writeCheckpoint(1, 3, 4, Map.of(0L, entry(0, 4096)), record(4));
                d.close();
                int files = 0;
                RemoteIterator<LocatedFileStatus> it = fs.listFiles(dir, true);
                while (it.hasNext()) {
                    LocatedFileStatus st = it.next();
                    assertEquals(1, st.getReplication(), st.getPath() + " replication");
                    for (BlockLocation b : st.getBlockLocations()) {
                        assertEquals(List.of(favored.getAddress().getHostAddress() + ":" + favored.getPort()),
                                List.of(b.getNames()), st.getPath() + " block not on its favored DataNode");
                    }
                    files++;
                }
                assertTrue(files >= 3, "log, decisions and checkpoint files: " + files);
            }
        }
    }

    @Test
    void pathIsBoundToTableAndRegion() {
        HdfsReplicaDisk d = HdfsReplicaDisk.forRegion(fs, ROOT, "salus:vol1_r2", "0123abcd", null);
        assertEquals(new Path(ROOT, "salus=vol1_r2/0123abcd"), d.directory());
        assertThrows(IllegalArgumentException.class, () -> HdfsReplicaDisk.forRegion(fs, ROOT, "../x", "r", null));
    }

}
