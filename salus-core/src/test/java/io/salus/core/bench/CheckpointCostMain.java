package io.salus.core.bench;

import io.salus.core.merkle.HashAlgorithm;
import io.salus.core.merkle.RegionLayout;
import io.salus.core.merkle.VolumeRootRecord;
import io.salus.core.protocol.ProtocolConfig;
import io.salus.core.protocol.replica.InMemoryRegionStore;
import io.salus.core.protocol.replica.InMemoryReplicaDisk;
import io.salus.core.protocol.replica.RegionSnapshot;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;

/**
 * Benchmark (not a test): the cost of one replica checkpoint against the region size and the number
 * of blocks changed since the previous checkpoint. "delta" is what {@code RegionReplica.flush} does
 * now ({@code ReplicaDisk.writeCheckpoint} of {@code RegionStore.dirty()}, then
 * {@code markDurable}); "whole-region" is the baseline measured in the same run, what it did before
 * issue 11 (a {@code RegionSnapshot} of every block, {@code writeSnapshot}). Median of repeated
 * runs (a full GC before each timed pair); writes {@code checkpoint-cost.csv} and
 * {@code checkpoint-cost.png}. The delta copies the changed blocks' bytes (what a flush writes); the
 * baseline copies only the block map's references, so it flatters the old code.
 *
 * <pre>
 * cd salus-core &amp;&amp; mvn -B -o -q test-compile dependency:build-classpath -Dmdep.outputFile=/tmp/cp.txt -Dmdep.includeScope=test
 * java -cp target/test-classes:target/classes:$(cat /tmp/cp.txt) io.salus.core.bench.CheckpointCostMain ../docs/benchmarks
 * </pre>
 */
public final class CheckpointCostMain {
    static final int BLOCK = 4096;
    static final int REPS = 41;

    private CheckpointCostMain() {
    }

    record Row(String series, long regionBlocks, long changed, double deltaMicros, double wholeMicros) {
    }

    public static void main(String[] args) throws Exception {
        Path out = Path.of(args.length > 0 ? args[0] : "docs/benchmarks");
        Files.createDirectories(out);
        List<Row> rows = new ArrayList<>();
        for (long n : new long[] {1024, 2048, 4096, 8192, 16384}) {
            rows.add(measure("region-size", n, 64));
        }
        for (long c : new long[] {16, 64, 256, 1024, 4096}) {
            rows.add(measure("blocks-changed", 16384, c));
        }
        try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(out.resolve("checkpoint-cost.csv")))) {
            w.println("series,region_blocks,blocks_changed,block_bytes,delta_checkpoint_us,whole_region_checkpoint_us,"
                    + "whole_over_delta");
            for (Row r : rows) {
                w.printf("%s,%d,%d,%d,%.1f,%.1f,%.2f%n", r.series, r.regionBlocks, r.changed, BLOCK, r.deltaMicros,
                        r.wholeMicros, r.wholeMicros / r.deltaMicros);
                System.out.printf("%-14s region=%6d blocks changed=%5d  delta %9.1f us  whole-region %9.1f us"
                        + "  ratio whole/delta %.2f%n", r.series, r.regionBlocks, r.changed, r.deltaMicros,
                        r.wholeMicros, r.wholeMicros / r.deltaMicros);
            }
        }
        plot(out, rows);
    }

    static Row measure(String series, long regionBlocks, long changed) {
        ProtocolConfig cfg = ProtocolConfig.of("bench", BLOCK, HashAlgorithm.SHA256,
                RegionLayout.ofRegionSize(regionBlocks, regionBlocks));
        Random rnd = new Random(42);
        Map<Long, byte[]> initial = new HashMap<>();
        for (long b = 0; b < regionBlocks; b++) {
            byte[] d = new byte[BLOCK];
            rnd.nextBytes(d);
            initial.put(b, d);
        }
        InMemoryRegionStore store = new InMemoryRegionStore(cfg, initial);
        Map<Long, byte[]> replicaBlocks = new HashMap<>(initial); // the pre-issue-11 replica's block map
        VolumeRootRecord rec = new VolumeRootRecord(store.root(), 1);
        double[] delta = new double[REPS];
        double[] whole = new double[REPS];
        long index = 0;
        for (int rep = 0; rep < REPS + 5; rep++) {
            for (long i = 0; i < changed; i++) { // the committed writes since the previous checkpoint
                long b = Math.floorMod(rnd.nextLong(), regionBlocks);
                byte[] d = new byte[BLOCK];
                rnd.nextBytes(d);
                store.apply(b, d);
                replicaBlocks.put(b, d);
            }
            InMemoryReplicaDisk disk = new InMemoryReplicaDisk();
            index += 4;
            System.gc(); // keep collections of the set-up garbage out of the timed section
            long t0 = System.nanoTime();
            disk.writeCheckpoint(0, index, index, store.dirty(), rec);
            store.markDurable();
            long t1 = System.nanoTime();
            disk.writeSnapshot(new RegionSnapshot(0, index, index, replicaBlocks, rec));
            long t2 = System.nanoTime();
            if (rep >= 5) { // warm-up excluded
                delta[rep - 5] = (t1 - t0) / 1e3;
                whole[rep - 5] = (t2 - t1) / 1e3;
            }
        }
        return new Row(series, regionBlocks, changed, median(delta), median(whole));
    }

    static double median(double[] v) {
        double[] c = v.clone();
        Arrays.sort(c);
        return c[c.length / 2];
    }

    static void plot(Path out, List<Row> rows) throws Exception {
        XYChart chart = new XYChartBuilder().width(1000).height(500)
                .title("Checkpoint cost: grows with blocks changed, not region size (4 KiB blocks, median)")
                .xAxisTitle("blocks (region size for 'size' series, blocks changed for 'changed' series)")
                .yAxisTitle("microseconds per checkpoint").build();
        chart.getStyler().setXAxisLogarithmic(true).setYAxisLogarithmic(true);
        addSeries(chart, rows, "region-size", true, "delta, region size varies (64 changed)");
        addSeries(chart, rows, "region-size", false, "whole-region baseline, region size varies");
        addSeries(chart, rows, "blocks-changed", true, "delta, blocks changed vary (16384-block region)");
        addSeries(chart, rows, "blocks-changed", false, "whole-region baseline, blocks changed vary");
        BitmapEncoder.saveBitmap(chart, out.resolve("checkpoint-cost").toString(), BitmapEncoder.BitmapFormat.PNG);
    }

    static void addSeries(XYChart chart, List<Row> rows, String series, boolean delta, String name) {
        List<Double> x = new ArrayList<>();
        List<Double> y = new ArrayList<>();
        for (Row r : rows) {
            if (r.series.equals(series)) {
                x.add((double) (series.equals("region-size") ? r.regionBlocks : r.changed));
                y.add(delta ? r.deltaMicros : r.wholeMicros);
            }
        }
        chart.addSeries(name, x, y);
    }
}
