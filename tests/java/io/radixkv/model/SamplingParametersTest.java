package io.radixkv.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.radixkv.kernels.cpu.CpuSampling;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

/**
 * vLLM's sampling parameters (top_k, min_p, the penalties, logit_bias, min_tokens), each in
 * both samplers: libradixkv's (native) and Sampler's double-precision Java path. Each test is
 * built so that ignoring the parameter, or applying it in another order than vLLM's (edits
 * before the temperature, then min_p, top_k, top_p), changes its outcome.
 */
class SamplingParametersTest {
    /** A parameter set with every field given. */
    private static SamplingParams params(float t, float topP, int topK, float minP, float rep, float pres, float freq,
                                         Map<Integer, Float> bias, int minTokens, List<Integer> stops, long seed) {
        return new SamplingParams(64, t, topP, seed, stops, topK, minP, rep, pres, freq, bias, minTokens);
    }

    private static SamplingParams temperature(float t, long seed) {
        return params(t, 1f, 0, 0f, 1f, 0f, 0f, Map.of(), 0, List.of(), seed);
    }

    /** One row through libradixkv (native = true) or the Java path. */
    private static int draw(boolean nativeSampler, float[] logits, SamplingParams p, long step, TokenCounts counts) {
        if (!nativeSampler) {
            return Sampler.sample(logits, p, step, counts);
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocateFrom(ValueLayout.JAVA_FLOAT, logits);
            return Sampler.sampleRows(CpuSampling.instance(), seg, logits.length, new SamplingParams[] {p},
                    new long[] {step}, new TokenCounts[] {counts})[0];
        }
    }

    /** How often each token is drawn over {@code n} steps. */
    private static double[] frequencies(boolean nativeSampler, float[] logits, SamplingParams p, TokenCounts counts,
                                        int n) {
        double[] f = new double[logits.length];
        for (int s = 0; s < n; s++) {
            f[draw(nativeSampler, logits, p, s, counts)] += 1.0 / n;
        }
        return f;
    }

    private static TokenCounts counts(int[] prompt, int... output) {
        TokenCounts c = new TokenCounts(prompt);
        for (int t : output) {
            c.add(t);
        }
        return c;
    }

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void logitBiasOfPlusOrMinus100ForcesOrBansAToken(boolean nativeSampler) {
        float[] l = {1f, 5f, 2f, 0.5f};
        for (float t : new float[] {0f, 1f}) {
            for (int s = 0; s < 40; s++) {
                SamplingParams force = params(t, 1f, 0, 0f, 1f, 0f, 0f, Map.of(3, 100f), 0, List.of(), s);
                SamplingParams ban = params(t, 1f, 0, 0f, 1f, 0f, 0f, Map.of(1, -100f), 0, List.of(), s);
                assertEquals(3, draw(nativeSampler, l, force, s, null), "T " + t);
                assertNotEquals(1, draw(nativeSampler, l, ban, s, null), "T " + t);
            }
        }
        // greedy without the bias is token 1: the bias is applied before the argmax
        assertEquals(1, draw(nativeSampler, l, SamplingParams.greedy(1), 0, null));
    }

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void minTokensMasksTheStopTokensUntilThatManyWereGenerated(boolean nativeSampler) {
        float[] l = {0f, 1f, 9f, 8f, 2f}; // 2 (say EOS) and 3 (a stop_token_id) lead
        SamplingParams p = params(0f, 1f, 0, 0f, 1f, 0f, 0f, Map.of(), 3, List.of(2, 3), 0);
        for (int step = 0; step < 3; step++) {
            assertEquals(4, draw(nativeSampler, l, p, step, null), "step " + step + " is before min_tokens");
        }
        assertEquals(2, draw(nativeSampler, l, p, 3, null), "from min_tokens on the stop tokens are back");
        int stops = 0;
        for (long seed = 0; seed < 300; seed++) {
            SamplingParams sampled = params(1f, 1f, 0, 0f, 1f, 0f, 0f, Map.of(), 3, List.of(2, 3), seed);
            for (int step = 0; step < 3; step++) {
                int t = draw(nativeSampler, l, sampled, step, null);
                assertTrue(t != 2 && t != 3, "seed " + seed + " step " + step + " drew stop token " + t);
            }
            int t = draw(nativeSampler, l, sampled, 3, null);
            stops += t == 2 || t == 3 ? 1 : 0;
        }
        assertTrue(stops > 250, "after min_tokens the stop tokens are drawn as their probability says: " + stops);
    }

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void repetitionPenaltyDividesPositiveAndMultipliesNegativeLogitsOfPromptAndOutput(boolean nativeSampler) {
        // token 0 in the prompt only: 2 / 2 = 1 < 1.5
        assertEquals(1, draw(nativeSampler, new float[] {2f, 1.5f}, rep(2f), 0, counts(new int[] {0})));
        // negative: -1 * 2 = -2 < -1.5 (divided it would win with -0.5)
        assertEquals(1, draw(nativeSampler, new float[] {-1f, -1.5f}, rep(2f), 0, counts(new int[] {0})));
        // in the output only
        assertEquals(1, draw(nativeSampler, new float[] {2f, 1.5f, 0f}, rep(2f), 0, counts(new int[] {2}, 0)));
        // neither in prompt nor output: untouched
        assertEquals(0, draw(nativeSampler, new float[] {2f, 1.5f}, rep(2f), 0, counts(new int[] {1})));
    }

