package io.exalt.agent.boot;

import io.exalt.tardis.TardisFormat;
import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The per-file index that replaces compressed data on disk: which logical byte ranges hold Tardis runs (kept
 * only as {@code (marker, length)}) and which short ranges are kept inline (the partial units at the edges of a
 * write). Everything not covered by an extent is stored physically at its own offset.
 *
 * <p>This is the "bookkeeping to keep track of the latest version of each range of bytes" of §4.2.4: a write
 * over a range first removes the old extents there, so the index always describes the latest version.
 * Extents never overlap and are kept sorted by start.
 */
public final class ExtentIndex {
    /** Kind of an extent. */
    static final byte TARDIS = 1;
    static final byte INLINE = 2;

    /** One extent. For TARDIS, the unit starting at {@code unitBase} carries {@code marker}. */
    static final class Extent {
        final byte kind;
        final long start;
        long len;
        final long unitBase;
        final long marker;
        final byte[] bytes;

        Extent(byte kind, long start, long len, long unitBase, long marker, byte[] bytes) {
            this.kind = kind;
            this.start = start;
            this.len = len;
            this.unitBase = unitBase;
            this.marker = marker;
            this.bytes = bytes;
        }

        long end() {
            return start + len;
        }

        /** Copies of this extent restricted to [a, b). */
        Extent slice(long a, long b) {
            long s = Math.max(a, start);
            long e = Math.min(b, end());
            if (kind == TARDIS) {
                return new Extent(TARDIS, s, e - s, unitBase, marker, null);
            }
            byte[] nb = new byte[(int) (e - s)];
            System.arraycopy(bytes, (int) (s - start), nb, 0, nb.length);
            return new Extent(INLINE, s, e - s, s, 0, nb);
        }

        /** Writes bytes [a, a+n) of this extent into dst. */
        void fill(TardisFormat fmt, long a, byte[] dst, int off, int n) {
            if (kind == TARDIS) {
                fmt.expand(marker, a - unitBase, dst, off, n);
            } else {
                System.arraycopy(bytes, (int) (a - start), dst, off, n);
            }
        }

        /** True if a TARDIS extent {@code next} continues this one's unit stream. */
        boolean continuedBy(Extent next) {
            return kind == TARDIS && next.kind == TARDIS && end() == next.start
                    && (next.unitBase - unitBase) % TardisFormat.UNIT == 0
                    && marker - (next.unitBase - unitBase) == next.marker;
        }
    }

    private final TreeMap<Long, Extent> map = new TreeMap<>();

    public boolean isEmpty() {
        return map.isEmpty();
    }

    public int size() {
        return map.size();
    }

    public long end() {
        return map.isEmpty() ? 0 : map.lastEntry().getValue().end();
    }

    /** Removes all coverage of [a, b), splitting extents that straddle the edges. */
    void clear(long a, long b) {
        if (b <= a) {
            return;
        }
        Map.Entry<Long, Extent> fl = map.floorEntry(a);
        if (fl != null && fl.getValue().end() > a) {
            Extent e = fl.getValue();
            map.remove(e.start);
            if (e.start < a) {
                put(e.slice(e.start, a));
            }
            if (e.end() > b) {
                put(e.slice(b, e.end()));
            }
        }
        // the extents that start in (a, b): removed; only the last can reach beyond b (extents do not overlap), and its
        // tail is kept. One lookup per extent, no view, iterator or list (this runs on every block-file write).
        Map.Entry<Long, Extent> n;
        while ((n = map.higherEntry(a)) != null && n.getKey() < b) {
            Extent e = n.getValue();
            map.remove(e.start);
            if (e.end() > b) {
                put(e.slice(b, e.end()));
                break;
            }
        }
    }

    private void put(Extent e) {
        if (e.len > 0) {
            map.put(e.start, e);
        }
    }

    /** Adds a Tardis run [start, start+len) whose first unit (at start) has {@code marker}; merges neighbours. */
    void addTardis(long start, long len, long marker) {
        clear(start, start + len);
        Extent e = new Extent(TARDIS, start, len, start, marker, null);
        Map.Entry<Long, Extent> prev = map.lowerEntry(start);
        if (prev != null && prev.getValue().continuedBy(e)) {
            prev.getValue().len += len;
            e = prev.getValue();
        } else {
            put(e);
        }
        Map.Entry<Long, Extent> next = map.higherEntry(e.start);
        if (next != null && e.continuedBy(next.getValue())) {
            map.remove(next.getKey());
            e.len += next.getValue().len;
        }
    }

    void addInline(long start, byte[] bytes) {
        clear(start, start + bytes.length);
        put(new Extent(INLINE, start, bytes.length, start, 0, bytes));
    }

    /** Copies of the extents overlapping [a, b), cut to [a, b) (see {@link #restore}). */
    List<Extent> copyOf(long a, long b) {
        List<Extent> out = new ArrayList<>();
        for (Extent e : overlapping(a, b)) {
            out.add(e.slice(a, b));
        }
        return out;
    }

