package io.salus.blockdriver.volume;

import java.io.IOException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.regex.Pattern;
import org.apache.hadoop.hbase.NamespaceDescriptor;
import org.apache.hadoop.hbase.NamespaceExistException;
import org.apache.hadoop.hbase.TableExistsException;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.TableNotFoundException;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.CheckAndMutate;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.Delete;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.regionserver.BloomType;
import org.apache.hadoop.hbase.util.Bytes;

/**
 * The volume catalog: one row per volume in the HBase table {@code salus:volumes} holding block
 * size, size, creation time, hash algorithm and the last recorded volume-tree root. Creating a
 * volume also creates its data table (see {@link HBaseVolume} for the layout), pre-split into
 * regions of contiguous block ranges.
 *
 * <p>Names: 1 to 64 characters, letters, digits, '-' and '_', starting with a letter or digit.
 */
public final class VolumeCatalog {
  public static final String NAMESPACE = "salus";
  public static final TableName CATALOG_TABLE = TableName.valueOf(NAMESPACE, "volumes");
  public static final String KIND_HBASE = "hbase";
  /** A Salus volume: three replica tables {@code salus:<vol>_r0/_r1/_r2} (SalusTableLayout). */
  public static final String KIND_SALUS = "salus";
  static final byte[] FAMILY = Bytes.toBytes("m");
  private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_-]{0,63}");
  public static final int DEFAULT_SUBTREE_HEIGHT = 10;

  private static final byte[] Q_KIND = Bytes.toBytes("kind");
  private static final byte[] Q_BLOCK_SIZE = Bytes.toBytes("blockSize");
  private static final byte[] Q_SIZE = Bytes.toBytes("sizeBlocks");
  private static final byte[] Q_CREATED = Bytes.toBytes("created");
  private static final byte[] Q_TABLE = Bytes.toBytes("table");
  private static final byte[] Q_HASH = Bytes.toBytes("hash");
  private static final byte[] Q_SUBTREE = Bytes.toBytes("subtreeHeight");
  private static final byte[] Q_REGIONS = Bytes.toBytes("regions");
  private static final byte[] Q_ROOT = Bytes.toBytes("root");
  private static final byte[] Q_ROOT_SEQ = Bytes.toBytes("rootSeq");
  private static final byte[] Q_CLEAN = Bytes.toBytes("cleanClose");
  private static final byte[] Q_EPOCH = Bytes.toBytes("writerEpoch");

  private final Connection connection;

  public VolumeCatalog(Connection connection) {
    this.connection = connection;
  }

  public Connection connection() {
    return connection;
  }

  /** Throws IllegalArgumentException naming the rule when {@code name} is not a valid name. */
  public static void checkName(String name) {
    if (name == null || !NAME.matcher(name).matches()) {
      throw new IllegalArgumentException("bad volume name '" + name + "': use 1-64 characters,"
          + " letters, digits, '-' or '_', starting with a letter or digit");
    }
  }

  public static TableName dataTable(String name) {
    return TableName.valueOf(NAMESPACE, "hb_" + name);
  }

  /** Creates the namespace and catalog table if missing. */
  public void ensureCatalog() throws IOException {
    try (Admin admin = connection.getAdmin()) {
      try {
        admin.createNamespace(NamespaceDescriptor.create(NAMESPACE).build());
      } catch (NamespaceExistException e) {
        // fine
      }
      if (!admin.tableExists(CATALOG_TABLE)) {
        try {
          admin.createTable(TableDescriptorBuilder.newBuilder(CATALOG_TABLE)
              .setColumnFamily(ColumnFamilyDescriptorBuilder.newBuilder(FAMILY)
                  .setMaxVersions(1).build())
              .build());
        } catch (TableExistsException e) {
          // created concurrently
        }
      }
    }
  }

  /** Creates a plain-HBase volume with default hash (SHA-256) and one region per 1 GiB. */
  public VolumeInfo create(String name, long sizeInBlocks, int blockSize) throws IOException {
    long bytes = sizeInBlocks * (long) blockSize;
    int regions = (int) Math.max(1, Math.min(64, bytes >> 30));
    return create(name, sizeInBlocks, blockSize, "SHA-256", regions);
  }

  /**
   * Creates a volume: validates name and geometry, claims the catalog row atomically (a clash
   * is reported, nothing is overwritten), then creates the pre-split data table.
   */
  public VolumeInfo create(String name, long sizeInBlocks, int blockSize, String hashAlgorithm,
      int regions) throws IOException {
    checkName(name);
    BlockGeometry.checkSize(sizeInBlocks, blockSize);
    io.salus.blockdriver.tree.TreeHashes.forName(hashAlgorithm); // validates
    if (regions < 1 || regions > 4096 || regions > sizeInBlocks) {
      throw new IllegalArgumentException("bad region count " + regions
          + ": use 1..4096 and at most one region per block");
    }
    ensureCatalog();
    TableName table = dataTable(name);
    Instant now = Instant.now();
    byte[] row = Bytes.toBytes(name);
    Put put = new Put(row)
        .addColumn(FAMILY, Q_KIND, Bytes.toBytes(KIND_HBASE))
        .addColumn(FAMILY, Q_BLOCK_SIZE, Bytes.toBytes(blockSize))
        .addColumn(FAMILY, Q_SIZE, Bytes.toBytes(sizeInBlocks))
        .addColumn(FAMILY, Q_CREATED, Bytes.toBytes(now.toEpochMilli()))
        .addColumn(FAMILY, Q_TABLE, Bytes.toBytes(table.getNameAsString()))
        .addColumn(FAMILY, Q_HASH, Bytes.toBytes(hashAlgorithm))
        .addColumn(FAMILY, Q_SUBTREE, Bytes.toBytes(DEFAULT_SUBTREE_HEIGHT))
        .addColumn(FAMILY, Q_REGIONS, Bytes.toBytes(regions))
        .addColumn(FAMILY, Q_ROOT_SEQ, Bytes.toBytes(0L))
        .addColumn(FAMILY, Q_CLEAN, Bytes.toBytes(true));
    try (Table t = connection.getTable(CATALOG_TABLE)) {
      boolean claimed = t.checkAndMutate(CheckAndMutate.newBuilder(row)
          .ifNotExists(FAMILY, Q_KIND).build(put)).isSuccess();
      if (!claimed) {
        throw new IllegalArgumentException("volume '" + name + "' already exists: pick another"
            + " name, or delete it first with 'salus volume delete " + name + "'");
      }
    }
    try (Admin admin = connection.getAdmin()) {
      if (admin.tableExists(table)) {
        throw new IllegalStateException("table " + table + " exists without a catalog entry;"
            + " drop it with the HBase shell (disable/drop '" + table + "') and retry");
      }
      TableDescriptorBuilder td = TableDescriptorBuilder.newBuilder(table)
          .setColumnFamily(ColumnFamilyDescriptorBuilder.newBuilder(HBaseVolume.FAMILY)
              .setMaxVersions(1)
              .setBloomFilterType(BloomType.ROW)
              .setBlocksize(64 * 1024)
              .build())
          .setValue("salus.volume", name);
      long per = (sizeInBlocks + regions - 1) / regions;
      if (regions > 1) {
        byte[][] splits = new byte[regions - 1][];
        for (int i = 1; i < regions; i++) {
          splits[i - 1] = Bytes.toBytes(i * per);
        }
        admin.createTable(td.build(), splits);
      } else {
        admin.createTable(td.build());
      }
    } catch (IOException | RuntimeException e) {
      deleteRow(name); // the claim is undone on every failure, so the suggested retry works
      throw e;
    }
    return describe(name).orElseThrow();
  }

  /**
   * Creates a Salus volume (kind {@link #KIND_SALUS}): claims the catalog row atomically (a clash is
   * reported, nothing is overwritten), then creates the three replica tables with
   * {@link io.salus.core.hbase.SalusTableLayout#create}; the claim is undone when that fails.
   */
  public VolumeInfo createSalus(io.salus.core.hbase.VolumeGeometry g) throws IOException {
    checkName(g.volume());
    BlockGeometry.checkSize(g.numBlocks(), g.blockSize());
    ensureCatalog();
    byte[] row = Bytes.toBytes(g.volume());
    Put put = new Put(row)
        .addColumn(FAMILY, Q_KIND, Bytes.toBytes(KIND_SALUS))
        .addColumn(FAMILY, Q_BLOCK_SIZE, Bytes.toBytes(g.blockSize()))
        .addColumn(FAMILY, Q_SIZE, Bytes.toBytes(g.numBlocks()))
        .addColumn(FAMILY, Q_CREATED, Bytes.toBytes(Instant.now().toEpochMilli()))
        .addColumn(FAMILY, Q_TABLE, Bytes.toBytes(
            io.salus.core.hbase.SalusTableLayout.tableName(g.volume(), 0).getNameAsString()
                .replaceAll("_r0$", "_r{0,1,2}")))
        .addColumn(FAMILY, Q_HASH, Bytes.toBytes("SHA-256"))
        .addColumn(FAMILY, Q_REGIONS, Bytes.toBytes(g.numRegions()))
        .addColumn(FAMILY, Q_ROOT_SEQ, Bytes.toBytes(0L))
        .addColumn(FAMILY, Q_CLEAN, Bytes.toBytes(true));
    try (Table t = connection.getTable(CATALOG_TABLE)) {
      boolean claimed = t.checkAndMutate(CheckAndMutate.newBuilder(row)
          .ifNotExists(FAMILY, Q_KIND).build(put)).isSuccess();
      if (!claimed) {
        throw new IllegalArgumentException("volume '" + g.volume() + "' already exists: pick"
            + " another name, or delete it first with 'salus volume delete " + g.volume() + "'");
      }
    }
    try (Admin admin = connection.getAdmin()) {
      io.salus.core.hbase.SalusTableLayout.create(admin, g);
    } catch (IOException | RuntimeException e) {
      deleteRow(g.volume());
      throw e;
    }
    return describe(g.volume()).orElseThrow();
  }

  public Optional<VolumeInfo> describe(String name) throws IOException {
    checkName(name);
    try (Table t = connection.getTable(CATALOG_TABLE)) {
      Result r = t.get(new Get(Bytes.toBytes(name)));
      return r.isEmpty() ? Optional.empty() : Optional.of(parse(r));
    } catch (TableNotFoundException e) {
      return Optional.empty();
    }
  }

  /** Like {@link #describe} but fails with a clear message when the volume does not exist. */
  public VolumeInfo require(String name) throws IOException {
    return describe(name).orElseThrow(() -> new IllegalArgumentException("no volume named '"
        + name + "': list volumes with 'salus volume list' or create it with"
        + " 'salus volume create " + name + " --size 1G'"));
  }

  public List<VolumeInfo> list() throws IOException {
    List<VolumeInfo> out = new ArrayList<>();
    try (Table t = connection.getTable(CATALOG_TABLE);
        ResultScanner s = t.getScanner(new Scan().addFamily(FAMILY))) {
      for (Result r : s) {
        out.add(parse(r));
      }
    } catch (TableNotFoundException e) {
      // no catalog yet: no volumes
    }
    return out;
  }

  /**
   * Deletes the volume's data table and catalog row. Returns false if it did not exist; refuses
   * ({@link VolumeException.InUse}) while a writer holds the volume's lease.
   */
  public boolean delete(String name) throws IOException {
    Optional<VolumeInfo> info = describe(name);
    if (info.isEmpty()) {
      return false;
    }
    Optional<String> holder = VolumeLease.holder(connection.getConfiguration(), name);
    if (holder.isPresent()) {
      throw new VolumeException.InUse("volume '" + name + "' is open for writing by "
          + holder.get() + "; stop that 'salus nbd' / 'salus up' before deleting the volume");
    }
    if (KIND_SALUS.equals(info.get().kind())) {
      try (Admin admin = connection.getAdmin()) {
        io.salus.core.hbase.SalusTableLayout.delete(admin, name);
      }
      deleteRow(name);
      return true;
    }
    TableName table = TableName.valueOf(info.get().table());
    try (Admin admin = connection.getAdmin()) {
      if (admin.tableExists(table)) {
        if (admin.isTableEnabled(table)) {
          admin.disableTable(table);
        }
        admin.deleteTable(table);
      }
    }
    deleteRow(name);
    return true;
  }

  private void deleteRow(String name) throws IOException {
    try (Table t = connection.getTable(CATALOG_TABLE)) {
      t.delete(new Delete(Bytes.toBytes(name)));
    }
  }

  /**
   * Increments and returns the volume's writer epoch (called by the lease holder at every
   * open; {@link WriteVersions} derives the cell versions of that open from it).
   */
  long nextWriterEpoch(String name) throws IOException {
    try (Table t = connection.getTable(CATALOG_TABLE)) {
      return t.incrementColumnValue(Bytes.toBytes(name), FAMILY, Q_EPOCH, 1);
    }
  }

  /**
   * Records the volume tree root (at mount, flush and close) and whether the writer closed
   * cleanly. Only the writer of the current writer epoch may record (the epoch is the fencing
   * token: a writer that lost its lease, whether or not it has noticed yet, had its epoch
   * superseded by the next writer's {@link #nextWriterEpoch}), and sequence numbers only grow.
   * Both are checked atomically with the write, against the values read.
   */
  void recordRoot(String name, byte[] root, long seq, boolean cleanClose, long writerEpoch)
      throws IOException {
    byte[] row = Bytes.toBytes(name);
    try (Table t = connection.getTable(CATALOG_TABLE)) {
      for (int attempt = 0; attempt < 10; attempt++) {
        Result r = t.get(new Get(row).addColumn(FAMILY, Q_ROOT_SEQ).addColumn(FAMILY, Q_EPOCH));
        byte[] cur = r.getValue(FAMILY, Q_ROOT_SEQ);
        byte[] epoch = r.getValue(FAMILY, Q_EPOCH);
        if (epoch == null || Bytes.toLong(epoch) != writerEpoch) {
          throw new VolumeException.Closed("volume '" + name + "' is fenced: this writer (epoch "
              + writerEpoch + ") was superseded by writer epoch "
              + (epoch == null ? "none" : Bytes.toLong(epoch)) + "; its root is not recorded");
        }
        if (cur != null && Bytes.toLong(cur) > seq) {
          throw new IllegalStateException("volume '" + name + "': refusing to record root at"
              + " sequence " + seq + " below the recorded sequence " + Bytes.toLong(cur)
              + " (sequence numbers only grow; is another writer active?)");
        }
        Put put = new Put(row)
            .addColumn(FAMILY, Q_ROOT, root)
            .addColumn(FAMILY, Q_ROOT_SEQ, Bytes.toBytes(seq))
            .addColumn(FAMILY, Q_CLEAN, Bytes.toBytes(cleanClose));
        org.apache.hadoop.hbase.filter.SingleColumnValueFilter sameEpoch =
            new org.apache.hadoop.hbase.filter.SingleColumnValueFilter(FAMILY, Q_EPOCH,
                org.apache.hadoop.hbase.CompareOperator.EQUAL, epoch);
        sameEpoch.setFilterIfMissing(true);
        org.apache.hadoop.hbase.filter.FilterList cond =
            new org.apache.hadoop.hbase.filter.FilterList(
                org.apache.hadoop.hbase.filter.FilterList.Operator.MUST_PASS_ALL, sameEpoch);
        if (cur != null) {
          org.apache.hadoop.hbase.filter.SingleColumnValueFilter sameSeq =
              new org.apache.hadoop.hbase.filter.SingleColumnValueFilter(FAMILY, Q_ROOT_SEQ,
                  org.apache.hadoop.hbase.CompareOperator.EQUAL, cur);
          sameSeq.setFilterIfMissing(true);
          cond.addFilter(sameSeq);
        }
        CheckAndMutate check = CheckAndMutate.newBuilder(row).ifMatches(cond).build(put);
        if (t.checkAndMutate(check).isSuccess()) {
          return;
        }
      }
      throw new IOException("volume '" + name + "': the recorded root kept changing under this"
          + " writer; is another writer active?");
    }
  }

  private static VolumeInfo parse(Result r) {
    String name = Bytes.toString(r.getRow());
    byte[] seq = r.getValue(FAMILY, Q_ROOT_SEQ);
    byte[] clean = r.getValue(FAMILY, Q_CLEAN);
    byte[] subtree = r.getValue(FAMILY, Q_SUBTREE);
    byte[] regions = r.getValue(FAMILY, Q_REGIONS);
    return new VolumeInfo(
        name,
        Bytes.toString(r.getValue(FAMILY, Q_KIND)),
        Bytes.toInt(r.getValue(FAMILY, Q_BLOCK_SIZE)),
        Bytes.toLong(r.getValue(FAMILY, Q_SIZE)),
        Instant.ofEpochMilli(Bytes.toLong(r.getValue(FAMILY, Q_CREATED))),
        Bytes.toString(r.getValue(FAMILY, Q_TABLE)),
        Bytes.toString(r.getValue(FAMILY, Q_HASH)),
        subtree == null ? DEFAULT_SUBTREE_HEIGHT : Bytes.toInt(subtree),
        regions == null ? 1 : Bytes.toInt(regions),
        r.getValue(FAMILY, Q_ROOT),
        seq == null ? 0 : Bytes.toLong(seq),
        clean == null || Bytes.toBoolean(clean));
  }

  public static String hex(byte[] b) {
    return b == null ? "-" : HexFormat.of().formatHex(b);
  }
}
