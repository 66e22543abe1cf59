package io.exalt.bench;

import com.github.luben.zstd.Zstd;
import io.exalt.tardis.TardisCompressor;
import io.exalt.tardis.TardisDecompressor;
import io.exalt.tardis.TardisGenerator;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.Function;
import java.util.zip.CRC32C;
import java.util.zip.Deflater;
import net.jpountz.lz4.LZ4Compressor;
import net.jpountz.lz4.LZ4Factory;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.style.Styler;

/**
 * Benchmark (run by hand, not a test): compression time and ratio of Tardis in its default mode (every byte
 * of a run verified, lossless on every input) and in the opt-in sampled mode ({@code SAMPLED_UNSAFE}, the
 * paper's fast path) against Deflater(6), LZ4 (fast, Java) and zstd (level 3, zstd-jni) on 1 MiB chunks of (a) pure Tardis data, (b) HDFS packets (64 KiB packets: header, CRC32C per
 * 512 bytes, data) and (c) Tardis with 32 bytes of metadata every 4 KiB. Prints the Tardis/Deflater speed ratio
 * and writes docs/benchmarks/tardis-codec.csv and .png.
 *
 * <pre>java -cp 'exalt-agent/target/exalt-agent-0.1.0-SNAPSHOT.jar:exalt-agent/target/lib/*' io.exalt.bench.CodecBenchmark [outDir]</pre>
 */
public final class CodecBenchmark {
    static final int MIB = 1 << 20;

    public static void main(String[] args) throws Exception {
        Path out = Paths.get(args.length > 0 ? args[0] : "docs/benchmarks");
        Map<String, byte[]> inputs = new LinkedHashMap<>();
        inputs.put("pure-tardis", pureTardis());
        inputs.put("hdfs-packets-crc", hdfsPackets());
        inputs.put("meta-every-4KiB", metaEvery4k());
        byte[] changed = pureTardis();
        System.arraycopy("0123456789".getBytes(java.nio.charset.StandardCharsets.US_ASCII), 0, changed, 500_003, 10);
        inputs.put("tardis-10B-overwritten", changed);

        TardisCompressor tardis = new TardisCompressor();
        TardisCompressor sampled = new TardisCompressor(io.exalt.tardis.TardisFormat.defaultFormat(),
                TardisCompressor.RunCheck.SAMPLED_UNSAFE);
        TardisDecompressor untardis = new TardisDecompressor();
        LZ4Compressor lz4 = LZ4Factory.fastestJavaInstance().fastCompressor();
        Map<String, Function<byte[], Integer>> codecs = new LinkedHashMap<>();
        byte[] tardisOut = new byte[TardisCompressor.maxEncodedLength(MIB)];
        codecs.put("tardis-verified", d -> tardis.compressTo(d, 0, d.length, tardisOut, 0));
        codecs.put("tardis-sampled-unsafe", d -> sampled.compressTo(d, 0, d.length, tardisOut, 0));
        codecs.put("deflater-6", d -> {
            Deflater def = new Deflater(6);
            def.setInput(d);
            def.finish();
            byte[] buf = new byte[d.length + 1024];
            int n = 0;
            while (!def.finished()) {
                n += def.deflate(buf, n, buf.length - n);
            }
            def.end();
            return n;
        });
        codecs.put("lz4", d -> lz4.compress(d).length);
        codecs.put("zstd-3", d -> Zstd.compress(d, 3).length);

        List<String> rows = new ArrayList<>();
        Map<String, Map<String, Double>> times = new LinkedHashMap<>();
        double load = loadAverage();
        System.out.printf("load average at start: %.2f (2-core machine; > 2 means other work competed)%n", load);
        System.out.printf("%-18s %-22s %14s %9s %12s %10s %12s%n", "input", "codec", "ns/chunk", "GB/s", "out bytes", "size x", "deflater/x");
        for (Map.Entry<String, byte[]> in : inputs.entrySet()) {
            byte[] d = in.getValue();
            // lossless check of the Tardis path on this input
            if (!Arrays.equals(untardis.decompress(tardis.compress(d)), d)) { // the verified (default) mode
                throw new AssertionError("Tardis round trip failed on " + in.getKey());
            }
            Map<String, Double> t = new LinkedHashMap<>();
            Map<String, Integer> size = new LinkedHashMap<>();
            for (Map.Entry<String, Function<byte[], Integer>> c : codecs.entrySet()) {
                size.put(c.getKey(), c.getValue().apply(d));
                t.put(c.getKey(), timeNs(c.getValue(), d));
            }
            double deflate = t.get("deflater-6");
            for (String c : codecs.keySet()) {
                double ratio = deflate / t.get(c);
                double gbs = d.length / t.get(c);
                System.out.printf("%-18s %-22s %14.1f %9.2f %12d %10.1f %12.1f%n", in.getKey(), c, t.get(c), gbs, size.get(c),
                        (double) d.length / size.get(c), ratio);
                rows.add(String.format("%s,%s,%.1f,%.3f,%d,%.2f,%.1f,%.2f", in.getKey(), c, t.get(c), gbs, size.get(c),
                        (double) d.length / size.get(c), ratio, load));
            }
            times.put(in.getKey(), t);
        }
        // the other half of the agent's per-byte cost: a receiving DataNode expands every frame (decompression)
        byte[] enc = tardis.compress(inputs.get("pure-tardis"));
        double dns = timeNs(x -> untardis.decompress(enc).length, inputs.get("pure-tardis"));
        System.out.printf("%-18s %-22s %14.1f %9.2f   (decompression: expanding the 1 MiB chunk back)%n", "pure-tardis",
                "tardis-decompress", dns, MIB / dns);
        rows.add(String.format("%s,%s,%.1f,%.3f,%d,%.2f,%s,%.2f", "pure-tardis", "tardis-decompress", dns, MIB / dns, enc.length,
                (double) MIB / enc.length, "", load));
        double pure = times.get("pure-tardis").get("deflater-6") / times.get("pure-tardis").get("tardis-verified");
        double gbs = MIB / times.get("pure-tardis").get("tardis-verified");
        System.out.printf("%nVerified Tardis compresses a 1 MiB pure-Tardis chunk at %.2f GB/s (goal >= 5 GB/s per core: %s),"
                + " %.0fx faster than Deflater(6) (goal >= 300x: %s); the sampled (unsafe) mode is %.0fx faster still%n",
                gbs, gbs >= 5 ? "MET" : "NOT MET", pure, pure >= 300 ? "MET" : "NOT MET",
                times.get("pure-tardis").get("tardis-verified") / times.get("pure-tardis").get("tardis-sampled-unsafe"));
        Plots.csv(out.resolve("tardis-codec.csv"),
                "input,codec,compress_ns_per_1MiB_chunk,GB_per_s,compressed_bytes,size_ratio,deflater6_time_over_codec_time,load_avg_1min", rows);
        CategoryChart chart = new CategoryChartBuilder().width(1000).height(560)
                .title("Compression time per 1 MiB chunk, log10 ns (shared, noisy 2-core machine)")
                .xAxisTitle("input").yAxisTitle("log10(ns per chunk)").build();
        chart.getStyler().setLegendPosition(Styler.LegendPosition.OutsideE);
        for (String c : codecs.keySet()) {
            List<String> xs = new ArrayList<>(times.keySet());
            List<Double> ys = new ArrayList<>();
            for (String x : xs) {
                ys.add(Math.log10(times.get(x).get(c)));
            }
            chart.addSeries(c, xs, ys);
        }
        Plots.png(chart, out.resolve("tardis-codec.png"));
        System.out.println("wrote " + out.resolve("tardis-codec.csv") + " and .png");
    }

