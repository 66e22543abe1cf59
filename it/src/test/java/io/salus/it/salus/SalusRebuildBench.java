package io.salus.it.salus;

import static org.junit.jupiter.api.Assertions.*;

import io.salus.blockdriver.salus.SalusVolume;
import io.salus.core.hbase.VolumeGeometry;
import java.io.File;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.apache.hadoop.hbase.ServerName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;

/**
 * A measurement, not a test of timing (issue 14 item 3, Done-when "a DataNode disk lost for good"): client write
 * throughput of a SalusVolume over time before, during and after the replicas of one region server are rebuilt from
 * their peers because that server's DataNode lost its disk for good, and the rebuild time. One real mini cluster
 * (3 region servers each paired with its own DataNode, the NameNode honouring the favored nodes as in production);
 * the sequence-numbered workload of the fault table (writes of 1-4 blocks of 4 KiB, at most 8 outstanding) runs
 * throughout; after {@code -Dsalus.bench.rebuild.warmup} seconds (default 40) the DataNode paired with the server of
 * replica 0/0 is stopped, its data directories deleted and it is started again empty
 * ({@link SalusFaultTableTest.LoseDataNodeDisk#loseDisk}); the run goes on until every replica region that was on
 * that server serves again after a catch-up from a peer, then {@code -Dsalus.bench.rebuild.after} seconds more
 * (default 40). {@code -Dsalus.bench.rebuild.rate} sets the rebuild's throttle ({@code salus.rebuild.blocks.per.second},
 * default {@link io.salus.core.protocol.replica.RegionReplica#DEFAULT_REBUILD_BLOCKS_PER_SECOND}). Writes
 * {@code DIR/<name>.csv} ({@code -Dsalus.bench.rebuild.name}, default {@code salus-rebuild}) (acknowledged writes per second, the phase, the events) and
 * {@code DIR/salus-rebuild.png}. It checks only what must hold (the volume reads back every acknowledged write, every
 * replica was rebuilt); the numbers are printed, not asserted. Command (repository root):
 *
 * <pre>
 * mvn -B -o verify -pl it -am -DskipITs -Dtest=SalusRebuildBench -Dsurefire.failIfNoSpecifiedTests=false \
 *   -Dsalus.bench.rebuild.out=$PWD/docs/benchmarks
 * </pre>
 */
@EnabledIfSystemProperty(named = "salus.bench.rebuild.out", matches = ".+")
class SalusRebuildBench {
  static final int BLOCK = SalusRegionRecoveryTest.BLOCK;
  static final long PER_REGION = 64;
  static final int REGIONS = 4;

