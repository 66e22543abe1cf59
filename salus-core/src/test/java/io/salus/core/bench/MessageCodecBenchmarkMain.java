package io.salus.core.bench;

import io.salus.core.protocol.message.MessageCodec;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.style.Styler;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;

/**
 * Runs {@link MessageCodecBenchmark} with JMH and writes {@code message-codec.csv} and
 * {@code message-codec.png} into the given directory (default {@code docs/benchmarks}). Ratios are
 * against copying the same encoded bytes, measured in the same run. Usage:
 * {@code MessageCodecBenchmarkMain [outDir] [quick|plot]}; the load average at the start and end of the
 * run is written into the CSV, since the machine may be shared.
 */
public final class MessageCodecBenchmarkMain {
    private MessageCodecBenchmarkMain() {
    }

    public static void main(String[] args) throws Exception {
        Path out = Path.of(args.length > 0 ? args[0] : "docs/benchmarks");
        if (args.length > 1 && args[1].equals("plot")) {
            plot(out);
            return;
        }
        boolean quick = args.length > 1 && args[1].equals("quick");
        Files.createDirectories(out);
        double loadBefore = load();
        Options opt = new OptionsBuilder().include(MessageCodecBenchmark.class.getName() + "\\.")
                .forks(1).warmupIterations(quick ? 1 : 3).warmupTime(TimeValue.seconds(1))
                .measurementIterations(quick ? 2 : 5).measurementTime(TimeValue.seconds(1))
                .jvmArgs("-Xmx256m").build();
        Collection<RunResult> results = new Runner(opt).run();
        double loadAfter = load();
        Map<String, Map<String, double[]>> byType = new LinkedHashMap<>();
        for (RunResult r : results) {
            String op = r.getParams().getBenchmark().replaceAll(".*\\.", "");
            byType.computeIfAbsent(r.getParams().getParam("type"), k -> new LinkedHashMap<>())
                    .put(op, new double[] {r.getPrimaryResult().getScore(), r.getPrimaryResult().getScoreError()});
        }
        try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(out.resolve("message-codec.csv")))) {
            w.println("# MessageCodecBenchmarkMain" + (quick ? " quick" : "") + "; JMH 1 fork, "
                    + (quick ? "1x1s warmup, 2x1s" : "3x1s warmup, 5x1s") + " measurement; "
                    + Runtime.getRuntime().availableProcessors() + " CPUs; load average " + loadBefore + " at start, "
                    + loadAfter + " at end (shared machine: other builds ran meanwhile)");
            w.println("type,bytes,encode_ns,encode_err_ns,decode_ns,decode_err_ns,copy_ns,encode_vs_copy,"
                    + "decode_vs_copy");
            for (MessageCodec.Type t : MessageCodec.Type.values()) {
                Map<String, double[]> m = byType.get(t.name());
                if (m == null) {
                    continue;
                }
                int size = MessageCodec.encode(MessageCodecBenchmark.sample(t)).length;
                double copy = m.get("copy")[0];
                w.printf("%s,%d,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f%n", t, size, m.get("encode")[0], m.get("encode")[1],
                        m.get("decode")[0], m.get("decode")[1], copy, m.get("encode")[0] / copy,
                        m.get("decode")[0] / copy);
                System.out.printf("%-20s %6d B  encode %8.1f ns (x%.1f copy)  decode %8.1f ns (x%.1f copy)%n", t, size,
                        m.get("encode")[0], m.get("encode")[0] / copy, m.get("decode")[0], m.get("decode")[0] / copy);
            }
        }
        plot(out);
        System.out.println("wrote " + out.resolve("message-codec.csv") + " and message-codec.png");
    }

    private static double load() {
        try {
            return Double.parseDouble(Files.readString(Path.of("/proc/loadavg")).split(" ")[0]);
        } catch (Exception e) {
            return Double.NaN;
        }
    }

    /** Draws message-codec.png (ns per message: encode, decode, copy baseline) from message-codec.csv. */
    static void plot(Path out) throws Exception {
        List<String> types = new ArrayList<>();
        List<Double> enc = new ArrayList<>();
        List<Double> dec = new ArrayList<>();
        List<Double> copy = new ArrayList<>();
        for (String line : Files.readAllLines(out.resolve("message-codec.csv"))) {
            if (line.startsWith("#") || line.startsWith("type,")) {
                continue;
            }
            String[] f = line.split(",");
            types.add(f[0] + " (" + f[1] + " B)");
            enc.add(Math.log10(Double.parseDouble(f[2])));
            dec.add(Math.log10(Double.parseDouble(f[4])));
            copy.add(Math.log10(Double.parseDouble(f[6])));
        }
        CategoryChart c = new CategoryChartBuilder().width(1200).height(600)
                .title("MessageCodec cost per message (JMH; shared 2-core machine)").xAxisTitle("message type")
                .yAxisTitle("log10(ns per message)").build();
        c.getStyler().setXAxisLabelRotation(45);
        c.getStyler().setLegendPosition(Styler.LegendPosition.OutsideS);
        c.addSeries("encode", types, enc);
        c.addSeries("decode", types, dec);
        c.addSeries("copy of the bytes (baseline)", types, copy);
        BitmapEncoder.saveBitmap(c, out.resolve("message-codec").toString(), BitmapEncoder.BitmapFormat.PNG);
    }
}
