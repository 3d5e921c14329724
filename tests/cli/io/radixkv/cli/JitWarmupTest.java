package io.radixkv.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** {@link JitWarmup}: the automatic rule on a simulated JIT and clock, and fixed counts. */
class JitWarmupTest {
    /** A repetition of {@code wallMs} that compiles {@code jitMs[i]} ms in its i-th run (the last value repeats). */
    private static final class Simulated {
        final long wallMs;
        final long[] jitMs;
        long clockNanos;
        long compiledMs;
        int runs;

        Simulated(long wallMs, long... jitMs) {
            this.wallMs = wallMs;
            this.jitMs = jitMs;
        }

        JitWarmup warmup() {
            return new JitWarmup(() -> compiledMs, () -> clockNanos);
        }

        void run() {
            compiledMs += jitMs[Math.min(runs, jitMs.length - 1)];
            clockNanos += wallMs * 1_000_000L;
            runs++;
        }
    }

    @Test
    void autoStopsAfterTwoQuietRepetitionsInARow() {
        // 1000 ms each; under 1% is under 10 ms. A quiet one followed by a busy one starts over.
        Simulated s = new Simulated(1000, 500, 9, 200, 3, 40, 9, 0, 700);
        JitWarmup.Result r = s.warmup().run(JitWarmup.AUTO, s::run);
        assertEquals(7, r.repetitions(), r.toString());
        assertEquals(7, s.runs);
        assertEquals("auto: JIT quiet", r.rule());
        assertEquals(0.0, r.lastJitShare(), 1e-12);
    }

    @Test
    void exactlyOnePercentIsNotQuiet() {
        Simulated s = new Simulated(1000, 10, 10, 10, 0, 0);
        assertEquals(5, s.warmup().run(JitWarmup.AUTO, s::run).repetitions());
    }

    @Test
    void autoStopsAtTheRepetitionLimit() {
        Simulated s = new Simulated(100, 50);
        JitWarmup.Result r = s.warmup().run(JitWarmup.AUTO, s::run);
        assertEquals(JitWarmup.AUTO_MAX_REPETITIONS, r.repetitions());
        assertTrue(r.rule().contains("limit"), r.rule());
        assertEquals(0.5, r.lastJitShare(), 1e-12);
    }

    @Test
    void autoStopsAtTheTimeLimit() {
        // 50 s each: the third ends at 150 s, past 120
        Simulated s = new Simulated(50_000, 5000);
        JitWarmup.Result r = s.warmup().run(JitWarmup.AUTO, s::run);
        assertEquals(3, r.repetitions());
        assertTrue(r.rule().contains("limit"), r.rule());
    }

    @Test
    void aCountRunsExactlyThatMany() {
        Simulated s = new Simulated(1000, 0);
        JitWarmup.Result r = s.warmup().run(4, s::run);
        assertEquals(4, r.repetitions());
        assertEquals(4, s.runs, "quiet from the start, still 4");
        assertEquals("fixed", r.rule());
        Simulated none = new Simulated(1000, 900);
        assertEquals(0, none.warmup().run(0, none::run).repetitions());
        assertEquals(0, none.runs);
        assertThrows(IllegalArgumentException.class, () -> none.warmup().run(-2, none::run));
    }

    @Test
    void withoutCompilationTimeAutoRunsOneAsLlamaBenchDoes() {
        int[] runs = {0};
        JitWarmup.Result r = new JitWarmup(null, System::nanoTime).run(JitWarmup.AUTO, () -> runs[0]++);
        assertEquals(1, r.repetitions());
        assertEquals(1, runs[0]);
        assertTrue(Double.isNaN(r.lastJitShare()));
        assertEquals(-1, new JitWarmup(null, System::nanoTime).jitMillis());
    }

    @Test
    void thisJvmReportsCompilationTime() {
        assertTrue(JitWarmup.ofThisJvm().jitMillis() >= 0, "HotSpot reports its compilation time");
    }
}
