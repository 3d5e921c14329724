package io.radixkv.engine;

import static io.radixkv.engine.EngineTestSupport.randomTokens;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.radixkv.kernels.AttentionKernels;
import io.radixkv.kernels.BackendMemory;
import io.radixkv.kernels.DType;
import io.radixkv.kernels.DenseKernels;
import io.radixkv.kernels.KernelBackend;
import io.radixkv.kernels.KvCacheKernels;
import io.radixkv.kernels.SamplingKernels;
import io.radixkv.kernels.cpu.CpuBackend;
import io.radixkv.kernels.cpu.CpuSampling;
import io.radixkv.model.ModelPresets;
import io.radixkv.model.SamplingParams;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Sampled requests through the engine: a step with a sampled row samples all its rows at once
 * (TokenStreamer.sampleRows), greedy rows as the argmax. Greedy requests batched with sampled ones
 * keep their reference tokens; a seed gives the same tokens in another engine run, other seeds
 * other tokens.
 */
class EngineSamplingTest {
    private static final int TOKENS = 12;

    @Test
    void sampledRowsBesideGreedyRows() {
        SplittableRandom rnd = new SplittableRandom(12);
        List<int[]> prompts = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            prompts.add(randomTokens(rnd, 10 + i));
        }
        List<int[]> greedyRef = EngineTestSupport.reference(prompts.subList(0, 2), TOKENS, 4, DType.F32);
        List<RequestResult> first = run(prompts, 100);
        List<RequestResult> again = run(prompts, 100);
        List<RequestResult> otherSeeds = run(prompts, 200);
        int vocab = ModelPresets.tiny().vocab();
        boolean anyDiffers = false;
        for (int i = 0; i < prompts.size(); i++) {
            RequestResult r = first.get(i);
            assertTrue(r.ok(), r.toString());
            assertEquals(TOKENS, r.outputTokens().length, r.toString());
            for (int t : r.outputTokens()) {
                assertTrue(t >= 0 && t < vocab, "token " + t);
            }
            if (i < 2) {
                assertArrayEquals(greedyRef.get(i), r.outputTokens(), "greedy request " + i + " beside sampled ones");
                assertArrayEquals(r.outputTokens(), otherSeeds.get(i).outputTokens(), "greedy request " + i);
            } else {
                assertArrayEquals(r.outputTokens(), again.get(i).outputTokens(), "request " + i + ": same seed");
                anyDiffers |= !Arrays.equals(r.outputTokens(), otherSeeds.get(i).outputTokens());
            }
        }
        assertTrue(anyDiffers, "other seeds drew the same tokens for every sampled request");
        assertFalse(Arrays.equals(first.get(2).outputTokens(), EngineTestSupport
                .reference(List.of(prompts.get(2)), TOKENS, 4, DType.F32).get(0)), "a sampled request drew the argmax");
    }

    /** Sampled rows go through the backend's sampling kernels where it has them. */
    @Test
    void theBackendsSamplerSamplesTheRows() {
        AtomicInteger calls = new AtomicInteger();
        SamplingKernels libradixkv = CpuSampling.instance();
        SamplingKernels counting = (logits, vocab, rows) -> {
            calls.incrementAndGet();
            return libradixkv.sampleRows(logits, vocab, rows);
        };
        EngineConfig cfg = EngineTestSupport.tiny(4, DType.F32, true, 512).build();
        try (Engine e = Engine.start(cfg, () -> new SamplingOverride(new CpuBackend(), counting),
                EngineTestSupport.weights(), null)) {
            RequestResult r = e.runToCompletion(List.of(new GenerateRequest("s", randomTokens(new SplittableRandom(3), 10),
                    new SamplingParams(TOKENS, 1f, 1f, 7, List.of())))).get(0);
            assertTrue(r.ok(), r.toString());
        }
        assertTrue(calls.get() >= TOKENS - 1, calls.get() + " calls of the backend's sampler for " + TOKENS + " tokens");
    }

    /** A backend with another sampler. */
    private record SamplingOverride(KernelBackend inner, SamplingKernels sampler) implements KernelBackend {
        @Override
        public String name() {
            return inner.name();
        }

        @Override
        public KvCacheKernels kv() {
            return inner.kv();
        }

        @Override
        public AttentionKernels attention() {
            return inner.attention();
        }

        @Override
        public DenseKernels dense() {
            return inner.dense();
        }

        @Override
        public Optional<SamplingKernels> sampling() {
            return Optional.of(sampler);
        }

        @Override
        public BackendMemory memory() {
            return inner.memory();
        }

        @Override
        public void close() {
            inner.close();
        }
    }

    /** Requests 0, 1 greedy; 2..5 sampled (temperature 1 / 1.5, top-p 0.9 / 1) with seeds from seedBase. */
    private static List<RequestResult> run(List<int[]> prompts, long seedBase) {
        List<GenerateRequest> requests = new ArrayList<>();
        for (int i = 0; i < prompts.size(); i++) {
            SamplingParams p = i < 2 ? SamplingParams.greedy(TOKENS)
                    : new SamplingParams(TOKENS, i % 2 == 0 ? 1f : 1.5f, i < 4 ? 0.9f : 1f, seedBase + i, List.of());
            requests.add(new GenerateRequest("r" + i, prompts.get(i), p));
        }
        try (Engine e = EngineTestSupport.start(EngineTestSupport.tiny(4, DType.F32, true, 512).build())) {
            return e.runConcurrently(requests);
        }
    }
}
