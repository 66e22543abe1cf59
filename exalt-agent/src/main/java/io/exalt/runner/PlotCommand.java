package io.exalt.runner;

import io.exalt.bench.Plots;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import org.knowm.xchart.XYChart;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code exalt plot}: one PNG with a series per summary CSV, e.g. Fig. 4.3 before/after the paper's fixes:
 * <pre>exalt plot --x datanodes --y throughput_MBps --series before=a.csv --series after=b.csv --out fig.png</pre>
 */
@Command(name = "plot", mixinStandardHelpOptions = true, description = "Plot columns of summary CSVs written by the runner.")
final class PlotCommand implements Callable<Integer> {
    @Option(names = "--series", required = true, description = "label=file.csv (repeat for several series)")
    Map<String, Path> series;

    @Option(names = "--x", required = true, description = "CSV column for the x axis")
    String x;

    @Option(names = "--y", required = true, split = ",", description = "CSV column(s) for the y axis")
    List<String> y;

    @Option(names = "--title", defaultValue = "", description = "chart title")
    String title;

    @Option(names = "--out", required = true, description = "PNG to write")
    Path out;

    @Override
    public Integer call() throws Exception {
        XYChart ch = Plots.xy(title, x, String.join(", ", y), false);
        for (Map.Entry<String, Path> e : series.entrySet()) {
            List<String> lines = Files.readAllLines(e.getValue());
            if (lines.isEmpty()) {
                throw new IllegalArgumentException(e.getValue() + " is empty");
            }
            List<String> head = Arrays.asList(lines.get(0).split(","));
            int xi = head.indexOf(x);
            if (xi < 0) {
                throw new IllegalArgumentException(e.getValue() + " has no column '" + x + "'; columns: " + head);
            }
            for (String yc : y) {
                int yi = head.indexOf(yc);
                if (yi < 0) {
                    throw new IllegalArgumentException(e.getValue() + " has no column '" + yc + "'; columns: " + head);
                }
                List<Double> xs = new ArrayList<>();
                List<Double> ys = new ArrayList<>();
                for (String l : lines.subList(1, lines.size())) {
                    String[] f = l.split(",");
                    xs.add(Double.parseDouble(f[xi]));
                    ys.add(Double.parseDouble(f[yi]));
                }
                ch.addSeries(y.size() > 1 ? e.getKey() + " " + yc : e.getKey(), xs, ys);
            }
        }
        Plots.png(ch, out);
        System.out.println("wrote " + out);
        return 0;
    }
}