    private static SamplingParams rep(float rep) {
        return params(0f, 1f, 0, 0f, rep, 0f, 0f, Map.of(), 0, List.of(), 0);
    }

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void frequencyCountsOccurrencesPresenceOnlyWhetherAndNeitherCountsThePrompt(boolean nativeSampler) {
        float[] l = {1f, 0.2f};
        TokenCounts thrice = counts(new int[] {1}, 0, 0, 0);
        // presence: 1 - 0.5 = 0.5 > 0.2; frequency: 1 - 3 * 0.5 = -0.5 < 0.2
        assertEquals(0, draw(nativeSampler, l, params(0f, 1f, 0, 0f, 1f, 0.5f, 0f, Map.of(), 0, List.of(), 0), 0, thrice));
        assertEquals(1, draw(nativeSampler, l, params(0f, 1f, 0, 0f, 1f, 0f, 0.5f, Map.of(), 0, List.of(), 0), 0, thrice));
        // token 0 only in the prompt: no OpenAI penalty
        assertEquals(0, draw(nativeSampler, l, params(0f, 1f, 0, 0f, 1f, 2f, 2f, Map.of(), 0, List.of(), 0), 0,
                counts(new int[] {0})));
    }

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void penaltiesApplyToTheRawLogitsBeforeTheTemperature(boolean nativeSampler) {
        // (2 - 2 * 1) / 0.5 = 0 against 0: even odds; after the temperature it would be 4 - 2 = 2 against 0
        float[] l = {2f, 0f};
        SamplingParams p = params(0.5f, 1f, 0, 0f, 1f, 0f, 2f, Map.of(), 0, List.of(), 11);
        double[] f = frequencies(nativeSampler, l, p, counts(new int[] {1}, 0), 20000);
        assertEquals(0.5, f[0], 0.015);
    }

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void logitBiasComesBeforeTheRepetitionPenalty(boolean nativeSampler) {
        // (1 - 2) * 2 = -2 against 0.5: p0 = 1 / (1 + e^2.5) = 0.076; the other order gives 1/2 - 2 = -1.5 (0.119)
        float[] l = {1f, 0.5f};
        SamplingParams p = params(1f, 1f, 0, 0f, 2f, 0f, 0f, Map.of(0, -2f), 0, List.of(), 3);
        double[] f = frequencies(nativeSampler, l, p, counts(new int[] {0}), 20000);
        assertEquals(1 / (1 + Math.exp(2.5)), f[0], 0.012);
    }

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void badWordsBanTheirLastTokenWhereTheOutputEndsWithTheRest(boolean nativeSampler) {
        float[] l = {0f, 1f, 2f, 9f, 3f};
        SamplingParams one = new SamplingParams(8, 0f, 1f, 0, List.of(), 0, 0f, 1f, 0f, 0f, Map.of(), 0,
                List.of(List.of(3)));
        SamplingParams two = new SamplingParams(8, 0f, 1f, 0, List.of(), 0, 0f, 1f, 0f, 0f, Map.of(), 0,
                List.of(List.of(1, 2, 3)));
        assertEquals(4, draw(nativeSampler, l, one, 0, counts(new int[] {0})));
        assertEquals(4, draw(nativeSampler, l, one, 2, counts(new int[] {0}, 1, 2)));
        // [1, 2, 3]: 3 only after the output 1, 2 (the prompt does not count)
        assertEquals(3, draw(nativeSampler, l, two, 0, counts(new int[] {1, 2})));
        assertEquals(3, draw(nativeSampler, l, two, 2, counts(new int[] {0}, 2, 1)));
        assertEquals(4, draw(nativeSampler, l, two, 3, counts(new int[] {0}, 0, 1, 2)));
        SamplingParams sampled = new SamplingParams(8, 1f, 1f, 0, List.of(), 0, 0f, 1f, 0f, 0f, Map.of(), 0,
                List.of(List.of(3)));
        assertEquals(0.0, frequencies(nativeSampler, l, sampled, counts(new int[] {0}), 500)[3]);
    }

