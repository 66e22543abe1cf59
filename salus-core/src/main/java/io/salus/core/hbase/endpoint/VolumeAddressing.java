package io.salus.core.hbase.endpoint;

import io.salus.core.cert.RegionId;
import io.salus.core.crypto.NodeId;
import io.salus.core.hbase.SalusTableLayout;
import io.salus.core.hbase.VolumeGeometry;
import io.salus.core.merkle.HashAlgorithm;
import io.salus.core.merkle.RegionLayout;
import io.salus.core.protocol.Membership;
import io.salus.core.protocol.ProtocolConfig;
import io.salus.core.protocol.RrsConfig;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.apache.hadoop.hbase.TableName;

/**
 * Maps the protocol's {@link NodeId}s of one volume onto HBase (issue 13 item 2). Every node is named
 * {@code <volume>/<region>/<kind><k>} and lives in one replica region, addressed by (table, the row key of the
 * region's first block):
 *
 * <ul>
 *   <li>replica {@code k} of RRS {@code i} ({@code r<k>}): region {@code i} of table {@code salus:<vol>_r<k>};
 *   <li>the DataNode-side metadata store {@code k} ({@code s<k>}): hosted by the same replica region (it is
 *       the store colocated with replica {@code k});
 *   <li>standalone witness {@code w} ({@code w0}, {@code w1}): <b>interim</b>, hosted by replica region
 *       {@code w} of the RRS until salus-hdfs's witness daemons are linked in (see docs/salus-on-hbase.md);
 *   <li>the volume's single writer {@code <volume>/client}: not addressable by a region; it collects its
 *       replies with the non-blocking {@code poll} RPC and on every {@code deliver} response.
 * </ul>
 *
 * Node ids are per replica region, not per region server, so a message names exactly one event loop.
 * Membership is the static generation-0 configuration (remapping belongs to the recovery issue).
 */
public final class VolumeAddressing {
    /** Where a node lives: one region of one replica table. */
    public record Address(TableName table, byte[] row, int region, int replica) {
        @Override
        public boolean equals(Object o) {
            return o instanceof Address a && a.table.equals(table) && a.region == region;
        }

        @Override
        public int hashCode() {
            return Objects.hash(table, region);
        }

        @Override
        public String toString() {
            return table + "#region" + region;
        }
    }

    /** A parsed node name. */
    public record Node(int region, char kind, int k) {
    }

    /** The hash of block and tree nodes (SHA-256, as the block driver's HBaseVolume tree). */
    public static final HashAlgorithm HASH = HashAlgorithm.SHA256;

    private final VolumeGeometry geometry;
    private final ProtocolConfig cfg;
    private final List<RrsConfig> configs = new ArrayList<>();
    private final Membership membership;

    public VolumeAddressing(VolumeGeometry geometry) {
        this(geometry, ProtocolConfig.DEFAULT_CHECKPOINT_EVERY);
    }

    /**
     * @param checkpointEvery log entries between a replica's checkpoints ({@link ProtocolConfig#checkpointEvery()};
     *                        the replica endpoint reads it from {@code salus.checkpoint.every-entries})
     */
    public VolumeAddressing(VolumeGeometry geometry, int checkpointEvery) {
        this.geometry = geometry;
        this.cfg = ProtocolConfig.of(geometry.volume(), geometry.blockSize(), HASH,
                RegionLayout.ofRegionSize(geometry.numBlocks(), geometry.blocksPerRegion()))
                .withCheckpointEvery(checkpointEvery);
        for (int i = 0; i < geometry.numRegions(); i++) {
            configs.add(new RrsConfig(new RegionId(geometry.volume(), i), 0,
                    List.of(node(i, 'r', 0), node(i, 'r', 1), node(i, 'r', 2)),
                    List.of(node(i, 's', 0), node(i, 's', 1), node(i, 's', 2)),
                    List.of(node(i, 'w', 0), node(i, 'w', 1))));
        }
        this.membership = new Membership() {
            @Override
            public RrsConfig current(int region) {
                return configs.get(region);
            }

            @Override
            public RrsConfig config(RegionId region, long generation) {
                return generation == 0 && region.volume().equals(geometry.volume()) && region.index() >= 0
                        && region.index() < configs.size() ? configs.get(region.index()) : null;
            }
        };
    }

    public VolumeGeometry geometry() {
        return geometry;
    }

    public ProtocolConfig protocolConfig() {
        return cfg;
    }

    public Membership membership() {
        return membership;
    }

    public NodeId client() {
        return NodeId.of(geometry.volume() + "/client");
    }

    public NodeId replica(int region, int k) {
        return configs.get(region).replicas().get(k);
    }

    private NodeId node(int region, char kind, int k) {
        return node(geometry.volume(), region, kind, k);
    }

    /**
     * The node id convention, {@code <volume>/<region>/<kind><k>}, for those who know a volume only by name (a
     * witness checking the endpoint's tentatives: salus-hdfs's trust-file {@code endpoint-volume} rule).
     */
    public static NodeId node(String volume, int region, char kind, int k) {
        return NodeId.of(volume + "/" + region + "/" + kind + k);
    }

    /** Every node of the volume (replicas, stores, witnesses, the client): whose keys a verifier needs. */
    public List<NodeId> allNodes() {
        List<NodeId> all = new ArrayList<>();
        for (RrsConfig c : configs) {
            all.addAll(c.replicas());
            all.addAll(c.metadataHolders());
        }
        all.add(client());
        return all;
    }

    /**
     * Parses a node name of this volume.
     *
     * @throws IllegalArgumentException naming the node and the expected form
     */
    public Node parse(NodeId id) {
        String prefix = geometry.volume() + "/";
        String n = id.name();
        String[] parts = n.startsWith(prefix) ? n.substring(prefix.length()).split("/", -1) : new String[0];
        if (parts.length == 2 && parts[1].length() == 2) {
            try {
                int region = Integer.parseInt(parts[0]);
                char kind = parts[1].charAt(0);
                int k = parts[1].charAt(1) - '0';
                if (region >= 0 && region < configs.size() && (kind == 'r' || kind == 's') && k >= 0 && k < 3
                        || region >= 0 && region < configs.size() && kind == 'w' && (k == 0 || k == 1)) {
                    return new Node(region, kind, k);
                }
            } catch (NumberFormatException e) {
                // falls through to the error below
            }
        }
        throw new IllegalArgumentException("node " + n + " is not a node of volume " + geometry.volume() + " (expected "
                + prefix + "<region 0.." + (configs.size() - 1) + ">/<r0|r1|r2|s0|s1|s2|w0|w1>)");
    }

    /** The replica region that hosts a node (not the client: it has no region). */
    public Address route(NodeId id) {
        Node n = parse(id);
        return address(n.region(), n.k());
    }

    /** Region {@code region} of replica table {@code replica}. */
    public Address address(int region, int replica) {
        return new Address(SalusTableLayout.tableName(geometry.volume(), replica),
                VolumeGeometry.rowKey(region * geometry.blocksPerRegion()), region, replica);
    }

    /** The nodes region {@code region} of replica table {@code replica} hosts: the replica, its store, maybe a witness. */
    public List<NodeId> hostedBy(int region, int replica) {
        List<NodeId> l = new ArrayList<>(List.of(node(region, 'r', replica), node(region, 's', replica)));
        if (replica < 2) {
            l.add(node(region, 'w', replica));
        }
        return l;
    }
}