  @Test
  void throughputWhileAReplicaIsRebuilt() throws Exception {
    Path dir = Path.of(System.getProperty("salus.bench.rebuild.out"));
    long warmup = Long.getLong("salus.bench.rebuild.warmup", 40);
    long after = Long.getLong("salus.bench.rebuild.after", 40);
    String loadBefore = SalusFaultTableTest.load();
    Instant started = Instant.now();
    String name = System.getProperty("salus.bench.rebuild.name", "salus-rebuild");
    int rate = Integer.getInteger("salus.bench.rebuild.rate",
        io.salus.core.protocol.replica.RegionReplica.DEFAULT_REBUILD_BLOCKS_PER_SECOND);
    try (SalusMiniCluster cluster = new SalusMiniCluster(c -> {
      c.set("hbase.regionserver.abort.timeout.task", NoHaltOnAbortTimeout.class.getName());
      c.setInt(io.salus.core.hbase.endpoint.ReplicaHost.RebuildSettings.RATE_KEY, rate);
      SalusFaultTableTest.LoseDataNodeDisk.configure(c);
    })) {
      VolumeGeometry g = new VolumeGeometry("rebuild", REGIONS * PER_REGION * BLOCK, BLOCK, PER_REGION);
      cluster.createVolume(g);
      SalusVolume v = SalusVolume.open(cluster.connection(), g.volume());
      SalusRegionRecoveryTest.Workload w = new SalusRegionRecoveryTest.Workload(g, v, 1_000_000, 8);
      List<String> rows = new ArrayList<>();
      List<Double> t = new ArrayList<>();
      List<Double> perSecond = new ArrayList<>();
      List<String> events = new ArrayList<>();
      long start = System.currentTimeMillis();
      long lossAt = -1;
      long rebuiltAt = -1;
      long servingAt = -1;
      long lastAcked = 0;
      long stopAt = Long.MAX_VALUE;
      long rebuildDeadline = Long.MAX_VALUE;
      List<int[]> there = new ArrayList<>();
      ServerName victim = null;
      int lostBlocks = 0;
      long next = start + 1000;
      while (System.currentTimeMillis() < stopAt) {
        long sleep = next - System.currentTimeMillis();
        if (sleep > 0) {
          Thread.sleep(sleep);
        }
        long now = System.currentTimeMillis();
        next += 1000;
        long acked = w.acked();
        double sec = (now - start) / 1000.0;
        String phase = lossAt < 0 ? "before" : servingAt < 0 ? "recovering" : rebuiltAt < 0 ? "rebuilding" : "after";
        rows.add(String.format(Locale.ROOT, "%.1f,%d,%d,%s", sec, acked, acked - lastAcked, phase));
        t.add(sec);
        perSecond.add((double) (acked - lastAcked));
        lastAcked = acked;
        if (lossAt < 0 && sec >= warmup) {
          victim = cluster.locate(g, 0, 0);
          for (int r = 0; r < g.numRegions(); r++) {
            for (int k = 0; k < 3; k++) {
              if (victim.equals(cluster.locate(g, r, k))) {
                there.add(new int[] {r, k});
              }
            }
          }
          int dn = cluster.dataNodeOf(victim);
          lossAt = System.currentTimeMillis();
          lostBlocks = SalusFaultTableTest.LoseDataNodeDisk.loseDisk(cluster, cluster.dataNodes.get(dn));
          events.add(String.format(Locale.ROOT, "%.1f,disk lost (DataNode %d paired with %s: %d block replicas; "
              + "stop, delete, restart took %d ms)", (lossAt - start) / 1000.0, dn, victim.getHostAndPort(), lostBlocks,
              System.currentTimeMillis() - lossAt));
          rebuildDeadline = lossAt + 300_000;
          next = System.currentTimeMillis() + 1000; // the restart took a while: no catching-up burst of samples
        } else if (lossAt > 0 && rebuiltAt < 0) {
          int done = 0;
          int serving = 0;
          for (int[] rk : there) {
            var ep = cluster.endpoint(g, rk[0], rk[1]);
            var host = ep == null ? null : ep.host();
            if (host != null && host.serving() && host.counters().get("recoveryFromPeer") == 1) {
              serving++;
              done += host.counters().get("rebuilding") == 0 ? 1 : 0;
            }
          }
          if (servingAt < 0 && serving == there.size()) {
            servingAt = now;
            events.add(String.format(Locale.ROOT, "%.1f,every replica of %s serves again (metadata installed) %.1f s"
                + " after the loss", (now - start) / 1000.0, victim.getHostAndPort(), (now - lossAt) / 1000.0));
          }
          if (done == there.size()) {
            rebuiltAt = now;
            stopAt = now + after * 1000;
            StringBuilder b = new StringBuilder();
            for (int[] rk : there) {
              var c = cluster.endpoint(g, rk[0], rk[1]).host().counters();
              b.append(" replica ").append(rk[0]).append('/').append(rk[1]).append(' ')
                  .append(c.get("recoveryMetadataFirst") == 1 ? "metadata first, " : "whole state, ")
                  .append(c.get("recoveryMillis")).append(" ms open to serving, ").append(c.get("rebuildBlocks"))
                  .append(" of ").append(c.get("recoveryPeerBlocks")).append(" blocks fetched in the background in ")
                  .append(c.get("rebuildMillis")).append(" ms, ").append(c.get("rebuildDroppedGets"))
                  .append(" GETs of missing blocks left to other replicas, ").append(c.get("recoveryPeerEntries"))
                  .append(" log entries from a peer;");
            }
            events.add(String.format(Locale.ROOT, "%.1f,every replica of %s rebuilt (%d regions) %.1f s after the"
                + " loss:%s", (now - start) / 1000.0, victim.getHostAndPort(), there.size(),
                (now - lossAt) / 1000.0, b));
          } else if (now > rebuildDeadline) {
            events.add(String.format(Locale.ROOT, "%.1f,NOT rebuilt within 300 s (%d of %d replicas)",
                (now - start) / 1000.0, done, there.size()));
            stopAt = now;
          }
        }
      }
      w.stop();
      boolean done = w.await(SalusMiniCluster.DEADLINE_MS);
      int failed = w.failed();
      // throughput per phase (mean acknowledged writes per second)
      double[] sum = new double[3];
      int[] n = new int[3];
      for (String r : rows) {
        String[] f = r.split(",");
        int p = f[3].equals("before") ? 0 : f[3].equals("after") ? 2 : 1; // recovering and rebuilding: 1
        if (p == 0 && Double.parseDouble(f[0]) < 10) {
          continue; // the first seconds: the client and the regions warm up
        }
        sum[p] += Double.parseDouble(f[2]);
        n[p]++;
      }
      double before = n[0] == 0 ? 0 : sum[0] / n[0];
      double during = n[1] == 0 ? 0 : sum[1] / n[1];
      double afterMean = n[2] == 0 ? 0 : sum[2] / n[2];
      // the rebuild's background phase alone (serving, fetching blocks), if it lasted a whole sample
      double bg = 0;
      int nbg = 0;
      for (String r : rows) {
        String[] f = r.split(",");
        if (f[3].equals("rebuilding")) {
          bg += Double.parseDouble(f[2]);
          nbg++;
        }
      }
      String summary = String.format(Locale.ROOT, "# writes/s: before %.2f (from 10 s on), from the loss to every"
              + " block rebuilt %.2f (%.0f%% of before; %d samples), of which serving and fetching blocks %s, after"
              + " %.2f; loss to every replica serving again %.1f s, to every block rebuilt %.1f s; rebuild rate %d"
              + " blocks/s; %d writes acknowledged, %d failed, workload drained: %s; ended %s, load average %s",
          before, during, before == 0 ? 0 : 100 * during / before, n[1],
          nbg == 0 ? "(no whole sample)" : String.format(Locale.ROOT, "%.2f (%d samples)", bg / nbg, nbg), afterMean,
          servingAt < 0 ? -1.0 : (servingAt - lossAt) / 1000.0, rebuiltAt < 0 ? -1.0 : (rebuiltAt - lossAt) / 1000.0,
          rate, w.acked(), failed, done, Instant.now(), SalusFaultTableTest.load());
      System.out.println("rebuild bench: " + summary);
      events.forEach(e -> System.out.println("rebuild bench event: " + e));
      // what must hold: every acknowledged write reads back through the same mount
      boolean[] acked = java.util.Arrays.copyOf(w.ackedFlags(), w.issued());
      String fresh = SalusFaultTableTest.freshness(g, acked.length, acked, SalusFaultTableTest.readAll(g, v));
      v.close();
      Files.createDirectories(dir);
      File csv = dir.resolve(name + ".csv").toFile();
      try (PrintWriter pw = new PrintWriter(csv, StandardCharsets.UTF_8)) {
        pw.println("# SalusRebuildBench (rebuild rate " + rate + " blocks/s): SalusVolume of " + REGIONS + " regions x " + PER_REGION + " blocks of " + BLOCK
            + " B on one mini cluster (3 region servers, each paired with its own DataNode; LocationHintPlacementPolicy),"
            + " sequence-numbered writes of 1-4 blocks, at most 8 outstanding; started " + started + ", load average "
            + loadBefore);
        pw.println("# events: seconds,what");
        events.forEach(e -> pw.println("# event " + e));
        pw.println(summary);
        pw.println("# read back after the run: " + fresh);
        pw.println("seconds,writes_acked_total,writes_acked_in_last_second,phase");
        rows.forEach(pw::println);
      }
      XYChart chart = new XYChartBuilder().width(1000).height(500)
          .title("SalusVolume writes/s while a lost DataNode disk's replicas are rebuilt (" + name + ".csv)")
          .xAxisTitle("seconds").yAxisTitle("acknowledged writes per second").build();
      chart.addSeries("writes/s", t, perSecond);
      double top = perSecond.stream().mapToDouble(Double::doubleValue).max().orElse(1);
      if (lossAt > 0) {
        double x = (lossAt - start) / 1000.0;
        chart.addSeries("disk lost", List.of(x, x), List.of(0.0, top));
      }
      if (servingAt > 0) {
        double x = (servingAt - start) / 1000.0;
        chart.addSeries(String.format(Locale.ROOT, "serving again (%.1f s)", (servingAt - lossAt) / 1000.0),
            List.of(x, x), List.of(0.0, top));
      }
      if (rebuiltAt > 0) {
        double x = (rebuiltAt - start) / 1000.0;
        chart.addSeries(String.format(Locale.ROOT, "all replicas rebuilt (%.1f s)", (rebuiltAt - lossAt) / 1000.0),
            List.of(x, x), List.of(0.0, top));
      }
      if (before > 0) {
        chart.addSeries("50% of before", List.of(t.get(0), t.get(t.size() - 1)), List.of(before / 2, before / 2));
      }
      BitmapEncoder.saveBitmap(chart, dir.resolve(name).toString(), BitmapEncoder.BitmapFormat.PNG);
      System.out.println("wrote " + csv + " and " + name + ".png");
      assertTrue(rebuiltAt > 0, "every replica of the lost disk's server rebuilt from a peer: " + events);
      assertEquals("Fresh", fresh, "every acknowledged write reads back");
    }
  }
}