    /** p = 0.5, 0.3, 0.15, 0.05 at temperature 1. */
    private static final float[] FOUR = {(float) Math.log(0.5), (float) Math.log(0.3), (float) Math.log(0.15),
        (float) Math.log(0.05)};

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void minPIsRelativeToTheLargestProbabilityAfterTheTemperature(boolean nativeSampler) {
        // min_p 0.5 at T 1 keeps p >= 0.25: tokens 0 and 1 (an absolute 0.5 would keep token 0 only)
        double[] f = frequencies(nativeSampler, FOUR, params(1f, 1f, 0, 0.5f, 1f, 0f, 0f, Map.of(), 0, List.of(), 1), null,
                4000);
        assertEquals(0.0, f[2] + f[3]);
        assertEquals(0.375, f[1], 0.03);
        // at T 2 the probabilities go as sqrt(p): token 2 (sqrt(0.3) of the largest) stays, token 3 not;
        // min_p before the temperature would drop token 2
        f = frequencies(nativeSampler, FOUR, params(2f, 1f, 0, 0.5f, 1f, 0f, 0f, Map.of(), 0, List.of(), 1), null, 4000);
        assertEquals(0.0, f[3]);
        assertTrue(f[2] > 0.15, "token 2 drawn " + f[2]);
    }

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void topPCutsWhatMinPAndTopKLeft(boolean nativeSampler) {
        // min_p 0.2 drops token 3; top_p 0.83 of the rest (0.526, 0.842) keeps tokens 0, 1. Top-p first
        // (0.5, 0.8, 0.95) would keep token 2.
        double[] f = frequencies(nativeSampler, FOUR, params(1f, 0.83f, 0, 0.2f, 1f, 0f, 0f, Map.of(), 0, List.of(), 2),
                null, 4000);
        assertEquals(0.0, f[2] + f[3]);
        assertTrue(f[1] > 0.3, "token 1 drawn " + f[1]);
        // top_k 2, then top_p 0.6 of (0.625, 1): token 0 only. Top-p first would keep two tokens.
        f = frequencies(nativeSampler, FOUR, params(1f, 0.6f, 2, 0f, 1f, 0f, 0f, Map.of(), 0, List.of(), 2), null, 500);
        assertEquals(1.0, f[0], 1e-9);
        // top_k alone: the two most probable, in their proportions
        f = frequencies(nativeSampler, FOUR, params(1f, 1f, 2, 0f, 1f, 0f, 0f, Map.of(), 0, List.of(), 2), null, 4000);
        assertEquals(0.0, f[2] + f[3]);
        assertEquals(0.625, f[0], 0.03);
        // top_k -1 is off, as 0 is
        f = frequencies(nativeSampler, FOUR, params(1f, 1f, -1, 0f, 1f, 0f, 0f, Map.of(), 0, List.of(), 2), null, 4000);
        assertTrue(f[3] > 0.02, "token 3 drawn " + f[3]);
    }

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void topKKeepsTokensTiedWithTheLast(boolean nativeSampler) {
        float[] l = {3f, 1f, 2f, 2f, 0f};
        double[] f = frequencies(nativeSampler, l, params(1f, 1f, 2, 0f, 1f, 0f, 0f, Map.of(), 0, List.of(), 4), null,
                3000);
        assertTrue(f[3] > 0.05 && f[2] > 0.05, "tied tokens 2 and 3: " + f[2] + ", " + f[3]);
        assertEquals(0.0, f[1] + f[4]);
    }

