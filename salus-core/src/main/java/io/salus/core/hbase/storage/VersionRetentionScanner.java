package io.salus.core.hbase.storage;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.regionserver.InternalScanner;
import org.apache.hadoop.hbase.regionserver.ScannerContext;

/**
 * A compaction's scanner over a Salus replica region (issue 27): of each cell (row, column) it keeps every version
 * newer than {@code cutoff} and the newest one at or below it, and drops the older ones. {@code cutoff} is the store
 * version of the latest stored checkpoint whose CHECKPOINT certificate this replica stored and collected its log to
 * ({@link HRegionStore#retainedFrom}): every read as of a checkpoint that can still be asked for (a restart at the
 * latest certificate, a peer rebuilt from it) is at or after it, and sees the same cell as before the compaction.
 *
 * <p>Safe for a minor compaction too: the files it compacts are contiguous in age, so the newest version at or below
 * the cutoff among all files is either among them (kept) or in a newer file (untouched).
 *
 * <p>HBase gives a compaction's cells in order (row, family, qualifier, timestamp descending), possibly a row split
 * across calls; the column being scanned is remembered across calls (as copies: the scanner may reuse its buffers).
 */
public final class VersionRetentionScanner implements InternalScanner {
    private final InternalScanner in;
    private final long cutoff;
    private byte[] row;
    private byte[] family;
    private byte[] qualifier;
    private boolean keptAtCutoff;
    private long dropped;

    public VersionRetentionScanner(InternalScanner in, long cutoff) {
        this.in = in;
        this.cutoff = cutoff;
    }

    @Override
    public boolean next(List<Cell> result, ScannerContext ctx) throws IOException {
        List<Cell> raw = new ArrayList<>();
        boolean more = in.next(raw, ctx);
        for (Cell c : raw) {
            if (row == null || !CellUtil.matchingRows(c, row) || !CellUtil.matchingFamily(c, family)
                    || !CellUtil.matchingQualifier(c, qualifier)) {
                row = CellUtil.cloneRow(c);
                family = CellUtil.cloneFamily(c);
                qualifier = CellUtil.cloneQualifier(c);
                keptAtCutoff = false;
            }
            if (c.getTimestamp() > cutoff) {
                result.add(c);
            } else if (!keptAtCutoff) {
                result.add(c); // the version a read as of the cutoff sees
                keptAtCutoff = true;
            } else {
                dropped++;
            }
        }
        return more;
    }

    /** Versions this compaction dropped so far. */
    public long dropped() {
        return dropped;
    }

    @Override
    public void close() throws IOException {
        in.close();
    }
}
