package io.radixkv.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.radixkv.kernels.CpuDenseKernels;
import io.radixkv.kernels.DType;
import io.radixkv.model.ModelPresets;
import io.radixkv.sched.FinishReason;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * An engine that loads bf16 weights packs them for the CPU kernels (where the CPU has the
 * layout) unless told not to, and greedy decoding gives the same tokens either way.
 */
@Timeout(value = 120, unit = java.util.concurrent.TimeUnit.SECONDS)
class EngineWeightPackingTest {
    private static List<RequestResult> run(boolean pack, boolean expectPacked) {
        EngineConfig cfg = EngineTestSupport.tiny(16, DType.BF16, true, 2048).weightsDtype(DType.BF16)
                .packWeights(pack).build();
        try (Engine e = Engine.start(cfg)) {
            assertEquals(expectPacked, e.linearWeightsPacked());
            List<RequestResult> r = e.runConcurrently(
                    EngineTestSupport.greedyRequests(EngineTestSupport.promptFamily(5, 10), 6));
            e.checkInvariants(true);
            return r;
        }
    }

    @Test
    void packedWeightsDecodeTheSameTokens() {
        var tiny = ModelPresets.tiny();
        assumeTrue(new CpuDenseKernels().packsLinearWeights(DType.BF16, tiny.qkvDim(), tiny.hidden()),
                "no packed layout on this CPU");
        List<RequestResult> plain = run(false, false);
        List<RequestResult> packed = run(true, true);
        for (int i = 0; i < plain.size(); i++) {
            assertEquals(FinishReason.LENGTH, packed.get(i).reason(), packed.get(i).error());
            assertArrayEquals(plain.get(i).outputTokens(), packed.get(i).outputTokens(), "request " + i);
        }
    }

    @Test
    void f32WeightsAreNotPacked() {
        EngineConfig cfg = EngineTestSupport.tiny(16, DType.BF16, true, 2048).build();
        try (Engine e = Engine.start(cfg)) {
            assertFalse(e.linearWeightsPacked());
        }
    }
}
