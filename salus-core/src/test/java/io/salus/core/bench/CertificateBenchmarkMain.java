package io.salus.core.bench;

import io.salus.core.cert.CertType;
import io.salus.core.cert.Certificate;
import io.salus.core.cert.RegionId;
import io.salus.core.cert.Statement;
import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.NodeKeys;
import io.salus.core.crypto.SignatureScheme;
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
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;

/**
 * Runs {@link CertificateBenchmark} with JMH and writes {@code certificates.csv},
 * {@code certificates-cost.png} and {@code certificates-size.png} into the given directory
 * (default {@code docs/benchmarks}). The ratio column is relative to the weak CRC32C signature
 * measured in the same run. Usage: {@code CertificateBenchmarkMain [outDir] [quick]}.
 */
public final class CertificateBenchmarkMain {
    private CertificateBenchmarkMain() {
    }

    public static void main(String[] args) throws Exception {
        Path out = Path.of(args.length > 0 ? args[0] : "docs/benchmarks");
        boolean quick = args.length > 1 && args[1].equals("quick");
        if (args.length > 1 && args[1].equals("plot")) {
            plot(out); // re-plot an existing certificates.csv
            return;
        }
        Files.createDirectories(out);
        Options opt = new OptionsBuilder().include(CertificateBenchmark.class.getName())
                .forks(1).warmupIterations(quick ? 1 : 3).warmupTime(TimeValue.seconds(1))
                .measurementIterations(quick ? 2 : 5).measurementTime(TimeValue.seconds(1))
                .jvmArgs("-Xmx256m").build();
        Collection<RunResult> results = new Runner(opt).run();
        // ns/op per (op, scheme)
        Map<String, Map<String, double[]>> byOp = new LinkedHashMap<>();
        for (RunResult r : results) {
            String op = r.getParams().getBenchmark().replaceAll(".*\\.", "");
            String scheme = r.getParams().getParam("scheme");
            double score = r.getPrimaryResult().getScore();
            double err = r.getPrimaryResult().getScoreError();
            byOp.computeIfAbsent(op, k -> new LinkedHashMap<>()).put(scheme, new double[] {score, err});
        }
        Map<String, int[]> sizes = sizes();
        try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(out.resolve("certificates.csv")))) {
            w.println("operation,scheme,ns_per_op,error_ns,ratio_vs_weak,tentative_bytes,log_entry_bytes,"
                    + "put_success_bytes,no_next_entry_bytes");
            for (Map.Entry<String, Map<String, double[]>> e : byOp.entrySet()) {
                double base = e.getValue().getOrDefault("WEAK_CRC32C", new double[] {Double.NaN})[0];
                for (Map.Entry<String, double[]> s : e.getValue().entrySet()) {
                    int[] sz = sizes.get(s.getKey());
                    w.printf("%s,%s,%.1f,%.1f,%.2f,%d,%d,%d,%d%n", e.getKey(), s.getKey(), s.getValue()[0],
                            s.getValue()[1], s.getValue()[0] / base, sz[0], sz[1], sz[2], sz[3]);
                    System.out.printf("%-22s %-12s %10.1f ns/op  x%.2f vs weak%n", e.getKey(), s.getKey(),
                            s.getValue()[0], s.getValue()[0] / base);
                }
            }
        }
        plot(out);
        System.out.println("wrote " + out.resolve("certificates.csv") + " and PNGs");
    }

    /** Draws certificates-cost.png (log10 ns/op) and certificates-size.png from certificates.csv. */
    static void plot(Path out) throws Exception {
        List<String> schemes = List.of("WEAK_CRC32C", "HMAC_SHA256", "ED25519");
        Map<String, Map<String, Double>> byOp = new LinkedHashMap<>();
        Map<String, int[]> sizes = new LinkedHashMap<>();
        List<String> lines = Files.readAllLines(out.resolve("certificates.csv"));
        for (String line : lines.subList(1, lines.size())) {
            String[] f = line.split(",");
            byOp.computeIfAbsent(f[0], k -> new LinkedHashMap<>()).put(f[1], Double.parseDouble(f[2]));
            sizes.put(f[1], new int[] {Integer.parseInt(f[5]), Integer.parseInt(f[6]), Integer.parseInt(f[7]),
                Integer.parseInt(f[8])});
        }
        CategoryChart cost = new CategoryChartBuilder().width(900).height(500)
                .title("Salus certificate cost, JMH (shared noisy 2-core box)")
                .xAxisTitle("signature scheme").yAxisTitle("log10(ns per operation)").build();
        for (Map.Entry<String, Map<String, Double>> e : byOp.entrySet()) {
            List<Double> ys = new ArrayList<>();
            for (String s : schemes) {
                ys.add(Math.log10(e.getValue().get(s)));
            }
            cost.addSeries(e.getKey(), schemes, ys);
        }
        BitmapEncoder.saveBitmap(cost, out.resolve("certificates-cost").toString(), BitmapEncoder.BitmapFormat.PNG);
        CategoryChart size = new CategoryChartBuilder().width(900).height(500)
                .title("Salus certificate size (encoded bytes, version 1)").xAxisTitle("signature scheme")
                .yAxisTitle("bytes").build();
        String[] kinds = {"TENTATIVE_LOG_ENTRY", "LOG_ENTRY (3 sigs)", "PUT_SUCCESS (3 sigs)", "NO_NEXT_ENTRY"};
        for (int i = 0; i < kinds.length; i++) {
            List<Integer> ys = new ArrayList<>();
            for (String s : schemes) {
                ys.add(sizes.get(s)[i]);
            }
            size.addSeries(kinds[i], schemes, ys);
        }
        BitmapEncoder.saveBitmap(size, out.resolve("certificates-size").toString(), BitmapEncoder.BitmapFormat.PNG);
    }

    /** Encoded sizes per scheme: tentative LOG_ENTRY, combined LOG_ENTRY, PUT_SUCCESS, NO_NEXT_ENTRY. */
    static Map<String, int[]> sizes() {
        Map<String, int[]> m = new LinkedHashMap<>();
        for (SignatureScheme s : SignatureScheme.values()) {
            List<Certificate> le = new ArrayList<>();
            List<Certificate> ps = new ArrayList<>();
            Statement.LogEntry st = CertificateBenchmark.sampleStatement();
            Statement.PutOutcome po = new Statement.PutOutcome(true, st.region(), 99, 1000, 1249, st.index(),
                    st.digest());
            Certificate nn = null;
            for (int i = 0; i < 3; i++) {
                NodeKeys k = NodeKeys.deterministic(s, NodeId.of("rs-" + i), 7);
                le.add(Certificate.sign(CertType.TENTATIVE_LOG_ENTRY, st, k.signer()));
                ps.add(Certificate.sign(CertType.TENTATIVE_PUT_SUCCESS, po, k.signer()));
                nn = Certificate.sign(CertType.NO_NEXT_ENTRY, new Statement.NoNextEntry(new RegionId("volume-0001",
                        17), 3, 123_457), k.signer());
            }
            m.put(s.name(), new int[] {le.get(0).encode().length, Certificate.combine(le).encode().length,
                Certificate.combine(ps).encode().length, nn.encode().length});
        }
        return m;
    }

}
