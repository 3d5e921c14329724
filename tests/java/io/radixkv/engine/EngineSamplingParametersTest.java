package io.radixkv.engine;

import static io.radixkv.engine.EngineTestSupport.randomTokens;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.radixkv.cache.Namespace;
import io.radixkv.kernels.DType;
import io.radixkv.model.ModelPresets;
import io.radixkv.model.Sampler;
import io.radixkv.model.SamplingParams;
import io.radixkv.model.TokenCounts;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;

/**
 * vLLM's sampling parameters through the engine: every token of a request with penalties,
 * logit bias and min-tokens is the double-precision reference's (Sampler's Java path) for the
 * logits it was drawn from and the counts of the prompt and the tokens before it (negative
 * penalties make the output repeat itself, which the counts of the tokens before must bring
 * about); the same
 * requests without a logits probe (the engine then decides itself that these greedy rows need
 * their full logits) give the same tokens; and a bias id outside the vocabulary is refused.
 */
class EngineSamplingParametersTest {
    private static final int TOKENS = 16;

    private static List<GenerateRequest> requests(SplittableRandom rnd) {
        List<GenerateRequest> out = new ArrayList<>();
        int[] minPrompt = randomTokens(rnd, 9);
        // the stop token is the plain greedy first token, which min-tokens must mask
        int stop = EngineTestSupport.reference(List.of(minPrompt), 1, 4, DType.F32).get(0)[0];
        Map<Integer, Float> bias = new HashMap<>();
        for (int i = 0; i < 8; i++) {
            bias.put(rnd.nextInt(ModelPresets.tiny().vocab()), (float) rnd.nextInt(-3, 4));
        }
        // greedy with negative presence and frequency penalties (the output repeats itself); greedy with min-tokens masking its own plain first token; sampled with all
        out.add(new GenerateRequest("rep", randomTokens(rnd, 12), Namespace.DEFAULT,
                new SamplingParams(TOKENS, 0f, 1f, 0, List.of(), 0, 0f, 1.3f, -2f, -2f, Map.of(), 0)));
        out.add(new GenerateRequest("min", minPrompt, Namespace.DEFAULT,
                new SamplingParams(TOKENS, 0f, 1f, 0, List.of(stop), 0, 0f, 1f, 0f, 0f, bias, 6)));
        out.add(new GenerateRequest("all", randomTokens(rnd, 14), Namespace.DEFAULT,
                new SamplingParams(TOKENS, 0.9f, 0.95f, 77, List.of(stop), 40, 0.01f, 1.2f, -0.5f, 0.7f, bias, 4)));
        out.add(new GenerateRequest("plain", randomTokens(rnd, 11), Namespace.DEFAULT, SamplingParams.greedy(TOKENS)));
        return out;
    }

    @Test
    void eachTokenIsTheReferencesForItsLogitsAndCounts() {
        List<GenerateRequest> reqs = requests(new SplittableRandom(4));
        Map<String, List<float[]>> logits = new ConcurrentHashMap<>();
        List<RequestResult> probed;
        try (Engine e = EngineTestSupport.start(EngineTestSupport.tiny(4, DType.F32, true, 512).build())) {
            e.setLogitsProbe((id, index, l) -> logits.computeIfAbsent(id, k -> new ArrayList<>()).add(l));
            probed = e.runConcurrently(reqs);
        }
        List<RequestResult> plain;
        try (Engine e = EngineTestSupport.start(EngineTestSupport.tiny(4, DType.F32, true, 512).build())) {
            plain = e.runConcurrently(reqs);
        }
        for (int i = 0; i < reqs.size(); i++) {
            GenerateRequest q = reqs.get(i);
            RequestResult r = probed.get(i);
            assertTrue(r.ok(), r.toString());
            int[] out = r.outputTokens();
            assertArrayEquals(out, plain.get(i).outputTokens(), q.id() + ": without a probe");
            TokenCounts counts = new TokenCounts(q.promptTokens());
            int differ = 0;
            for (int step = 0; step < out.length; step++) {
                float[] l = logits.get(q.id()).get(step);
                differ += out[step] != Sampler.sample(l, q.params(), step, counts) ? 1 : 0;
                counts.add(out[step]);
                if (step < q.params().minTokens()) {
                    assertFalse(q.params().isStop(out[step]), q.id() + " stopped at " + step + " before min_tokens");
                }
            }
            assertTrue(q.params().isGreedy() ? differ == 0 : differ <= 1, q.id() + ": " + differ + " tokens differ");
            if (q.id().equals("rep")) { // the counts reached the sampler: a few tokens, boosted, repeat
                assertTrue(Arrays.stream(out).distinct().count() <= out.length / 2, Arrays.toString(out));
            }
        }
        assertFalse(reqs.get(1).params().isStop(probed.get(1).outputTokens()[0]), "min_tokens left the stop token");
    }

