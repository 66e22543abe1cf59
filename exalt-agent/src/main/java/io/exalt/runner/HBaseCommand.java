package io.exalt.runner;

import io.exalt.agent.boot.ExaltRuntime;
import io.exalt.bench.Plots;
import io.exalt.tardis.TardisGenerator;
import java.io.File;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.MiniHBaseCluster;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.Durability;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.util.Bytes;
import org.apache.hadoop.hbase.zookeeper.MiniZooKeeperCluster;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code exalt hbase}: the HBase case study (§4.5.2, Figs. 4.7–4.9). Real ZooKeeper, NameNode and HMaster;
 * emulated DataNodes (Tardis-compressed disks and transfer ports) and region servers (the real region server code,
 * in this JVM, writing WALs and HFiles to the emulated DataNodes). Clients put rows whose values are Tardis data.
 * For each number of region servers (a cluster per value) and each (regions per server, value size) pair (a table
 * per pair) it measures put throughput, memstore flushes and store files, the DataNodes' logical/physical bytes
 * (the colocation headroom, Fig. 4.9) and CPU.
 *
 * <p>Not provided (the paper had it): in-memory compression of the region servers' memstores, so memory per region
 * is real memory here; all region servers share this JVM's heap.
 */
@Command(name = "hbase", mixinStandardHelpOptions = true,
        description = "HBase case study: real ZooKeeper/NameNode/HMaster, emulated region servers and DataNodes.")
public final class HBaseCommand implements Callable<Integer> {
    @Option(names = "--regionservers", split = ",", defaultValue = "1,2,4", description = "Region servers; a list runs a cluster per value (default ${DEFAULT-VALUE}).")
    List<Integer> regionServers;

    @Option(names = "--datanodes", defaultValue = "6", description = "Emulated DataNodes (default ${DEFAULT-VALUE}).")
    int datanodes;

    @Option(names = "--regions-per-server", split = ",", defaultValue = "10", description = "Regions per region server; a list runs a table per value (default ${DEFAULT-VALUE}).")
    List<Integer> regionsPerServer;

    @Option(names = "--value-size", split = ",", defaultValue = "100k", description = "Value bytes per put; a list runs a table per value (default ${DEFAULT-VALUE}).")
    List<String> valueSizes;

    @Option(names = "--memstore-mb", defaultValue = "128", description = "Memstore memory per region server in MB"
            + " (hbase.regionserver.global.memstore.size as a share of this JVM's heap; default ${DEFAULT-VALUE}).")
    int memstoreMb;

    @Option(names = "--clients", defaultValue = "8", description = "Client threads (default ${DEFAULT-VALUE}).")
    int clients;

    @Option(names = "--duration", defaultValue = "30", description = "Measured seconds per point (default ${DEFAULT-VALUE}).")
    int duration;

    @Mixin
    RunnerOptions.Warmup warmup;

    @Mixin
    RunnerOptions options;

    @Mixin
    RunnerOptions.Ports ports;

    @Option(names = "--name", defaultValue = "exalt-hbase", description = "File name stem of the outputs (default ${DEFAULT-VALUE}).")
    String name;

    @Override
    public Integer call() throws Exception {
        File base = options.base();
        int ports = this.ports.portBase();
        EmulatedHdfs.checkAgent(new File(base, "data"), ports, datanodes);
        List<String> rows = new ArrayList<>();
        String header = "regionservers,datanodes,regions_per_server,value_bytes,memstore_MB_per_server,regions_per_GB_memstore,"
                + "clients,duration_s,puts,put_MBps,flushed_MB,hdfs_files_created,store_files,dn_logical_bytes,dn_physical_bytes,colocation_ratio,"
                + "cpu_cores,MBps_per_core,heap_MB,errors,load_avg_start";
        Path csv = options.out.resolve(name + ".csv");
        for (int rs : regionServers) {
            runCluster(base, ports, rs, rows);
            Plots.csv(csv, header, rows);
        }
        System.out.println("wrote " + csv);
        return 0;
    }

