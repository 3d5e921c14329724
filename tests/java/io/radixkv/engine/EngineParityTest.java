package io.radixkv.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.radixkv.kernels.DType;
import io.radixkv.sched.FinishReason;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Greedy decoding gives identical tokens with the prefix cache on and off, over many prompts sharing prefixes, served concurrently (chunked prefill, mid-prefill
 * sharing, batching) and one after another (every later prompt hits the cache).
 */
@Timeout(value = 180, unit = java.util.concurrent.TimeUnit.SECONDS)
class EngineParityTest {
    /** -Dradixkv.longTests=true: more prompts and longer outputs. */
    private static final boolean LONG = Boolean.getBoolean("radixkv.longTests");
    private static final int PROMPTS = LONG ? 48 : 12;
    private static final int MAX_TOKENS = LONG ? 16 : 4;

    private record Run(List<RequestResult> results, Map<String, float[]> firstLogits, EngineStats stats) {}

    private static Run run(int pageSize, DType dtype, boolean prefix, boolean concurrent) {
        EngineConfig cfg = EngineTestSupport.tiny(pageSize, dtype, prefix, 4096).maxBatchTokens(48).build();
        Map<String, float[]> logits = new ConcurrentHashMap<>();
        try (Engine e = EngineTestSupport.start(cfg)) {
            e.setLogitsProbe((id, idx, l) -> {
                if (idx == 0) {
                    logits.put(id, l);
                }
            });
            List<GenerateRequest> reqs = EngineTestSupport.greedyRequests(EngineTestSupport.promptFamily(11, PROMPTS),
                    MAX_TOKENS);
            List<RequestResult> r = concurrent ? e.runConcurrently(reqs) : e.runToCompletion(reqs);
            e.checkInvariants(true);
            return new Run(r, logits, e.snapshot());
        }
    }

    @ParameterizedTest(name = "page size {0}, {1} cache, concurrent {2}")
    @CsvSource({"1, F32, true", "16, F32, true", "1, BF16, true", "16, BF16, true", "16, F32, false"})
    void prefixCacheDoesNotChangeGreedyOutput(int pageSize, DType dtype, boolean concurrent) {
        Run off = run(pageSize, dtype, false, concurrent);
        Run on = run(pageSize, dtype, true, concurrent);
        assertEquals(0, off.stats().reusedTokens());
        assertTrue(on.stats().reusedTokens() > 0, "the cache must be used: " + on.stats());
        for (int i = 0; i < PROMPTS; i++) {
            RequestResult a = off.results().get(i);
            RequestResult b = on.results().get(i);
            assertEquals(FinishReason.LENGTH, a.reason(), a.error());
            assertEquals(FinishReason.LENGTH, b.reason(), b.error());
            assertArrayEquals(a.outputTokens(), b.outputTokens(), "request " + i + " differs with the cache on");
            assertEquals(b.stats().promptTokens(), b.stats().cachedPromptTokens() + b.stats().computedPromptTokens());
        }
        if (dtype == DType.F32) {
            // last-prompt-position logits: the cached prefix gives the same numbers as recomputing it
            for (int i = 0; i < PROMPTS; i++) {
                float[] x = off.firstLogits().get("r" + i);
                float[] y = on.firstLogits().get("r" + i);
                double maxAbs = 0;
                double maxDiff = 0;
                for (int j = 0; j < x.length; j++) {
                    maxAbs = Math.max(maxAbs, Math.abs(x[j]));
                    maxDiff = Math.max(maxDiff, Math.abs(x[j] - y[j]));
                }
                assertTrue(maxDiff <= 1e-4 * maxAbs, "request " + i + ": logits differ by " + maxDiff + " (max |logit| "
                        + maxAbs + ")");
            }
        }
    }
}
