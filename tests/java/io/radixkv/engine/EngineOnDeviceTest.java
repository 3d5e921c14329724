package io.radixkv.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.radixkv.kernels.DType;
import io.radixkv.kernels.KernelBackend;
import io.radixkv.kernels.cuda.CudaDevice;
import io.radixkv.kernels.select.Backends;
import io.radixkv.model.StubDeviceBackend;
import io.radixkv.sched.FinishReason;
import java.util.List;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The same engine, scheduler, cache and page tables on a device-memory backend: greedy outputs
 * equal the CPU engine's, with the prefix cache on (shared prefixes, chunked prefill, decode)
 * and pages conserved. Always on {@link StubDeviceBackend} (the device path without a GPU);
 * on the CUDA backend when a GPU is present ({@code -Dradixkv.requireCuda=true} under
 * scripts/gpu-check turns a missing GPU into a failure).
 */
class EngineOnDeviceTest {
    private static final int PROMPTS = 10;
    private static final int MAX_TOKENS = 6;

    private static List<RequestResult> run(Supplier<KernelBackend> backend, DType kv, boolean prefix) {
        EngineConfig cfg = EngineTestSupport.tiny(4, kv, prefix, 512).maxBatchTokens(40).build();
        try (Engine e = Engine.start(cfg, backend, EngineTestSupport.weights(), null)) {
            List<RequestResult> r = e.runConcurrently(EngineTestSupport.greedyRequests(
                    EngineTestSupport.promptFamily(5, PROMPTS), MAX_TOKENS));
            e.checkInvariants(true);
            return r;
        }
    }

    private static void assertSameOutputs(List<RequestResult> expected, List<RequestResult> actual, String what) {
        for (int i = 0; i < PROMPTS; i++) {
            assertEquals(FinishReason.LENGTH, actual.get(i).reason(), actual.get(i).error());
            assertArrayEquals(expected.get(i).outputTokens(), actual.get(i).outputTokens(),
                    what + ": request " + i + " differs from the CPU engine");
        }
    }

    @ParameterizedTest(name = "{0} cache, prefix cache {1}")
    @CsvSource({"F32, true", "BF16, true", "F32, false"})
    void stubDeviceEngineMatchesTheCpuEngine(DType kv, boolean prefix) {
        List<RequestResult> cpu = run(EngineTestSupport.backend(), kv, prefix);
        assertSameOutputs(cpu, run(StubDeviceBackend::new, kv, prefix), "stub device");
    }

    @Test
    void aDeviceErrorFailsOnlyThatStepAndTheEngineGoesOn() {
        StubDeviceBackend dev = new StubDeviceBackend();
        EngineConfig cfg = EngineTestSupport.tiny(4, DType.F32, true, 512).maxBatchTokens(40).build();
        try (Engine e = Engine.start(cfg, () -> dev, EngineTestSupport.weights(), null)) {
            dev.failNextErrorCheck("token id 1000000 at row 0 is outside the vocabulary");
            List<RequestResult> r = e.runConcurrently(EngineTestSupport.greedyRequests(
                    EngineTestSupport.promptFamily(5, 4), MAX_TOKENS));
            // the failed step is retried one sequence at a time: every request still ends with a reason
            for (RequestResult x : r) {
                assertTrue(x.reason() == FinishReason.LENGTH || x.reason() == FinishReason.ERROR, x.toString());
            }
            e.checkInvariants(true);
            List<RequestResult> after = e.runConcurrently(EngineTestSupport.greedyRequests(
                    EngineTestSupport.promptFamily(6, 2), MAX_TOKENS));
            after.forEach(x -> assertEquals(FinishReason.LENGTH, x.reason(), x.error()));
        }
    }

    @ParameterizedTest(name = "{0} cache")
    @CsvSource({"F32", "BF16", "FP8_E4M3"})
    void cudaEngineMatchesTheCpuEngine(DType kv) {
        CudaDevice.backendOrSkip().close(); // skips (or fails under gpu-check) without a device
        List<RequestResult> cpu = run(EngineTestSupport.backend(), kv, true);
        assertSameOutputs(cpu, run(() -> Backends.create("cuda"), kv, true), "cuda");
    }
}
