package io.exalt.agent;

import io.exalt.tardis.TardisFormat;
import java.util.ArrayList;
import java.util.List;

/**
 * Options of {@code -javaagent:exalt-agent.jar=<options>}: comma-separated {@code key=value} pairs; lists use
 * {@code :} as separator (like PATH).
 *
 * <pre>
 *   prefix=/data/dn1:/data/dn2     emulate (compress) files under these directories
 *   ports=9866:50010-50099         compress socket traffic to/from these ports (both ends need the agent)
 *   flag=0xe7a15c3d9b04f26a        the 8-byte Tardis flag (16 hex digits)
 *   runcheck=verify                verify every byte of a run before dropping it (default, lossless);
 *                                  sampled-unsafe = the paper's fast path, loses in-place changes inside runs
 *   index-limit=3000               max bytes of a file's extent index (xattr); beyond it runs are written out
 *   selfcheck=true                 run the start-up self-check (refuse to start if a hook is missing)
 *   verbose=false                  log every emulated file to stderr
 *   bootjar=/path/exalt-boot.jar   use this helper jar instead of the one embedded in the agent jar
 * </pre>
 */
public final class AgentOptions {
    final List<String> prefixes = new ArrayList<>();
    final List<int[]> ports = new ArrayList<>();
    /** The flag; a TardisFormat is built only after the helper jar is on the bootstrap class path. */
    long flag = TardisFormat.DEFAULT_FLAG;
    int indexLimit = 3000;
    /** Name of the run check ({@code verify} or {@code sampled-unsafe}); parsed against the boot classes later. */
    String runCheck = "verify";
    boolean selfCheck = true;
    boolean verbose;
    String bootJar;

    static AgentOptions parse(String args) {
        AgentOptions o = new AgentOptions();
        if (args == null || args.isBlank()) {
            throw new IllegalArgumentException("Exalt agent needs options, e.g. -javaagent:exalt-agent.jar=prefix=/data/dn,ports=9866"
                    + " (prefix: directories to emulate; ports: socket ports to compress)");
        }
        for (String kv : args.split(",")) {
            if (kv.isBlank()) {
                continue;
            }
            int eq = kv.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("Exalt agent option '" + kv + "' is not key=value; known keys: prefix, ports, flag,"
                        + " runcheck, index-limit, selfcheck, verbose, bootjar");
            }
            String k = kv.substring(0, eq).trim();
            String v = kv.substring(eq + 1).trim();
            switch (k) {
                case "prefix" -> {
                    for (String p : v.split(":")) {
                        if (!p.isBlank()) {
                            if (!p.startsWith("/")) {
                                throw new IllegalArgumentException("Exalt prefix '" + p + "' must be an absolute path");
                            }
                            o.prefixes.add(p);
                        }
                    }
                }
                case "ports" -> {
                    for (String p : v.split(":")) {
                        if (!p.isBlank()) {
                            o.ports.add(parseRange(p));
                        }
                    }
                }
                case "flag" -> o.flag = parseFlag(v);
                case "index-limit" -> {
                    o.indexLimit = Integer.parseInt(v);
                    if (o.indexLimit < 256 || o.indexLimit > 3500) {
                        throw new IllegalArgumentException("index-limit " + v + " out of range 256..3500 (ext4 keeps xattrs in one 4 KiB block)");
                    }
                }
                case "runcheck" -> {
                    if (!v.equals("verify") && !v.equals("sampled-unsafe")) {
                        throw new IllegalArgumentException("runcheck '" + v + "' is not one of: verify (default, lossless),"
                                + " sampled-unsafe (the paper's fast path; loses bytes changed in place inside a Tardis run)");
                    }
                    o.runCheck = v;
                }
                case "selfcheck" -> o.selfCheck = Boolean.parseBoolean(v);
                case "verbose" -> o.verbose = Boolean.parseBoolean(v);
                case "bootjar" -> o.bootJar = v;
                default -> throw new IllegalArgumentException("unknown Exalt agent option '" + k
                        + "'; known keys: prefix, ports, flag, runcheck, index-limit, selfcheck, verbose, bootjar");
            }
        }
        if (o.prefixes.isEmpty() && o.ports.isEmpty()) {
            throw new IllegalArgumentException("Exalt agent: give at least prefix=<dir> or ports=<port>, e.g. prefix=/data/dn");
        }
        return o;
    }

    private static long parseFlag(String hex) {
        String h = hex.startsWith("0x") || hex.startsWith("0X") ? hex.substring(2) : hex;
        try {
            if (h.length() != 16) {
                throw new NumberFormatException();
            }
            return Long.parseUnsignedLong(h, 16);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("Exalt flag '" + hex + "' must be exactly 16 hex digits (8 bytes), e.g. flag=0x"
                    + Long.toHexString(TardisFormat.DEFAULT_FLAG));
        }
    }

    private static int[] parseRange(String p) {
        try {
            String[] ab = p.split("-");
            int a = Integer.parseInt(ab[0].trim());
            int b = ab.length > 1 ? Integer.parseInt(ab[1].trim()) : a;
            if (a < 1 || b > 65535 || a > b) {
                throw new IllegalArgumentException("Exalt port range '" + p + "' must be within 1-65535, low-high");
            }
            return new int[] {a, b};
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("Exalt port '" + p + "' is not a number or range like 50010-50099", e);
        }
    }
}
