package io.radixkv.cli.report;

import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.markers.SeriesMarkers;

/** PNG charts (XChart, rendered headless). */
public final class Charts {
    private Charts() {}

    /** TTFT of every request in workload order, one series per run. */
    public static void ttftByRequest(BenchReport report, Path png) {
        XYChart chart = new XYChartBuilder().width(900).height(500)
                .title("TTFT per request: " + report.workload())
                .xAxisTitle("request").yAxisTitle("TTFT (ms)").build();
        chart.getStyler().setYAxisLogarithmic(allPositive(report));
        for (RunMetrics r : report.runs()) {
            double[] ttft = r.ttftByRequestMs();
            List<Double> xs = new ArrayList<>();
            List<Double> ys = new ArrayList<>();
            for (int i = 0; i < ttft.length; i++) {
                if (!Double.isNaN(ttft[i])) {
                    xs.add((double) i);
                    ys.add(ttft[i]);
                }
            }
            if (!xs.isEmpty()) {
                XYSeries s = chart.addSeries(r.label(), xs, ys);
                s.setMarker(SeriesMarkers.CIRCLE);
            }
        }
        save(chart, png);
    }

    private static boolean allPositive(BenchReport report) {
        for (RunMetrics r : report.runs()) {
            for (double v : r.ttftByRequestMs()) {
                if (!Double.isNaN(v) && v <= 0) {
                    return false;
                }
            }
        }
        return true;
    }

    /** Hit rate (percent) against cache size in pages. */
    public static void hitRateByPages(String title, int[] pages, double[] hitRate, Path png) {
        if (pages.length != hitRate.length || pages.length == 0) {
            throw new IllegalArgumentException("need one hit rate per cache size, got " + pages.length + " sizes and "
                    + hitRate.length + " hit rates");
        }
        XYChart chart = new XYChartBuilder().width(800).height(500).title(title)
                .xAxisTitle("cache size (pages)").yAxisTitle("prompt tokens reused (%)").build();
        double[] xs = new double[pages.length];
        double[] ys = new double[pages.length];
        for (int i = 0; i < pages.length; i++) {
            xs[i] = pages[i];
            ys[i] = hitRate[i] * 100;
        }
        chart.getStyler().setLegendVisible(false);
        chart.addSeries("hit rate", xs, ys).setMarker(SeriesMarkers.CIRCLE);
        save(chart, png);
    }

    private static void save(XYChart chart, Path png) {
        System.setProperty("java.awt.headless", "true");
        try (OutputStream out = Files.newOutputStream(png)) {
            BitmapEncoder.saveBitmap(chart, out, BitmapEncoder.BitmapFormat.PNG);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write chart " + png + ": " + e.getMessage(), e);
        }
    }
}
