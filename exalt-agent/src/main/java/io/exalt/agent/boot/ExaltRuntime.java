package io.exalt.agent.boot;

import io.exalt.tardis.TardisCompressor;
import io.exalt.tardis.TardisFormat;
import java.io.File;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Run-time configuration and counters of the agent, shared by all hooks. Lives on the bootstrap class path so
 * that code inlined into JDK classes can reach it. Configured once by {@code io.exalt.agent.ExaltAgent}.
 */
public final class ExaltRuntime {
    private static volatile String[] prefixes = new String[0];
    /** Real paths (symlinks resolved) of the prefixes, or null for a prefix that does not exist yet. */
    private static volatile String[] realPrefixes = new String[0];
    private static volatile int[][] portRanges = new int[0][];
    private static volatile TardisFormat format = TardisFormat.defaultFormat();
    private static volatile int indexLimit = 3000;
    private static volatile boolean verbose;
    private static volatile TardisCompressor.RunCheck runCheck = TardisCompressor.RunCheck.VERIFY_EVERY_BYTE;

    /** Set while the agent's own code opens files, so that its raw handles are never hooked. */
    static final ThreadLocal<Boolean> BYPASS = new ThreadLocal<>();

    // counters (reported by the self-check and by the runner)
    public static final AtomicLong LOGICAL_BYTES_WRITTEN = new AtomicLong();
    public static final AtomicLong PHYSICAL_BYTES_WRITTEN = new AtomicLong();
    public static final AtomicLong LOGICAL_BYTES_READ = new AtomicLong();
    public static final AtomicLong NET_LOGICAL_BYTES_SENT = new AtomicLong();
    public static final AtomicLong NET_WIRE_BYTES_SENT = new AtomicLong();
    public static final AtomicLong MATERIALISED_BYTES = new AtomicLong();

    private ExaltRuntime() {
    }

    public static void configure(List<String> prefixList, List<int[]> ports, TardisFormat fmt, int limit, boolean verb) {
        List<String> ps = new ArrayList<>();
        for (String p : prefixList) {
            ps.add(normalise(p));
        }
        prefixes = ps.toArray(new String[0]);
        realPrefixes = new String[prefixes.length];
        portRanges = ports.toArray(new int[0][]);
        format = fmt;
        indexLimit = limit;
        verbose = verb;
    }

    /** Adds a prefix at run time (used by the start-up self-check for its probe directory). */
    public static synchronized void addPrefix(String p) {
        String[] n = new String[prefixes.length + 1];
        System.arraycopy(prefixes, 0, n, 0, prefixes.length);
        n[prefixes.length] = normalise(p);
        prefixes = n;
        realPrefixes = new String[n.length];
    }

    /** Adds/removes a compressed port at run time (used by the start-up self-check). */
    public static synchronized void addPort(int port) {
        int[][] n = java.util.Arrays.copyOf(portRanges, portRanges.length + 1);
        n[portRanges.length] = new int[] {port, port};
        portRanges = n;
    }

    public static synchronized void removePort(int port) {
        List<int[]> keep = new ArrayList<>();
        for (int[] r : portRanges) {
            if (!(r[0] == port && r[1] == port)) {
                keep.add(r);
            }
        }
        portRanges = keep.toArray(new int[0][]);
    }

    public static synchronized void removePrefix(String p) {
        String np = normalise(p);
        List<String> keep = new ArrayList<>();
        for (String s : prefixes) {
            if (!s.equals(np)) {
                keep.add(s);
            }
        }
        prefixes = keep.toArray(new String[0]);
        realPrefixes = new String[prefixes.length];
    }

    static String normalise(String p) {
        String a = new File(p).getAbsoluteFile().toPath().normalize().toString();
        return a.endsWith("/") ? a : a + "/";
    }

    public static TardisFormat format() {
        return format;
    }

    /** How runs are checked before they are dropped from disk or wire (agent option {@code runcheck=}). */
    public static TardisCompressor.RunCheck runCheck() {
        return runCheck;
    }

    public static void setRunCheck(TardisCompressor.RunCheck rc) {
        runCheck = rc;
    }

    /** A compressor for the configured flag and run check. */
    public static TardisCompressor compressor() {
        return new TardisCompressor(format, runCheck);
    }

