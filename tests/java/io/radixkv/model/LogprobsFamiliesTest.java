package io.radixkv.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.radixkv.engine.Engine;
import io.radixkv.engine.EngineConfig;
import io.radixkv.engine.GenerateRequest;
import io.radixkv.engine.LogprobOptions;
import io.radixkv.engine.RequestHandle;
import io.radixkv.engine.RequestResult;
import io.radixkv.engine.TokenLogprob;
import io.radixkv.model.FamilyFixtures.Fixture;
import io.radixkv.sched.FinishReason;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Log-probabilities through the engine against the double-precision {@link ReferenceDecoder}
 * (teacher-forced: the reference sees the prompt and the tokens generated before each position):
 * every prompt token's and generated token's log-probability and the top-k values equal a
 * log-softmax of the reference logits within 1e-4, with temperature (they are of the raw
 * logits), chunked prefill, and with and without prefix-cache hits.
 */
class LogprobsFamiliesTest {
    private static final double TOL = 1e-4;
    private static final int K = 5;

    @TempDir
    Path tmp;

    static Stream<String> fixtures() {
        return Stream.of("llama3.2", "qwen3", "gemma3-f32");
    }

    private static Fixture fixture(String name) {
        return List.of(FamilyFixtures.llama32(), FamilyFixtures.qwen3(), FamilyFixtures.gemma3(io.radixkv.kernels.DType.F32))
                .stream().filter(f -> f.name().equals(name)).findFirst().orElseThrow();
    }

    private static double[] logSoftmax(double[] logits) {
        double max = Arrays.stream(logits).max().orElseThrow();
        double sum = 0;
        for (double l : logits) {
            sum += Math.exp(l - max);
        }
        double lse = max + Math.log(sum);
        return Arrays.stream(logits).map(l -> l - lse).toArray();
    }

    /** {@code lp} is the reference's log-probability of its token at the position, and its top k the reference's top k. */
    private static void assertMatches(TokenLogprob lp, double[] refLogits, int k, String what) {
        double[] ref = logSoftmax(refLogits);
        assertEquals(ref[lp.token()], lp.logprob(), TOL, what + ": token " + lp.token());
        assertEquals(k, lp.topCount(), what + ": top count");
        double[] sorted = Arrays.stream(ref).sorted().toArray();
        for (int j = 0; j < k; j++) {
            assertEquals(ref[lp.topId(j)], lp.topLogprob(j), TOL, what + ": top " + j + " (" + lp.topId(j) + ")");
            // the j-th largest (ids may swap only within the tolerance)
            assertEquals(sorted[sorted.length - 1 - j], lp.topLogprob(j), TOL, what + ": top " + j + " rank");
        }
    }

    private static int[] concat(int[] a, int[] b, int bLen) {
        int[] out = Arrays.copyOf(a, a.length + bLen);
        System.arraycopy(b, 0, out, a.length, bLen);
        return out;
    }

    private static void assertPromptMatches(List<TokenLogprob> prompt, int[] tokens, ReferenceDecoder ref, String what) {
        assertEquals(tokens.length - 1, prompt.size(), what + ": one entry per prompt token after the first");
        int[] positions = new int[tokens.length - 1];
        Arrays.setAll(positions, i -> i);
        double[][] logits = ref.logits(tokens, positions);
        for (int j = 0; j < prompt.size(); j++) {
            assertEquals(tokens[j + 1], prompt.get(j).token(), what + ": prompt entry " + j);
            assertMatches(prompt.get(j), logits[j], K, what + ": prompt token " + (j + 1));
        }
    }

