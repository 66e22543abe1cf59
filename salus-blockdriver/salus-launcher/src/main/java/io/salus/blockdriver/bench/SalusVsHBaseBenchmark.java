package io.salus.blockdriver.bench;

import io.salus.blockdriver.bench.NbdBenchmark.Fio;
import io.salus.blockdriver.bench.NbdBenchmark.Workload;
import io.salus.blockdriver.cli.ByteSizeConverter;
import io.salus.blockdriver.nbd.NbdExports;
import io.salus.blockdriver.nbd.NbdServer;
import io.salus.blockdriver.salus.SalusVolume;
import io.salus.blockdriver.volume.HBaseVolume;
import io.salus.blockdriver.volume.Volume;
import io.salus.blockdriver.volume.VolumeCatalog;
import io.salus.core.crypto.SignatureScheme;
import io.salus.core.hbase.SalusPlacementObserver;
import io.salus.core.hbase.SalusTableLayout;
import io.salus.core.hbase.VolumeGeometry;
import io.salus.core.hbase.endpoint.EndpointKeyring;
import io.salus.core.hbase.storage.SalusFavoredNodes;
import io.salus.hdfs.placement.LocationHintPlacementPolicy;
import java.io.File;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.RandomAccessFile;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import jdk.jfr.Configuration;
import jdk.jfr.Recording;
import org.apache.hadoop.hbase.HBaseTestingUtility;
import org.apache.hadoop.hbase.MiniHBaseCluster;
import org.apache.hadoop.hbase.StartMiniClusterOption;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.log4j.Level;
import org.apache.log4j.LogManager;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * Issue 13's benchmark (run by hand, not a test): a {@link SalusVolume} and an {@link HBaseVolume} of the same
 * size on ONE in-process cluster (MiniDFSCluster with 3 DataNodes and salus-hdfs's location-hint placement policy,
 * HBase mini cluster with 3 region servers each paired with its own DataNode, the Salus replica endpoint on its
 * default HDFS storage, the placement observer), both exported by one {@link NbdServer}, and {@code nbdkit file}
 * on a local file (the single-copy ceiling), all driven by the same fio workloads in the same run (fio and
 * output parsing from {@link NbdBenchmark}). Also measures the disk with {@code dd oflag=direct}, and counts
 * network bytes per client byte written from the servers' own byte counters ({@link ServerByteCounters}).
 *
 * <p>Writes {@code <name>.csv} (throughput and ratios per workload), {@code <name>-network.csv} (per-server
 * counters of the two fill windows and the per-byte summary), {@code <name>-goals.csv} (issue 13's goals, the
 * measured value and whether it is met) and {@code <name>.png} under {@code --out}.
 */
@Command(
    name = "salus-vs-hbase",
    mixinStandardHelpOptions = true,
    description = {
      "SalusVolume vs HBaseVolume vs nbdkit file (single-copy ceiling), fio over NBD, one in-process cluster"
          + " (3 DataNodes, 3 region servers, Salus endpoint on HDFS), one run.",
      "Writes <name>.csv, <name>-network.csv, <name>-goals.csv and <name>.png under --out and prints the ratios."
    })
public final class SalusVsHBaseBenchmark implements Callable<Integer> {
  static final int BLOCK = 4096;
  static final String SALUS_VOLUME = "bsalus";
  static final String HBASE_VOLUME = "bhbase";

  @Spec CommandSpec spec;

  @Option(names = "--out", defaultValue = "docs/benchmarks",
      description = "Directory for the CSV and PNG files (default: ${DEFAULT-VALUE}).")
  File out;

  @Option(names = "--name", defaultValue = "salus-vs-hbase",
      description = "Base name of the output files (default: ${DEFAULT-VALUE}).")
  String name;

  @Option(names = "--scratch", defaultValue = "target/salus-vs-hbase",
      description = "Directory for the mini clusters' data, the ceiling's file and dd's file; on the disk to"
          + " measure (default: ${DEFAULT-VALUE}). Emptied first.")
  File scratch;

  @Option(names = "--runtime", defaultValue = "10",
      description = "Seconds per time-based fio run (after 1 s ramp) (default: ${DEFAULT-VALUE}).")
  int runtime;

  @Option(names = "--working-set", defaultValue = "32M", converter = ByteSizeConverter.class,
      description = "fio --size: bytes each workload touches; written once by the 1M sequential write before the"
          + " reads (default: ${DEFAULT-VALUE}).")
  long workingSet;

  @Option(names = "--volume-size", defaultValue = "256M", converter = ByteSizeConverter.class,
      description = "Size of each of the two volumes (default: ${DEFAULT-VALUE}).")
  long volumeSize;

  @Option(names = "--blocks-per-region", defaultValue = "16384",
      description = "Salus region size in 4 KiB blocks, a power of two (default: ${DEFAULT-VALUE}, 64 MiB).")
  long blocksPerRegion;

  @Option(names = "--hbase-regions", defaultValue = "4",
      description = "Regions of the HBaseVolume's table (default: ${DEFAULT-VALUE}).")
  int hbaseRegions;

  @Option(names = "--ceiling-size", defaultValue = "1G", converter = ByteSizeConverter.class,
      description = "Size of the local file nbdkit exports (default: ${DEFAULT-VALUE}).")
  long ceilingSize;

  @Option(names = "--dd-size", defaultValue = "256M", converter = ByteSizeConverter.class,
      description = "Bytes dd writes with oflag=direct to measure the disk (default: ${DEFAULT-VALUE}).")
  long ddSize;

  @Option(names = "--client-scheme", defaultValue = "ED25519",
      description = "Signature scheme of the Salus client (salus.endpoint.signature-scheme): ${COMPLETION-CANDIDATES}"
      + " (default: ${DEFAULT-VALUE}).")
  SignatureScheme clientScheme;

  @Option(names = "--server-scheme", defaultValue = "HMAC_SHA256",
      description = "Signature scheme of the Salus replicas and metadata holders"
      + " (salus.endpoint.signature-scheme.server): ${COMPLETION-CANDIDATES} (default: ${DEFAULT-VALUE}).")
  SignatureScheme serverScheme;

