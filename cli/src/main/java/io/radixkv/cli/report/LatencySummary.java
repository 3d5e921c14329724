package io.radixkv.cli.report;

import org.HdrHistogram.Histogram;

/**
 * Percentiles of a latency distribution in milliseconds (HdrHistogram, 3 significant digits,
 * recorded in microseconds). All zeros (and {@code count == 0}) when nothing was recorded.
 */
public record LatencySummary(long count, double p50, double p90, double p99, double mean, double max) {
    public static final LatencySummary EMPTY = new LatencySummary(0, 0, 0, 0, 0, 0);

    /** Summary of latencies given in nanoseconds; negative values are rejected. */
    public static LatencySummary ofNanos(long[] nanos) {
        if (nanos.length == 0) {
            return EMPTY;
        }
        Histogram h = new Histogram(3);
        for (long v : nanos) {
            if (v < 0) {
                throw new IllegalArgumentException("negative latency " + v + " ns");
            }
            h.recordValue(Math.round(v / 1000.0)); // microseconds
        }
        return new LatencySummary(h.getTotalCount(), ms(h.getValueAtPercentile(50)), ms(h.getValueAtPercentile(90)),
                ms(h.getValueAtPercentile(99)), h.getMean() / 1000.0, ms(h.getMaxValue()));
    }

    private static double ms(long micros) {
        return micros / 1000.0;
    }
}