    private static void assertGeneratedMatches(RequestHandle h, int[] prompt, ReferenceDecoder ref, int k, String what) {
        RequestResult r = h.result().join();
        assertTrue(r.ok(), what + ": " + r.error());
        int[] out = r.outputTokens();
        List<TokenLogprob> gen = h.logprobs().generated();
        assertEquals(out.length, gen.size(), what + ": one entry per generated token");
        for (int i = 0; i < out.length; i++) {
            assertEquals(out[i], gen.get(i).token(), what + ": generated entry " + i);
            double[] logits = ref.logits(concat(prompt, out, i), prompt.length - 1 + i)[0];
            assertMatches(gen.get(i), logits, k, what + ": generated token " + i);
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("fixtures")
    void logprobsEqualTheReferenceWithAndWithoutPrefixCacheHits(String name) throws IOException {
        Fixture f = fixture(name);
        var tensors = FamilyFixtures.tensors(f.spec(), 21);
        Path dir = tmp.resolve(name);
        FamilyFixtures.write(dir, f, tensors, "F32", false);
        ReferenceDecoder ref = new ReferenceDecoder(f.spec(), FamilyFixtures.values(tensors));
        Random rnd = new Random(17);
        int[] prompt = new int[30];
        Arrays.setAll(prompt, i -> rnd.nextInt(FamilyFixtures.VOCAB));
        int[] longer = Arrays.copyOf(prompt, 35);
        for (int i = 30; i < 35; i++) {
            longer[i] = rnd.nextInt(FamilyFixtures.VOCAB);
        }
        // 12-token steps: the 30-token prompt is prefilled in three chunks
        EngineConfig cfg = EngineConfig.builder().model(dir.toString()).backend("cpu").kvDtype("f32")
                .weightsDtype("f32").pageSize(4).numPages(128).prefixCache(true).maxRunning(4).maxBatchTokens(12).build();
        try (Engine e = Engine.start(cfg)) {
            // prompt and generated log-probabilities, sampled at temperature 0.7: still the raw logits'
            SamplingParams warm = new SamplingParams(5, 0.7f, 1f, 4, List.of());
            RequestHandle both = e.submit(new GenerateRequest("both", prompt, null, warm, new LogprobOptions(K, K)));
            assertGeneratedMatches(both, prompt, ref, K, name + " sampled");
            assertPromptMatches(both.logprobs().prompt(), prompt, ref, name);
            assertEquals(0, both.result().join().stats().cachedPromptTokens());

            // (a prompt-logprobs request neither reads nor fills the cache): a plain request caches the prompt,
            // then a request wanting generated log-probabilities reads it
            e.submit(new GenerateRequest("seed", prompt, SamplingParams.greedy(1))).result().join();
            RequestHandle hit = e.submit(new GenerateRequest("hit", longer, null, SamplingParams.greedy(4),
                    new LogprobOptions(3, -1)));
            assertGeneratedMatches(hit, longer, ref, 3, name + " after a cache hit");
            assertTrue(hit.result().join().stats().cachedPromptTokens() >= 28,
                    name + ": the prompt was not served from the cache");
            int[] hitTokens = hit.result().join().outputTokens();
            // greedy: the token chosen is the most probable one
            assertEquals(hit.logprobs().generated().get(0).topId(0), hitTokens[0]);

            // prompt log-probabilities ignore the cache: the whole prompt is computed
            RequestHandle echo = e.submit(new GenerateRequest("echo", longer, null, SamplingParams.greedy(1),
                    new LogprobOptions(-1, K)));
            RequestResult er = echo.result().join();
            assertEquals(FinishReason.LENGTH, er.reason(), er.error());
            assertEquals(0, er.stats().cachedPromptTokens(), name + ": a prompt-logprobs request read the cache");
            assertPromptMatches(echo.logprobs().prompt(), longer, ref, name + " prompt after a cache hit");
            assertTrue(echo.logprobs().generated().isEmpty(), "generated log-probabilities were not asked for");

            // the cache is still right for others afterwards: the same request gives the same tokens
            RequestResult again = e.submit(new GenerateRequest("again", longer, SamplingParams.greedy(4))).result().join();
            assertEquals(Arrays.toString(hitTokens), Arrays.toString(again.outputTokens()));
            assertTrue(again.stats().cachedPromptTokens() >= 28);

            // a request without log-probabilities has none
            RequestHandle none = e.submit(new GenerateRequest("none", prompt, SamplingParams.greedy(2)));
            none.result().join();
            assertEquals(null, none.logprobs());
            assertNotNull(both.logprobs());
        }
    }
}