  @Option(names = "--jfr", description = "Record the whole run with Java Flight Recorder (settings 'profile')"
      + " into this file.")
  Path jfr;

  /** The fio workloads, in the order they run; each runs against the three targets back to back. */
  static final Workload FILL = new Workload("seq-write-1M", "write", "1M", 8, false);
  static final Workload SEQ_WRITE_4K = new Workload("seq-write-4k-qd32", "write", "4k", 32, false);
  static final Workload BARRIER = new Workload("seq-write-4k-qd32-fsync1", "write", "4k", 32, false, 1);
  static final List<Workload> TIMED = List.of(
      SEQ_WRITE_4K,
      new Workload("rand-write-4k-qd32", "randwrite", "4k", 32, false),
      BARRIER,
      new Workload("seq-read-1M", "read", "1M", 8, true),
      new Workload("rand-read-4k-qd32", "randread", "4k", 32, true));

  enum Target { SALUS, HBASE, CEILING }

  /** What one fill window of a volume cost on the servers. */
  record Traffic(ServerByteCounters.Snapshot delta, long clientBytes, int replication, long clientRpcBytes) {
    double rpcPerByte() {
      return (double) delta.rpcBytes() / clientBytes;
    }

    /**
     * RPC bytes of the client's own calls (its requests and their responses) per client byte: for Salus what the
     * endpoints counted for the client's deliver and poll calls ({@code ReplicaHost#traffic}, protobuf sizes without
     * HBase's per-call framing); for the baseline every RPC byte of the window (its region servers talk to no other
     * server over RPC: WAL and flush go to the DataNodes).
     */
    double clientRpcPerByte() {
      return (double) clientRpcBytes / clientBytes;
    }

    /**
     * Network bytes per byte without the client's own calls: the paper's measure ("Salus only uses two bytes per byte
     * written to forward the request to replicas"; HBase's 5.3 is "two network transfers each for logging and
     * flushing" plus compaction: neither counts the client's request).
     */
    double networkPerByteWithoutClient() {
      return networkPerByte() - clientRpcPerByte();
    }

    /** Block bytes the DataNodes received (every replica of every block) per client byte: copies written. */
    double copiesPerByte() {
      return (double) delta.dataNodeWritten() / clientBytes;
    }

    double dnReadPerByte() {
      return (double) delta.dataNodeRead() / clientBytes;
    }

    /**
     * DataNode bytes that cross machines when each region server shares a machine with its DataNode: all but the
     * writer-local first replica, i.e. (r-1)/r of what the DataNodes received for files of replication r.
     */
    double dnNetworkPerByte() {
      return copiesPerByte() * (replication - 1) / replication;
    }

    /** RPC bytes (client to region server and region server to region server) + DataNode bytes across machines. */
    double networkPerByte() {
      return rpcPerByte() + dnNetworkPerByte();
    }
  }

  public static void main(String[] args) {
    System.exit(new CommandLine(new SalusVsHBaseBenchmark()).execute(args));
  }

  /** Checks the options before anything is started; a bad value names the fix. */
  void validate() {
    List<String> bad = new ArrayList<>();
    if (runtime < 1) {
      bad.add("--runtime " + runtime + " is not valid: give at least 1 (seconds per fio run)");
    }
    if (workingSet < (1 << 20) || workingSet % (1 << 20) != 0) {
      bad.add("--working-set " + workingSet + " is not valid: give a positive multiple of 1M (e.g. 32M)");
    }
    if (volumeSize % BLOCK != 0 || volumeSize <= 0) {
      bad.add("--volume-size " + volumeSize + " is not valid: give a positive multiple of 4096 (e.g. 256M)");
    } else if (workingSet > volumeSize) {
      bad.add("--working-set " + workingSet + " is larger than --volume-size " + volumeSize
          + ": make the volume at least as large as the working set");
    }
    if (ceilingSize < workingSet) {
      bad.add("--ceiling-size " + ceilingSize + " is smaller than --working-set " + workingSet
          + ": make the ceiling's file at least as large as the working set");
    }
    if (blocksPerRegion <= 0 || Long.bitCount(blocksPerRegion) != 1) {
      bad.add("--blocks-per-region " + blocksPerRegion + " is not valid: give a power of two (e.g. 16384)");
    }
    if (hbaseRegions < 1 || hbaseRegions > 64) {
      bad.add("--hbase-regions " + hbaseRegions + " is not valid: give 1..64");
    }
    if (ddSize < (1 << 20) || ddSize % (1 << 20) != 0) {
      bad.add("--dd-size " + ddSize + " is not valid: give a positive multiple of 1M (e.g. 256M)");
    }
    if (name == null || !name.matches("[A-Za-z0-9][A-Za-z0-9._-]*")) {
      bad.add("--name '" + name + "' is not valid: use letters, digits, '.', '_' and '-' (e.g. salus-vs-hbase)");
    }
    if (!bad.isEmpty()) {
      throw new ParameterException(spec.commandLine(), String.join("\n", bad));
    }
    for (String tool : List.of("fio", "nbdkit", "dd")) {
      if (!onPath(tool)) {
        throw new ParameterException(spec.commandLine(), tool + " is not on the PATH: install it (Debian/Ubuntu:"
            + " apt-get install fio nbdkit coreutils) and run again");
      }
    }
  }

