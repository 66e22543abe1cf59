package io.salus.core.zk;

import io.salus.core.cert.Certificate;
import io.salus.core.cert.CertificateFormatException;
import io.salus.core.cert.RegionId;
import io.salus.core.cert.Statement;
import io.salus.core.cert.Wire;
import io.salus.core.protocol.recovery.Coordination;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Consumer;
import java.util.function.Predicate;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.utils.PathUtils;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;

/**
 * {@link Coordination} over ZooKeeper through Apache Curator: the trusted coordination service of
 * §3.3.4 for one volume, under its own base path. Same contract as
 * {@link io.salus.core.protocol.recovery.InMemoryCoordination} (checked by the same contract test):
 *
 * <ul>
 *   <li>{@code <base>/checkpoints/<hex(volume UTF-8)>/<region index>/<generation>-<index>-<sha256>}:
 *       every CHECKPOINT certificate filed for a region, one znode per distinct certificate, created
 *       once and never replaced (no writer can hide or roll back another's). The reader lists them,
 *       newest (generation, index) first, and takes the first its check accepts. {@link #pruneCheckpoints}
 *       deletes only those strictly older than the newest valid one (index {@code -1} is a
 *       generation's first checkpoint, filed by recovery).</li>
 *   <li>{@code <base>/reports/<epoch>/<region>}: an RRS's identifyLCP report (last write wins).</li>
 *   <li>{@code <base>/lcp/<epoch>}: the agreed LCP; created once, the first writer wins and every
 *       caller gets the stored value back.</li>
 * </ul>
 *
 * Every znode is persistent: a report or an LCP must outlive the session (and the process) that wrote
 * it, so a session expiry loses nothing. Values are versioned canonical encodings (a leading version
 * byte); a znode that does not decode is reported with its path, never skipped. ZooKeeper failures
 * surface as {@link CoordinationStoreException} naming the path. The caller owns the Curator client
 * (started, with its retry policy) and closes it.
 */
public final class CuratorCoordination implements Coordination {
    /** Encoding version of the report and LCP values. */
    static final int VALUE_VERSION = 1;

    private final CuratorFramework client;
    private final String base;
    /** Test hook: runs between the read and the conditional write of a compare-and-set. */
    private volatile Consumer<String> beforeConditionalWrite = p -> { };

    /**
     * @param client   a started Curator client
     * @param basePath absolute ZooKeeper path owned by one volume's coordination, e.g.
     *                 {@code /salus/volumes/vol1/coordination}
     * @throws IllegalArgumentException if the path is not a valid absolute ZooKeeper path
     */
    public CuratorCoordination(CuratorFramework client, String basePath) {
        if (client == null) {
            throw new IllegalArgumentException("a started CuratorFramework is required");
        }
        try {
            PathUtils.validatePath(basePath);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("invalid coordination base path '" + basePath + "': " + e.getMessage()
                    + " (use an absolute path such as /salus/volumes/<volume>/coordination)", e);
        }
        if (basePath.equals("/")) {
            throw new IllegalArgumentException("the coordination base path must not be the ZooKeeper root: use e.g. "
                    + "/salus/volumes/<volume>/coordination");
        }
        this.client = client;
        this.base = basePath;
    }

    /** The base path of one volume's coordination under {@code root} (the volume name is hex-encoded). */
    public static String volumePath(String root, String volume) {
        return ZKPaths.makePath(root, "volumes", hex(volume), "coordination");
    }

    void beforeConditionalWrite(Consumer<String> hook) {
        this.beforeConditionalWrite = hook;
    }

    String checkpointPath(RegionId region) {
        return ZKPaths.makePath(base, "checkpoints", hex(region.volume()), Integer.toString(region.index()));
    }

    String reportPath(long epoch, int region) {
        return ZKPaths.makePath(base, "reports", Long.toString(epoch), Integer.toString(region));
    }

    String lcpPath(long epoch) {
        return ZKPaths.makePath(base, "lcp", Long.toString(epoch));
    }

    private static String hex(String s) {
        return HexFormat.of().formatHex(s.getBytes(StandardCharsets.UTF_8));
    }

    /** The znode name of a filed checkpoint: {@code <generation>-<index>-<hex SHA-256 of the encoding>}. */
    static String checkpointName(Certificate c) {
        Statement.Checkpoint st = c.statement(Statement.Checkpoint.class);
        return st.generation() + "-" + st.throughIndex() + "-" + HexFormat.of().formatHex(Coordination.digest(c));
    }

    @Override
    public void putCheckpoint(Certificate checkpoint) {
        String path = ZKPaths.makePath(checkpointPath(checkpoint.statement(Statement.Checkpoint.class).region()),
                checkpointName(checkpoint));
        byte[] bytes = checkpoint.encode();
        beforeConditionalWrite.accept(path);
        try {
            client.create().creatingParentsIfNeeded().forPath(path, bytes);
        } catch (KeeperException.NodeExistsException e) {
            // filed already (the name is the digest of these bytes); a filed checkpoint is never replaced
        } catch (Exception e) {
            throw failure("store checkpoint", path, e);
        }
    }

