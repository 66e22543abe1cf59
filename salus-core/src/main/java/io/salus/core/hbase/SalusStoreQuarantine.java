package io.salus.core.hbase;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.text.SimpleDateFormat;
import java.util.ArrayList;
import java.util.Date;
import java.util.List;
import java.util.Optional;
import java.util.TimeZone;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.ChecksumException;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptor;
import org.apache.hadoop.hbase.client.RegionInfo;
import org.apache.hadoop.hbase.client.TableDescriptor;
import org.apache.hadoop.hbase.coprocessor.ObserverContext;
import org.apache.hadoop.hbase.coprocessor.RegionCoprocessor;
import org.apache.hadoop.hbase.coprocessor.RegionCoprocessorEnvironment;
import org.apache.hadoop.hbase.coprocessor.RegionObserver;
import org.apache.hadoop.hbase.util.CommonFSUtils;
import org.apache.hadoop.hdfs.BlockMissingException;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Opens a Salus replica region whose store files are damaged on disk (issue 14, the fault table's "bytes flipped in
 * one DataNode's block files"). A replica region's cells are only a cache of its certified state (its Salus log and
 * checkpoint files, or a peer replica's): the replica endpoint sets them back to that state at every open
 * ({@code RegionReplica.resetStoreTo}, or a catch-up from a peer). With column family replication 1 a store file has
 * one HDFS copy; when it fails its HDFS checksum, reading it fails, and no replica endpoint would ever run over the
 * region, so the RRS stalls.
 *
 * <p>{@link #preOpen} (HBase 2.6.4 {@code HRegion.initializeRegionInternals} runs it before it initializes the
 * stores) reads every store file of a Salus table's region (tables with the {@link SalusTableLayout#LAYOUT_ATTRIBUTE}
 * attribute; any other table is left alone) through HDFS with checksums. If one is damaged ({@link #damaged}: a
 * checksum error, a block whose only replica the NameNode now lists as corrupt), <b>all</b> the region's store
 * files are moved aside, never deleted, to
 * {@code <}{@value #ROOT_KEY}{@code >/hfiles/<table>/<encoded region>/<time>/<family>/} (default root
 * {@value #DEFAULT_ROOT}), logged and counted ({@link #counters()}); the region opens empty and the endpoint's
 * recovery restores every block. All of them, not just the bad one: the cells of the older files alone would be a
 * mix of states (an older file's tree nodes next to newer leaves), while an empty region is exactly the case the
 * reset from the checkpoint already handles (the fault table's "a region's files deleted" row). Any other read
 * error (the NameNode unreachable, a DataNode down) fails the open, as before, rather than moving good files.
 *
 * <p>What an open reads. Every open asks the NameNode about each store file's blocks (no data read): a block lost for
 * good, or one whose every replica the NameNode lists as corrupt (a client's read or a DataNode's block scanner found
 * it), is damage. The files are read whole only when the region is <b>marked</b> for it: a replica whose read of its
 * cells failed on a damaged file marks its region ({@link #markForCheck}; cleared by the next open once it read every
 * file, before HBase opens them), and every open marks its region while it runs (a second mark: {@link #preOpen} sets
 * it, {@link #postOpen} clears it; two marks, so that this one's clearing never takes a damage mark set during the
 * open it ends, whichever coprocessor's postOpen runs first), so an open that
 * did not finish (the server killed, the open failed, e.g. on a store file HBase could not open) reads every file at
 * its next attempt. Before (issue 27) every open read every store file whole: the largest part of a restart at 8 GiB
 * written, and growing with the data. {@value #ALWAYS_READ_KEY}{@code =true} reads them at every open again.
 * The marks are empty directories {@code <}{@value #ROOT_KEY}{@code >/check/<table>/<encoded region>} (damage seen)
 * and {@code …/<encoded region>.opening}.
 * {@value #ENABLED_KEY}{@code =false} skips the check. A table coprocessor,
 * set by {@link SalusTableLayout#descriptor} (no cluster-wide key); a volume created before it has to get it with
 * {@code alter}.
 */
public final class SalusStoreQuarantine implements RegionCoprocessor, RegionObserver {
    private static final Logger LOG = LoggerFactory.getLogger(SalusStoreQuarantine.class);
    /** Where damaged files are moved (a directory on the cluster's default file system). */
    public static final String ROOT_KEY = "salus.quarantine.root";
    public static final String DEFAULT_ROOT = "/salus/quarantine";
    /** Whether a Salus region's store files are checked at open (default true). */
    public static final String ENABLED_KEY = "salus.storefile.check";
    /** Whether every open reads every store file whole, marked or not (default false: only marked regions). */
    public static final String ALWAYS_READ_KEY = "salus.storefile.check.always-read";

    private static final AtomicLong CHECKED_FILES = new AtomicLong();
    private static final AtomicLong CHECKED_BYTES = new AtomicLong();
    private static final AtomicLong UNREADABLE = new AtomicLong();
    private static final AtomicLong QUARANTINED_FILES = new AtomicLong();
    private static final AtomicLong QUARANTINED_REGIONS = new AtomicLong();
    private static final AtomicLong OPENS_READ = new AtomicLong();
    private static final AtomicLong OPENS_NOT_READ = new AtomicLong();

    @Override
    public Optional<RegionObserver> getRegionObserver() {
        return Optional.of(this);
    }

    /**
     * Counters of this JVM (every region server of a mini cluster shares them): store files and bytes checked,
     * files found unreadable, files moved aside, region opens that moved files, and opens that read their files whole
     * (marked) or asked the NameNode only.
     */
    public static java.util.Map<String, Long> counters() {
        return java.util.Map.of("checkedFiles", CHECKED_FILES.get(), "checkedBytes", CHECKED_BYTES.get(),
                "unreadableFiles", UNREADABLE.get(), "quarantinedFiles", QUARANTINED_FILES.get(),
                "quarantinedRegions", QUARANTINED_REGIONS.get(), "opensRead", OPENS_READ.get(),
                "opensNotRead", OPENS_NOT_READ.get());
    }

    /** The mark that makes the region's next open read its store files whole (an empty directory). */
    public static Path checkMark(Configuration conf, org.apache.hadoop.hbase.TableName table, String encodedRegion) {
        return new Path(new Path(new Path(conf.get(ROOT_KEY, DEFAULT_ROOT), "check"),
                table.getNameAsString().replace(':', '=')), encodedRegion);
    }

    /** The mark an open of the region holds while it runs: one that did not finish leaves it. */
    public static Path openingMark(Configuration conf, org.apache.hadoop.hbase.TableName table, String encodedRegion) {
        Path m = checkMark(conf, table, encodedRegion);
        return new Path(m.getParent(), m.getName() + ".opening");
    }

    /**
     * Marks the region so that its next open reads every store file whole: called when a read of its cells failed on
     * a damaged file, before its reopen is asked for (the NameNode may not know the damage: a checksum failure is
     * reported by the reading client only for the replicas it tried).
     */
    public static void markForCheck(FileSystem fs, Configuration conf, org.apache.hadoop.hbase.TableName table,
                                    String encodedRegion) throws IOException {
        Path mark = checkMark(conf, table, encodedRegion);
        if (!fs.mkdirs(mark)) {
            throw new IOException("cannot create " + mark);
        }
    }

    /** The open finished: the next open of the region reads its files whole only if it is marked again. */
    @Override
    public void postOpen(ObserverContext<RegionCoprocessorEnvironment> ctx) {
        RegionCoprocessorEnvironment env = ctx.getEnvironment();
        TableDescriptor td = env.getRegion().getTableDescriptor();
        Configuration conf = env.getConfiguration();
        if (td.getValue(SalusTableLayout.LAYOUT_ATTRIBUTE) == null || !conf.getBoolean(ENABLED_KEY, true)) {
            return;
        }
        Path mark = openingMark(conf, td.getTableName(), env.getRegionInfo().getEncodedName());
        try {
            mark.getFileSystem(conf).delete(mark, true);
        } catch (IOException e) {
            LOG.warn("Salus region {}: cannot clear its store file check mark {} ({}); its next open reads its"
                    + " store files whole", env.getRegionInfo().getEncodedName(), mark, e.toString());
        }
    }

    @Override
    public void preOpen(ObserverContext<RegionCoprocessorEnvironment> ctx) throws IOException {
        RegionCoprocessorEnvironment env = ctx.getEnvironment();
        TableDescriptor td = env.getRegion().getTableDescriptor();
        Configuration conf = env.getConfiguration();
        if (td.getValue(SalusTableLayout.LAYOUT_ATTRIBUTE) == null || !conf.getBoolean(ENABLED_KEY, true)) {
            return;
        }
        RegionInfo ri = env.getRegionInfo();
        Path rootDir = CommonFSUtils.getRootDir(conf);
        FileSystem fs = rootDir.getFileSystem(conf);
        Path regionDir = new Path(CommonFSUtils.getTableDir(rootDir, td.getTableName()), ri.getEncodedName());
        Path mark = checkMark(conf, td.getTableName(), ri.getEncodedName());
        Path opening = openingMark(conf, td.getTableName(), ri.getEncodedName());
        boolean readAll = conf.getBoolean(ALWAYS_READ_KEY, false);
        FileSystem markFs = null;
        try {
            markFs = mark.getFileSystem(conf);
            readAll |= markFs.exists(mark) || markFs.exists(opening);
            if (!markFs.mkdirs(opening)) { // while this open runs: if it does not finish, the next one reads every file
                throw new IOException("mkdirs refused");
            }
        } catch (IOException e) {
            LOG.warn("Salus region {}: cannot read or set its store file check marks {} ({}); reading its store files"
                    + " whole", ri.getEncodedName(), opening, e.toString());
            readAll = true;
        }
        List<Path> files = new ArrayList<>();
        for (ColumnFamilyDescriptor cf : td.getColumnFamilies()) {
            Path famDir = new Path(regionDir, cf.getNameAsString());
            FileStatus[] st;
            try {
                st = fs.listStatus(famDir);
            } catch (FileNotFoundException e) {
                continue; // a new region
            }
            for (FileStatus f : st) {
                if (f.isFile() && !f.getPath().getName().startsWith(".")) {
                    files.add(f.getPath());
                }
            }
        }
        Path bad = null;
        IOException why = null;
        if (fs instanceof DistributedFileSystem dfs) {
            // a block lost for good (a DataNode's disk lost) or listed corrupt is known to the NameNode: no read (and
            // none of HDFS's read retries, seconds per file) is needed to prove it
            String lost = firstDamagedByNameNode(dfs, files);
            if (lost != null) {
                bad = new Path(lost.substring(0, lost.indexOf(' ')));
                why = new BlockMissingException(bad.toUri().getPath(), lost, 0);
                UNREADABLE.incrementAndGet();
            }
        }
        (readAll ? OPENS_READ : OPENS_NOT_READ).incrementAndGet();
        for (Path p : bad != null || !readAll ? List.<Path>of() : files) {
            IOException e = readFully(fs, p);
            if (e != null) {
                bad = p;
                why = e;
                UNREADABLE.incrementAndGet();
                break; // the rest is moved aside too, unread (each unreadable file costs HDFS's read retries)
            }
        }
        if (bad == null) {
            if (readAll) {
                clear(markFs, mark, ri); // every file read whole: the damage it marked is not in them
            }
            return;
        }
        Path dest = new Path(new Path(new Path(new Path(conf.get(ROOT_KEY, DEFAULT_ROOT), "hfiles"),
                td.getTableName().getNameAsString().replace(':', '=')), ri.getEncodedName()), timestamp());
        int moved = 0;
        for (Path p : files) {
            Path to = new Path(new Path(dest, p.getParent().getName()), p.getName());
            if (moveAside(fs, p, to)) {
                moved++;
            }
        }
        QUARANTINED_FILES.addAndGet(moved);
        QUARANTINED_REGIONS.incrementAndGet();
        clear(markFs, mark, ri); // every file moved aside: nothing marked is left to read
        LOG.warn("Salus region {} of {}: store file {} is unreadable ({}); moved its {} store file(s) aside to {}"
                        + " (not deleted); the region opens without them and its replica restores its cells from"
                        + " its certified state (own checkpoint and log, or a peer replica)", ri.getEncodedName(),
                td.getTableName(), bad, oneLine(why), moved, dest);
    }

    /** Deletes a region's damage mark (a failure is logged: the next open reads every file once more). */
    private static void clear(FileSystem markFs, Path mark, RegionInfo ri) {
        if (markFs == null) {
            return;
        }
        try {
            markFs.delete(mark, true);
        } catch (IOException e) {
            LOG.warn("Salus region {}: cannot clear its store file check mark {} ({}); its next open reads its"
                    + " store files whole again", ri.getEncodedName(), mark, e.toString());
        }
    }

    /** Reads {@code p} to its end with HDFS checksums; null if it reads, the error if it is damaged. */
    private static IOException readFully(FileSystem fs, Path p) throws IOException {
        byte[] buf = new byte[1 << 20];
        long n = 0;
        try (FSDataInputStream in = fs.open(p)) {
            int r;
            while ((r = in.read(buf)) > 0) {
                n += r;
            }
        } catch (FileNotFoundException e) {
            return null; // gone meanwhile: nothing to move
        } catch (IOException e) {
            if (damaged(fs, e)) {
                return e;
            }
            throw new IOException("cannot check store file " + p + " of a Salus region (not proven damaged: the open"
                    + " fails rather than moving it aside)", e);
        } finally {
            CHECKED_FILES.incrementAndGet();
            CHECKED_BYTES.addAndGet(n);
        }
        return null;
    }

    /**
     * Whether {@code e} proves the bytes on disk damaged: an HDFS {@code ChecksumException}, a
     * {@code CorruptReplicaLogException} (a Salus frame that does not verify), or a {@code BlockMissingException} (no
     * replica of a block could be read) for a block the NameNode now lists as corrupt (the reading client reported
     * its checksum failure; with replication 1 that is the only replica), or for a block {@link #lost lost for good}
     * (no live DataNode holds it and none is dead: a DataNode's disk lost). A block that is only unavailable (its
     * DataNode down, or not reported yet after a NameNode restart) is not damage: its files are not moved.
     */
    public static boolean damaged(FileSystem fs, Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof ChecksumException || t instanceof io.salus.core.hbase.storage.CorruptReplicaLogException) {
                return true;
            }
            if (t instanceof BlockMissingException m && fs instanceof DistributedFileSystem dfs) {
                try {
                    for (LocatedBlock lb : dfs.getClient().getLocatedBlocks(m.getFile(), 0, Long.MAX_VALUE)
                            .getLocatedBlocks()) {
                        if (lb.isCorrupt()) {
                            return true;
                        }
                    }
                } catch (IOException | RuntimeException notKnown) {
                    return false;
                }
                if (lost(dfs, m.getFile()) != null) {
                    return true;
                }
            }
        }
        return false;
    }

    /**
     * Whether a block of {@code file} is <b>lost for good</b> (a DataNode's disk lost: the fault table's "lose a
     * DataNode's disk for good" row): no DataNode the NameNode counts as live holds a replica of it, while the
     * NameNode is out of safe mode and counts no DataNode as dead (a dead DataNode, or one not reported yet after a
     * NameNode restart, may still bring the replica back: that is unavailability, not loss). A DataNode that comes
     * back with an empty disk registers with a new storage identity, and the NameNode drops the old one with every
     * replica it had: the block then has no live holder while every DataNode is live. Returns a description of the
     * first such block, or null (not proven lost, or the NameNode could not be asked).
     */
    public static String lost(DistributedFileSystem dfs, String file) {
        return firstLost(dfs, List.of(new Path(file)));
    }

    /**
     * The first of {@code files} with a block {@link #lost lost for good} ("path block …: why"), or null. Asks the
     * NameNode for its DataNodes once, then for each file's block locations.
     */
    public static String firstLost(DistributedFileSystem dfs, List<Path> files) {
        java.util.Set<String> live = liveIfLossProvable(dfs, files);
        if (live == null) {
            return null;
        }
        for (Path p : files) {
            String file = p.toUri().getPath();
            String why = lostBlock(file, blocksOf(dfs, file), live);
            if (why != null) {
                return why;
            }
        }
        return null;
    }

    /**
     * The first of {@code files} with a block whose every replica the NameNode lists as corrupt, or one {@link #lost
     * lost for good} ("path block …: why"), or null (none known, or the NameNode could not be asked): what an open
     * checks without reading, one block listing per file.
     */
    static String firstDamagedByNameNode(DistributedFileSystem dfs, List<Path> files) {
        java.util.Set<String> live = liveIfLossProvable(dfs, files);
        for (Path p : files) {
            String file = p.toUri().getPath();
            List<LocatedBlock> blocks = blocksOf(dfs, file);
            for (LocatedBlock lb : blocks) {
                if (lb.isCorrupt()) {
                    return file + " block " + lb.getBlock().getBlockName() + " (" + lb.getBlockSize()
                            + " bytes): the NameNode lists every replica of it as corrupt";
                }
            }
            String why = live == null ? null : lostBlock(file, blocks, live);
            if (why != null) {
                return why;
            }
        }
        return null;
    }

    /** The DataNodes the NameNode counts as live (their UUIDs). */
    public static java.util.Set<String> liveDataNodes(DistributedFileSystem dfs) throws IOException {
        java.util.Set<String> live = new java.util.HashSet<>();
        for (var dn : dfs.getDataNodeStats(org.apache.hadoop.hdfs.protocol.HdfsConstants.DatanodeReportType.LIVE)) {
            live.add(dn.getDatanodeUuid());
        }
        return live;
    }

    /**
     * The live DataNodes when a block can be proven lost (files to check, the NameNode out of safe mode and counting
     * no DataNode as dead), else null.
     */
    private static java.util.Set<String> liveIfLossProvable(DistributedFileSystem dfs, List<Path> files) {
        try {
            if (files.isEmpty()
                    || dfs.setSafeMode(org.apache.hadoop.hdfs.protocol.HdfsConstants.SafeModeAction.SAFEMODE_GET)) {
                return null;
            }
            if (dfs.getDataNodeStats(org.apache.hadoop.hdfs.protocol.HdfsConstants.DatanodeReportType.DEAD).length
                    > 0) {
                return null;
            }
            return liveDataNodes(dfs);
        } catch (IOException | RuntimeException notKnown) {
            return null;
        }
    }

    /** The blocks of {@code file} as the NameNode lists them (none if it cannot be asked). */
    private static List<LocatedBlock> blocksOf(DistributedFileSystem dfs, String file) {
        try {
            return dfs.getClient().getLocatedBlocks(file, 0, Long.MAX_VALUE).getLocatedBlocks();
        } catch (IOException | RuntimeException notKnown) {
            return List.of();
        }
    }

    private static String lostBlock(String file, List<LocatedBlock> blocks, java.util.Set<String> live) {
        for (LocatedBlock lb : blocks) {
            if (lb.getBlockSize() == 0 && lb.getLocations().length == 0) {
                continue; // an empty last block: nothing to lose
            }
            boolean held = false;
            for (var loc : lb.getLocations()) {
                held |= live.contains(loc.getDatanodeUuid());
            }
            if (!held) {
                return file + " block " + lb.getBlock().getBlockName() + " (" + lb.getBlockSize()
                        + " bytes): no live DataNode holds a replica and none is dead";
            }
        }
        return null;
    }

    /** Renames {@code from} to {@code to} (creating its parent); false if {@code from} is gone. */
    public static boolean moveAside(FileSystem fs, Path from, Path to) throws IOException {
        fs.mkdirs(to.getParent());
        if (fs.rename(from, to)) {
            return true;
        }
        if (!fs.exists(from)) {
            return false;
        }
        throw new IOException("cannot move " + from + " aside to " + to + " (rename refused)");
    }

    /** A directory name for one quarantine (UTC time to the millisecond, then a counter against clashes). */
    public static String timestamp() {
        SimpleDateFormat f = new SimpleDateFormat("yyyyMMdd-HHmmss.SSS");
        f.setTimeZone(TimeZone.getTimeZone("UTC"));
        return f.format(new Date()) + "-" + SEQ.incrementAndGet();
    }

    private static final AtomicLong SEQ = new AtomicLong();

    /** One line of an error, at most 300 characters (for logs). */
    public static String oneLine(Throwable e) {
        String m = e.toString().replace('\n', ' ');
        return m.length() > 300 ? m.substring(0, 300) + "…" : m;
    }
}