    /** Median time of one call, from batches sized to take ~20 ms each. */
    static double timeNs(Function<byte[], Integer> f, byte[] d) {
        long sink = 0;
        long t0 = System.nanoTime();
        int warm = 0;
        while (System.nanoTime() - t0 < 300_000_000L || warm < 3) {
            sink += f.apply(d);
            warm++;
        }
        long one = Math.max(1, (System.nanoTime() - t0) / warm);
        int batch = (int) Math.max(1, Math.min(10_000_000, 20_000_000L / one));
        double[] samples = new double[15];
        for (int s = 0; s < samples.length; s++) {
            long a = System.nanoTime();
            for (int i = 0; i < batch; i++) {
                sink += f.apply(d);
            }
            samples[s] = (System.nanoTime() - a) / (double) batch;
        }
        if (sink == 42) {
            System.out.print("");
        }
        Arrays.sort(samples);
        return samples[samples.length / 2];
    }

    static double loadAverage() {
        try {
            return Double.parseDouble(java.nio.file.Files.readString(Paths.get("/proc/loadavg")).split(" ")[0]);
        } catch (Exception e) {
            return Double.NaN;
        }
    }

    static byte[] pureTardis() {
        byte[] d = new byte[MIB];
        new TardisGenerator(1L << 30).fill(12_345_677, d, 0, d.length);
        return d;
    }

    static byte[] hdfsPackets() {
        TardisGenerator g = new TardisGenerator(1L << 30);
        byte[] d = new byte[MIB];
        Random r = new Random(1);
        int p = 0;
        long stream = 0;
        CRC32C crc = new CRC32C();
        byte[] chunk = new byte[512];
        while (p < d.length) {
            // header (~25 bytes of protobuf-like fields), 126 checksums, 126 x 512 data bytes
            byte[] hdr = new byte[25];
            r.nextBytes(hdr);
            int n = Math.min(hdr.length, d.length - p);
            System.arraycopy(hdr, 0, d, p, n);
            p += n;
            int chunks = 126;
            byte[] sums = new byte[chunks * 4];
            for (int i = 0; i < chunks; i++) {
                g.fill(stream + i * 512L, chunk, 0, 512);
                crc.reset();
                crc.update(chunk);
                int v = (int) crc.getValue();
                sums[4 * i] = (byte) (v >>> 24);
                sums[4 * i + 1] = (byte) (v >>> 16);
                sums[4 * i + 2] = (byte) (v >>> 8);
                sums[4 * i + 3] = (byte) v;
            }
            n = Math.min(sums.length, d.length - p);
            System.arraycopy(sums, 0, d, p, n);
            p += n;
            n = Math.min(chunks * 512, d.length - p);
            if (n > 0) {
                g.fill(stream, d, p, n);
            }
            p += n;
            stream += chunks * 512L;
        }
        return d;
    }

    static byte[] metaEvery4k() {
        TardisGenerator g = new TardisGenerator(1L << 30);
        byte[] d = new byte[MIB];
        Random r = new Random(2);
        int p = 0;
        long stream = 0;
        while (p < d.length) {
            int n = Math.min(4096, d.length - p);
            g.fill(stream, d, p, n);
            p += n;
            stream += n;
            byte[] meta = new byte[32];
            r.nextBytes(meta);
            n = Math.min(32, d.length - p);
            System.arraycopy(meta, 0, d, p, n);
            p += n;
        }
        return d;
    }
}