    /** Random rows with every parameter: native and the double-precision Java path agree. */
    @Test
    void nativeAgreesWithTheDoublePrecisionReference() {
        SplittableRandom rnd = new SplittableRandom(21);
        int rows = 24;
        int vocab = 2000;
        float[] all = new float[rows * vocab];
        for (int i = 0; i < all.length; i++) {
            all[i] = (float) (rnd.nextGaussian() * 3);
        }
        SamplingParams[] params = new SamplingParams[rows];
        TokenCounts[] counts = new TokenCounts[rows];
        long[] steps = new long[rows];
        for (int r = 0; r < rows; r++) {
            Map<Integer, Float> bias = new HashMap<>();
            for (int j = 0; j < 6; j++) {
                bias.put(rnd.nextInt(vocab), (float) rnd.nextInt(-8, 9));
            }
            params[r] = params(r % 4 == 0 ? 0f : 0.6f + 0.2f * (r % 3), r % 3 == 0 ? 0.85f : 1f, r % 2 == 0 ? 0 : 5 + r,
                    r % 5 == 1 ? 0.02f : 0f, 1f + 0.1f * (r % 3), 0.3f * (r % 4) - 0.3f, r % 2 == 0 ? 0.4f : -0.2f, bias,
                    r % 6 == 0 ? 10 : 0, List.of(rnd.nextInt(vocab), rnd.nextInt(vocab)), 1000 + r);
            int[] prompt = new int[50];
            for (int i = 0; i < prompt.length; i++) {
                prompt[i] = rnd.nextInt(vocab);
            }
            counts[r] = new TokenCounts(prompt);
            for (int i = 0; i < 30; i++) {
                counts[r].add(rnd.nextInt(vocab));
            }
            steps[r] = r % 12;
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocateFrom(ValueLayout.JAVA_FLOAT, all);
            int[] got = Sampler.sampleRows(CpuSampling.instance(), seg, vocab, params, steps, counts);
            int[] java = Sampler.sampleRows(null, MemorySegment.ofArray(all), vocab, params, steps, counts);
            int same = 0;
            for (int r = 0; r < rows; r++) {
                same += got[r] == java[r] ? 1 : 0;
            }
            assertTrue(same >= rows - 1, "native and the double-precision reference differ in " + (rows - same)
                    + " of " + rows + " rows");
            // batch independence: each row alone, at its seed and step, draws what it drew beside the others
            for (int r = 0; r < rows; r++) {
                assertEquals(got[r], Sampler.sampleRows(CpuSampling.instance(),
                        seg.asSlice((long) r * vocab * 4, vocab * 4L), vocab, new SamplingParams[] {params[r]},
                        new long[] {steps[r]}, new TokenCounts[] {counts[r]})[0], "row " + r + " alone");
            }
        }
    }

    @Test
    void tokenCountsHoldEachDistinctTokenOnceWithItsOutputCount() {
        TokenCounts c = counts(new int[] {5, 7, 5, 5}, 7, 9, 9, 9);
        assertEquals(3, c.size());
        Map<Integer, Integer> got = new HashMap<>();
        for (int i = 0; i < c.size(); i++) {
            got.put(c.token(i), c.outputCount(i));
        }
        assertEquals(Map.of(5, 0, 7, 1, 9, 3), got);
        TokenCounts many = new TokenCounts(new int[] {0});
        for (int t = 1; t < 100; t++) {
            many.add(t); // past the first capacity: the table grows
        }
        assertEquals(100, many.size());
        assertEquals(99, many.token(99));
        assertEquals(1, many.outputCount(99));
    }

    @Test
    void penaltiesWithoutTokenCountsAreRefused() {
        SamplingParams p = rep(1.5f);
        assertThrows(IllegalArgumentException.class, () -> Sampler.sample(new float[] {1f, 2f}, p, 0));
    }

    @Test
    void parametersOutsideVllmsRangesAreRefused() {
        assertThrows(IllegalArgumentException.class, () -> params(1f, 1f, -2, 0f, 1f, 0f, 0f, Map.of(), 0, null, 0));
        assertThrows(IllegalArgumentException.class, () -> params(1f, 1f, 0, 1.5f, 1f, 0f, 0f, Map.of(), 0, null, 0));
        assertThrows(IllegalArgumentException.class, () -> params(1f, 1f, 0, 0f, 0f, 0f, 0f, Map.of(), 0, null, 0));
        assertThrows(IllegalArgumentException.class, () -> params(1f, 1f, 0, 0f, 1f, 2.5f, 0f, Map.of(), 0, null, 0));
        assertThrows(IllegalArgumentException.class, () -> params(1f, 1f, 0, 0f, 1f, 0f, -2.5f, Map.of(), 0, null, 0));
        assertThrows(IllegalArgumentException.class, () -> params(1f, 1f, 0, 0f, 1f, 0f, 0f, Map.of(-1, 1f), 0, null, 0));
        assertThrows(IllegalArgumentException.class,
                () -> params(1f, 1f, 0, 0f, 1f, 0f, 0f, Map.of(1, Float.NaN), 0, null, 0));
        assertThrows(IllegalArgumentException.class, () -> params(1f, 1f, 0, 0f, 1f, 0f, 0f, Map.of(), 65, null, 0));
        assertTrue(temperature(1f, 0).isArgmaxAt(0) == false && SamplingParams.greedy(1).isArgmaxAt(0));
        assertTrue(!params(0f, 1f, 0, 0f, 1f, 0f, 0f, Map.of(), 2, List.of(1), 0).isArgmaxAt(1)
                && params(0f, 1f, 0, 0f, 1f, 0f, 0f, Map.of(), 2, List.of(1), 0).isArgmaxAt(2));
    }
}
