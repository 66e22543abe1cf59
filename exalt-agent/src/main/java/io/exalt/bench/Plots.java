package io.exalt.bench;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.style.Styler;

/** CSV + PNG helpers for the benchmarks and the emulation runner (XChart). */
public final class Plots {
    private Plots() {
    }

    public static void csv(Path file, String header, List<String> rows) throws IOException {
        Files.createDirectories(file.toAbsolutePath().getParent());
        try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(file))) {
            w.println(header);
            rows.forEach(w::println);
        }
    }

    public static XYChart xy(String title, String x, String y, boolean logY) {
        XYChart c = new XYChartBuilder().width(900).height(560).title(title).xAxisTitle(x).yAxisTitle(y).build();
        c.getStyler().setLegendPosition(Styler.LegendPosition.InsideNW);
        c.getStyler().setYAxisLogarithmic(logY);
        c.getStyler().setMarkerSize(6);
        return c;
    }

    public static void png(org.knowm.xchart.internal.chartpart.Chart<?, ?> chart, Path file) throws IOException {
        Files.createDirectories(file.toAbsolutePath().getParent());
        String f = file.toString();
        BitmapEncoder.saveBitmap(chart, f.endsWith(".png") ? f.substring(0, f.length() - 4) : f, BitmapEncoder.BitmapFormat.PNG);
    }
}
