package io.radixkv.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.radixkv.kernels.SamplingKernels;
import io.radixkv.kernels.cpu.CpuSampling;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class SamplerTest {
    private static final SamplingKernels NATIVE = CpuSampling.instance();

    /** Row {@code row} alone through libradixkv's sampler. */
    private static int nativeRow(MemorySegment logits, long row, int vocab, SamplingParams p, long step) {
        return Sampler.sampleRows(NATIVE, logits.asSlice(row * vocab * 4L, vocab * 4L), vocab,
                new SamplingParams[] {p}, new long[] {step})[0];
    }

    @Test
    void greedyIsFirstArgmax() {
        float[] l = {0.5f, 3f, Float.NaN, 3f, -1f};
        assertEquals(1, Sampler.sample(l, SamplingParams.greedy(1), 0));
        assertEquals(1, Sampler.argmax(new float[] {Float.NaN, 2f, 1f}));
        try (Arena a = Arena.ofConfined()) {
            var seg = a.allocateFrom(ValueLayout.JAVA_FLOAT, 1f, 2f, 9f, 0f, 4f, 4f);
            assertEquals(2, Sampler.sample(seg, 0, 3, SamplingParams.greedy(1), 0));
            assertEquals(1, Sampler.sample(seg, 1, 3, SamplingParams.greedy(1), 0));
            assertThrows(IllegalArgumentException.class, () -> Sampler.sample(seg, 2, 3, SamplingParams.greedy(1), 0));
        }
    }

    @Test
    void sampledFrequenciesFollowSoftmaxAndSeedsReproduce() {
        float[] l = {1f, 2f, 0f, 2.5f};
        var p = new SamplingParams(10, 0.7f, 1f, 99, List.of());
        double[] expected = new double[4];
        double sum = 0;
        for (int i = 0; i < 4; i++) {
            expected[i] = Math.exp(l[i] / 0.7);
            sum += expected[i];
        }
        int n = 40000;
        int[] counts = new int[4];
        for (int s = 0; s < n; s++) {
            counts[Sampler.sample(l, p, s)]++;
        }
        for (int i = 0; i < 4; i++) {
            assertEquals(expected[i] / sum, counts[i] / (double) n, 0.01, "token " + i);
        }
        for (int s = 0; s < 50; s++) {
            assertEquals(Sampler.sample(l, p, s), Sampler.sample(l, new SamplingParams(3, 0.7f, 1f, 99, null), s));
        }
        int differ = 0;
        for (int s = 0; s < 50; s++) {
            differ += Sampler.sample(l, p, s) != Sampler.sample(l, new SamplingParams(3, 0.7f, 1f, 100, null), s) ? 1 : 0;
        }
        assertTrue(differ > 5, "another seed should change the draws");
    }

    @Test
    void topPKeepsOnlyTheNucleus() {
        // probabilities ~ 0.64, 0.24, 0.09, 0.03 at temperature 1
        float[] l = {3f, 2f, 1f, 0f};
        var p = new SamplingParams(10, 1f, 0.8f, 5, List.of());
        int[] counts = new int[4];
        for (int s = 0; s < 20000; s++) {
            counts[Sampler.sample(l, p, s)]++;
        }
        assertEquals(0, counts[2] + counts[3], "tokens outside the 0.8 nucleus were sampled");
        assertEquals(0.64 / 0.88, counts[0] / 20000.0, 0.015);
        var tiny = new SamplingParams(10, 1f, 0.01f, 5, List.of());
        for (int s = 0; s < 100; s++) {
            assertEquals(0, Sampler.sample(l, tiny, s));
        }
    }

    /**
     * The nucleus comes from the tokens above a probability threshold, sorted, not from sorting
     * the whole vocabulary: it must pick exactly what the whole sort picks (this test's reference),
     * for peaked and flat distributions, -inf and NaN logits, ties, and top-p near 0 and 1.
     */
    @Test
    void nucleusFromCandidatesMatchesSortingEveryToken() {
        SplittableRandom rnd = new SplittableRandom(3);
        float[] topPs = {0.01f, 0.3f, 0.9f, 0.99f, 0.999999f};
        for (int trial = 0; trial < 60; trial++) {
            int vocab = 1 + rnd.nextInt(trial < 30 ? 50 : 5000);
            float spread = trial % 3 == 0 ? 0.01f : trial % 3 == 1 ? 3f : 40f;  // flat .. peaked
            float[] l = new float[vocab];
            for (int i = 0; i < vocab; i++) {
                l[i] = (float) (rnd.nextGaussian() * spread);
                if (i % 17 == 5) {
                    l[i] = l[i / 2];  // ties
                }
                if (i % 29 == 7) {
                    l[i] = Float.NEGATIVE_INFINITY;
                }
                if (i % 31 == 11) {
                    l[i] = Float.NaN;
                }
            }
            for (float topP : topPs) {
                var p = new SamplingParams(10, trial % 2 == 0 ? 1f : 0.7f, topP, trial, List.of());
                for (int step = 0; step < 20; step++) {
                    assertEquals(referenceTopP(l, p, step), Sampler.sample(l, p, step),
                            "vocab " + vocab + " spread " + spread + " top-p " + topP + " step " + step);
                }
            }
        }
    }

    /** The nucleus by sorting every token (ties by id): what Sampler did before its candidates. */
    private static int referenceTopP(float[] logits, SamplingParams params, long step) {
        int vocab = logits.length;
        double max = Double.NEGATIVE_INFINITY;
        for (float v : logits) {
            max = v > max ? v : max;
        }
        if (max == Double.NEGATIVE_INFINITY) {
            return Sampler.argmax(logits);
        }
        double invT = 1.0 / params.temperature();
        double[] p = new double[vocab];
        double sum = 0;
        for (int i = 0; i < vocab; i++) {
            p[i] = Float.isNaN(logits[i]) ? 0 : Math.exp((logits[i] - max) * invT);
            sum += p[i];
        }
        Integer[] order = new Integer[vocab];
        for (int i = 0; i < vocab; i++) {
            order[i] = i;
        }
        Arrays.sort(order, (a, b) -> p[a] != p[b] ? Double.compare(p[b], p[a]) : Integer.compare(a, b));
        double keep = params.topP() * sum, acc = 0;
        int cut = 0;
        while (cut < vocab) {
            acc += p[order[cut]];
            cut++;
            if (acc >= keep) {
                break;
            }
        }
        double target = Sampler.uniform(params.seed(), step) * acc, run = 0;
        for (int i = 0; i < cut; i++) {
            run += p[order[i]];
            if (run > target) {
                return order[i];
            }
        }
        return order[cut - 1];
    }

    /**
     * A row in native memory is sampled by libradixkv (CpuSampling): the same rule as the Java
     * path, so the same frequencies and nucleus, and the same token for all but draws within
     * rounding of a boundary.
     */
    @Test
    void nativeRowsFollowTheSameRule() {
        float[] l = {1f, 2f, 0f, 2.5f, Float.NaN, Float.NEGATIVE_INFINITY};
        float[] peaked = {3f, 2f, 1f, 0f};
        try (Arena arena = Arena.ofConfined()) {
            var seg = arena.allocateFrom(ValueLayout.JAVA_FLOAT, l);
            var seg2 = arena.allocateFrom(ValueLayout.JAVA_FLOAT, peaked);
            var p = new SamplingParams(10, 0.7f, 1f, 99, List.of());
            var nucleus = new SamplingParams(10, 1f, 0.8f, 5, List.of());
            int n = 20000;
            int[] counts = new int[l.length];
            int same = 0;
            for (int s = 0; s < n; s++) {
                int t = nativeRow(seg, 0, l.length, p, s);
                counts[t]++;
                same += t == Sampler.sample(l, p, s) ? 1 : 0;
                int u = nativeRow(seg2, 0, peaked.length, nucleus, s);
                assertTrue(u == 0 || u == 1, "token " + u + " is outside the 0.8 nucleus");
                same += u == Sampler.sample(peaked, nucleus, s) ? 1 : 0;
            }
            double sum = 0;
            for (int i = 0; i < 4; i++) {
                sum += Math.exp(l[i] / 0.7);
            }
            for (int i = 0; i < 4; i++) {
                assertEquals(Math.exp(l[i] / 0.7) / sum, counts[i] / (double) n, 0.01, "token " + i);
            }
            assertEquals(0, counts[4] + counts[5], "NaN and -inf logits were drawn");
            assertTrue(same >= 2 * n - 10, "native and Java draws differ " + (2 * n - same) + " times of " + 2 * n);
            assertThrows(IllegalArgumentException.class, () -> Sampler.sample(seg, 1, l.length, p, 0));
        }
    }

    /** A step's rows sampled at once (native: in parallel) are the rows sampled one by one. */
    @Test
    void rowsAtOnceAreTheRowsOneByOne() {
        SplittableRandom rnd = new SplittableRandom(8);
        int rows = 9;
        int vocab = 3000;
        float[] all = new float[rows * vocab];
        for (int i = 0; i < all.length; i++) {
            all[i] = (float) (rnd.nextGaussian() * 4);
        }
        SamplingParams[] params = new SamplingParams[rows];
        long[] steps = new long[rows];
        for (int r = 0; r < rows; r++) {
            params[r] = r % 3 == 0 ? SamplingParams.greedy(5)
                    : new SamplingParams(5, 0.5f + r * 0.1f, r % 2 == 0 ? 0.9f : 1f, r, List.of());
            steps[r] = r * 7L;
        }
        try (Arena arena = Arena.ofConfined()) {
            var seg = arena.allocateFrom(ValueLayout.JAVA_FLOAT, all);
            int[] got = Sampler.sampleRows(NATIVE, seg, vocab, params, steps);
            for (int r = 0; r < rows; r++) {
                assertEquals(nativeRow(seg, r, vocab, params[r], steps[r]), got[r], "row " + r);
            }
            // a Java heap segment takes the Java path row by row: the same rule
            var heap = MemorySegment.ofArray(all);
            int[] java = Sampler.sampleRows(heap, vocab, params, steps);
            int same = 0;
            for (int r = 0; r < rows; r++) {
                same += java[r] == got[r] ? 1 : 0;
            }
            assertTrue(same >= rows - 1, "native and Java rows differ " + (rows - same) + " times");
        }
    }

    /**
     * The native path keeps each thread's argument buffers between calls (64 rows at first):
     * more rows grow them, and fewer after that read only their own.
     */
    @Test
    void rowsPastTheKeptBuffersAreTheRowsOneByOne() {
        SplittableRandom rnd = new SplittableRandom(9);
        int vocab = 500;
        for (int rows : new int[] {3, 150, 70, 2}) {
            float[] all = new float[rows * vocab];
            for (int i = 0; i < all.length; i++) {
                all[i] = (float) (rnd.nextGaussian() * 2);
            }
            SamplingParams[] params = new SamplingParams[rows];
            long[] steps = new long[rows];
            for (int r = 0; r < rows; r++) {
                params[r] = new SamplingParams(5, 0.6f + (r % 5) * 0.1f, r % 2 == 0 ? 0.8f : 1f, rows + r, List.of());
                steps[r] = r;
            }
            try (Arena arena = Arena.ofConfined()) {
                var seg = arena.allocateFrom(ValueLayout.JAVA_FLOAT, all);
                int[] got = Sampler.sampleRows(NATIVE, seg, vocab, params, steps);
                assertEquals(rows, got.length);
                for (int r = 0; r < rows; r++) {
                    assertEquals(nativeRow(seg, r, vocab, params[r], steps[r]), got[r], rows + " rows, row " + r);
                }
            }
        }
    }

    @Test
    void paramsValidation() {
        assertThrows(IllegalArgumentException.class, () -> new SamplingParams(0, 0f, 1f, 0, List.of()));
        assertThrows(IllegalArgumentException.class, () -> new SamplingParams(1, -1f, 1f, 0, List.of()));
        assertThrows(IllegalArgumentException.class, () -> new SamplingParams(1, 1f, 0f, 0, List.of()));
        assertThrows(IllegalArgumentException.class, () -> new SamplingParams(1, 1f, 1.5f, 0, List.of()));
        assertThrows(IllegalArgumentException.class, () -> new SamplingParams(1, 1f, 1f, 0, List.of(-2)));
        var sp = new SamplingParams(4, 0f, 1f, 0, List.of(2, 7));
        assertTrue(sp.isStop(7) && !sp.isStop(3) && sp.isGreedy());
    }
}