    private void runCluster(File base, int ports, int rs, List<String> rows) throws Exception {
        System.out.printf("== HBase: %d region servers, %d emulated DataNodes, memstore %d MB per region server%n", rs, datanodes,
                memstoreMb);
        long t0 = System.nanoTime();
        EmulatedHdfs hdfs = EmulatedHdfs.start(base, datanodes, ports, 64, 128L << 20, 512, 3, null);
        MiniZooKeeperCluster zk = null;
        MiniHBaseCluster hbase = null;
        try {
            Configuration zc = new Configuration(false);
            zk = new MiniZooKeeperCluster(zc);
            int zkPort = zk.startup(new File(base, "zookeeper"));
            Configuration c = HBaseConfiguration.create(hdfs.conf);
            c.set("fs.defaultFS", hdfs.fs().getUri().toString());
            // MiniDFSCluster started with 0 DataNodes cached a FileSystem whose client has dfs.replication=0: own ones
            c.setBoolean("fs.hdfs.impl.disable.cache", true);
            c.setInt("dfs.replication", 3);
            c.set("hbase.rootdir", hdfs.fs().getUri() + "/hbase");
            c.set("hbase.zookeeper.quorum", "127.0.0.1");
            c.setInt("hbase.zookeeper.property.clientPort", zkPort);
            c.setInt("hbase.master.info.port", -1);
            c.setInt("hbase.regionserver.info.port", -1);
            c.setInt("hbase.master.port", 0);
            c.setInt("hbase.regionserver.port", 0);
            c.setBoolean("hbase.unsafe.stream.capability.enforce", false);
            c.set("hbase.tmp.dir", new File(base, "hbase-tmp").getAbsolutePath()); // local scratch, not emulated
            c.set("hbase.wal.provider", "filesystem"); // FSHLog over the DFS client: its bytes reach the emulated DataNodes
            c.setInt("hbase.regionserver.handler.count", 8);
            long heap = Runtime.getRuntime().maxMemory();
            // every in-process region server sizes its memstore from this JVM's heap: give each memstoreMb
            float share = (float) Math.max(0.01, Math.min(0.4, (memstoreMb << 20) / (double) heap));
            c.setFloat("hbase.regionserver.global.memstore.size", share);
            c.setFloat("hfile.block.cache.size", 0.01f);
            c.setInt("hbase.client.retries.number", 20);
            c.setInt("hbase.master.start.timeout.localHBaseCluster", 600_000); // a loaded 2-core box starts slowly
            hbase = new MiniHBaseCluster(c, 1, rs);
            hbase.waitForActiveAndReadyMaster(300_000);
            System.out.printf("   cluster up in %.1f s%n", (System.nanoTime() - t0) / 1e9);
            try (Connection conn = ConnectionFactory.createConnection(c)) {
                for (int rps : regionsPerServer) {
                    for (String vs : valueSizes) {
                        rows.add(runTable(conn, hbase, hdfs, base, rs, rps, (int) HdfsCommand.size(vs)));
                    }
                }
            }
        } finally {
            if (hbase != null) {
                hbase.shutdown();
                hbase.waitUntilShutDown();
            }
            if (zk != null) {
                zk.shutdown();
            }
            hdfs.close();
        }
    }

