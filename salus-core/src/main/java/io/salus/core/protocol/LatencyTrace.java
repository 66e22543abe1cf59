package io.salus.core.protocol;

import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Debug switch for write-latency measurements (issue 13, task lat13): per batch, when each stage of the write path
 * happened first and last over the nodes that pass it (client submit, primary/secondary/tertiary received and logged,
 * the five store acks complete, vote sent, leader decided, decision learned, applied and PutReply queued, client
 * received), and how many messages of each type were sent (and how many of them from a periodic tick, i.e. a
 * retransmission). Off by default: every call is one volatile read then. Meant for one process hosting the client
 * and the replicas (the mini cluster harness); times are {@link System#nanoTime}.
 */
public final class LatencyTrace {
    private static volatile boolean enabled = Boolean.getBoolean("salus.trace.latency");
    private static final Map<Long, Map<String, long[]>> stages = new ConcurrentHashMap<>();
    private static final Map<String, AtomicLong> counts = new ConcurrentHashMap<>();
    private static final ThreadLocal<int[]> inTick = ThreadLocal.withInitial(() -> new int[1]);

    private LatencyTrace() {
    }

    public static boolean enabled() {
        return enabled;
    }

    public static void enable(boolean on) {
        enabled = on;
    }

    private static volatile boolean legacy;

    /**
     * <b>Benchmark only</b>: when set, the write path runs as it did before task lat13 (checkpoints written on the
     * event loop, forwarding after the own append, every unresolved entry retransmitted every
     * {@code RETRANSMIT_TICKS}, signatures of duplicate votes and decisions verified again, the client's poll
     * back-off up to 40 ms), so a harness measures both in one run, under the same machine load.
     */
    public static boolean legacy() {
        return legacy;
    }

    public static void legacy(boolean on) {
        legacy = on;
    }

    private static volatile boolean inlineDisk = Boolean.getBoolean("salus.bench.inline-disk");

    /**
     * <b>Benchmark only</b>: when set, replicas write their log appends and commit marks on their event loop as before
     * task tput17, even where a {@code DurableWriter} is installed (taken between runs, with no write in flight), so
     * a harness compares both in one run. System property {@code salus.bench.inline-disk} sets it at start (the
     * Salus-vs-HBase driver, whose cluster runs in its JVM).
     */
    public static boolean inlineDisk() {
        return inlineDisk;
    }

    public static void inlineDisk(boolean on) {
        inlineDisk = on;
    }

    /** Forgets every stage time and count (between measured runs). */
    public static void reset() {
        stages.clear();
        counts.clear();
    }

    /** Records that {@code batchId} reached {@code stage} now (keeps the first and the last time). */
    public static void stage(long batchId, String stage) {
        if (!enabled) {
            return;
        }
        long t = System.nanoTime();
        stages.computeIfAbsent(batchId, k -> new ConcurrentHashMap<>()).merge(stage, new long[] {t, t},
                (a, b) -> new long[] {Math.min(a[0], b[0]), Math.max(a[1], b[1])});
    }

    /** Counts one sent message of {@code type} (prefixed with "tick:" when sent from a periodic tick). */
    public static void sent(String type) {
        if (!enabled) {
            return;
        }
        count((inTick.get()[0] > 0 ? "tick:" : "") + type);
    }

    public static void count(String what) {
        add(what, 1);
    }

    public static void add(String what, long n) {
        if (!enabled) {
            return;
        }
        counts.computeIfAbsent(what, k -> new AtomicLong()).addAndGet(n);
    }

    /** nanoTime if enabled, else 0 (for {@link #took}). */
    public static long now() {
        return enabled ? System.nanoTime() : 0;
    }

    /** Adds the time since {@code since} (from {@link #now}) to "us:" + what, and counts it in "n:" + what. */
    public static void took(String what, long since) {
        if (!enabled || since == 0) {
            return;
        }
        add("us:" + what, (System.nanoTime() - since) / 1000);
        add("n:" + what, 1);
    }

    /** Marks the current thread as running a periodic tick (messages it sends are retransmissions). */
    public static void tickBegin() {
        inTick.get()[0]++;
    }

    public static void tickEnd() {
        inTick.get()[0]--;
    }

    /** Per batch: stage -> {first, last} nanoTime. */
    public static Map<Long, Map<String, long[]>> stages() {
        Map<Long, Map<String, long[]>> m = new TreeMap<>();
        stages.forEach((k, v) -> m.put(k, new TreeMap<>(v)));
        return m;
    }

    public static Map<String, Long> counts() {
        Map<String, Long> m = new TreeMap<>();
        counts.forEach((k, v) -> m.put(k, v.get()));
        return m;
    }
}
