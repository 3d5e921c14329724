package io.radixkv.engine;

import static io.radixkv.engine.EngineTestSupport.randomTokens;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.radixkv.cache.Namespace;
import io.radixkv.kernels.DType;
import io.radixkv.model.ModelPresets;
import io.radixkv.model.SamplingParams;
import io.radixkv.structured.Constraint;
import io.radixkv.structured.Grammar;
import io.radixkv.structured.GrammarCompiler;
import io.radixkv.structured.TokenVocabulary;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * n > 1 together with the per-request features whose state each sample must hold on its own
 * (as vLLM gives every sample its own sequence): penalties count the sample's own tokens, the
 * log-probabilities are the sample's own (the prompt's are computed once and every sample
 * carries them), and a grammar follows the sample's own text. Sample i equals, token for token
 * and log-probability for log-probability, the same request run alone with seed + i, also when
 * the samples are preempted and resume.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class EngineCombinedFeaturesTest {
    private static final int PAGE = 16;
    private static final int N = 3;
    private static final int END = 0;
    private static final String LETTERS = "abdeghlmpt";
    /** Log-probabilities of one token batched with others or alone: float32 sums in another order. */
    private static final double TOL = 1e-4;

    private static EngineConfig config(boolean prefixCache, int pages) {
        return EngineTestSupport.tiny(PAGE, DType.F32, prefixCache, pages).build();
    }

    /** Sampled, with repetition, presence and frequency penalties, a logit bias and min-tokens. */
    private static SamplingParams penalized(int maxTokens, long seed) {
        Map<Integer, Float> bias = Map.of(17, 4f, 4242, 3f, 901, -2f);
        return new SamplingParams(maxTokens, 0.9f, 0.95f, seed, List.of(END), 60, 0.01f, 1.3f, 0.6f, -0.8f, bias, 3);
    }

    /**
     * A vocabulary of the tiny model's width for grammars: id 0 ends the text, every other id
     * one or two of {@link #LETTERS}, so that many token paths spell the same text.
     */
    private static TokenVocabulary vocabulary() {
        int size = ModelPresets.tiny().vocab();
        List<byte[]> bytes = new ArrayList<>(size);
        bytes.add(null);
        for (int i = 1; i < size; i++) {
            String s = "" + LETTERS.charAt(i % LETTERS.length())
                    + (i % 3 == 0 ? "" + LETTERS.charAt(i / LETTERS.length() % LETTERS.length()) : "");
            bytes.add(s.getBytes(StandardCharsets.UTF_8));
        }
        return TokenVocabulary.of(bytes, size, List.of(END));
    }

    private static Grammar grammar(Constraint c) {
        return new GrammarCompiler(vocabulary(), 16).compile(c);
    }

    /** The text of {@code tokens} in {@link #vocabulary()}, without the end token. */
    private static String text(int[] tokens) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (int t : tokens) {
            if (t != END) {
                String s = "" + LETTERS.charAt(t % LETTERS.length())
                        + (t % 3 == 0 ? "" + LETTERS.charAt(t / LETTERS.length() % LETTERS.length()) : "");
                out.writeBytes(s.getBytes(StandardCharsets.UTF_8));
            }
        }
        return out.toString(StandardCharsets.UTF_8);
    }

    private static GenerateRequest request(String id, int[] prompt, SamplingParams p, LogprobOptions lp, Grammar g) {
        return new GenerateRequest(id, prompt, Namespace.DEFAULT, p, lp, g);
    }

    /** {@code p} with another seed, every other parameter spelled out (the reference does not lean on withSeed). */
    private static SamplingParams seeded(SamplingParams p, long seed) {
        return new SamplingParams(p.maxTokens(), p.temperature(), p.topP(), seed, p.stopTokenIds(), p.topK(), p.minP(),
                p.repetitionPenalty(), p.presencePenalty(), p.frequencyPenalty(), p.logitBias(), p.minTokens(),
                p.badWords());
    }

    /** {@code r} with seed + i, run alone, from a prefix cache emptied first. */
    private static RequestHandle alone(Engine e, GenerateRequest r, int i) throws Exception {
        e.evictAll();
        RequestHandle h = e.submit(request("alone" + i, r.promptTokens(), seeded(r.params(), r.params().seed() + i),
                r.logprobs(), r.grammar()));
        assertTrue(h.result().get(120, TimeUnit.SECONDS).ok(), h.result().get().toString());
        return h;
    }

    /** Every sample of {@code r} for n = 3 next to the request alone with seed + i: the same tokens. */
    private static List<RequestHandle> samplesAndAlone(Engine e, GenerateRequest r, List<RequestHandle> alone)
            throws Exception {
        for (int i = 0; i < N; i++) {
            alone.add(alone(e, r, i));
        }
        e.evictAll();
        MultiSampleHandle h = e.submit(r, N, null);
        List<RequestResult> rs = h.results().get(120, TimeUnit.SECONDS);
        for (int i = 0; i < N; i++) {
            assertTrue(rs.get(i).ok(), rs.get(i).toString());
            assertArrayEquals(alone.get(i).result().get().outputTokens(), rs.get(i).outputTokens(), "sample " + i);
        }
        assertTrue(new HashSet<>(rs.stream().map(x -> Arrays.toString(x.outputTokens())).toList()).size() > 1,
                "the samples draw from different seeds");
        return h.samples();
    }

    private static void assertSameLogprobs(List<TokenLogprob> expected, List<TokenLogprob> actual, String what) {
        assertEquals(expected.size(), actual.size(), what + ": entries");
        for (int t = 0; t < expected.size(); t++) {
            TokenLogprob a = expected.get(t);
            TokenLogprob b = actual.get(t);
            String at = what + " entry " + t;
            assertEquals(a.token(), b.token(), at);
            assertEquals(a.logprob(), b.logprob(), TOL, at);
            assertArrayEquals(a.topIds(), b.topIds(), at);
            assertArrayEquals(a.topLogprobs(), b.topLogprobs(), TOL, at);
        }
    }

    /**
     * Penalties and a logit bias: each sample counts the prompt and its own tokens only, so it
     * draws what the request alone with seed + i draws.
     */
    @ParameterizedTest(name = "prefix cache {0}")
    @ValueSource(booleans = {false, true})
    void penalizedSamplesCountTheirOwnTokens(boolean prefixCache) throws Exception {
        int[] prompt = randomTokens(new SplittableRandom(61), 2 * PAGE + 3);
        try (Engine e = EngineTestSupport.start(config(prefixCache, 256))) {
            samplesAndAlone(e, request("g", prompt, penalized(24, 300), LogprobOptions.NONE, null), new ArrayList<>());
            e.checkInvariants(true);
        }
    }

    /**
     * Top-3 log-probabilities of every generated token and top-2 of every prompt token: each
     * sample's generated ones are the request's alone with seed + i, and every sample carries the
     * prompt's (computed once), equal to sample 0's and to the request's alone.
     */
    @ParameterizedTest(name = "prefix cache {0}")
    @ValueSource(booleans = {false, true})
    void eachSampleHasItsOwnLogprobsAndThePrompts(boolean prefixCache) throws Exception {
        int[] prompt = randomTokens(new SplittableRandom(62), 2 * PAGE + 7);
        GenerateRequest r = request("g", prompt, new SamplingParams(12, 1f, 0.95f, 500, List.of()),
                new LogprobOptions(3, 2), null);
        try (Engine e = EngineTestSupport.start(config(prefixCache, 256))) {
            List<RequestHandle> alone = new ArrayList<>();
            List<RequestHandle> samples = samplesAndAlone(e, r, alone);
            List<TokenLogprob> prompt0 = samples.get(0).logprobs().prompt();
            assertEquals(prompt.length - 1, prompt0.size());
            for (int i = 0; i < N; i++) {
                RequestLogprobs mine = samples.get(i).logprobs();
                assertEquals(12, mine.generated().size(), "sample " + i);
                assertSameLogprobs(alone.get(i).logprobs().generated(), mine.generated(), "sample " + i);
                assertSameLogprobs(prompt0, mine.prompt(), "sample " + i + " prompt");
                assertSameLogprobs(alone.get(i).logprobs().prompt(), mine.prompt(), "sample " + i + " prompt alone");
            }
        }
    }

    /**
     * A choice constraint: every sample's text is one of the choices, each following its own
     * text through the grammar from its first token on, and each is the request alone with seed + i.
     */
    @ParameterizedTest(name = "prefix cache {0}")
    @ValueSource(booleans = {false, true})
    void eachSampleFollowsTheGrammarOnItsOwn(boolean prefixCache) throws Exception {
        List<String> choices = List.of("alpha", "beta", "gamma", "delta", "tempo", "ample");
        Grammar g = grammar(Constraint.choice(choices));
        int[] prompt = randomTokens(new SplittableRandom(63), PAGE + 9);
        GenerateRequest r = request("g", prompt, new SamplingParams(16, 1.5f, 1f, 700, List.of(END)),
                LogprobOptions.NONE, g);
        try (Engine e = EngineTestSupport.start(config(prefixCache, 256))) {
            List<RequestHandle> samples = samplesAndAlone(e, r, new ArrayList<>());
            for (int i = 0; i < N; i++) {
                int[] out = samples.get(i).result().get().outputTokens();
                assertEquals(END, out[out.length - 1], "sample " + i + " ends with the end token");
                assertTrue(choices.contains(text(out)), "sample " + i + ": '" + text(out) + "'");
            }
            e.checkInvariants(true);
        }
    }

    /**
     * All three at once in a pool too small for the samples and another request together:
     * samples preempted mid-generation resume with their own counts, log-probabilities and
     * grammar position and still equal the request alone with seed + i.
     */
    @Test
    void preemptedSamplesKeepTheirOwnState() throws Exception {
        SplittableRandom rnd = new SplittableRandom(64);
        int[] other = randomTokens(rnd, 40);
        int[] prompt = randomTokens(rnd, 2 * PAGE + 5);
        GenerateRequest r = request("g", prompt, penalized(60, 800), new LogprobOptions(2, 1),
                grammar(Constraint.regex("[a-h]+")));
        List<RequestHandle> alone = new ArrayList<>();
        try (Engine e = EngineTestSupport.start(config(false, 256))) {
            for (int i = 0; i < N; i++) {
                alone.add(alone(e, r, i));
            }
        }
        // 20 pages: the other request (7 pages at its end) and the 3 samples (2 shared + 3 x 4) do not fit together
        try (Engine e = EngineTestSupport.start(config(false, 20))) {
            RequestHandle first = e.submit(new GenerateRequest("other", other, new SamplingParams(60, 1f, 0.95f, 1,
                    List.of())));
            MultiSampleHandle h = e.submit(r, N, null);
            List<RequestResult> rs = h.results().get(120, TimeUnit.SECONDS);
            assertTrue(first.result().get(120, TimeUnit.SECONDS).ok());
            assertTrue(rs.stream().anyMatch(x -> x.stats().preemptions() > 0), "a sample was preempted");
            for (int i = 0; i < N; i++) {
                int[] out = rs.get(i).outputTokens();
                assertArrayEquals(alone.get(i).result().get().outputTokens(), out, "sample " + i);
                assertTrue(text(out).matches("[a-h]+"), "sample " + i + ": '" + text(out) + "'");
                RequestLogprobs mine = h.sample(i).logprobs();
                assertSameLogprobs(alone.get(i).logprobs().generated(), mine.generated(), "sample " + i);
                assertSameLogprobs(alone.get(i).logprobs().prompt(), mine.prompt(), "sample " + i + " prompt");
            }
            e.checkInvariants(true);
        }
    }
}