    private record Named(String name, long generation, long index, byte[] digest, Certificate cert) {
        Named withCert(Certificate c) {
            return new Named(name, generation, index, digest, c);
        }
    }

    @Override
    public Optional<Certificate> latestCheckpoint(RegionId region, Predicate<Certificate> valid) {
        String dir = checkpointPath(region);
        Named n = latestValid(dir, region, valid);
        return n == null ? Optional.empty() : Optional.of(n.cert());
    }

    @Override
    public int pruneCheckpoints(RegionId region, Predicate<Certificate> valid) {
        String dir = checkpointPath(region);
        Named keep = latestValid(dir, region, valid);
        if (keep == null) {
            return 0;
        }
        int removed = 0;
        for (Named n : listNamed(dir)) {
            if (n.generation() < keep.generation()
                    || n.generation() == keep.generation() && n.index() < keep.index()) {
                String path = ZKPaths.makePath(dir, n.name());
                try {
                    client.delete().forPath(path);
                    removed++;
                } catch (KeeperException.NoNodeException e) {
                    // pruned by a peer since the listing
                } catch (Exception e) {
                    throw failure("prune checkpoint", path, e);
                }
            }
        }
        return removed;
    }

    /** The well-formed filed checkpoints of a region directory, newest first (unread). */
    private List<Named> listNamed(String dir) {
        List<String> children;
        try {
            children = client.getChildren().forPath(dir);
        } catch (KeeperException.NoNodeException e) {
            return List.of();
        } catch (Exception e) {
            throw failure("list checkpoints", dir, e);
        }
        // A znode that is not a well-formed filed checkpoint is skipped like one that does not verify:
        // a faulty replica holding the credentials can file garbage, and must not block the reader.
        List<Named> names = new ArrayList<>();
        for (String c : children) {
            Named n = parseName(c);
            if (n != null) {
                names.add(n);
            }
        }
        names.sort(Comparator.comparingLong(Named::generation).thenComparingLong(Named::index).reversed()
                .thenComparing(Named::digest, Arrays::compareUnsigned));
        return names;
    }

    /**
     * The newest filed checkpoint of the directory that decodes, is what its name promises, is a
     * checkpoint of {@code region} (the directory's: a genuine checkpoint of another region copied
     * here must neither be read for this one nor make its valid ones look old to the pruner) and
     * {@code valid} accepts.
     */
    private Named latestValid(String dir, RegionId region, Predicate<Certificate> valid) {
        for (Named n : listNamed(dir)) {
            byte[] b = read(ZKPaths.makePath(dir, n.name()), null);
            if (b == null) {
                continue; // removed since the listing
            }
            Certificate c;
            try {
                c = Certificate.decode(b);
                if (!n.name().equals(checkpointName(c))) {
                    continue; // not the certificate its name promises
                }
                if (!c.statement(Statement.Checkpoint.class).region().equals(region)) {
                    continue; // another region's checkpoint filed under this one
                }
            } catch (IllegalArgumentException e) {
                continue; // foreign bytes
            }
            if (valid.test(c)) {
                return n.withCert(c);
            }
        }
        return null;
    }

    /** {@code <generation>-<index>-<64 hex>}; the index is -1 for a generation's first (starting-state) checkpoint. */
    private static final java.util.regex.Pattern CHECKPOINT_NAME =
            java.util.regex.Pattern.compile("(\\d{1,19})-(-1|\\d{1,19})-([0-9a-f]{64})");

    /** A child name {@code <generation>-<index>-<64 hex>}, or null if it is not one. */
    private static Named parseName(String name) {
        java.util.regex.Matcher m = CHECKPOINT_NAME.matcher(name);
        try {
            if (m.matches()) {
                long g = Long.parseLong(m.group(1));
                long i = Long.parseLong(m.group(2));
                if (name.equals(g + "-" + i + "-" + m.group(3))) {
                    return new Named(name, g, i, HexFormat.of().parseHex(m.group(3)), null);
                }
            }
        } catch (IllegalArgumentException e) {
            // not one (out of range)
        }
        return null;
    }

    @Override
    public void report(long epoch, int region, RegionReport report) {
        String path = reportPath(epoch, region);
        byte[] bytes = encodeReport(report);
        try {
            try {
                client.create().creatingParentsIfNeeded().forPath(path, bytes);
            } catch (KeeperException.NodeExistsException e) {
                client.setData().forPath(path, bytes); // a report is replaced, like InMemoryCoordination's put
            }
        } catch (Exception e) {
            throw failure("store report", path, e);
        }
    }