    /** Makes [a, b) what {@link #copyOf} returned for it (after a failed write changed it). */
    void restore(long a, long b, List<Extent> saved) {
        clear(a, b);
        for (Extent e : saved) {
            put(e);
        }
    }

    /** The inline extent that ends exactly at {@code pos}, or null. */
    Extent inlineEndingAt(long pos) {
        Map.Entry<Long, Extent> e = map.lowerEntry(pos);
        if (e != null && e.getValue().kind == INLINE && e.getValue().end() == pos) {
            return e.getValue();
        }
        return null;
    }

    /** Extents overlapping [a, b) in order (live objects; do not mutate). */
    /** {@code !overlapping(a, b).isEmpty()} without building the list (every block-file write asks). */
    boolean overlaps(long a, long b) {
        Map.Entry<Long, Extent> fl = map.floorEntry(a);
        if (fl != null && fl.getValue().end() > a) {
            return true;
        }
        Long k = map.higherKey(a);
        return k != null && k < b;
    }

    List<Extent> overlapping(long a, long b) {
        List<Extent> out = new ArrayList<>();
        Map.Entry<Long, Extent> fl = map.floorEntry(a);
        if (fl != null && fl.getValue().end() > a) {
            out.add(fl.getValue());
        }
        out.addAll(map.subMap(a, false, b, false).values());
        return out;
    }

    /** Drops everything at or beyond {@code size} (after a truncation). Returns true if something changed. */
    boolean truncate(long size) {
        if (end() <= size) {
            return false;
        }
        clear(size, Long.MAX_VALUE);
        return true;
    }

    /** The extent with the smallest length (to be materialised when the index grows too large). */
    Extent smallest() {
        Extent best = null;
        for (Extent e : map.values()) {
            if (best == null || e.len < best.len) {
                best = e;
            }
        }
        return best;
    }

    // ---------------------------------------------------------------- encoding (stored as a file xattr)

    static final int VERSION = 1;

    byte[] encode(long flag) {
        ByteArrayOutputStream o = new ByteArrayOutputStream(16 + 16 * map.size());
        o.write(VERSION);
        for (int i = 0; i < 8; i++) {
            o.write((int) (flag >>> (56 - 8 * i)));
        }
        writeVar(o, map.size());
        long prevEnd = 0;
        for (Extent e : map.values()) {
            o.write(e.kind);
            writeVar(o, e.start - prevEnd);
            writeVar(o, e.len);
            if (e.kind == TARDIS) {
                writeVar(o, e.start - e.unitBase);
                writeVar(o, e.marker);
            } else {
                o.write(e.bytes, 0, e.bytes.length);
            }
            prevEnd = e.end();
        }
        return o.toByteArray();
    }

    /** Decodes an index; returns the flag it was written with through {@code flagOut[0]}. */
    static ExtentIndex decode(byte[] b, long[] flagOut) {
        int[] p = {0};
        if (b.length < 10 || b[0] != VERSION) {
            throw new IllegalStateException("unknown Exalt index version " + (b.length == 0 ? -1 : b[0])
                    + "; the file was written by another Exalt version");
        }
        p[0] = 1;
        long flag = 0;
        for (int i = 0; i < 8; i++) {
            flag = (flag << 8) | (b[p[0]++] & 0xFF);
        }
        flagOut[0] = flag;
        ExtentIndex idx = new ExtentIndex();
        long n = readVar(b, p);
        long prevEnd = 0;
        for (long i = 0; i < n; i++) {
            byte kind = b[p[0]++];
            long start = prevEnd + readVar(b, p);
            long len = readVar(b, p);
            if (kind == TARDIS) {
                long phase = readVar(b, p);
                long marker = readVar(b, p);
                idx.put(new Extent(TARDIS, start, len, start - phase, marker, null));
            } else if (kind == INLINE) {
                byte[] bytes = new byte[(int) len];
                System.arraycopy(b, p[0], bytes, 0, bytes.length);
                p[0] += bytes.length;
                idx.put(new Extent(INLINE, start, len, start, 0, bytes));
            } else {
                throw new IllegalStateException("corrupt Exalt index: extent kind " + kind);
            }
            prevEnd = start + len;
        }
        return idx;
    }

    private static void writeVar(ByteArrayOutputStream o, long v) {
        while ((v & ~0x7FL) != 0) {
            o.write((int) ((v & 0x7F) | 0x80));
            v >>>= 7;
        }
        o.write((int) v);
    }

    private static long readVar(byte[] b, int[] p) {
        long v = 0;
        int shift = 0;
        while (true) {
            int x = b[p[0]++] & 0xFF;
            v |= (long) (x & 0x7F) << shift;
            if ((x & 0x80) == 0) {
                return v;
            }
            shift += 7;
        }
    }
}
