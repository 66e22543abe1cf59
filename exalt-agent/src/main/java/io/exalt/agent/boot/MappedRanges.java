package io.exalt.agent.boot;

import java.lang.ref.WeakReference;
import java.nio.MappedByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * Ranges of emulated files that a live {@code FileChannel.map} shows. The JDK's mapping (read-only or read-write)
 * is shared with the file: a later write through any API must show through it, and writes through a read-write
 * mapping must show in later reads. A mapping shows the physical bytes, so a mapped range is written out in full
 * when it is mapped and every later write into it is written physically too, never into the Tardis index, for
 * as long as the mapping lives (until its buffer, and every view of it, is garbage-collected: then the JDK unmaps
 * it). Keyed by file key (device + inode), so handles opened later and re-opens of the file see the ranges too.
 */
final class MappedRanges {
    private static final class Range {
        final long start;
        final long end;
        /** Null until the JDK returned the mapping (the range is live from the moment map() was entered). */
        WeakReference<MappedByteBuffer> buffer;
        boolean failed;

        Range(long start, long end) {
            this.start = start;
            this.end = end;
        }

        boolean live() {
            return !failed && (buffer == null || buffer.get() != null);
        }
    }

    private static final Map<Object, List<Range>> RANGES = new HashMap<>();
    private static final ThreadLocal<Range> ENTERED = new ThreadLocal<>();
    /** Number of ranges recorded: writes look no further while it is 0 (no lock on the write path). */
    private static volatile int count;

    private MappedRanges() {
    }

    /** Called when map() is entered for [start, end) of the file {@code key}: writes go physical from now on. */
    static synchronized void entering(Object key, long start, long end) {
        Range r = new Range(start, end);
        RANGES.computeIfAbsent(key, k -> new ArrayList<>()).add(r);
        count++;
        ENTERED.set(r);
    }

    /** Called when map() returns or throws: ties the range to the mapping's lifetime, or drops it. */
    static synchronized void returned(MappedByteBuffer b) {
        Range r = ENTERED.get();
        if (r == null) {
            return;
        }
        ENTERED.remove();
        if (b == null) {
            r.failed = true;
        } else {
            r.buffer = new WeakReference<>(b);
        }
    }

    /** The live mapped range overlapping [a, b) with the smallest start, as {start, end}, or null. */
    static long[] firstOverlap(Object key, long a, long b) {
        return count == 0 ? null : firstOverlapLocked(key, a, b);
    }

    private static synchronized long[] firstOverlapLocked(Object key, long a, long b) {
        List<Range> l = RANGES.get(key);
        if (l == null) {
            return null;
        }
        long[] best = null;
        for (Iterator<Range> it = l.iterator(); it.hasNext();) {
            Range r = it.next();
            if (!r.live()) {
                it.remove();
                count--;
                continue;
            }
            if (r.start < b && r.end > a && (best == null || r.start < best[0])) {
                best = new long[] {r.start, r.end};
            }
        }
        if (l.isEmpty()) {
            RANGES.remove(key);
        }
        return best;
    }
}