    @Override
    public Map<Integer, RegionReport> reports(long epoch) {
        String dir = ZKPaths.makePath(base, "reports", Long.toString(epoch));
        List<String> children;
        try {
            children = client.getChildren().forPath(dir);
        } catch (KeeperException.NoNodeException e) {
            return new TreeMap<>();
        } catch (Exception e) {
            throw failure("list reports", dir, e);
        }
        Map<Integer, RegionReport> out = new TreeMap<>();
        for (String c : children) {
            String path = ZKPaths.makePath(dir, c);
            int region;
            try {
                region = Integer.parseInt(c);
            } catch (NumberFormatException e) {
                throw new CoordinationStoreException("unexpected znode " + path + " among the reports (names are "
                        + "region indexes); remove it or use a base path that only Salus writes to", e);
            }
            byte[] b = read(path, null);
            if (b != null) {
                out.put(region, decodeReport(path, b));
            }
        }
        return out;
    }

    @Override
    public Lcp putLcp(Lcp lcp) {
        String path = lcpPath(lcp.epoch());
        byte[] bytes = encodeLcp(lcp);
        beforeConditionalWrite.accept(path);
        try {
            client.create().creatingParentsIfNeeded().forPath(path, bytes);
            return lcp;
        } catch (KeeperException.NodeExistsException e) {
            // first writer wins; fall through and return what it stored
        } catch (Exception e) {
            throw failure("store LCP", path, e);
        }
        return lcp(lcp.epoch()).orElseThrow(() -> new CoordinationStoreException(path
                + " existed when the LCP was created but is gone now; LCP znodes are never deleted by Salus", null));
    }

    @Override
    public Optional<Lcp> lcp(long epoch) {
        String path = lcpPath(epoch);
        byte[] b = read(path, null);
        return b == null ? Optional.empty() : Optional.of(decodeLcp(path, b, epoch));
    }

    /** The znode's data, or null if it does not exist. */
    private byte[] read(String path, Stat stat) {
        try {
            return stat == null ? client.getData().forPath(path) : client.getData().storingStatIn(stat).forPath(path);
        } catch (KeeperException.NoNodeException e) {
            return null;
        } catch (Exception e) {
            throw failure("read", path, e);
        }
    }

    private CoordinationStoreException failure(String what, String path, Exception e) {
        if (e instanceof InterruptedException) {
            Thread.currentThread().interrupt();
        }
        return new CoordinationStoreException("cannot " + what + " at " + path + " on ZooKeeper "
                + client.getZookeeperClient().getCurrentConnectionString() + ": " + e, e);
    }

    static byte[] encodeReport(RegionReport r) {
        Wire.Out o = new Wire.Out().u8(VALUE_VERSION).i64(r.committedSeq()).i32(r.preparedSeqs().size());
        for (long s : r.preparedSeqs()) {
            o.i64(s);
        }
        return o.toByteArray();
    }

    static RegionReport decodeReport(String path, byte[] b) {
        try {
            Wire.In in = new Wire.In(b);
            version(in);
            long committed = in.i64("committed seq");
            int n = in.i32("prepared count");
            if (n < 0 || n > in.remaining() / 8) {
                throw new CertificateFormatException("prepared count " + n + " does not fit the bytes left",
                        in.pos() - 4);
            }
            SortedSet<Long> prepared = new TreeSet<>();
            long prev = Long.MIN_VALUE;
            for (int i = 0; i < n; i++) {
                long seq = in.i64("prepared seq " + i);
                if (i > 0 && seq <= prev) {
                    throw new CertificateFormatException("prepared seqs must be strictly increasing, " + seq
                            + " follows " + prev, in.pos() - 8);
                }
                prepared.add(seq);
                prev = seq;
            }
            in.expectEnd("report");
            return new RegionReport(committed, prepared);
        } catch (CertificateFormatException e) {
            throw new CoordinationStoreException(path + " does not hold a region report: " + e.getMessage(), e);
        }
    }

    static byte[] encodeLcp(Lcp l) {
        // the client's signature follows (review rvw23-3); an unsigned LCP (and one written before) ends at the root
        Wire.Out o = new Wire.Out().u8(VALUE_VERSION).i64(l.epoch()).i64(l.seq()).hash(l.root());
        return (l.clientSig() == null ? o : o.blob(l.clientSig())).toByteArray();
    }

    static Lcp decodeLcp(String path, byte[] b, long epoch) {
        try {
            Wire.In in = new Wire.In(b);
            version(in);
            long e = in.i64("epoch");
            if (e != epoch) {
                throw new CertificateFormatException("holds the LCP of epoch " + e + ", not " + epoch, 1);
            }
            long seq = in.i64("seq");
            io.salus.core.merkle.Hash root = in.hash("root");
            byte[] sig = in.remaining() == 0 ? null : in.blob("client signature");
            if (sig != null && sig.length == 0) {
                throw new CertificateFormatException("an empty client signature (an unsigned LCP ends at its root)",
                        in.pos());
            }
            Lcp l = new Lcp(e, seq, root, sig);
            in.expectEnd("LCP");
            return l;
        } catch (CertificateFormatException e) {
            throw new CoordinationStoreException(path + " does not hold an LCP: " + e.getMessage(), e);
        }
    }

    private static void version(Wire.In in) {
        int v = in.u8("value version");
        if (v != VALUE_VERSION) {
            throw new CertificateFormatException("unsupported value version " + v + " (this build reads "
                    + VALUE_VERSION + ")", 0);
        }
    }
}
