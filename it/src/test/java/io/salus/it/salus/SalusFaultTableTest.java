package io.salus.it.salus;

import static org.junit.jupiter.api.Assertions.*;

import io.salus.blockdriver.salus.SalusVolume;
import io.salus.blockdriver.volume.HBaseVolume;
import io.salus.blockdriver.volume.Volume;
import io.salus.blockdriver.volume.VolumeCatalog;
import io.salus.core.hbase.VolumeGeometry;
import io.salus.core.hbase.endpoint.VolumeAddressing;
import io.salus.it.hbase.endpoint.GetFaults;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.hbase.ServerName;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.RegionInfo;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.regionserver.HRegion;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * The fault table (the paper's Table 3.1, issue 14) on one real mini cluster: for each fault, the same
 * sequence-numbered write workload runs on a SalusVolume and on the plain-HBase baseline (HBaseVolume), the fault is
 * injected after {@value #FAULT_AT} writes were acknowledged, the workload goes on, then the volume is read back
 * (through the same mount while the fault is active, and again after a remount) and classified: Fresh (every
 * acknowledged write reads back), Corrupted (a block returned bytes no write wrote, without an error), Lost (an
 * acknowledged write is missing, or a block cannot be read); Ordered (what survives is the state after a prefix of
 * the issued writes). Generates {@code docs/robustness.md}:
 *
 * <pre>
 * mvn -B -o verify -pl it -am -DskipITs -Dtest=SalusFaultTableTest -Dsurefire.failIfNoSpecifiedTests=false \
 *   -Dsalus.faults.out=$PWD/docs/robustness.md
 * </pre>
 *
 * Only runs with {@code -Dsalus.faults.out} (a generator, several minutes; not part of the default test command).
 * It fails when a Salus row is not Fresh and Ordered after the remount, after the table is written.
 */
@EnabledIfSystemProperty(named = "salus.faults.out", matches = ".+")
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class SalusFaultTableTest {
  static final int BLOCK = SalusRegionRecoveryTest.BLOCK;
  static final long PER_REGION = 16;
  static final int REGIONS = 4;
  static final int N = 160;
  static final int WINDOW = 8;
  static final int FAULT_AT = 40;
  static SalusMiniCluster cluster;
  static final List<Row> rows = new ArrayList<>();
  static String loadBefore;
  static Instant started;

  record Row(String fault, String kind, String writes, String live, String whileFaulty, String afterRemount,
      String ordered, String notes) {
  }

  @BeforeAll
  static void start() throws Exception {
    started = Instant.now();
    loadBefore = load();
    // the run is longer than HBase's 20-minute abort timeout, whose default task halts the JVM (the killed server's)
    cluster = new SalusMiniCluster(c -> {
      c.set("hbase.regionserver.abort.timeout.task", NoHaltOnAbortTimeout.class.getName());
      LoseDataNodeDisk.configure(c);
    });
  }

  @AfterAll
  static void stop() throws Exception {
    try {
      if (!rows.isEmpty()) {
        Path out = Path.of(System.getProperty("salus.faults.out"));
        if (Boolean.getBoolean("salus.faults.merge") && Files.exists(out)) {
          mergeRows(out);
        } else {
          writeTable(out);
        }
      }
    } finally {
      if (cluster != null) {
        cluster.close();
      }
    }
  }

  static String load() {
    try {
      return Files.readString(Path.of("/proc/loadavg")).trim().split(" ", 4)[0];
    } catch (Exception e) {
      return "?";
    }
  }

  // ------------------------------------------------------------------ volume kinds

  /** One of the two volume kinds under test. */
  interface Kind {
    String label();

    Volume create(VolumeGeometry g) throws Exception;

    /** A new mount of the volume; notes why a first attempt was refused. */
    Volume remount(VolumeGeometry g, StringBuilder notes) throws Exception;
  }

  static final Kind SALUS = new Kind() {
    public String label() {
      return "SalusVolume";
    }

    public Volume create(VolumeGeometry g) throws Exception {
      cluster.createVolume(g);
      return SalusVolume.open(cluster.connection(), g.volume());
    }

    public Volume remount(VolumeGeometry g, StringBuilder notes) throws Exception {
      try {
        cluster.awaitPlaced(g);
      } catch (AssertionError e) {
        notes.append("at remount: ").append(oneLine(e)).append(". ");
      }
      CompletableFuture<SalusVolume> f = CompletableFuture.supplyAsync(() -> {
        try {
          return SalusVolume.open(cluster.connection(), g.volume());
        } catch (java.io.IOException e) {
          throw new java.io.UncheckedIOException(e);
        }
      });
      try {
        return f.get(180, TimeUnit.SECONDS);
      } catch (java.util.concurrent.TimeoutException e) {
        f.thenAccept(SalusVolume::close);
        throw new java.io.IOException("the mount did not complete within 180 s");
      } catch (java.util.concurrent.ExecutionException e) {
        throw e.getCause() instanceof Exception ? (Exception) e.getCause() : e;
      }
    }
  };

  static final Kind HBASE = new Kind() {
    public String label() {
      return "HBaseVolume (baseline)";
    }

    public Volume create(VolumeGeometry g) throws Exception {
      new VolumeCatalog(cluster.connection()).create(g.volume(), g.numBlocks(), BLOCK, "SHA-256", 2);
      TableName t = VolumeCatalog.dataTable(g.volume());
      try (Admin admin = cluster.connection().getAdmin()) {
        admin.modifyTable(TableDescriptorBuilder.newBuilder(admin.getDescriptor(t))
            .setCoprocessor(CorruptReadsObserver.class.getName()).build());
      }
      return HBaseVolume.open(cluster.connection(), g.volume());
    }

    public Volume remount(VolumeGeometry g, StringBuilder notes) throws Exception {
      try {
        return HBaseVolume.open(cluster.connection(), g.volume());
      } catch (Exception e) {
        notes.append("remount refused: ").append(oneLine(e)).append("; read with --accept-current-state. ");
        return HBaseVolume.open(cluster.connection(), g.volume(), true);
      }
    }
  };

  static String oneLine(Throwable e) {
    String m = String.valueOf(e.getMessage());
    m = m.replace('\n', ' ').replace('|', '/');
    return m.length() > 160 ? m.substring(0, 160) + "…" : m;
  }

  // ------------------------------------------------------------------ workload and classification

  /** The volume read block by block: bytes, and which blocks could not be read (null bytes there). */
  record Readback(byte[] bytes, boolean[] unreadable, String firstError) {
    int unreadableCount() {
      int c = 0;
      for (boolean u : unreadable) {
        c += u ? 1 : 0;
      }
      return c;
    }
  }

  static Readback readAll(VolumeGeometry g, Volume v) {
    int nb = (int) g.numBlocks();
    byte[] all = new byte[nb * BLOCK];
    boolean[] bad = new boolean[nb];
    String first = null;
    int timeouts = 0;
    for (int b = 0; b < nb; b++) {
      if (timeouts >= 2) { // a read that hangs: the rest would too (a stalled region); not attempted
        bad[b] = true;
        continue;
      }
      try {
        byte[] d = v.read(b, 1).get(60, TimeUnit.SECONDS);
        System.arraycopy(d, 0, all, b * BLOCK, BLOCK);
      } catch (java.util.concurrent.TimeoutException e) {
        bad[b] = true;
        timeouts++;
        if (first == null) {
          first = "block " + b + ": no answer within 60 s (later blocks not attempted after 2 such reads)";
        }
      } catch (Exception e) {
        bad[b] = true;
        if (first == null) {
          first = "block " + b + ": " + oneLine(e.getCause() == null ? e : e.getCause());
        }
      }
    }
    return new Readback(all, bad, first);
  }

  /** Fresh / Corrupted / Lost, with the evidence. */
  static String freshness(VolumeGeometry g, int n, boolean[] acked, Readback r) {
    int corrupted = 0;
    int stale = 0;
    for (long b = 0; b < g.numBlocks(); b++) {
      if (r.unreadable()[(int) b]) {
        continue;
      }
      long held = SalusRegionRecoveryTest.writeOf(r.bytes(), b); // write number + 1, 0 none, -1 not a workload block
      if (held < 0) {
        corrupted++;
        continue;
      }
      long lastAcked = -1;
      for (int i = 0; i < n; i++) {
        long f = SalusRegionRecoveryTest.firstBlock(g, i);
        if (acked[i] && b >= f && b < f + SalusRegionRecoveryTest.count(i)) {
          lastAcked = i;
        }
      }
      if (held - 1 < lastAcked) {
        stale++;
      }
    }
    int unreadable = r.unreadableCount();
    if (corrupted > 0) {
      return "**Corrupted** (" + corrupted + " blocks returned bytes no write wrote, without an error)";
    }
    if (stale > 0 || unreadable > 0) {
      return "**Lost** (" + (stale > 0 ? stale + " blocks older than their last acknowledged write" : "")
          + (stale > 0 && unreadable > 0 ? "; " : "")
          + (unreadable > 0 ? unreadable + " blocks unreadable or not attempted, e.g. " + r.firstError() : "") + ")";
    }
    return "Fresh";
  }

  /** Whether the readable state is the state after some prefix of the issued writes. */
  static String ordered(VolumeGeometry g, int issued, Readback r) {
    if (r.unreadableCount() > 0) {
      return "unknown (unreadable blocks)";
    }
    for (int p = issued; p >= 0; p--) {
      if (java.util.Arrays.equals(SalusRegionRecoveryTest.expected(g, p), r.bytes())) {
        return "Ordered (prefix of " + p + " writes)";
      }
    }
    return "**Not ordered**";
  }

  // ------------------------------------------------------------------ one row

  interface Fault {
    /** Injects the fault; notes what was done. */
    void inject(Kind kind, VolumeGeometry g, Volume v, StringBuilder notes) throws Exception;

    /** Ends a fault that is a state of a server (not one that destroyed data). */
    default void heal() {
    }

    /** After the workload (the fault still active): notes what the volume did about it. Default: nothing. */
    default void after(Kind kind, Volume v, StringBuilder notes) {
    }
  }

  static int volumes;

  /**
   * Drops the replica tables of the Salus volumes of the rows before (their rows are written). A lost DataNode disk
   * takes every replica on its server with it (replication 1): with the earlier rows' ~40 replica regions still there,
   * the HBase row's disk loss set off a reopen and rebuild of all of them, and the Salus row's new volume was not placed
   * within {@link SalusMiniCluster#DEADLINE_MS} (twice, 2026-12-07: "replica regions not on three servers with
   * endpoints"). Each row is meant to run on a fresh volume of its own. A table that does not disable within a minute
   * is left (noted on stdout).
   */
  static void dropEarlierSalusVolumes() throws Exception {
    try (Admin admin = cluster.connection().getAdmin()) {
      for (TableName t : admin.listTableNames(java.util.regex.Pattern.compile("salus:flt\\d+s_r[0-2]"))) {
        try {
          if (admin.isTableEnabled(t)) {
            admin.disableTableAsync(t).get(1, TimeUnit.MINUTES);
          }
          admin.deleteTableAsync(t).get(1, TimeUnit.MINUTES);
        } catch (Exception e) {
          System.out.println("fault table: could not drop " + t + " before the disk-loss rows: " + e);
        }
      }
    }
  }

  Row run(String faultName, Kind kind, Fault fault) throws Exception {
    String name = "flt" + (volumes++) + (kind == SALUS ? "s" : "h");
    VolumeGeometry g = new VolumeGeometry(name, REGIONS * PER_REGION * BLOCK, BLOCK, PER_REGION);
    StringBuilder notes = new StringBuilder();
    Volume v = kind.create(g);
    Row row;
    try {
      SalusRegionRecoveryTest.Workload w = new SalusRegionRecoveryTest.Workload(g, v, N, WINDOW);
      long end = System.currentTimeMillis() + SalusMiniCluster.DEADLINE_MS;
      while (w.acked() < FAULT_AT && System.currentTimeMillis() < end) {
        Thread.sleep(50);
      }
      long ackedAtFault = w.acked();
      boolean[] acked;
      if (fault instanceof ClientCrash) {
        w.stop();
        acked = w.ackedFlags(); // what was acknowledged before it died
        fault.inject(kind, g, v, notes);
        v = null; // dead: heal() releases what it left open
        String[] after = remountAndRead(kind, g, acked, w.issued(), true, notes);
        row = new Row(faultName, kind.label(), count(acked) + " / " + w.issued()
            + " acknowledged when the writer died", after[0].startsWith("**") ? "**no**"
            : "yes (new writes commit after the remount)", "n/a (writer dead)", after[0], after[1],
            notes.toString().trim());
      } else {
        try {
          fault.inject(kind, g, v, notes);
        } catch (Exception | AssertionError e) {
          notes.append("while injecting: ").append(oneLine(e)).append(". ");
        }
        boolean done = w.await(SalusMiniCluster.DEADLINE_MS);
        fault.after(kind, v, notes);
        if (!done && kind == SALUS) {
          SalusRegionRecoveryTest.dump(cluster, g); // which replicas hold what, for the stalled region(s)
        }
        acked = w.ackedFlags();
        int failed = w.failed();
        String writes = count(acked) + " / " + w.issued() + " acknowledged (fault after " + ackedAtFault + ")"
            + (failed > 0 ? ", " + failed + " failed" : "");
        String live = !done ? "**stalled** (writes outstanding after " + SalusMiniCluster.DEADLINE_MS / 1000 + " s)"
            : failed > 0 ? "**no** (" + failed + " writes failed)" : "yes";
        String whileFaulty = freshness(g, N, acked, readAll(g, v));
        try {
          v.close();
        } catch (Exception e) {
          notes.append("close: ").append(oneLine(e)).append(". ");
        }
        v = null;
        String[] after = remountAndRead(kind, g, acked, w.issued(), false, notes);
        row = new Row(faultName, kind.label(), writes, live, whileFaulty, after[0], after[1], notes.toString().trim());
      }
    } finally {
      fault.heal();
      if (v != null) {
        v.close();
      }
    }
    rows.add(row);
    System.out.println("fault row: " + row);
    return row;
  }

  static int count(boolean[] flags) {
    int n = 0;
    for (boolean f : flags) {
      n += f ? 1 : 0;
    }
    return n;
  }

  /**
   * A new mount read back and classified: {freshness, order}. With {@code writeAfter} the mount must also take new
   * writes (after a writer's crash).
   */
  static String[] remountAndRead(Kind kind, VolumeGeometry g, boolean[] acked, int issued, boolean writeAfter,
      StringBuilder notes) {
    Volume again = null;
    try {
      again = kind.remount(g, notes);
      if (again instanceof SalusVolume sv && sv.mountLcp() != null) {
        notes.append("The remount ran recovery: LCP seq ").append(sv.mountLcp().seq())
            .append(" recorded in ZooKeeper (recovery epoch ").append(sv.mountLcp().epoch())
            .append("), the previous writer's batches ").append(sv.mountAborts())
            .append(" aborted at their leader replicas. ");
      }
      Readback r = readAll(g, again);
      String[] result = {freshness(g, N, acked, r), ordered(g, issued, r)};
      if (writeAfter) {
        for (int extra = 0; extra < 5; extra++) {
          again.write(SalusRegionRecoveryTest.firstBlock(g, extra), SalusRegionRecoveryTest.data(g, extra), true)
              .get(SalusMiniCluster.DEADLINE_MS, TimeUnit.MILLISECONDS);
        }
      }
      return result;
    } catch (Exception e) {
      System.out.println("remount of " + g.volume() + " failed: " + e); // the whole message (the row keeps 160 chars)
      return new String[] {(writeAfter ? "**not mountable or not writable**: " : "**not mountable**: ") + oneLine(e),
          "unknown"};
    } finally {
      if (again != null) {
        again.close();
      }
    }
  }

  static void assertSalusRow(Row r) {
    assertEquals("Fresh", r.afterRemount(), "Salus row " + r);
    assertTrue(r.ordered().startsWith("Ordered"), "Salus row " + r);
    assertTrue(r.live().startsWith("yes"), "Salus row " + r);
  }

  // ------------------------------------------------------------------ the faults

  static ServerName metaServer() {
    try {
      return cluster.util.getMiniHBaseCluster().getServerHoldingMeta();
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  /** The region server hosting region {@code index} of the plain volume's data table. */
  static ServerName hbaseServer(VolumeGeometry g, int index) throws Exception {
    TableName t = VolumeCatalog.dataTable(g.volume());
    try (Admin admin = cluster.connection().getAdmin()) {
      List<RegionInfo> regions = admin.getRegions(t);
      regions.sort(RegionInfo.COMPARATOR);
      RegionInfo ri = regions.get(index);
      return cluster.connection().getRegionLocator(t).getRegionLocation(ri.getStartKey(), true).getServerName();
    }
  }

  /**
   * The faulty server of a baseline row: a server of the plain volume's two regions that does not hold hbase:meta, or
   * (noted) the first region's server when both do.
   */
  static ServerName hbaseVictim(VolumeGeometry g, ServerName meta, StringBuilder notes) throws Exception {
    for (int i = 0; i < 2; i++) {
      ServerName s = hbaseServer(g, i);
      if (!s.equals(meta)) {
        return s;
      }
    }
    notes.append("the faulty server also holds hbase:meta. ");
    return hbaseServer(g, 0);
  }

  /** Stops a row's faulty server when the row heals (null: none was chosen); a failure is logged, not thrown. */
  static void stopQuietly(ServerName victim) {
    if (victim != null) {
      try {
        cluster.stopServer(victim);
      } catch (Exception e) {
        System.out.println("stopping " + victim + " failed: " + e);
      }
    }
  }

  static HRegion hbaseRegion(VolumeGeometry g, int index) throws Exception {
    TableName t = VolumeCatalog.dataTable(g.volume());
    List<HRegion> rs = new ArrayList<>(cluster.util.getMiniHBaseCluster().getRegions(t));
    rs.sort((a, b) -> RegionInfo.COMPARATOR.compare(a.getRegionInfo(), b.getRegionInfo()));
    return rs.get(index);
  }

  /** Deletes the store files of {@code region} (every file in its column family directories) on HDFS. */
  static int deleteStoreFiles(org.apache.hadoop.fs.Path regionDir) throws Exception {
    return deleteStoreFiles(cluster.util.getDFSCluster().getFileSystem(), regionDir);
  }

  /** Deletes every store file of every family of a (closed) region; returns how many. */
  static int deleteStoreFiles(FileSystem fs, org.apache.hadoop.fs.Path regionDir) throws Exception {
    int n = 0;
    for (FileStatus fam : fs.listStatus(regionDir)) {
      if (!fam.isDirectory() || fam.getPath().getName().startsWith(".")
          || fam.getPath().getName().equals("recovered.edits")) {
        continue;
      }
      for (FileStatus f : fs.listStatus(fam.getPath())) {
        if (fs.delete(f.getPath(), true)) {
          n++;
        }
      }
    }
    return n;
  }

  static final Fault CRASH = (kind, g, v, notes) -> {
    ServerName victim = null;
    if (kind == SALUS) {
      for (int r = 0; r < g.numRegions() && victim == null; r++) {
        for (int k = 0; k < 3; k++) {
          ServerName s = cluster.locate(g, r, k);
          if (s != null && !s.equals(metaServer())) {
            victim = s;
            break;
          }
        }
      }
    } else {
      for (int i = 0; i < 2 && victim == null; i++) {
        ServerName s = hbaseServer(g, i);
        if (!s.equals(metaServer())) {
          victim = s;
        }
      }
      if (victim == null) {
        victim = hbaseServer(g, 0);
        notes.append("the killed server also held hbase:meta. ");
      }
    }
    ServerName fresh = cluster.killAndReplace(victim);
    notes.append("killed ").append(victim.getHostAndPort()).append(" (abort: memstores lost), started ")
        .append(fresh.getHostAndPort()).append(". ");
    if (kind == SALUS) {
      cluster.awaitPlaced(g);
    }
  };

  static final class CorruptReads implements Fault {
    @Override
    public void inject(Kind kind, VolumeGeometry g, Volume v, StringBuilder notes) throws Exception {
      if (kind == SALUS) {
        ServerName s = cluster.locate(g, 0, 0);
        VolumeAddressing a = new VolumeAddressing(g);
        int n = 0;
        for (int r = 0; r < g.numRegions(); r++) {
          for (int k = 0; k < 3; k++) {
            if (s.equals(cluster.locate(g, r, k))) {
              GetFaults.corrupt.add(a.replica(r, k));
              n++;
            }
          }
        }
        notes.append(s.getHostAndPort()).append(" returns every block it reads with one bit flipped (").append(n)
            .append(" replica regions there). ");
      } else {
        ServerName s = hbaseServer(g, 0);
        CorruptReadsObserver.servers.add(s.toString());
        notes.append(s.getHostAndPort()).append(" returns every block it reads with one bit flipped. ");
      }
    }

    @Override
    public void heal() {
      GetFaults.corrupt.clear();
      CorruptReadsObserver.servers.clear();
    }
  }

  static final Fault DELETE_FILES = (kind, g, v, notes) -> {
    FileSystem fs = cluster.util.getDFSCluster().getFileSystem();
    try (Admin admin = cluster.connection().getAdmin()) {
      if (kind == SALUS) {
        HRegion victim = cluster.region(g, 1, 1);
        org.apache.hadoop.fs.Path regionDir = victim.getRegionFileSystem().getRegionDir();
        org.apache.hadoop.fs.Path log = ((io.salus.core.hbase.storage.HdfsReplicaStorage) cluster.endpoint(g, 1, 1)
            .storage()).replicaDisk().directory();
        byte[] name = victim.getRegionInfo().getRegionName();
        admin.flush(victim.getTableDescriptor().getTableName());
        admin.unassign(name, true);
        int files = deleteStoreFiles(regionDir);
        boolean logGone = fs.delete(log, true);
        admin.assign(name);
        notes.append("replica region 1/1: ").append(files).append(" store files and ")
            .append(logGone ? "its Salus log directory" : "no Salus log directory (none found)")
            .append(" deleted through the NameNode while closed, then reopened. ");
        cluster.awaitPlaced(g);
      } else {
        TableName t = VolumeCatalog.dataTable(g.volume());
        admin.flush(t);
        HRegion victim = hbaseRegion(g, 0);
        org.apache.hadoop.fs.Path regionDir = victim.getRegionFileSystem().getRegionDir();
        byte[] name = victim.getRegionInfo().getRegionName();
        admin.unassign(name, true);
        int files = deleteStoreFiles(regionDir);
        admin.assign(name);
        notes.append("data region 0 of 2: ").append(files)
            .append(" store files deleted through the NameNode while closed (after a flush), then reopened. ");
      }
    }
  };

  /** The writer dies with writes in flight (Salus: its protocol loop stops, its lease is released). */
  static class ClientCrash implements Fault {
    SalusVolume crashed;

    @Override
    public void inject(Kind kind, VolumeGeometry g, Volume v, StringBuilder notes) throws Exception {
      if (kind == HBASE) {
        io.salus.blockdriver.volume.HBaseVolumeCrash.crash((io.salus.blockdriver.volume.HBaseVolume) v);
        notes.append("the writer died with its unacknowledged writes in flight: what it had handed to HBase ")
            .append("still lands, nothing else is sent (batches waiting behind an overlapping write or their ")
            .append("dirty marker, tree nodes, the clean root); its lease released. ");
        return;
      }
      crashed = (SalusVolume) v;
      io.salus.blockdriver.salus.SalusVolumeCrash.crash(crashed);
      notes.append("the writer's protocol loop stopped with its unacknowledged writes in flight (what it had handed ")
          .append("to its link still goes out), its lease released; the next mount fences it. ");
    }

    @Override
    public void heal() {
      if (crashed != null) {
        io.salus.blockdriver.salus.SalusVolumeCrash.release(crashed);
      }
    }
  }

  /**
   * The writer dies right after sending a batch to only some of its regions (issue 14, lcp18): a two-block write across
   * a region boundary whose part for the second region never left the client. Salus: the batch's sub-batch to region
   * 1 is not sent (its BatchInfo and region 0's sub-batch are), then the writer dies ({@code
   * SalusVolume.crashWithPartialBatchForTest}); the next mount must run identifyLCP and abort it. Baseline: the rows of
   * the write's first block reach HBase, those of the second do not, then the writer dies ({@code
   * HBaseVolume.writePartlyThenCrashForTest}). The write's bytes are 0xEE, which no workload write writes: read back,
   * they make the row Corrupted (a torn write visible).
   */
  static final class PartialBatchCrash extends ClientCrash {
    @Override
    public void inject(Kind kind, VolumeGeometry g, Volume v, StringBuilder notes) throws Exception {
      byte[] marker = new byte[2 * BLOCK];
      java.util.Arrays.fill(marker, (byte) 0xEE);
      long first = kind == SALUS ? PER_REGION - 1 : g.numBlocks() / 2 - 1;
      if (kind == HBASE) {
        io.salus.blockdriver.volume.HBaseVolumeCrash.writePartlyThenCrash((HBaseVolume) v, first, marker,
            b -> b == first);
        notes.append("a write of blocks ").append(first).append("-").append(first + 1)
            .append(" (0xEE bytes) had only its first block's row sent to HBase when the writer died; ")
            .append("nothing else is sent (tree nodes, clean root); its lease released. ");
        return;
      }
      crashed = (SalusVolume) v;
      long id = io.salus.blockdriver.salus.SalusVolumeCrash.crashWithPartialBatch(crashed, List.of(
          new io.salus.core.protocol.client.BlockWrite(first, java.util.Arrays.copyOf(marker, BLOCK)),
          new io.salus.core.protocol.client.BlockWrite(first + 1, java.util.Arrays.copyOf(marker, BLOCK))),
          java.util.Set.of(0));
      notes.append("batch ").append(id).append(" (blocks ").append(first).append("-").append(first + 1)
          .append(", 0xEE bytes) was sent to region 0 and its leader, not to region 1, when the writer died; ")
          .append("its lease released. ");
    }
  }

  static final class RefuseReads implements Fault {
    @Override
    public void inject(Kind kind, VolumeGeometry g, Volume v, StringBuilder notes) throws Exception {
      if (kind == SALUS) {
        ServerName s = cluster.locate(g, 0, 0);
        VolumeAddressing a = new VolumeAddressing(g);
        int n = 0;
        for (int r = 0; r < g.numRegions(); r++) {
          for (int k = 0; k < 3; k++) {
            if (s.equals(cluster.locate(g, r, k))) {
              GetFaults.silent.add(a.replica(r, k));
              n++;
            }
          }
        }
        notes.append(s.getHostAndPort()).append(" never answers a read (").append(n)
            .append(" replica regions there; writes still answered: the withholding row below is the one for ")
            .append("writes). ");
      } else {
        ServerName s = hbaseServer(g, 0);
        CorruptReadsObserver.refusing.add(s.toString());
        notes.append(s.getHostAndPort()).append(" refuses every read of the volume's table. ");
      }
    }

    @Override
    public void heal() {
      GetFaults.silent.clear();
      CorruptReadsObserver.refusing.clear();
    }
  }

  /**
   * A region server withholds its replies to writes (issue 14, the paper's "refuses writes" row): Salus: the replicas on
   * it send no PUT outcome and no FLUSH confirmation to the client (they still forward, log and apply); the volume
   * names them silent after {@code salus.volume.replace-silent-after.ms} (default 60 s) and asks the master to replace
   * them (RRS replacement onto the spare started here); the retransmitted writes commit at the new incarnations.
   * Baseline: the server refuses every write to the volume's table (DoNotRetryIOException), HBase has no replacement.
   * Afterwards the faulty server is stopped (its regions reassigned), so later rows again see three servers, each
   * paired with its own DataNode.
   */
  static final class WithholdWriteReplies implements Fault {
    static final String FAULT = "a region server refuses (withholds) its replies to writes";
    ServerName victim;

    @Override
    public void inject(Kind kind, VolumeGeometry g, Volume v, StringBuilder notes) throws Exception {
      ServerName meta = metaServer();
      int n = 0;
      if (kind == SALUS) {
        for (int r = 0; r < g.numRegions() && victim == null; r++) {
          for (int k = 0; k < 3 && victim == null; k++) {
            ServerName s = cluster.locate(g, r, k);
            if (s != null && !s.equals(meta)) {
              victim = s;
            }
          }
        }
        for (int r = 0; r < g.numRegions(); r++) {
          for (int k = 0; k < 3; k++) {
            n += victim.equals(cluster.locate(g, r, k)) ? 1 : 0;
          }
        }
      } else {
        victim = hbaseVictim(g, meta, notes);
      }
      if (kind == SALUS) {
        GetFaults.withholdWriteReplies.add(victim.toString());
      } else {
        CorruptReadsObserver.refusingWrites.add(victim.toString());
      }
      // the fault first (the workload goes on meanwhile), then the spare
      ServerName spare = cluster.startSpare(Math.max(0, dataNodeOf(victim)));
      if (kind == SALUS) {
        notes.append(victim.getHostAndPort()).append(" withholds its replicas' replies to writes (PUT outcomes, FLUSH ")
            .append("confirmations; ").append(n).append(" replica regions there); spare ")
            .append(spare.getHostAndPort()).append(" started. ");
      } else {
        notes.append(victim.getHostAndPort()).append(" refuses every write to the volume's table; spare ")
            .append(spare.getHostAndPort()).append(" started (HBase does not move regions off a server that ")
            .append("refuses writes). ");
      }
    }

    @Override
    public void after(Kind kind, Volume v, StringBuilder notes) {
      if (v instanceof SalusVolume sv) {
        notes.append("The volume asked the master for ").append(sv.counters().get("replacementsAsked"))
            .append(" RRS replacement(s), ").append(sv.counters().get("replacementsDone")).append(" done; last: ")
            .append(String.valueOf(sv.lastReplacement()).replaceAll("\\s+", " ")).append(". ")
            .append(sv.counters().get("batchesOnLeaderCommit")).append(" batch(es) acknowledged on their leader ")
            .append("region's COMMIT (a PUT outcome withheld, or a new replica that caught up past the batch). ");
      }
    }

    @Override
    public void heal() {
      GetFaults.withholdWriteReplies.clear();
      CorruptReadsObserver.refusingWrites.clear();
      stopQuietly(victim);
    }
  }

  /**
   * A region server reorders the writes it passes on or applies (issue 14, the paper's "reorders writes" row; the
   * simulator's REORDER_FORWARD on a real cluster). Salus: every replica on the server holds back every other
   * sub-batch of the client's writes it forwards down its chain and sends it right after the next sub-batch it forwards
   * to that successor (the later one first; copies of it held too, for at most 2 s): the successor receives the
   * client's sub-batches out of order ({@code GetFaults.reorderForwards}). Replicas there still log, apply and answer.
   * Baseline: the server applies the writes it receives out of order: every other write's mini-batch to a region is held
   * before its WAL append until the next write to that region is applied (at most 1 s; {@code
   * CorruptReadsObserver.reorderingWrites}); HBase acknowledges each write after it is applied. As in the withholding
   * row, a spare is started (Salus replaces a replica only if the client names it silent) and the faulty server is
   * stopped afterwards, so later rows again see three servers.
   */
  static final class ReorderWrites implements Fault {
    static final String FAULT = "a region server reorders writes";
    ServerName victim;
    long held0;
    long reordered0;
    /** Held back, and sent or applied after a later one, during this row (set by {@link #after}). */
    long reordered;

    @Override
    public void inject(Kind kind, VolumeGeometry g, Volume v, StringBuilder notes) throws Exception {
      ServerName meta = metaServer();
      int n = 0;
      int heads = 0;
      if (kind == SALUS) {
        // a server holding a chain's head (it forwards the client's sub-batches), not hbase:meta if possible
        for (int r = 0; r < g.numRegions() && victim == null; r++) {
          ServerName s = cluster.locate(g, r, 0);
          if (s != null && !s.equals(meta)) {
            victim = s;
          }
        }
        if (victim == null) {
          victim = cluster.locate(g, 0, 0);
          notes.append("the faulty server also holds hbase:meta. ");
        }
        for (int r = 0; r < g.numRegions(); r++) {
          for (int k = 0; k < 3; k++) {
            boolean there = victim.equals(cluster.locate(g, r, k));
            n += there ? 1 : 0;
            heads += there && k == 0 ? 1 : 0;
          }
        }
        held0 = GetFaults.held.get();
        reordered0 = GetFaults.reordered.get();
        GetFaults.reorderForwards.add(victim.toString());
      } else {
        victim = hbaseVictim(g, meta, notes);
        held0 = CorruptReadsObserver.writesHeld.get();
        reordered0 = CorruptReadsObserver.writesReordered.get();
        CorruptReadsObserver.reorderingWrites.add(victim.toString());
      }
      ServerName spare = cluster.startSpare(Math.max(0, dataNodeOf(victim)));
      if (kind == SALUS) {
        notes.append(victim.getHostAndPort()).append(" reorders the client's writes its replicas pass down their ")
            .append("chains: every other sub-batch a replica there forwards is held back (its retransmitted copies ")
            .append("too) and sent after the next one, or after ").append(GetFaults.MAX_HOLD_MS)
            .append(" ms when none came ")
            .append("(").append(n).append(" replica regions there, ").append(heads).append(" of them chain heads); ")
            .append("spare ").append(spare.getHostAndPort()).append(" started. ");
      } else {
        notes.append(victim.getHostAndPort()).append(" applies the writes it receives out of order: every other ")
            .append("write to a region there is held before its WAL append until the next one is applied (at most ")
            .append(CorruptReadsObserver.REORDER_HOLD_MS).append(" ms; each write acknowledged once applied); spare ")
            .append(spare.getHostAndPort()).append(" started. ");
      }
    }

    @Override
    public void after(Kind kind, Volume v, StringBuilder notes) {
      reordered = (kind == SALUS ? GetFaults.reordered.get() : CorruptReadsObserver.writesReordered.get())
          - reordered0;
      if (kind == SALUS) {
        notes.append(GetFaults.held.get() - held0).append(" sub-batches held back, ")
            .append(GetFaults.reordered.get() - reordered0).append(" of them sent after a later one (the others ")
            .append("after the hold: no later sub-batch to that successor came meanwhile). ");
        if (v instanceof SalusVolume sv) {
          notes.append("The volume asked the master for ").append(sv.counters().get("replacementsAsked"))
              .append(" RRS replacement(s). ");
        }
      } else {
        notes.append(CorruptReadsObserver.writesHeld.get() - held0).append(" writes held back, ")
            .append(CorruptReadsObserver.writesReordered.get() - reordered0)
            .append(" of them applied after a later one. ");
      }
    }

    @Override
    public void heal() {
      GetFaults.reorderForwards.clear();
      CorruptReadsObserver.reorderingWrites.clear();
      stopQuietly(victim);
    }
  }

  /** The DataNode paired with region server {@code s} (its favored node), as an index into the mini DFS. */
  static int dataNodeOf(ServerName s) {
    return cluster.dataNodeOf(s);
  }

  /**
   * Flips bytes in every replica that DataNode {@code dn} holds of the files under {@code dirs} (block files on its
   * disk, behind HDFS's back; their checksums no longer match). Returns the number of replicas corrupted.
   */
  static int corruptReplicas(int dn, List<org.apache.hadoop.fs.Path> dirs, StringBuilder notes) throws Exception {
    org.apache.hadoop.hdfs.DistributedFileSystem fs = cluster.util.getDFSCluster().getFileSystem();
    String xfer = cluster.dataNodes.get(dn);
    int n = 0;
    int skipped = 0;
    int vanished = 0;
    for (org.apache.hadoop.fs.Path dir : dirs) {
      org.apache.hadoop.fs.RemoteIterator<org.apache.hadoop.fs.LocatedFileStatus> it;
      try {
        it = fs.listFiles(dir, true);
      } catch (java.io.FileNotFoundException gone) {
        continue;
      }
      while (true) {
        org.apache.hadoop.fs.LocatedFileStatus f;
        try {
          if (!it.hasNext()) {
            break;
          }
          f = it.next();
        } catch (java.io.FileNotFoundException gone) {
          vanished++; // a subdirectory removed while it was listed: the rest of this directory is not corrupted
          break;
        }
        java.util.List<org.apache.hadoop.hdfs.protocol.LocatedBlock> blocks;
        try {
          blocks = fs.getClient().getLocatedBlocks(f.getPath().toUri().getPath(), 0, Long.MAX_VALUE)
              .getLocatedBlocks();
        } catch (java.io.FileNotFoundException gone) {
          vanished++; // listed, then renamed or deleted (a checkpoint's .tmp file, a compacted store file)
          continue;
        }
        for (var lb : blocks) {
          boolean there = false;
          for (var loc : lb.getLocations()) {
            there |= ("127.0.0.1:" + loc.getXferPort()).equals(xfer);
          }
          if (!there || lb.getBlockSize() == 0) {
            continue;
          }
          try {
            cluster.util.getDFSCluster().corruptReplica(dn, lb.getBlock());
            n++;
          } catch (Exception e) {
            skipped++; // e.g. a replica still being written (an open log segment)
          }
        }
      }
    }
    if (skipped > 0) {
      notes.append(skipped).append(" replicas not corruptible (being written). ");
    }
    if (vanished > 0) {
      notes.append(vanished).append(" files or directories gone while listed (renamed or deleted), skipped. ");
    }
    return n;
  }

  /** Closes and reopens {@code region} (drops its block cache; the reopen reads its files again). */
  static void reopen(Admin admin, RegionInfo region) throws Exception {
    admin.unassign(region.getRegionName(), true);
    admin.assign(region.getRegionName());
  }

  static final Fault FLIP_DATANODE_BYTES = (kind, g, v, notes) -> {
    org.apache.hadoop.fs.Path root = org.apache.hadoop.hbase.util.CommonFSUtils.getRootDir(cluster.util.getConfiguration());
    try (Admin admin = cluster.connection().getAdmin()) {
      if (kind == SALUS) {
        ServerName s = cluster.locate(g, 0, 0);
        int dn = dataNodeOf(s);
        List<org.apache.hadoop.fs.Path> dirs = new ArrayList<>();
        List<RegionInfo> there = new ArrayList<>();
        for (int k = 0; k < 3; k++) {
          TableName t = io.salus.core.hbase.SalusTableLayout.tableName(g.volume(), k);
          admin.flush(t);
          dirs.add(org.apache.hadoop.hbase.util.CommonFSUtils.getTableDir(root, t));
        }
        for (int r = 0; r < g.numRegions(); r++) {
          for (int k = 0; k < 3; k++) {
            dirs.add(((io.salus.core.hbase.storage.HdfsReplicaStorage) cluster.endpoint(g, r, k).storage())
                .replicaDisk().directory());
            if (s.equals(cluster.locate(g, r, k))) {
              there.add(cluster.region(g, r, k).getRegionInfo());
            }
          }
        }
        int n = corruptReplicas(dn, dirs, notes);
        var before = io.salus.core.hbase.SalusStoreQuarantine.counters();
        for (RegionInfo ri : there) {
          reopen(admin, ri);
        }
        notes.append("DataNode ").append(dn).append(" (paired with ").append(s.getHostAndPort()).append("): ")
            .append(n).append(" block replicas of the volume's HFiles and Salus logs corrupted on disk; the ")
            .append(there.size()).append(" replica regions on that server reopened. ");
        long end = System.currentTimeMillis() + 120_000;
        boolean back = false;
        while (!back && System.currentTimeMillis() < end) {
          back = true;
          for (int r = 0; r < g.numRegions(); r++) {
            for (int k = 0; k < 3; k++) {
              back &= cluster.locate(g, r, k) != null;
            }
          }
          Thread.sleep(200);
        }
        var after = io.salus.core.hbase.SalusStoreQuarantine.counters();
        int logsAside = 0;
        int fromPeer = 0;
        for (RegionInfo ri : there) {
          for (int r = 0; r < g.numRegions(); r++) {
            for (int k = 0; k < 3; k++) {
              var ep = cluster.endpoint(g, r, k);
              HRegion region = cluster.region(g, r, k);
              if (ep != null && ep.host() != null && region != null
                  && region.getRegionInfo().getEncodedName().equals(ri.getEncodedName())) {
                logsAside += ep.host().counters().get("recoveryDiskQuarantined").intValue();
                fromPeer += ep.host().counters().get("recoveryFromPeer").intValue();
              }
            }
          }
        }
        // what the reopen found (SalusStoreQuarantine at preOpen, ReplicaHost at the endpoint's start)
        notes.append("At the reopen: ").append(after.get("quarantinedRegions") - before.get("quarantinedRegions"))
            .append(" regions had a store file fail its HDFS checksum check, their ")
            .append(after.get("quarantinedFiles") - before.get("quarantinedFiles"))
            .append(" store files moved aside (SalusStoreQuarantine); ").append(logsAside)
            .append(" replicas' Salus logs could not be read and were moved aside; ").append(fromPeer)
            .append(" replicas caught up from a peer, the others started from their own checkpoint and log. ");
        if (!back) {
          notes.append("**Not every replica region serves again within 120 s** (see the region servers' log). ");
        }
      } else {
        TableName t = VolumeCatalog.dataTable(g.volume());
        admin.flush(t);
        ServerName s = hbaseServer(g, 0);
        int dn = Math.max(0, dataNodeOf(s));
        int n = corruptReplicas(dn, List.of(org.apache.hadoop.hbase.util.CommonFSUtils.getTableDir(root, t),
            new org.apache.hadoop.fs.Path(root, org.apache.hadoop.hbase.HConstants.HREGION_LOGDIR_NAME)), notes);
        for (RegionInfo ri : admin.getRegions(t)) {
          reopen(admin, ri);
        }
        notes.append("DataNode ").append(dn).append(": ").append(n)
            .append(" block replicas of the volume's HFiles and the WALs corrupted on disk (HDFS replication 3); ")
            .append("the volume's regions reopened. ");
      }
    }
  };

  @Test
  @Order(1)
  void regionServerCrash() throws Exception {
    run("region server crash (abort mid-write, replaced)", HBASE, CRASH);
    assertSalusRow(run("region server crash (abort mid-write, replaced)", SALUS, CRASH));
  }

  @Test
  @Order(2)
  void aServerReturnsCorruptedData() throws Exception {
    run("a region server returns corrupted data (memory corruption)", HBASE, new CorruptReads());
    assertSalusRow(run("a region server returns corrupted data (memory corruption)", SALUS, new CorruptReads()));
  }

  @Test
  @Order(3)
  void aRegionsFilesDeletedThroughTheNameNode() throws Exception {
    run("a region's files deleted through the NameNode", HBASE, DELETE_FILES);
    assertSalusRow(run("a region's files deleted through the NameNode", SALUS, DELETE_FILES));
  }

  @Test
  @Order(4)
  void aServerRefusesReads() throws Exception {
    run("a region server refuses to answer reads", HBASE, new RefuseReads());
    assertSalusRow(run("a region server refuses to answer reads", SALUS, new RefuseReads()));
  }

  @Test
  @Order(7)
  void bytesFlippedInDataNodeBlockFiles() throws Exception {
    run("bytes flipped in one DataNode's block files on disk", HBASE, FLIP_DATANODE_BYTES);
    assertSalusRow(run("bytes flipped in one DataNode's block files on disk", SALUS, FLIP_DATANODE_BYTES));
  }

  @Test
  @Order(20) // last: it restarts a DataNode, after which MiniDFSCluster's DataNode indexes (the flip row's) shift
  void aDataNodesDiskLostForGood() throws Exception {
    dropEarlierSalusVolumes();
    run(LoseDataNodeDisk.FAULT, HBASE, new LoseDataNodeDisk());
    assertSalusRow(run(LoseDataNodeDisk.FAULT, SALUS, new LoseDataNodeDisk()));
  }

  @Test
  @Order(6)
  void theClientCrashesMidStream() throws Exception {
    run("the client crashes mid-stream", HBASE, new ClientCrash());
    assertSalusRow(run("the client crashes mid-stream", SALUS, new ClientCrash()));
  }

  @Test
  @Order(8)
  void theClientCrashesWithABatchOnlyPartlySent() throws Exception {
    run("the client crashes with a batch only partly sent to its regions", HBASE, new PartialBatchCrash());
    assertSalusRow(run("the client crashes with a batch only partly sent to its regions", SALUS,
        new PartialBatchCrash()));
  }

  @Test
  @Order(9)
  void aServerWithholdsItsWriteReplies() throws Exception {
    run(WithholdWriteReplies.FAULT, HBASE, new WithholdWriteReplies());
    Row r = run(WithholdWriteReplies.FAULT, SALUS, new WithholdWriteReplies());
    assertSalusRow(r);
    assertEquals("Fresh", r.whileFaulty(), "Salus row " + r);
  }

  @Test
  @Order(10)
  void aServerReordersWrites() throws Exception {
    ReorderWrites baseline = new ReorderWrites();
    run(ReorderWrites.FAULT, HBASE, baseline);
    ReorderWrites salus = new ReorderWrites();
    Row r = run(ReorderWrites.FAULT, SALUS, salus);
    assertSalusRow(r);
    assertEquals("Fresh", r.whileFaulty(), "Salus row " + r);
    // the fault did reorder: a write applied (baseline) or a sub-batch sent (Salus) after a later one
    assertTrue(baseline.reordered > 0, "baseline: nothing reordered");
    assertTrue(salus.reordered > 0, "Salus: nothing reordered");
  }

  // ------------------------------------------------------------------ a DataNode's disk lost for good (task disk18)

  /**
   * Loses a DataNode's disk for good, for real: the DataNode is stopped, its data directories deleted, and it starts
   * again empty on the same port (a new storage identity, so the NameNode drops the old one and every replica it
   * held). Salus: the DataNode paired with the region server of replica 0/0 (the replicas' logs, checkpoint files and
   * store files there have one HDFS copy, on it); the replicas there are rebuilt from their peers. Baseline: the
   * DataNode paired with the server of data region 0 (HBase replication 3: the NameNode re-replicates).
   */
  static final class LoseDataNodeDisk implements Fault {
    static final String FAULT = "a DataNode's disk lost for good (stopped, data directories deleted, restarted empty)";

    /**
     * The NameNode honours the favored nodes as production does (`salus up` sets the same policy), so a replica's
     * files are on its own server's DataNode and a lost disk loses the replicas of one server, not a third of every
     * replica's files (the mini cluster's default policy does not resolve the favored node's name).
     */
    static void configure(org.apache.hadoop.conf.Configuration c) {
      c.set("dfs.block.replicator.classname", io.salus.hdfs.placement.LocationHintPlacementPolicy.class.getName());
      // With three DataNodes, a write pipeline of replication 3 that loses one has no DataNode to replace it with, and
      // HDFS's default fails the stream: the first run of this row aborted the baseline's region server ("Failed log
      // close in log roller") and the master (its MasterRegion WAL). A cluster with more DataNodes replaces the lost
      // one; here the stream goes on with the two left (HDFS's setting for small clusters).
      c.setBoolean("dfs.client.block.write.replace-datanode-on-failure.best-effort", true);
    }

    @Override
    public void inject(Kind kind, VolumeGeometry g, Volume v, StringBuilder notes) throws Exception {
      if (kind == SALUS) {
        ServerName s = cluster.locate(g, 0, 0);
        int dn = dataNodeOf(s);
        List<int[]> there = new ArrayList<>();
        for (int r = 0; r < g.numRegions(); r++) {
          for (int k = 0; k < 3; k++) {
            if (s.equals(cluster.locate(g, r, k))) {
              there.add(new int[] {r, k});
            }
          }
        }
        long movesBefore = io.salus.core.hbase.storage.HdfsReplicaStorage.movesAsked();
        var quarantinedBefore = io.salus.core.hbase.SalusStoreQuarantine.counters();
        long t0 = System.currentTimeMillis();
        int lost = loseDisk(cluster, cluster.dataNodes.get(dn));
        notes.append("DataNode ").append(dn).append(" (paired with ").append(s.getHostAndPort()).append("): ")
            .append(lost).append(" block replicas lost with its disk (the ").append(there.size())
            .append(" replica regions there hold their Salus logs and store files on it, one copy). ");
        List<ServerName> restarted = new ArrayList<>();
        String back = awaitRebuilt(g, there, t0, 180_000, restarted);
        if (!restarted.isEmpty()) {
          notes.append("region server ").append(restarted).append(" aborted (HBase aborts a server whose memstore ")
              .append("flush cannot commit: a store file's only copy was on the lost disk) and was restarted paired ")
              .append("with the same DataNode, as a supervisor would; ");
        }
        long moves = io.salus.core.hbase.storage.HdfsReplicaStorage.movesAsked() - movesBefore;
        var quarantined = io.salus.core.hbase.SalusStoreQuarantine.counters();
        notes.append(moves).append(" reopens of replica regions asked (a failed log or decision write: in place; an unreadable read: a move); ")
            .append(quarantined.get("quarantinedRegions") - quarantinedBefore.get("quarantinedRegions"))
            .append(" reopened regions had lost store files (moved aside); ").append(back);
      } else {
        ServerName s = hbaseServer(g, 0);
        int dn = Math.max(0, dataNodeOf(s));
        int lost = loseDisk(cluster, cluster.dataNodes.get(dn));
        notes.append("DataNode ").append(dn).append(" (paired with ").append(s.getHostAndPort()).append("): ")
            .append(lost).append(" block replicas lost with its disk (HDFS replication 3: the other copies serve, ")
            .append("the NameNode re-replicates). ");
      }
    }

    /**
     * Waits until every replica of {@code there} serves again after a peer catch-up (or {@code millis} pass); says
     * what happened, with the time from the loss to the last one serving.
     */
    static String awaitRebuilt(VolumeGeometry g, List<int[]> there, long t0, long millis, List<ServerName> restarted)
        throws Exception {
      long end = t0 + millis;
      while (System.currentTimeMillis() < end) {
        restarted.addAll(cluster.restartAborted());
        int done = 0;
        for (int[] rk : there) {
          var ep = cluster.endpoint(g, rk[0], rk[1]);
          var host = ep == null ? null : ep.host();
          if (host != null && host.serving() && host.counters().get("recoveryFromPeer") == 1
              && host.counters().get("rebuilding") == 0) {
            done++;
          }
        }
        if (done == there.size()) {
          StringBuilder b = new StringBuilder();
          b.append("all ").append(done).append(" rebuilt from their peers ")
              .append((System.currentTimeMillis() - t0) / 1000).append(" s after the loss (");
          for (int[] rk : there) {
            var c = cluster.endpoint(g, rk[0], rk[1]).host().counters();
            b.append("replica ").append(rk[0]).append('/').append(rk[1]).append(": ")
                .append(c.get("recoveryMetadataFirst") == 1 ? "metadata first, serving " : "whole state, serving ")
                .append(c.get("recoveryMillis")).append(" ms after its open, ")
                .append(c.get("recoveryPeerBlocks")).append(" blocks (")
                .append(c.get("rebuildBlocks")).append(" fetched in the background in ").append(c.get("rebuildMillis"))
                .append(" ms), ").append(c.get("recoveryPeerEntries")).append(" log entries; ");
          }
          b.setLength(b.length() - 2);
          return b.append("). ").toString();
        }
        Thread.sleep(250);
      }
      return "**not every replica there was rebuilt from a peer within " + millis / 1000 + " s**. ";
    }

    /** The MiniDFSCluster index of the DataNode with transfer address {@code xfer} (indexes shift at a restart). */
    static int dfsIndex(SalusMiniCluster c, String xfer) {
      var dns = c.util.getDFSCluster().getDataNodes();
      for (int i = 0; i < dns.size(); i++) {
        if (("127.0.0.1:" + dns.get(i).getXferAddress().getPort()).equals(xfer)) {
          return i;
        }
      }
      throw new IllegalArgumentException("no DataNode at " + xfer);
    }

    /**
     * Stops the DataNode at {@code xfer}, deletes everything in its data directories, starts it again on the same
     * port and waits until the NameNode has registered it (empty, a new storage identity). Returns the number of
     * block replicas it held.
     */
    static int loseDisk(SalusMiniCluster c, String xfer) throws Exception {
      var dfs = c.util.getDFSCluster();
      int i = dfsIndex(c, xfer);
      var dn = dfs.getDataNodes().get(i);
      String oldUuid = dn.getDatanodeUuid();
      var dm = dfs.getNamesystem().getBlockManager().getDatanodeManager();
      int blocks = dm.getDatanode(dn.getDatanodeId()).numBlocks();
      List<java.io.File> dirs = new ArrayList<>();
      for (String d : dn.getConf().getTrimmedStrings("dfs.datanode.data.dir")) {
        String u = d.replaceFirst("^\\[[A-Za-z_]+\\]", ""); // a storage type prefix, e.g. [DISK]
        dirs.add(u.startsWith("file:") ? new java.io.File(java.net.URI.create(u)) : new java.io.File(u));
      }
      var props = dfs.stopDataNode(i);
      for (java.io.File d : dirs) {
        org.apache.commons.io.FileUtils.deleteDirectory(d); // the disk is gone: blocks, VERSION, everything
        if (!d.mkdirs()) {
          throw new java.io.IOException("cannot recreate the empty data directory " + d);
        }
      }
      dfs.restartDataNode(props, true);
      dfs.waitActive();
      long end = System.currentTimeMillis() + 60_000;
      while (System.currentTimeMillis() < end) {
        var now = dfs.getDataNodes().get(dfsIndex(c, xfer));
        if (now.getDatanodeUuid() != null && !now.getDatanodeUuid().equals(oldUuid)
            && dm.getDatanode(now.getDatanodeId()) != null) {
          return blocks;
        }
        Thread.sleep(100);
      }
      throw new AssertionError("DataNode " + xfer + " did not register again with an empty disk within 60 s");
    }
  }

  /**
   * Writes this run's rows into an existing table ({@code -Dsalus.faults.merge=true}: a run of some rows only, e.g.
   * {@code -Dtest='SalusFaultTableTest#aDataNodesDiskLostForGood'}): a row of the same fault and volume kind is
   * replaced, a new one appended after the last table row; the rest of the document is kept, and a line under the
   * table says which rows this run wrote, when.
   */
  static void mergeRows(Path out) throws Exception {
    List<String> lines = new ArrayList<>(Files.readAllLines(out, StandardCharsets.UTF_8));
    int last = -1;
    for (int i = 0; i < lines.size(); i++) {
      if (lines.get(i).startsWith("| ") && !lines.get(i).startsWith("| fault |")) {
        last = i;
      }
    }
    if (last < 0) {
      writeTable(out);
      return;
    }
    StringBuilder which = new StringBuilder();
    for (Row r : rows) {
      String line = "| " + r.fault() + " | " + r.kind() + " | " + r.writes() + " | " + r.live() + " | "
          + r.whileFaulty() + " | " + r.afterRemount() + " | " + r.ordered() + " | " + r.notes() + " |";
      String prefix = "| " + r.fault() + " | " + r.kind() + " | ";
      boolean replaced = false;
      for (int i = 0; i < lines.size() && !replaced; i++) {
        if (lines.get(i).startsWith(prefix)) {
          lines.set(i, line);
          replaced = true;
        }
      }
      if (!replaced) {
        lines.add(++last, line);
      }
      which.append(which.length() == 0 ? "" : "; ").append(r.fault()).append(" / ").append(r.kind());
    }
    // an earlier such line naming only rows this run replaced is dropped (with the blank line before it)
    java.util.Set<String> now = new java.util.HashSet<>(List.of(which.toString().split("; ")));
    for (int i = lines.size() - 1; i > last; i--) {
      String l = lines.get(i);
      if (l.startsWith("Rows regenerated alone") && l.endsWith(".") && l.contains(": ")
          && now.containsAll(List.of(l.substring(l.indexOf(": ") + 2, l.length() - 1).split("; ")))) {
        lines.remove(i);
        if (lines.get(i - 1).isEmpty()) {
          lines.remove(i - 1);
        }
      }
    }
    lines.add(last + 1, "");
    lines.add(last + 2, "Rows regenerated alone (`-Dsalus.faults.merge=true`) " + started + " to " + Instant.now()
        + ", load average " + loadBefore + " at the start and " + load() + " at the end: " + which + ".");
    lines.replaceAll(l -> l.startsWith("Rows of the paper's table not generated yet") ? notYet() : l);
    Files.writeString(out, String.join("\n", lines) + "\n", StandardCharsets.UTF_8);
    System.out.println("merged " + rows.size() + " rows into " + out);
  }

  // ------------------------------------------------------------------ the generated document

  /** The line under the table naming the paper's rows not generated yet. */
  static String notYet() {
    return "Rows of the paper's table not generated yet (issue 14): none.";
  }

  static void writeTable(Path out) throws Exception {
    StringBuilder s = new StringBuilder();
    s.append("# Robustness: the fault table on real mini clusters (issue 14, paper Table 3.1)\n\n");
    s.append("Generated by `it/src/test/java/io/salus/it/salus/SalusFaultTableTest.java`; do not edit by hand. ")
        .append("Regenerate with\n\n```\n")
        .append("mvn -B -o verify -pl it -am -DskipITs -Dtest=SalusFaultTableTest -Dsurefire.failIfNoSpecifiedTests=false \\\n")
        .append("  -Dsalus.faults.out=$PWD/docs/robustness.md\n```\n\n");
    s.append("Run ").append(started).append(" to ").append(Instant.now()).append(", load average ")
        .append(loadBefore).append(" at the start and ").append(load()).append(" at the end (2-core machine).\n\n");
    s.append("One HBase mini cluster (1 master, 3 region servers each paired with its own DataNode, a 3-DataNode ")
        .append("MiniDFSCluster, ZooKeeper), the Salus replica endpoint on its default HDFS storage, a production keyring (a fresh KeyringFile pair). ")
        .append("Per row, a fresh volume of ").append(REGIONS * PER_REGION).append(" blocks of ").append(BLOCK)
        .append(" B (Salus: ").append(REGIONS).append(" RRSs of ").append(PER_REGION)
        .append(" blocks, each region on three region servers; baseline: 2 regions, HBase replication 3 on HDFS). ")
        .append("The workload issues ").append(N).append(" numbered writes of 1-4 blocks in order (every block ")
        .append("says which write and which block it is; at most ").append(WINDOW)
        .append(" unacknowledged; every 10th with FUA); the fault is injected once ").append(FAULT_AT)
        .append(" writes are acknowledged, and the workload goes on.\n\n");
    s.append("Columns: *while faulty* is the volume read back block by block through the same mount after the ")
        .append("workload, with the fault still active; *after remount* is a new mount (for the baseline, with ")
        .append("`--accept-current-state` when the mount refused a root mismatch, to see what is left). ")
        .append("**Fresh**: every acknowledged write reads back. **Corrupted**: a block returned bytes no write ")
        .append("wrote, without an error. **Lost**: an acknowledged write is missing (an older write, or an error ")
        .append("instead of the block). **Ordered**: the readable state equals the state after a prefix of the ")
        .append("issued writes. *Live*: every write issued after the fault completed.\n\n");
    s.append("| fault | volume | writes | live | while faulty | after remount | ordered | what happened |\n");
    s.append("|---|---|---|---|---|---|---|---|\n");
    for (Row r : rows) {
      s.append("| ").append(r.fault()).append(" | ").append(r.kind()).append(" | ").append(r.writes()).append(" | ")
          .append(r.live()).append(" | ").append(r.whileFaulty()).append(" | ").append(r.afterRemount())
          .append(" | ").append(r.ordered()).append(" | ").append(r.notes()).append(" |\n");
    }
    s.append("\n").append(notYet()).append("\n");
    Files.createDirectories(out.toAbsolutePath().getParent());
    Files.writeString(out, s.toString(), StandardCharsets.UTF_8);
    System.out.println("wrote " + out);
  }
}
