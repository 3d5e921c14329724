package io.radixkv.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
import java.util.List;
import org.junit.jupiter.api.Test;

class SamplerTest {
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
