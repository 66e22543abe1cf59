package io.exalt.tardis;

import java.util.Arrays;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * Pre-expanded unit pages of one {@link TardisFormat}, shared by all threads, so the compressor's verify of a run is
 * one {@link Arrays#mismatch} (vectorised by the JIT) against bytes that already exist instead of a word-by-word
 * recomputation of every unit (issue 15 §4; docs/exalt.md "Per-core efficiency").
 *
 * <p>The bytes of a unit depend only on its marker, and a marker {@code m} is {@code 12 q + r} with {@code r = m % 12}
 * fixed along a run. Page {@code P} of residue {@code r} holds the units {@code q = P*PAGE_UNITS + PAGE_UNITS - 1} down
 * to {@code q = P*PAGE_UNITS}, in stream order (falling markers), i.e. {@link TardisFormat#expand} of
 * {@link #PAGE} bytes. A file of length {@code L} only ever uses markers below {@code L}, and files of equal length
 * use the same markers at the same offsets, so a workload's pages are few and are built once (on first use).
 *
 * <p>Lossless: a page is only ever read; every byte of a run is still compared with the byte the format prescribes.
 * Pages are built by {@code expand} into a private array and published once (a compare-and-set; a racing builder's
 * copy is dropped). When the budget of pages is used up, runs on pages not built fall back to the caller's compare.
 */
final class TardisTemplates {
    static final int UNIT = TardisFormat.UNIT;
    /** Units per page: 5461 x 12 = 65,532 bytes, just under 64 KiB. */
    static final int PAGE_UNITS = 5461;
    static final int PAGE = PAGE_UNITS * UNIT;
    private static final long MAX_MARKER = 0xFFFF_FFFFL;
    private static final int PAGES_PER_RESIDUE = (int) (MAX_MARKER / UNIT / PAGE_UNITS) + 1;
    /** Default budget: 1024 pages = 64 MiB of heap, all markers of files up to 64 MiB (per marker residue). */
    static final int DEFAULT_MAX_PAGES = Integer.getInteger("exalt.templatePages", 1024);

    private final TardisFormat format;
    private final int maxPages;
    private final AtomicReferenceArray<AtomicReferenceArray<byte[]>> byResidue = new AtomicReferenceArray<>(UNIT);
    private final AtomicInteger built = new AtomicInteger();

    TardisTemplates(TardisFormat format, int maxPages) {
        this.format = format;
        this.maxPages = maxPages;
    }

    /** Pages built so far (for tests and diagnostics). */
    int pagesBuilt() {
        return built.get();
    }

    /**
     * How many of the {@code units} units from {@code data[pos]} on are exactly {@code flag, marker - i*12}, found with
     * template compares; -1 (never a partial answer that could hide a difference) if some page could not be built
     * (budget used up), and the caller then checks the whole run itself. Requires {@code marker - 12*(units-1) >= 0}
     * and {@code data[pos, pos + 12*units)} in bounds.
     */
    long matchingUnits(byte[] data, int pos, long marker, long units) {
        int r = (int) (marker % UNIT);
        long q = marker / UNIT; // the unit's index among the units of its residue, counted from marker r up
        long done = 0;
        int p = pos;
        while (done < units) {
            int page = (int) (q / PAGE_UNITS);
            byte[] t = page(r, page);
            if (t == null) {
                return -1;
            }
            int inPage = (int) (q - (long) page * PAGE_UNITS); // units of this page from q down to its lowest
            int off = (PAGE_UNITS - 1 - inPage) * UNIT;
            int k = (int) Math.min(inPage + 1L, units - done);
            int n = k * UNIT;
            int mm = Arrays.mismatch(data, p, p + n, t, off, off + n);
            if (mm >= 0) {
                return done + mm / UNIT;
            }
            done += k;
            p += n;
            q -= k;
        }
        return units;
    }

    /**
     * {@link TardisFormat#expand}{@code (firstMarker, skip, dst, off, len)} done by copying from the pages; false (nothing
     * written that matters: the caller expands the whole range itself) if a page could not be built or the range has a
     * marker outside {@code [0, 2^32)}. Copying brings the pages into this core's cache, so the verifies of the same
     * bytes that follow on a forwarding DataNode (mirror send, block-file write) compare against cached pages.
     */
    boolean copy(long firstMarker, long skip, byte[] dst, int off, int len) {
        java.util.Objects.checkFromIndexSize(off, len, dst.length);
        if (len == 0) {
            return true;
        }
        long lastUnit = (skip + len - 1) / UNIT;
        if (firstMarker > MAX_MARKER || skip < 0 || firstMarker - lastUnit * UNIT < 0) {
            return false;
        }
        int r = (int) (firstMarker % UNIT);
        long q = firstMarker / UNIT - skip / UNIT;
        int pageOff = (int) (skip % UNIT);
        int p = off;
        int end = off + len;
        while (p < end) {
            int page = (int) (q / PAGE_UNITS);
            byte[] t = page(r, page);
            if (t == null) {
                return false;
            }
            int inPage = (int) (q - (long) page * PAGE_UNITS);
            int from = (PAGE_UNITS - 1 - inPage) * UNIT + pageOff;
            int n = Math.min(PAGE - from, end - p);
            System.arraycopy(t, from, dst, p, n);
            p += n;
            q = (long) page * PAGE_UNITS - 1; // the next page's top unit
            pageOff = 0;
        }
        return true;
    }

    private byte[] page(int r, int page) {
        AtomicReferenceArray<byte[]> pages = byResidue.get(r);
        if (pages == null) {
            byResidue.compareAndSet(r, null, new AtomicReferenceArray<>(PAGES_PER_RESIDUE));
            pages = byResidue.get(r);
        }
        byte[] t = pages.get(page);
        if (t != null) {
            return t;
        }
        if (built.get() >= maxPages) {
            return null;
        }
        t = build(r, page);
        if (pages.compareAndSet(page, null, t)) {
            built.incrementAndGet();
            return t;
        }
        return pages.get(page);
    }

    /** The page's bytes: units q = top..P*PAGE_UNITS; units whose marker would exceed 32 bits stay zero (never used). */
    private byte[] build(int r, int page) {
        byte[] t = new byte[PAGE];
        long lowQ = (long) page * PAGE_UNITS;
        long topQ = Math.min(lowQ + PAGE_UNITS - 1, (MAX_MARKER - r) / UNIT);
        int off = (int) (lowQ + PAGE_UNITS - 1 - topQ) * UNIT;
        format.expand(topQ * UNIT + r, 0, t, off, (int) (topQ - lowQ + 1) * UNIT);
        return t;
    }
}