    private String runTable(Connection conn, MiniHBaseCluster hbase, EmulatedHdfs hdfs, File base, int rs, int rps, int valueBytes)
            throws Exception {
        TableName tn = TableName.valueOf(String.format("t_rs%d_r%d_v%d", rs, rps, valueBytes));
        int regions = rs * rps;
        byte[][] splits = new byte[regions - 1][];
        for (int i = 1; i < regions; i++) {
            splits[i - 1] = Bytes.toBytes(String.format("%08x", (int) ((0x1_0000_0000L * i / regions) >>> 4)));
        }
        try (Admin admin = conn.getAdmin()) {
            admin.createTable(TableDescriptorBuilder.newBuilder(tn).setColumnFamily(ColumnFamilyDescriptorBuilder.of("f")).build(),
                    regions > 1 ? splits : null);
        }
        double regionsPerGb = rps / (memstoreMb / 1024.0);
        System.out.printf("-- table %s: %d regions (%d per server, %.1f per GB of memstore), %d-byte Tardis values%n", tn, regions,
                rps, regionsPerGb, valueBytes);
        LongAdder puts = new LongAdder();
        LongAdder bytes = new LongAdder();
        AtomicLong errors = new AtomicLong();
        java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
        Thread[] ts = new Thread[clients];
        for (int i = 0; i < clients; i++) {
            final int id = i;
            ts[i] = new Thread(() -> {
                byte[] v = new byte[valueBytes];
                new TardisGenerator(valueBytes).fill(0, v, 0, valueBytes);
                java.util.Random r = new java.util.Random(id);
                // synchronous batches of ~1 MB: a put counts once the region servers acknowledged it (WAL synced)
                int batch = Math.max(1, (1 << 20) / Math.max(1, valueBytes));
                try (org.apache.hadoop.hbase.client.Table table = conn.getTable(tn)) {
                    while (!stop.get()) {
                        List<Put> ps = new ArrayList<>(batch);
                        for (int k = 0; k < batch; k++) {
                            Put p = new Put(Bytes.toBytes(String.format("%08x-%d", r.nextInt() >>> 4, id)));
                            p.addColumn(Bytes.toBytes("f"), Bytes.toBytes("v"), v);
                            p.setDurability(Durability.SYNC_WAL);
                            ps.add(p);
                        }
                        table.put(ps);
                        puts.add(batch);
                        bytes.add((long) batch * valueBytes);
                    }
                } catch (Exception e) {
                    if (!stop.get()) {
                        errors.incrementAndGet();
                        System.out.println("   client " + id + ": " + e);
                    }
                }
            }, "exalt-hbase-client-" + i);
            ts[i].setDaemon(true);
            ts[i].start();
        }
        Thread.sleep(warmup.warmup * 1000L);
        Sampler s = new Sampler(hdfs.nnRpcPort);
        double load0 = HdfsCommand.loadAverage();
        long p0 = puts.sum();
        long b0 = bytes.sum();
        long flush0 = flushedBytes(hbase);
        long files0 = nnFilesCreated();
        long logical0 = ExaltRuntime.LOGICAL_BYTES_WRITTEN.get();
        long physical0 = ExaltRuntime.PHYSICAL_BYTES_WRITTEN.get();
        s.cpuCores();
        long t0 = System.nanoTime();
        double heapMax = 0;
        for (int t = 1; t <= duration; t++) {
            Thread.sleep(Math.max(0, t0 / 1_000_000 + t * 1000L - System.nanoTime() / 1_000_000));
            heapMax = Math.max(heapMax, s.heapMb());
            if (t % 5 == 0 || t == duration) {
                System.out.printf("   [%s] %d/%d s: %.1f MB/s of values, %d files created in HDFS%n", tn, t, duration,
                        (bytes.sum() - b0) / 1048576.0 / ((System.nanoTime() - t0) / 1e9), nnFilesCreated() - files0);
            }
        }
        double secs = (System.nanoTime() - t0) / 1e9;
        double cpu = s.cpuCores();
        long np = puts.sum() - p0;
        double mbps = (bytes.sum() - b0) / 1048576.0 / secs;
        double flushedMb = (flushedBytes(hbase) - flush0) / 1048576.0;
        long hdfsFiles = nnFilesCreated() - files0;
        long logical = ExaltRuntime.LOGICAL_BYTES_WRITTEN.get() - logical0;
        long physical = ExaltRuntime.PHYSICAL_BYTES_WRITTEN.get() - physical0;
        stop.set(true);
        for (Thread t : ts) {
            t.join(60_000);
        }
        int storeFiles = storeFiles(hbase, tn);
        double ratio = physical > 0 ? (double) logical / physical : Double.NaN;
        System.out.printf(Locale.ROOT, "   %.1f MB/s of values (%d puts), %.0f MB flushed, %d HDFS files created, %d store files;"
                + " DataNodes wrote %d logical bytes as %d physical (%.1fx); CPU %.2f cores (%.1f MB/s per core); errors %d%n", mbps, np,
                flushedMb, hdfsFiles, storeFiles, logical,
                physical, ratio, cpu, mbps / Math.max(0.01, cpu), errors.get());
        try (Admin admin = conn.getAdmin()) {
            admin.disableTable(tn);
            admin.deleteTable(tn);
        }
        return String.format(Locale.ROOT, "%d,%d,%d,%d,%d,%.2f,%d,%.1f,%d,%.2f,%.1f,%d,%d,%d,%d,%.1f,%.2f,%.2f,%.0f,%d,%.2f", rs,
                datanodes, rps, valueBytes, memstoreMb, regionsPerGb, clients, secs, np, mbps, flushedMb, hdfsFiles, storeFiles, logical, physical, ratio, cpu,
                mbps / Math.max(0.01, cpu), heapMax, errors.get(), load0);
    }

    /** Bytes flushed from memstores to HFiles so far (region server metrics, refreshed every few seconds). */
    private static long flushedBytes(MiniHBaseCluster hbase) {
        long n = 0;
        for (var t : hbase.getRegionServerThreads()) {
            var m = t.getRegionServer().getMetrics();
            if (m != null) {
                n += m.getRegionServerWrapper().getFlushedCellsSize();
            }
        }
        return n;
    }

    /** Files created in the namespace so far (NameNode metric FilesCreated): flushes, WAL rolls, compactions. */
    private static long nnFilesCreated() {
        try {
            Object v = java.lang.management.ManagementFactory.getPlatformMBeanServer().getAttribute(
                    new javax.management.ObjectName("Hadoop:service=NameNode,name=NameNodeActivity"), "FilesCreated");
            return v instanceof Number ? ((Number) v).longValue() : -1;
        } catch (Exception e) {
            return -1;
        }
    }

    private static long storeFileCount(org.apache.hadoop.hbase.regionserver.Region r) {
        long n = 0;
        for (var st : r.getStores()) {
            n += st.getStorefilesCount();
        }
        return n;
    }

    private static int storeFiles(MiniHBaseCluster hbase, TableName tn) {
        int n = 0;
        for (var t : hbase.getRegionServerThreads()) {
            for (var r : t.getRegionServer().getRegions(tn)) {
                n += (int) storeFileCount(r);
            }
        }
        return n;
    }
}
