package io.salus.core.hbase;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.hbase.NamespaceDescriptor;
import org.apache.hadoop.hbase.NamespaceExistException;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.TableNotFoundException;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.Durability;
import org.apache.hadoop.hbase.client.TableDescriptor;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.regionserver.DisabledRegionSplitPolicy;
import io.salus.core.hbase.endpoint.SalusReplicaEndpoint;
import io.salus.core.hbase.storage.SalusFavoredNodes;
import org.apache.hadoop.hbase.util.Bytes;

/**
 * The table layout of a Salus volume on stock HBase: three tables {@code salus:<vol>_r0/_r1/_r2}, pre-split
 * identically at big-endian block-number boundaries (region {@code i} of the three tables = RRS {@code i}), with
 * splits, merges and normalization off, durability {@code SKIP_WAL} (the Salus log is the write-ahead log), column
 * family {@code b} with DFS replication 1 (each replica keeps one local copy) keeping every version of its cells
 * until a compaction drops those no certified checkpoint needs (issue 27; tables created before it keep one
 * version, compaction off, and checkpoints that carry blocks), and the
 * {@link #LAYOUT_ATTRIBUTE} table attribute recording the layout version and the {@link VolumeGeometry}.
 */
public final class SalusTableLayout {
    public static final String NAMESPACE = "salus";
    /** Column family of the block rows (the same as HBaseVolume's). */
    public static final byte[] FAMILY = Bytes.toBytes("b");
    /**
     * Column family of the region tree's nodes (qualifiers {@code h<level>}, same rows), in tables created since
     * issue 27's restart-at-size run: HBase keeps each family in its own store files, so the leaf hashes a mount or a
     * rebuild scans are read without the blocks (32 bytes instead of a block per row). Tables without it keep their
     * nodes in {@link #FAMILY}.
     */
    public static final byte[] TREE_FAMILY = Bytes.toBytes("t");
    /**
     * JVM system property of the process that creates a volume: {@code false} creates its tables without the
     * {@link #TREE_FAMILY} (the layout of volumes created before it; kept to test that layout). On by default since
     * checkpoints stopped flushing once per checkpoint ({@code RegionStore#makeDurableThrough}): with one flush per
     * checkpoint, two store files each, the checkpoint writers fell behind and the Salus logs grew with the run.
     */
    public static final String TREE_FAMILY_PROPERTY = "salus.layout.treeFamily";

    /** Whether tables created by this process get the {@link #TREE_FAMILY} ({@link #TREE_FAMILY_PROPERTY}). */
    public static boolean treeFamily() {
        return Boolean.parseBoolean(System.getProperty(TREE_FAMILY_PROPERTY, "true"));
    }
    /** HBase's store setting: store files below this size are compacted whatever their size ratio. */
    public static final String COMPACTION_MIN_SIZE_KEY = "hbase.hstore.compaction.min.size";
    /**
     * {@link #COMPACTION_MIN_SIZE_KEY} for the replica families: 1 MiB instead of HBase's default, the memstore flush
     * size (128 MiB). A Salus checkpoint flushes its region every 64 log entries (~16 MiB under 1 MiB writes), so every
     * store file of a replica region was below 128 MiB, every compaction took all of a store's files, and the region's
     * whole data was rewritten every second flush: a 4 GiB fill of `salus up` left 21 GB of compacted-away files in
     * /hbase/archive after 25 minutes. Above 1 MiB HBase's ratio rule (1.2) applies and compactions are tiered.
     */
    public static final long COMPACTION_MIN_SIZE = 1L << 20;
    /** Table attribute holding {@link VolumeGeometry#encode}. */
    public static final String LAYOUT_ATTRIBUTE = "salus.layout";
    /** Table attribute holding the replica index 0, 1 or 2 of this table. */
    public static final String REPLICA_ATTRIBUTE = "salus.replica";
    public static final int LAYOUT_VERSION = 1;
    public static final int REPLICAS = 3;

    private SalusTableLayout() {
    }

    public static TableName tableName(String volume, int replica) {
        if (replica < 0 || replica >= REPLICAS) {
            throw new IllegalArgumentException("replica " + replica + " is not 0, 1 or 2");
        }
        return TableName.valueOf(NAMESPACE, volume + "_r" + replica);
    }

