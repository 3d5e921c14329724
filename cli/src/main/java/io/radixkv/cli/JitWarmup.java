package io.radixkv.cli;

import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.util.Locale;
import java.util.function.LongSupplier;

/**
 * Warm-up repetitions before a timed benchmark, until the JIT is quiet. llama.cpp's
 * llama-bench warms up with one run; radixkv's engine loop is Java, which HotSpot compiles
 * in tiers over the first ~1000 decode steps. A compiler thread that runs during the timed
 * decode takes a core from the kernels' thread team (on a 2-core machine, every parallel
 * region then waits for it), so one warm-up repetition leaves the timed ones measuring the
 * compiler: on the 2-core Zen 1, the small model's repetitions after the first warm-up one
 * compiled for 324, 318 and 103 ms of their ~2.9 s each.
 *
 * <p>{@link #AUTO} repeats the warm-up until {@link #QUIET_IN_A_ROW} repetitions in a row
 * each spend under {@link #QUIET_SHARE} of their wall time compiling (HotSpot's accumulated
 * compilation time), at most {@link #AUTO_MAX_REPETITIONS} repetitions or until
 * {@link #AUTO_MAX_NANOS} have passed. A count runs exactly that many.
 */
final class JitWarmup {
    /** The automatic rule (a count is {@code >= 0}). */
    static final int AUTO = -1;
    static final double QUIET_SHARE = 0.01;
    static final int QUIET_IN_A_ROW = 2;
    static final int AUTO_MAX_REPETITIONS = 30;
    static final long AUTO_MAX_NANOS = 120_000_000_000L;

    /**
     * What a warm-up did.
     *
     * @param repetitions warm-up repetitions run
     * @param rule how their number was chosen, for the report ("auto: JIT quiet", "auto: ...
     *     limit reached", "fixed")
     * @param lastJitShare the share of the last repetition's wall time spent compiling (NaN
     *     where none ran or the JVM does not report compilation time)
     */
    record Result(int repetitions, String rule, double lastJitShare) {}

    private final LongSupplier jitMillis;
    private final LongSupplier nanoClock;

    /** Measures with HotSpot's compilation time, or null where the JVM does not report it. */
    static JitWarmup ofThisJvm() {
        CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        LongSupplier millis = jit != null && jit.isCompilationTimeMonitoringSupported() ? jit::getTotalCompilationTime
                : null;
        return new JitWarmup(millis, System::nanoTime);
    }

    /**
     * @param jitMillis accumulated JIT compilation time in ms, or null when unknown (then
     *     {@link #AUTO} runs one repetition, as llama-bench does)
     */
    JitWarmup(LongSupplier jitMillis, LongSupplier nanoClock) {
        this.jitMillis = jitMillis;
        this.nanoClock = nanoClock;
    }

    /** Accumulated JIT compilation time in ms, or -1 when the JVM does not report it. */
    long jitMillis() {
        return jitMillis == null ? -1 : jitMillis.getAsLong();
    }

    /** Runs {@code repetition} {@code count} times, or by the automatic rule for {@link #AUTO}. */
    Result run(int count, Runnable repetition) {
        if (count < AUTO) {
            throw new IllegalArgumentException("warm-up repetitions must be >= 0 or AUTO: " + count);
        }
        boolean auto = count == AUTO;
        if (auto && jitMillis == null) {
            repetition.run();
            return new Result(1, "auto: 1 (this JVM does not report JIT compilation time)", Double.NaN);
        }
        long start = nanoClock.getAsLong();
        int runs = 0;
        int quiet = 0;
        double share = Double.NaN;
        while (auto || runs < count) {
            long c0 = jitMillis();
            long t0 = nanoClock.getAsLong();
            repetition.run();
            long t1 = nanoClock.getAsLong();
            runs++;
            if (jitMillis != null) {
                share = (jitMillis() - c0) * 1e6 / Math.max(1, t1 - t0);
            }
            if (!auto) {
                continue;
            }
            quiet = share < QUIET_SHARE ? quiet + 1 : 0;
            if (quiet >= QUIET_IN_A_ROW) {
                return new Result(runs, "auto: JIT quiet", share);
            }
            if (runs >= AUTO_MAX_REPETITIONS || t1 - start >= AUTO_MAX_NANOS) {
                return new Result(runs, String.format(Locale.ROOT, "auto: limit of %d repetitions or %d s reached",
                        AUTO_MAX_REPETITIONS, AUTO_MAX_NANOS / 1_000_000_000L), share);
            }
        }
        return new Result(runs, "fixed", share);
    }
}