    static int indexLimit() {
        return indexLimit;
    }

    public static boolean verbose() {
        return verbose;
    }

    public static List<String> prefixes() {
        return List.of(prefixes);
    }

    /**
     * Is {@code path} (as given to a File/stream/channel constructor) under a configured prefix? Decided on real
     * paths (symlinks resolved on both sides), so a symlink outside a prefix that points to a file inside it is
     * emulated, and a symlink inside a prefix that points outside is not.
     */
    public static boolean underPrefix(String path) {
        String[] ps = prefixes;
        if (ps.length == 0 || path == null) {
            return false;
        }
        String a = realPath(path);
        String[] rp = realPrefixes;
        for (int i = 0; i < ps.length && i < rp.length; i++) {
            String r = rp[i];
            if (r == null) {
                r = realPath(ps[i]);
                r = r.endsWith("/") ? r : r + "/";
                if (java.nio.file.Files.isDirectory(java.nio.file.Paths.get(r))) {
                    rp[i] = r; // cache once the prefix exists (its real path no longer changes)
                }
            }
            if (a.startsWith(r) || (a + "/").equals(r)) {
                return true;
            }
        }
        return false;
    }

    /**
     * Does the regular file at {@code path} carry an Exalt extent index? The compressed form travels with the inode
     * (holes + the index xattr), not with the name: a file renamed or moved out of every prefix, or a hard link to
     * an emulated file from outside, must still be read through its index, or its Tardis runs read as zeros.
     */
    static boolean carriesIndex(String path) {
        Boolean prev = BYPASS.get();
        BYPASS.set(Boolean.TRUE);
        try {
            java.nio.file.Path p = java.nio.file.Paths.get(path);
            if (!java.nio.file.Files.isRegularFile(p)) {
                return false; // never open a FIFO or a device to look for attributes
            }
            java.nio.file.attribute.UserDefinedFileAttributeView v = java.nio.file.Files.getFileAttributeView(p,
                    java.nio.file.attribute.UserDefinedFileAttributeView.class);
            return v != null && v.list().contains(CompressedFile.XATTR);
        } catch (java.io.IOException | RuntimeException e) {
            return false; // no attribute support, no permission to read them, gone: not an emulated file
        } finally {
            BYPASS.set(prev);
        }
    }

    /** Is the file at {@code path} emulated: under a prefix, or carrying an index wherever it is now? */
    public static boolean emulated(String path) {
        return underPrefix(path) || carriesIndex(path);
    }

    /** The real path of {@code path}; for a path that does not exist (yet), its parent's real path + name. */
    static String realPath(String path) {
        // not normalized first: "link/.." is the parent of the link's *target* for the kernel, not the directory
        // holding the link, so ".." must be resolved by toRealPath (or after the symlinks before it are resolved)
        java.nio.file.Path abs = new File(path).getAbsoluteFile().toPath();
        Boolean prev = BYPASS.get();
        BYPASS.set(Boolean.TRUE);
        try {
            return abs.toRealPath().toString();
        } catch (java.io.IOException e) {
            java.nio.file.Path parent = abs.getParent();
            if (parent == null) {
                return abs.normalize().toString();
            }
            // the parent's real path has no symlinks left, so "." and ".." after it can be resolved lexically
            return java.nio.file.Paths.get(realPath(parent.toString())).resolve(abs.getFileName()).normalize().toString();
        } finally {
            BYPASS.set(prev);
        }
    }

    public static boolean portCompressed(int port) {
        for (int[] r : portRanges) {
            if (port >= r[0] && port <= r[1]) {
                return true;
            }
        }
        return false;
    }

    public static boolean hasPorts() {
        return portRanges.length > 0;
    }

    static void log(String msg) {
        if (verbose) {
            System.err.println("[exalt] " + msg);
        }
    }

    /** The bytes physically stored in a file, bypassing the hooks (for the self-check and tests). */
    public static byte[] readPhysical(String path) throws java.io.IOException {
        Boolean prev = BYPASS.get();
        BYPASS.set(Boolean.TRUE);
        try {
            return java.nio.file.Files.readAllBytes(java.nio.file.Paths.get(path));
        } finally {
            BYPASS.set(prev);
        }
    }
}
