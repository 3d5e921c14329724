package io.radixkv.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.radixkv.kernels.DType;
import io.radixkv.model.SamplingParams;
import io.radixkv.sched.FinishReason;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

@Timeout(value = 180, unit = java.util.concurrent.TimeUnit.SECONDS)
class EngineSmokeTest {
    @Test
    void greedyGenerationEndToEnd() {
        try (Engine e = EngineTestSupport.start(EngineTestSupport.tiny(4, DType.F32, true, 256).build())) {
            int[] prompt = {1, 5, 9, 300, 4000, 17, 23, 99, 31999, 2};
            List<RequestResult> r = e.runToCompletion(List.of(
                    new GenerateRequest("a", prompt, SamplingParams.greedy(8)),
                    new GenerateRequest("b", prompt, SamplingParams.greedy(8))));
            assertEquals(FinishReason.LENGTH, r.get(0).reason(), r.get(0).error());
            assertEquals(8, r.get(0).outputTokens().length);
            assertArrayEquals(r.get(0).outputTokens(), r.get(1).outputTokens());
            assertTrue(r.get(1).stats().cachedPromptTokens() > 0, "second request reuses the first's prefix");
            System.out.println(java.util.Arrays.toString(r.get(0).outputTokens()) + " " + r.get(1).stats()
                    + " " + e.snapshot());
            e.checkInvariants(true);
        }
    }

    /**
     * bf16 weights (the AMX matmul path for prefill) and f16 weights (the small-m kernel in
     * blocks of rows) serve end to end, deterministically, with the prefix cache.
     */
    @ParameterizedTest
    @EnumSource(value = DType.class, names = {"BF16", "F16"})
    void halfWeightsEndToEnd(DType weights) {
        int[] prompt = {1, 5, 9, 300, 4000, 17, 23, 99, 31999, 2, 11, 12};
        int[][] outputs = new int[2][];
        for (int run = 0; run < 2; run++) {
            try (Engine e = EngineTestSupport.start(EngineTestSupport.tiny(4, DType.BF16, true, 256)
                    .weightsDtype(weights).build())) {
                List<RequestResult> r = e.runToCompletion(List.of(
                        new GenerateRequest("a", prompt, SamplingParams.greedy(6)),
                        new GenerateRequest("b", prompt, SamplingParams.greedy(6))));
                for (RequestResult x : r) {
                    assertEquals(FinishReason.LENGTH, x.reason(), x.error());
                    assertEquals(6, x.outputTokens().length);
                    for (int t : x.outputTokens()) {
                        assertTrue(t >= 0 && t < 32000, "token " + t + " outside the vocabulary");
                    }
                }
                assertTrue(r.get(1).stats().cachedPromptTokens() > 0, "second request reuses the first's prefix");
                outputs[run] = r.get(0).outputTokens();
                e.checkInvariants(true);
            }
        }
        assertArrayEquals(outputs[0], outputs[1], "same seed and weights dtype give the same tokens");
    }
}