  private static boolean onPath(String tool) {
    for (String dir : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
      if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, tool))) {
        return true;
      }
    }
    return false;
  }

  private int step;
  private int steps;

  private void progress(String what) {
    step++;
    System.out.printf(Locale.ROOT, "[%2d/%d %s] %s%n", step, steps, Instant.now().toString().substring(11, 19),
        what);
    System.out.flush();
  }

  @Override
  public Integer call() throws Exception {
    validate();
    steps = 6 + 3 + TIMED.size() * 3 + 2;
    Recording recording = null;
    if (jfr != null) {
      recording = new Recording(Configuration.getConfiguration("profile"));
      recording.setToDisk(true);
      recording.setDestination(jfr);
      recording.start();
    }
    try {
      return run();
    } finally {
      if (recording != null) {
        recording.stop();
        recording.close();
        System.out.println("JFR recording written to " + jfr);
      }
    }
  }

  private int run() throws Exception {
    String loadBefore = NbdBenchmark.machineLoad();
    out.mkdirs();
    prepareScratch(scratch);
    progress("disk bandwidth: dd if=/dev/zero bs=1M count=" + (ddSize >> 20) + " oflag=direct in " + scratch);
    double ddMibps = dd(new File(scratch, "dd.bin"), ddSize >> 20);
    System.out.printf(Locale.ROOT, "    disk: %.1f MiB/s%n", ddMibps);

    progress("ceiling: nbdkit file on a " + (ceilingSize >> 20) + " MiB local file");
    File ceilingFile = new File(scratch, "ceiling.img");
    try (RandomAccessFile f = new RandomAccessFile(ceilingFile, "rw")) {
      f.setLength(ceilingSize);
    }
    int kitPort = NbdBenchmark.freePort();
    Process kit = new ProcessBuilder("nbdkit", "-f", "-i", "127.0.0.1", "-p", String.valueOf(kitPort),
        "file", ceilingFile.getAbsolutePath())
        .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
    String kitVersion = NbdBenchmark.firstLine(NbdBenchmark.run(30, List.of("nbdkit", "--version")));
    String fioVersion = NbdBenchmark.firstLine(NbdBenchmark.run(30, List.of("fio", "--version")));
    System.setProperty("test.build.data.basedirectory", new File(scratch, "cluster").getAbsolutePath());
    HBaseTestingUtility util = new HBaseTestingUtility();
    try {
      NbdBenchmark.waitForPort(kitPort);
      String ceilingUri = "nbd://127.0.0.1:" + kitPort + "/";
      progress("cluster: MiniDFSCluster 3 DataNodes, ZooKeeper, HBase 1 master + 3 region servers");
      startCluster(util);
      MiniHBaseCluster hbase = util.getMiniHBaseCluster();
      MiniDFSCluster dfs = util.getDFSCluster();
      int replication = util.getConfiguration().getInt("dfs.replication", 3);

      progress("volumes: Salus '" + SALUS_VOLUME + "' and HBase '" + HBASE_VOLUME + "', " + (volumeSize >> 20)
          + " MiB each");
      VolumeCatalog catalog = new VolumeCatalog(util.getConnection());
      VolumeGeometry g = new VolumeGeometry(SALUS_VOLUME, volumeSize, BLOCK, blocksPerRegion);
      catalog.createSalus(g);
      catalog.create(HBASE_VOLUME, volumeSize / BLOCK, BLOCK, "SHA-256", hbaseRegions);
      awaitEndpoints(hbase, g);
      SalusVolume salus = SalusVolume.openFromCatalog(util.getConnection(), SALUS_VOLUME);
      try (Admin admin = util.getConnection().getAdmin()) {
        // the endpoint's replica state is bound to the region's server pairing: no moves during the run
        admin.balancerSwitch(false, true);
      }
      Volume hbaseVol = HBaseVolume.open(util.getConnection(), HBASE_VOLUME);
      Map<String, Map<Target, Fio>> results = new LinkedHashMap<>();
      Map<Target, Traffic> traffic = new LinkedHashMap<>();
      try (NbdServer server = new NbdServer(InetAddress.getLoopbackAddress(), 0,
          NbdExports.of(salus, hbaseVol)).start()) {
        Map<Target, String> uris = Map.of(Target.SALUS, server.uri(SALUS_VOLUME), Target.HBASE,
            server.uri(HBASE_VOLUME), Target.CEILING, ceilingUri);
        String ws = (workingSet >> 20) + "M";
        // warm-up (discarded): one 64 KiB write per target, so that the first measured batch does not pay for
        // connections, region locations and JIT
        for (Target t : Target.values()) {
          runFio(t, uris.get(t), new Workload("warm-up", "write", "64k", 1, false), "64k", 0);
        }
        // 1. the fill: 1M sequential write of the whole working set, with the servers' byte counters around it
        Map<Target, Fio> fill = new LinkedHashMap<>();
        for (Target t : Target.values()) {
          progress(FILL.name() + " (fill " + ws + ") on " + t.name().toLowerCase(Locale.ROOT)
              + (t == Target.CEILING ? "" : ", counting server bytes incl. a flush of its tables"));
          ServerByteCounters.Snapshot before = ServerByteCounters.take(hbase, dfs);
          long[] msgBefore = replicaMessages(hbase, g);
          Map<String, Long> linkBefore = salus.counters();
          Map<String, long[]> trafficBefore = endpointTraffic(hbase, g);
          Fio f = runFio(t, uris.get(t), FILL, ws, 0);
          if (t == Target.SALUS) {
            long[] msgAfter = replicaMessages(hbase, g);
            Map<String, Long> linkAfter = salus.counters();
            protocolCounters.put("replica_messages_received", msgAfter[0] - msgBefore[0]);
            protocolCounters.put("replica_outbox_dropped", msgAfter[1] - msgBefore[1]);
            protocolCounters.put("replica_sub_batch_copies_received", msgAfter[2] - msgBefore[2]);
            protocolCounters.put("replica_sub_batch_copy_bytes_received", msgAfter[3] - msgBefore[3]);
            for (Map.Entry<String, Long> e : linkAfter.entrySet()) {
              protocolCounters.put("client_link_" + e.getKey(), e.getValue() - linkBefore.getOrDefault(e.getKey(), 0L));
            }
            protocolCounters.put("client_batches_of_" + SalusVolume.MAX_BLOCKS_PER_BATCH + "_blocks",
                workingSet / BLOCK / SalusVolume.MAX_BLOCKS_PER_BATCH);
            System.out.println("    salus protocol counters over the fill: " + protocolCounters);
          }
          fill.put(t, f);
          if (t != Target.CEILING) {
            flushTables(util, t);
            ServerByteCounters.Snapshot after = ServerByteCounters.take(hbase, dfs);
            ServerByteCounters.Snapshot delta = after.minus(before);
            long clientRpc = delta.rpcBytes(); // the baseline: every RPC byte is the client's (see Traffic)
            if (t == Target.SALUS) {
              Map<String, long[]> msgs = minus(endpointTraffic(hbase, g), trafficBefore);
              salusTraffic.putAll(msgs);
              clientRpc = 0;
              for (String k : List.of("in:client:deliverCall", "in:client:pollCall", "out:client:deliverResponse",
                  "out:client:pollResponse")) {
                clientRpc += msgs.getOrDefault(k, new long[2])[1];
              }
            }
            traffic.put(t, new Traffic(delta, workingSet, t == Target.SALUS ? 1 : replication, clientRpc));
          }
          System.out.printf(Locale.ROOT, "    %-8s %9.1f MiB/s%n", t, f.mibps());
        }
        results.put(FILL.name(), fill);
        // 2. time-based workloads, each on the three targets back to back
        for (Workload w : TIMED) {
          Map<Target, Fio> r = new LinkedHashMap<>();
          for (Target t : Target.values()) {
            progress(w.name() + " on " + t.name().toLowerCase(Locale.ROOT) + " (" + runtime + " s)");
            Fio f = runFio(t, uris.get(t), w, ws, runtime);
            r.put(t, f);
            System.out.printf(Locale.ROOT, "    %-8s %9.2f MiB/s %9.0f IOPS  mean lat %9.0f us%n", t, f.mibps(),
                f.iops(), f.latUsec());
          }
          results.put(w.name(), r);
        }
      } finally {
        salus.close();
        hbaseVol.close();
      }
      String loadAfter = NbdBenchmark.machineLoad();
      progress("writing " + name + ".csv, " + name + "-network.csv, " + name + "-goals.csv, " + name + ".png");
      String header = "# " + Instant.now() + "; fio --ioengine=nbd (" + fioVersion + "), working set "
          + (workingSet >> 20) + " MiB, volumes " + (volumeSize >> 20) + " MiB, " + runtime
          + " s per time-based run (1 s ramp), one run per target back to back (salus, hbase, ceiling); "
          + "cluster: MiniDFSCluster 3 DataNodes (dfs.replication " + replication + ", "
          + "LocationHintPlacementPolicy) + HBase 3 region servers in one JVM, Salus endpoint on HDFS storage; "
          + "ceiling: " + kitVersion + " file plugin on a " + (ceilingSize >> 20) + " MiB local file; disk (dd "
          + (ddSize >> 20) + " MiB oflag=direct) " + String.format(Locale.ROOT, "%.1f", ddMibps)
          + " MiB/s; Salus signature schemes: client " + clientScheme + ", servers " + serverScheme
          + "; load before: " + loadBefore + "; load after: " + loadAfter;
      if (!failures.isEmpty()) {
        header += "; FAILED runs (NaN): " + String.join(" | ", failures).replace('\n', ' ');
      }
      writeResults(header, results);
      writeNetwork(header, traffic);
      writeTraffic(header, traffic);
      List<String[]> goals = goals(results, traffic, ddMibps);
      writeGoals(header, goals);
      plot(results);
      printSummary(results, traffic, goals, ddMibps, loadBefore, loadAfter);
    } finally {
      progress("stopping the cluster and nbdkit");
      kit.destroy();
      kit.waitFor(10, TimeUnit.SECONDS);
      try {
        util.shutdownMiniCluster();
      } catch (Exception e) {
        System.err.println("cluster shutdown: " + e);
      }
    }
    return 0;
  }

  /** As it/.../SalusMiniCluster: 3 DataNodes, 3 region servers, region server i paired with DataNode i. */
  private void startCluster(HBaseTestingUtility util) throws Exception {
    LogManager.getRootLogger().setLevel(Level.WARN);
    org.apache.hadoop.conf.Configuration conf = util.getConfiguration();
    conf.set("hbase.local.dir", new File(scratch, "hbase-local").getAbsolutePath());
    conf.setInt("hbase.master.info.port", -1);
    conf.setInt("hbase.regionserver.info.port", -1);
    conf.setInt("hbase.regionserver.handler.count", 32);
    conf.setBoolean("hbase.unsafe.stream.capability.enforce", false);
    conf.set("hbase.wal.provider", "filesystem");
    conf.setInt("hbase.client.retries.number", 10);
    conf.set("hbase.coprocessor.master.classes", SalusPlacementObserver.class.getName());
    conf.setLong(SalusPlacementObserver.PERIOD_KEY, 1000);
    conf.setLong(EndpointKeyring.TEST_SEED_KEY, 4242);
    conf.set(EndpointKeyring.SCHEME_KEY, clientScheme.name());
    conf.set(EndpointKeyring.SERVER_SCHEME_KEY, serverScheme.name());
    conf.set("dfs.block.replicator.classname", LocationHintPlacementPolicy.class.getName());
    MiniDFSCluster dfs = util.startMiniDFSCluster(3);
    List<String> dataNodes = new ArrayList<>();
    for (DataNode dn : dfs.getDataNodes()) {
      dataNodes.add("127.0.0.1:" + dn.getXferAddress().getPort());
    }
    util.startMiniZKCluster();
    conf.set(SalusFavoredNodes.DATANODE_KEY, dataNodes.get(0));
    util.startMiniHBaseCluster(StartMiniClusterOption.builder().numMasters(1).numRegionServers(1).build());
    for (int i = 1; i < 3; i++) { // each region server copies the cluster configuration when it starts
      util.getMiniHBaseCluster().getConfiguration().set(SalusFavoredNodes.DATANODE_KEY, dataNodes.get(i));
      util.getMiniHBaseCluster().startRegionServer();
    }
    util.waitFor(120_000, () -> util.getMiniHBaseCluster().getLiveRegionServerThreads().size() == 3);
  }

  /** The Salus replicas' and the client's message counters over the Salus fill window. */
  private final Map<String, Long> protocolCounters = new LinkedHashMap<>();

  /** Sum over every replica endpoint of the volume: {messages received by RPC, replies dropped on a full outbox}. */
  private static long[] replicaMessages(MiniHBaseCluster hbase, VolumeGeometry g) {
    long[] sum = new long[4];
    for (int k = 0; k < SalusTableLayout.REPLICAS; k++) {
      TableName t = SalusTableLayout.tableName(g.volume(), k);
      for (org.apache.hadoop.hbase.util.JVMClusterUtil.RegionServerThread rst : hbase.getLiveRegionServerThreads()) {
        for (org.apache.hadoop.hbase.regionserver.HRegion region : rst.getRegionServer().getRegions(t)) {
          var ep = region.getCoprocessorHost().findCoprocessor(io.salus.core.hbase.endpoint.SalusReplicaEndpoint.class);
          if (ep != null && ep.host() != null) {
            Map<String, Long> c = ep.host().counters();
            sum[0] += c.getOrDefault("received", 0L);
            sum[1] += c.getOrDefault("outboxDropped", 0L);
            sum[2] += c.getOrDefault("subBatchCopies", 0L);
            sum[3] += c.getOrDefault("subBatchCopyBytes", 0L);
          }
        }
      }
    }
    return sum;
  }

  /** The Salus endpoints' RPC traffic per direction and message type over the Salus fill window (traffic CSV). */
  private final Map<String, long[]> salusTraffic = new java.util.TreeMap<>();

  /** Sum over every replica endpoint of the volume of {@code ReplicaHost#traffic}: key to {messages, bytes}. */
  private static Map<String, long[]> endpointTraffic(MiniHBaseCluster hbase, VolumeGeometry g) {
    Map<String, long[]> sum = new java.util.TreeMap<>();
    for (int k = 0; k < SalusTableLayout.REPLICAS; k++) {
      TableName t = SalusTableLayout.tableName(g.volume(), k);
      for (org.apache.hadoop.hbase.util.JVMClusterUtil.RegionServerThread rst : hbase.getLiveRegionServerThreads()) {
        for (org.apache.hadoop.hbase.regionserver.HRegion region : rst.getRegionServer().getRegions(t)) {
          var ep = region.getCoprocessorHost().findCoprocessor(io.salus.core.hbase.endpoint.SalusReplicaEndpoint.class);
          if (ep != null && ep.host() != null) {
            io.salus.core.protocol.message.TrafficCounters.sumInto(sum, ep.host().traffic().snapshot());
          }
        }
      }
    }
    return sum;
  }

  private static Map<String, long[]> minus(Map<String, long[]> after, Map<String, long[]> before) {
    Map<String, long[]> d = new java.util.TreeMap<>();
    after.forEach((k, v) -> {
      long[] b = before.getOrDefault(k, new long[2]);
      if (v[0] - b[0] != 0 || v[1] - b[1] != 0) {
        d.put(k, new long[] {v[0] - b[0], v[1] - b[1]});
      }
    });
    return d;
  }

  /** Failed fio runs ("target workload: error"), reported in the CSV and the summary instead of a number. */
  private final List<String> failures = new ArrayList<>();

  /** One fio run; a failure (e.g. EIO from the volume) is recorded and reads as NaN, and the run goes on. */
  private Fio runFio(Target t, String uri, Workload w, String size, int seconds) {
    try {
      return NbdBenchmark.fio(uri, w, size, seconds);
    } catch (Exception e) {
      String msg = String.valueOf(e.getMessage());
      int cut = msg.indexOf('{');
      msg = (cut > 0 ? msg.substring(0, cut) : msg).replaceAll("\\s+", " ").trim();
      if (msg.length() > 300) {
        msg = msg.substring(0, 300) + "...";
      }
      String line = t.name().toLowerCase(Locale.ROOT) + " " + w.name() + ": " + msg;
      failures.add(line);
      System.out.println("    FAILED " + line);
      return new Fio(Double.NaN, Double.NaN, Double.NaN);
    }
  }

  /**
   * Waits until every replica region of the Salus volume runs its endpoint (opened, log replayed) on three distinct
   * region servers, with nothing in transition (as it/.../SalusMiniCluster#awaitPlaced): SalusVolume.open checks
   * only the region locations, and batches sent to an endpoint still opening wait for retransmissions.
   */
  private static void awaitEndpoints(MiniHBaseCluster hbase, VolumeGeometry g) throws Exception {
    long end = System.currentTimeMillis() + 240_000;
    while (true) {
      String missing = endpointsMissing(hbase, g);
      if (missing == null) {
        return;
      }
      if (System.currentTimeMillis() > end) {
        throw new IOException("Salus volume " + g.volume() + " not ready after 240 s: " + missing);
      }
      Thread.sleep(100);
    }
  }

  private static String endpointsMissing(MiniHBaseCluster hbase, VolumeGeometry g) {
    if (!hbase.getMaster().getAssignmentManager().getRegionsInTransition().isEmpty()) {
      return "regions in transition";
    }
    for (int r = 0; r < g.numRegions(); r++) {
      java.util.Set<String> servers = new java.util.HashSet<>();
      for (int k = 0; k < SalusTableLayout.REPLICAS; k++) {
        TableName t = SalusTableLayout.tableName(g.volume(), k);
        String found = null;
        for (org.apache.hadoop.hbase.util.JVMClusterUtil.RegionServerThread rst
            : hbase.getLiveRegionServerThreads()) {
          for (org.apache.hadoop.hbase.regionserver.HRegion region : rst.getRegionServer().getRegions(t)) {
            byte[] start = region.getRegionInfo().getStartKey();
            long first = start.length == 0 ? 0 : org.apache.hadoop.hbase.util.Bytes.toLong(start);
            var ep = region.getCoprocessorHost()
                .findCoprocessor(io.salus.core.hbase.endpoint.SalusReplicaEndpoint.class);
            if (first == r * g.blocksPerRegion() && ep != null && ep.host() != null) {
              found = rst.getRegionServer().getServerName().toString();
            }
          }
        }
        if (found == null) {
          return "replica " + k + " of RRS " + r + " has no running endpoint yet";
        }
        servers.add(found);
      }
      if (servers.size() != SalusTableLayout.REPLICAS) {
        return "RRS " + r + " is on " + servers.size() + " region server(s), not 3";
      }
    }
    return null;
  }

  /** Flushes the volume's tables (memstore to HFiles), as the paper's byte count includes flushing. */
  private static void flushTables(HBaseTestingUtility util, Target t) throws IOException {
    try (Admin admin = util.getConnection().getAdmin()) {
      if (t == Target.SALUS) {
        for (int r = 0; r < SalusTableLayout.REPLICAS; r++) {
          admin.flush(SalusTableLayout.tableName(SALUS_VOLUME, r));
        }
      } else {
        TableName table = VolumeCatalog.dataTable(HBASE_VOLUME);
        admin.flush(table);
      }
    }
  }

  static double dd(File file, long countMiB) throws Exception {
    Process p = new ProcessBuilder("dd", "if=/dev/zero", "of=" + file.getAbsolutePath(), "bs=1M",
        "count=" + countMiB, "oflag=direct").redirectErrorStream(true).start();
    String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!p.waitFor(600, TimeUnit.SECONDS) || p.exitValue() != 0) {
      throw new IOException("dd failed: " + text);
    }
    file.delete();
    return ddMibps(text);
  }

  /** MiB/s from dd's summary line ("268435456 bytes (268 MB, 256 MiB) copied, 0.51 s, 526 MB/s"). */
  static double ddMibps(String ddOutput) throws IOException {
    Matcher m = Pattern.compile("(\\d+) bytes .*copied, ([0-9.,]+) s").matcher(ddOutput);
    if (!m.find()) {
      throw new IOException("cannot read dd's summary line from: " + ddOutput);
    }
    double seconds = Double.parseDouble(m.group(2).replace(',', '.'));
    return Long.parseLong(m.group(1)) / seconds / (1 << 20);
  }

  private static double ratio(Fio a, Fio b) {
    return a.mibps() / b.mibps();
  }

  /** For the plot: a failed run (NaN) is drawn as 0. */
  private static double plotted(double v) {
    return Double.isNaN(v) || Double.isInfinite(v) ? 0 : v;
  }

  private void writeResults(String header, Map<String, Map<Target, Fio>> results) throws IOException {
    File csv = new File(out, name + ".csv");
    try (PrintWriter pw = new PrintWriter(csv, StandardCharsets.UTF_8)) {
      pw.println(header);
      pw.println("workload,salus_mibps,salus_iops,salus_lat_usec,hbase_mibps,hbase_iops,hbase_lat_usec,"
          + "ceiling_mibps,ceiling_iops,ceiling_lat_usec,salus_over_hbase,salus_over_ceiling,hbase_over_ceiling");
      for (Map.Entry<String, Map<Target, Fio>> e : results.entrySet()) {
        Fio s = e.getValue().get(Target.SALUS);
        Fio h = e.getValue().get(Target.HBASE);
        Fio c = e.getValue().get(Target.CEILING);
        pw.printf(Locale.ROOT, "%s,%.2f,%.0f,%.0f,%.2f,%.0f,%.0f,%.2f,%.0f,%.0f,%.3f,%.4f,%.4f%n", e.getKey(),
            s.mibps(), s.iops(), s.latUsec(), h.mibps(), h.iops(), h.latUsec(), c.mibps(), c.iops(), c.latUsec(),
            ratio(s, h), ratio(s, c), ratio(h, c));
      }
    }
    System.out.println("wrote " + csv);
  }

  private void writeNetwork(String header, Map<Target, Traffic> traffic) throws IOException {
    File csv = new File(out, name + "-network.csv");
    try (PrintWriter pw = new PrintWriter(csv, StandardCharsets.UTF_8)) {
      pw.println(header);
      pw.println("# window = the " + FILL.name() + " fill of the working set plus a flush of the volume's tables;"
          + " hbase-rpc rows: the RPC server's receivedBytes/sentBytes (master and region servers); datanode rows:"
          + " BytesWritten/BytesRead; per-byte rows divide by the client bytes written; dn_network assumes each"
          + " region server shares a machine with its DataNode (first replica local): (r-1)/r of the DataNode"
          + " bytes received for replication r");
      pw.println("target,row,server,received_bytes,sent_bytes");
      for (Map.Entry<String, Long> e : protocolCounters.entrySet()) {
        pw.printf(Locale.ROOT, "salus,%s,,%d,%n", e.getKey(), e.getValue());
      }
      for (Map.Entry<Target, Traffic> e : traffic.entrySet()) {
        String t = e.getKey().name().toLowerCase(Locale.ROOT);
        Traffic tr = e.getValue();
        for (ServerByteCounters.Server s : tr.delta().servers()) {
          pw.printf(Locale.ROOT, "%s,%s,%s,%d,%d%n", t, s.kind(), s.name(), s.received(), s.sent());
        }
        pw.printf(Locale.ROOT, "%s,client_bytes_written,,%d,%n", t, tr.clientBytes());
        pw.printf(Locale.ROOT, "%s,location_hints_followed_fallbacks,,%d,%d%n", t, tr.delta().hintsFollowed(),
            tr.delta().hintFallbacks());
        pw.printf(Locale.ROOT, "%s,replication_of_data_files,,%d,%n", t, tr.replication());
        pw.printf(Locale.ROOT, "%s,rpc_bytes_per_byte,,%.3f,%n", t, tr.rpcPerByte());
        pw.printf(Locale.ROOT, "%s,datanode_bytes_written_per_byte,,%.3f,%n", t, tr.copiesPerByte());
        pw.printf(Locale.ROOT, "%s,datanode_bytes_read_per_byte,,%.3f,%n", t, tr.dnReadPerByte());
        pw.printf(Locale.ROOT, "%s,datanode_network_bytes_per_byte,,%.3f,%n", t, tr.dnNetworkPerByte());
        pw.printf(Locale.ROOT, "%s,network_bytes_per_byte,,%.3f,%n", t, tr.networkPerByte());
        pw.printf(Locale.ROOT, "%s,client_rpc_bytes_per_byte,,%.3f,%n", t, tr.clientRpcPerByte());
        pw.printf(Locale.ROOT, "%s,network_bytes_per_byte_without_client,,%.3f,%n", t,
            tr.networkPerByteWithoutClient());
      }
    }
    System.out.println("wrote " + csv);
  }

  /**
   * {@code <name>-traffic.csv}: what the Salus endpoints' RPCs carried over the Salus fill window, per direction and
   * message type, largest first, with bytes per client byte; and the endpoints' whole requests and responses against
   * the region servers' own RPC byte counters (the difference is HBase's per-call framing and anything else the
   * region servers' RPC servers carried: master calls, meta lookups, the flush).
   */
  private void writeTraffic(String header, Map<Target, Traffic> traffic) throws IOException {
    Traffic t = traffic.get(Target.SALUS);
    if (t == null) {
      return;
    }
    File csv = new File(out, name + "-traffic.csv");
    try (PrintWriter pw = new PrintWriter(csv, StandardCharsets.UTF_8)) {
      pw.println(header);
      pw.println("# window = the salus " + FILL.name() + " fill plus a flush of its tables; counted by every replica"
          + " endpoint (ReplicaHost#traffic): in:client:<TYPE> / in:peer:<TYPE> = protocol messages in deliver calls"
          + " from the client / from region servers (MessageCodec bytes), in:*:deliverCall and in:client:pollCall ="
          + " whole requests (protobuf), out:client:<TYPE> = replies returned to the client, out:*:*Response = whole"
          + " responses; rpc_server_bytes = the region servers' receivedBytes + sentBytes");
      pw.println("key,messages,bytes,bytes_per_client_byte");
      List<Map.Entry<String, long[]>> rows = new ArrayList<>(salusTraffic.entrySet());
      rows.sort((a, b) -> Long.compare(b.getValue()[1], a.getValue()[1]));
      long calls = 0;
      for (Map.Entry<String, long[]> e : rows) {
        pw.printf(Locale.ROOT, "%s,%d,%d,%.4f%n", e.getKey(), e.getValue()[0], e.getValue()[1],
            (double) e.getValue()[1] / t.clientBytes());
        if (e.getKey().endsWith("Call") || e.getKey().endsWith("Response")) {
          calls += e.getValue()[1];
        }
      }
      long rs = 0;
      for (ServerByteCounters.Server s : t.delta().servers()) {
        if (s.kind().equals("hbase-rpc") && s.name().contains("rs:")) {
          rs += s.received() + s.sent();
        }
      }
      pw.printf(Locale.ROOT, "endpoint_calls_and_responses,,%d,%.4f%n", calls, (double) calls / t.clientBytes());
      pw.printf(Locale.ROOT, "rpc_server_bytes,,%d,%.4f%n", rs, (double) rs / t.clientBytes());
    }
    System.out.println("wrote " + csv);
  }

  private List<String[]> goals(Map<String, Map<Target, Fio>> r, Map<Target, Traffic> traffic, double ddMibps) {
    List<String[]> g = new ArrayList<>();
    double seq = ratio(r.get(SEQ_WRITE_4K.name()).get(Target.SALUS), r.get(SEQ_WRITE_4K.name()).get(Target.HBASE));
    g.add(goal("salus 4k sequential write / hbase", seq, 0.9, true));
    double seq1m = ratio(r.get(FILL.name()).get(Target.SALUS), r.get(FILL.name()).get(Target.HBASE));
    g.add(goal("salus 1M sequential write / hbase", seq1m, 0.9, true));
    double barrier = ratio(r.get(BARRIER.name()).get(Target.SALUS), r.get(SEQ_WRITE_4K.name()).get(Target.SALUS));
    g.add(goal("salus barrier (fsync per write) / salus without barriers", barrier, 0.9, true));
    double hbBarrier = ratio(r.get(BARRIER.name()).get(Target.HBASE), r.get(SEQ_WRITE_4K.name()).get(Target.HBASE));
    g.add(goal("hbase barrier (fsync per write) / hbase without barriers (for reference)", hbBarrier, 0.9, true));
    boolean salusFilled = !Double.isNaN(r.get(FILL.name()).get(Target.SALUS).mibps());
    boolean hbaseFilled = !Double.isNaN(r.get(FILL.name()).get(Target.HBASE).mibps());
    g.add(goal("salus network bytes per byte written, without the client's own request (the paper's measure)",
        salusFilled ? traffic.get(Target.SALUS).networkPerByteWithoutClient() : Double.NaN, 2.4, false));
    g.add(goal("salus network bytes per byte written, the client's request included",
        salusFilled ? traffic.get(Target.SALUS).networkPerByte() : Double.NaN, 2.4, false));
    g.add(goal("hbase network bytes per byte written, without the client's request (baseline, for reference)",
        hbaseFilled ? traffic.get(Target.HBASE).networkPerByteWithoutClient() : Double.NaN, 2.4, false));
    g.add(goal("hbase network bytes per byte written, the client's request included (baseline, for reference)",
        hbaseFilled ? traffic.get(Target.HBASE).networkPerByte() : Double.NaN, 2.4, false));
    String rr = "rand-read-4k-qd32";
    g.add(goal("salus 4k random read QD32 / ceiling", ratio(r.get(rr).get(Target.SALUS), r.get(rr).get(Target.CEILING)),
        0.25, true));
    double copies = traffic.get(Target.SALUS).copiesPerByte();
    double target1m = 0.5 * ddMibps / copies;
    double s1m = r.get(FILL.name()).get(Target.SALUS).mibps();
    g.add(new String[] {"salus 1M sequential write MiB/s vs 50% of disk / copies written ("
        + String.format(Locale.ROOT, "%.1f MiB/s / %.2f copies", ddMibps, copies) + ")",
        String.format(Locale.ROOT, "%.2f", s1m), String.format(Locale.ROOT, ">= %.2f", target1m),
        Double.isNaN(s1m) ? "not measured (a run failed)" : s1m >= target1m ? "met" : "missed"});
    return g;
  }

  private static String[] goal(String what, double value, double bound, boolean atLeast) {
    boolean met = atLeast ? value >= bound : value <= bound;
    if (Double.isNaN(value)) {
      return new String[] {what, "NaN", (atLeast ? ">= " : "<= ") + bound, "not measured (a run failed)"};
    }
    return new String[] {what, String.format(Locale.ROOT, "%.3f", value),
        (atLeast ? ">= " : "<= ") + bound, met ? "met" : "missed"};
  }

  private void writeGoals(String header, List<String[]> goals) throws IOException {
    File csv = new File(out, name + "-goals.csv");
    try (PrintWriter pw = new PrintWriter(csv, StandardCharsets.UTF_8)) {
      pw.println(header);
      pw.println("goal,measured,target,result");
      for (String[] g : goals) {
        pw.println("\"" + g[0] + "\"," + g[1] + ",\"" + g[2] + "\"," + g[3]);
      }
    }
    System.out.println("wrote " + csv);
  }

  private void plot(Map<String, Map<Target, Fio>> results) throws IOException {
    List<String> names = new ArrayList<>(results.keySet());
    CategoryChart chart = new CategoryChartBuilder().width(1100).height(550)
        .title("fio over NBD, one run, one cluster: throughput ratios (" + name + ".csv)")
        .xAxisTitle("fio workload").yAxisTitle("throughput ratio").build();
    chart.getStyler().setXAxisLabelRotation(15);
    chart.addSeries("SalusVolume / HBaseVolume", names,
        names.stream().map(n -> plotted(ratio(results.get(n).get(Target.SALUS), results.get(n).get(Target.HBASE))))
            .toList());
    chart.addSeries("SalusVolume / nbdkit file (ceiling)", names,
        names.stream().map(n -> plotted(ratio(results.get(n).get(Target.SALUS), results.get(n).get(Target.CEILING))))
            .toList());
    chart.addSeries("HBaseVolume / nbdkit file (ceiling)", names,
        names.stream().map(n -> plotted(ratio(results.get(n).get(Target.HBASE), results.get(n).get(Target.CEILING))))
            .toList());
    BitmapEncoder.saveBitmap(chart, new File(out, name).getPath(), BitmapEncoder.BitmapFormat.PNG);
    System.out.println("wrote " + new File(out, name + ".png"));
  }

  private void printSummary(Map<String, Map<Target, Fio>> results, Map<Target, Traffic> traffic,
      List<String[]> goals, double ddMibps, String loadBefore, String loadAfter) {
    System.out.println();
    System.out.printf(Locale.ROOT, "%-28s %10s %10s %10s %12s %12s %12s%n", "workload", "salus", "hbase", "ceiling",
        "salus/hbase", "salus/ceil", "hbase/ceil");
    for (Map.Entry<String, Map<Target, Fio>> e : results.entrySet()) {
      Fio s = e.getValue().get(Target.SALUS);
      Fio h = e.getValue().get(Target.HBASE);
      Fio c = e.getValue().get(Target.CEILING);
      System.out.printf(Locale.ROOT, "%-28s %10.2f %10.2f %10.1f %12.3f %12.4f %12.4f   (MiB/s)%n", e.getKey(),
          s.mibps(), h.mibps(), c.mibps(), ratio(s, h), ratio(s, c), ratio(h, c));
    }
    for (Map.Entry<Target, Traffic> e : traffic.entrySet()) {
      Traffic t = e.getValue();
      System.out.printf(Locale.ROOT, "%-6s network bytes per byte written %.3f = RPC %.3f + DataNode across machines"
          + " %.3f (DataNodes received %.3f copies, r=%d; read %.3f; location hints followed %d, fallbacks %d);"
          + " without the client's own request (the paper's measure) %.3f%n",
          e.getKey(), t.networkPerByte(), t.rpcPerByte(), t.dnNetworkPerByte(), t.copiesPerByte(), t.replication(),
          t.dnReadPerByte(), t.delta().hintsFollowed(), t.delta().hintFallbacks(), t.networkPerByteWithoutClient());
    }
    for (String f : failures) {
      System.out.println("FAILED: " + f);
    }
    System.out.printf(Locale.ROOT, "disk (dd oflag=direct): %.1f MiB/s; %s -> %s%n", ddMibps, loadBefore, loadAfter);
    for (String[] g : goals) {
      System.out.printf(Locale.ROOT, "goal: %-90s %10s (%s) %s%n", g[0], g[1], g[2], g[3]);
    }
  }

  static final String SCRATCH_MARKER = ".salus-vs-hbase-scratch";

  /**
   * Empties the scratch directory of a previous run, but never a directory this driver did not make (it carries
   * {@link #SCRATCH_MARKER}): a mistyped {@code --scratch} must not delete someone's files.
   */
  void prepareScratch(File dir) throws IOException {
    String[] entries = dir.list();
    if (entries != null && entries.length > 0) {
      if (!new File(dir, SCRATCH_MARKER).isFile()) {
        throw new ParameterException(spec.commandLine(), "--scratch " + dir + " is not empty and was not made by"
            + " this benchmark (no " + SCRATCH_MARKER + " in it): give an empty or new directory");
      }
      deleteTree(dir);
    }
    Files.createDirectories(dir.toPath());
    Files.writeString(dir.toPath().resolve(SCRATCH_MARKER), "scratch of SalusVsHBaseBenchmark; deleted by its next"
        + " run\n");
  }

  private static void deleteTree(File f) throws IOException {
    try (var walk = Files.walk(f.toPath())) {
      for (Path p : walk.sorted(java.util.Comparator.reverseOrder()).toList()) {
        Files.delete(p);
      }
    }
  }
}
