package io.radixkv.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.radixkv.kernels.DType;
import io.radixkv.kernels.cpu.CpuDenseKernels;
import io.radixkv.model.ModelPresets;
import io.radixkv.sched.FinishReason;
import java.util.List;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * An engine that loads its weights packs them for the CPU kernels (where the CPU has the layout
 * for their dtype) unless told not to, and greedy decoding gives the same tokens either way.
 */
@Timeout(value = 120, unit = java.util.concurrent.TimeUnit.SECONDS)
class EngineWeightPackingTest {
    private static List<RequestResult> run(DType weights, boolean pack, boolean expectPacked) {
        EngineConfig cfg = EngineTestSupport.tiny(16, DType.BF16, true, 2048).weightsDtype(weights)
                .packWeights(pack).build();
        try (Engine e = Engine.start(cfg)) {
            assertEquals(expectPacked, e.linearWeightsPacked());
            List<RequestResult> r = e.runConcurrently(
                    EngineTestSupport.greedyRequests(EngineTestSupport.promptFamily(5, 10), 6));
            e.checkInvariants(true);
            return r;
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"bf16", "f16", "f32"})
    void packedWeightsDecodeTheSameTokens(String dtype) {
        DType weights = DType.parse(dtype);
        var tiny = ModelPresets.tiny();
        assumeTrue(new CpuDenseKernels().packsLinearWeights(weights, tiny.qkvDim(), tiny.hidden()),
                "no packed " + dtype + " layout on this CPU");
        List<RequestResult> plain = run(weights, false, false);
        List<RequestResult> packed = run(weights, true, true);
        for (int i = 0; i < plain.size(); i++) {
            assertEquals(FinishReason.LENGTH, packed.get(i).reason(), packed.get(i).error());
            assertArrayEquals(plain.get(i).outputTokens(), packed.get(i).outputTokens(), "request " + i);
        }
    }
}