    /**
     * The descriptor of replica table {@code replica} of a volume (what {@link #create} creates), with the replica
     * endpoint ({@link SalusReplicaEndpoint}), the favored-node observer ({@link SalusFavoredNodes}: the region's
     * HFiles on its colocated DataNode) and the store file check ({@link SalusStoreQuarantine}: a region whose store
     * file fails its HDFS checksum still opens) as table coprocessors: nothing cluster-wide for them.
     */
    public static TableDescriptor descriptor(VolumeGeometry g, int replica) {
        TableDescriptorBuilder b = TableDescriptorBuilder.newBuilder(tableName(g.volume(), replica));
        try {
            b.setCoprocessor(SalusFavoredNodes.class.getName());
            b.setCoprocessor(SalusStoreQuarantine.class.getName());
            b.setCoprocessor(SalusReplicaEndpoint.class.getName());
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e); // only for a malformed class name: a constant here
        }
        return b
                .setColumnFamily(ColumnFamilyDescriptorBuilder.newBuilder(FAMILY)
                        .setDFSReplication((short) 1)
                        .setConfiguration(COMPACTION_MIN_SIZE_KEY, Long.toString(COMPACTION_MIN_SIZE))
                        // issue 27: earlier versions stay readable, so a checkpoint names a version instead of
                        // copying blocks; the endpoint's compaction hook drops those no certified checkpoint needs
                        .setMaxVersions(Integer.MAX_VALUE)
                        .build())
                .setColumnFamilies(!treeFamily() ? List.of()
                        : List.of(ColumnFamilyDescriptorBuilder.newBuilder(TREE_FAMILY)
                        .setDFSReplication((short) 1)
                        .setConfiguration(COMPACTION_MIN_SIZE_KEY, Long.toString(COMPACTION_MIN_SIZE))
                        .setMaxVersions(Integer.MAX_VALUE) // read as of a checkpoint's version, as the blocks
                        .build()))
                // HBase compacts the region's flush files as it does any table's (its own threads and policy); a
                // compaction keeps every version a stored checkpoint may still be read at (SalusReplicaEndpoint)
                .setCompactionEnabled(true)
                .setRegionSplitPolicyClassName(DisabledRegionSplitPolicy.class.getName())
                .setSplitEnabled(false)
                .setMergeEnabled(false)
                .setNormalizationEnabled(false)
                .setDurability(Durability.SKIP_WAL)
                .setValue(LAYOUT_ATTRIBUTE, g.encode(LAYOUT_VERSION))
                .setValue(REPLICA_ATTRIBUTE, Integer.toString(replica))
                .build();
    }

    /**
     * Creates the three replica tables (and the {@code salus} namespace if missing). Refuses, without changing
     * anything, when any of the three names is taken: by a complete volume, by the leftovers of a partial
     * creation, or by a table that is not a Salus replica table. If a table cannot be created, the ones created by
     * this call are removed again.
     */
    public static void create(Admin admin, VolumeGeometry g) throws IOException {
        List<TableName> existing = new ArrayList<>();
        for (int r = 0; r < REPLICAS; r++) {
            TableName t = tableName(g.volume(), r);
            if (admin.tableExists(t)) {
                if (admin.getDescriptor(t).getValue(LAYOUT_ATTRIBUTE) == null) {
                    throw new VolumeLayoutException("cannot create Salus volume " + g.volume() + ": table " + t
                            + " exists and is not a Salus replica table (no " + LAYOUT_ATTRIBUTE + " attribute);"
                            + " choose another volume name");
                }
                existing.add(t);
            }
        }
        if (existing.size() == REPLICAS) {
            throw new VolumeLayoutException("cannot create Salus volume " + g.volume() + ": it already exists ("
                    + existing + "); delete it first (SalusTableLayout.delete) or choose another name");
        }
        if (!existing.isEmpty()) {
            throw new VolumeLayoutException("cannot create Salus volume " + g.volume() + ": a previous creation"
                    + " stopped part-way, " + existing + " exist but not all three replica tables do; remove the"
                    + " leftovers with SalusTableLayout.delete(admin, \"" + g.volume() + "\") (or in the HBase"
                    + " shell: disable and drop each of them) and create the volume again");
        }
        ensureNamespace(admin);
        byte[][] splits = g.splitKeys();
        List<TableName> created = new ArrayList<>();
        try {
            for (int r = 0; r < REPLICAS; r++) {
                TableDescriptor d = descriptor(g, r);
                if (splits.length == 0) {
                    admin.createTable(d);
                } else {
                    admin.createTable(d, splits);
                }
                created.add(d.getTableName());
            }
        } catch (IOException | RuntimeException e) {
            for (TableName t : created) {
                try {
                    dropTable(admin, t);
                } catch (IOException | RuntimeException cleanup) {
                    e.addSuppressed(cleanup);
                }
            }
            throw new VolumeLayoutException("cannot create Salus volume " + g.volume() + " (tables created by this"
                    + " attempt were removed again" + (e.getSuppressed().length > 0 ? ", except where noted" : "")
                    + "): " + e.getMessage(), e);
        }
    }

    /**
     * Reads the geometry of an existing volume and checks that its three tables agree (same geometry, replica
     * indexes 0/1/2, same region boundaries).
     */
    public static VolumeGeometry read(Admin admin, String volume) throws IOException {
        VolumeGeometry g = null;
        for (int r = 0; r < REPLICAS; r++) {
            TableName t = tableName(volume, r);
            TableDescriptor d;
            try {
                d = admin.getDescriptor(t);
            } catch (TableNotFoundException e) {
                throw new VolumeLayoutException("Salus volume " + volume + " is incomplete or missing: table " + t
                        + " does not exist", e);
            }
            String attr = d.getValue(LAYOUT_ATTRIBUTE);
            if (attr == null) {
                throw new VolumeLayoutException("table " + t + " is not a Salus replica table (no "
                        + LAYOUT_ATTRIBUTE + " attribute)");
            }
            VolumeGeometry gr;
            try {
                gr = VolumeGeometry.parse(attr, LAYOUT_VERSION);
            } catch (IllegalArgumentException e) {
                throw new VolumeLayoutException("table " + t + ": " + e.getMessage(), e);
            }
            if (!Integer.toString(r).equals(d.getValue(REPLICA_ATTRIBUTE)) || !gr.volume().equals(volume)) {
                throw new VolumeLayoutException("table " + t + " claims to be replica "
                        + d.getValue(REPLICA_ATTRIBUTE) + " of volume " + gr.volume() + ", not replica " + r + " of "
                        + volume);
            }
            if (g != null && !g.equals(gr)) {
                throw new VolumeLayoutException("the replica tables of Salus volume " + volume + " disagree on the"
                        + " geometry: " + g + " vs " + gr + " (" + t + ")");
            }
            g = gr;
        }
        return g;
    }

    /**
     * Deletes whatever exists of the volume's three replica tables (also the leftovers of a partial creation).
     * Refuses to touch a table of that name that is not a Salus replica table.
     *
     * @return whether anything was deleted
     */
    public static boolean delete(Admin admin, String volume) throws IOException {
        List<TableName> toDrop = new ArrayList<>();
        for (int r = 0; r < REPLICAS; r++) {
            TableName t = tableName(volume, r);
            if (admin.tableExists(t)) {
                if (admin.getDescriptor(t).getValue(LAYOUT_ATTRIBUTE) == null) {
                    throw new VolumeLayoutException("refusing to delete " + t + ": it is not a Salus replica"
                            + " table (no " + LAYOUT_ATTRIBUTE + " attribute); nothing was deleted");
                }
                toDrop.add(t);
            }
        }
        for (TableName t : toDrop) {
            dropTable(admin, t);
        }
        return !toDrop.isEmpty();
    }

    /** Whether a table is a Salus replica table (carries the layout attribute). */
    public static boolean isReplicaTable(TableDescriptor d) {
        return d.getTableName().getNamespaceAsString().equals(NAMESPACE) && d.getValue(LAYOUT_ATTRIBUTE) != null;
    }

    private static void ensureNamespace(Admin admin) throws IOException {
        for (NamespaceDescriptor n : admin.listNamespaceDescriptors()) {
            if (n.getName().equals(NAMESPACE)) {
                return;
            }
        }
        try {
            admin.createNamespace(NamespaceDescriptor.create(NAMESPACE).build());
        } catch (NamespaceExistException e) {
            // created concurrently: fine
        }
    }

    private static void dropTable(Admin admin, TableName t) throws IOException {
        if (admin.isTableEnabled(t)) {
            admin.disableTable(t);
        }
        admin.deleteTable(t);
    }
}