    @Test
    void penaltiesChangeWhatGreedyDecodingRepeats() {
        SplittableRandom rnd = new SplittableRandom(9);
        int[] prompt = randomTokens(rnd, 10);
        try (Engine e = EngineTestSupport.start(EngineTestSupport.tiny(4, DType.F32, true, 512).build())) {
            int[] greedy = e.runToCompletion(List.of(new GenerateRequest("g", prompt, Namespace.DEFAULT,
                    SamplingParams.greedy(TOKENS)))).get(0).outputTokens();
            // ban the plain first token: the first token changes and with it the rest
            int[] banned = e.runToCompletion(List.of(new GenerateRequest("b", prompt, Namespace.DEFAULT,
                    new SamplingParams(TOKENS, 0f, 1f, 0, List.of(), 0, 0f, 1f, 0f, 0f, Map.of(greedy[0], -100f), 0))))
                    .get(0).outputTokens();
            assertTrue(banned[0] != greedy[0], "a -100 bias left the greedy token");
        }
    }

    @Test
    void badWordsAreNeverGenerated() {
        int[] prompt = randomTokens(new SplittableRandom(10), 10);
        try (Engine e = EngineTestSupport.start(EngineTestSupport.tiny(4, DType.F32, true, 512).build())) {
            int[] greedy = e.runToCompletion(List.of(new GenerateRequest("g", prompt, Namespace.DEFAULT,
                    SamplingParams.greedy(TOKENS)))).get(0).outputTokens();
            // the greedy pair (greedy[0], greedy[1]) and the token greedy[2] are banned
            SamplingParams p = new SamplingParams(TOKENS, 0f, 1f, 0, List.of(), 0, 0f, 1f, 0f, 0f, Map.of(), 0,
                    List.of(List.of(greedy[0], greedy[1]), List.of(greedy[2])));
            int[] out = e.runToCompletion(List.of(new GenerateRequest("b", prompt, Namespace.DEFAULT, p))).get(0)
                    .outputTokens();
            assertEquals(greedy[0], out[0]);
            assertTrue(out[1] != greedy[1], Arrays.toString(out));
            assertTrue(Arrays.stream(out).noneMatch(t -> t == greedy[2]), Arrays.toString(out));
        }
    }

    @Test
    void biasIdsOutsideTheVocabularyAreRefusedAtSubmit() {
        int vocab = ModelPresets.tiny().vocab();
        try (Engine e = EngineTestSupport.start(EngineTestSupport.tiny(4, DType.F32, true, 64).build())) {
            assertThrows(IllegalArgumentException.class, () -> e.submit(new GenerateRequest("x", new int[] {1, 2},
                    Namespace.DEFAULT, new SamplingParams(4, 1f, 1f, 0, List.of(), 0, 0f, 1f, 0f, 0f,
                    Map.of(vocab, 1f), 0))));
            assertThrows(IllegalArgumentException.class, () -> e.submit(new GenerateRequest("y", new int[] {1, 2},
                    Namespace.DEFAULT, new SamplingParams(4, 1f, 1f, 0, List.of(vocab + 3), 0, 0f, 1f, 0f, 0f,
                    Map.of(), 2))));
        }
    }
}
