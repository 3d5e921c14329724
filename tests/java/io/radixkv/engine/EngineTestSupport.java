package io.radixkv.engine;

import io.radixkv.kernels.DType;
import io.radixkv.kernels.KernelBackend;
import io.radixkv.kernels.cpu.CpuBackend;
import io.radixkv.kernels.reference.JavaReferenceBackend;
import io.radixkv.kernels.select.Backends;
import io.radixkv.model.ModelPresets;
import io.radixkv.model.ModelWeights;
import io.radixkv.model.SamplingParams;
import io.radixkv.model.StubDeviceBackend;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.Supplier;

/** Shared helpers for the engine tests: tiny-model engines and prompt families with shared prefixes. */
final class EngineTestSupport {
    private EngineTestSupport() {}

    /**
     * Kernels the engine tests run on, chosen with -Dradixkv.test.kernels: "cpu" (default, the
     * project's CpuBackend) or "java" (JavaReferenceBackend, the plain-Java reference kernels,
     * as a cross-check of the native path), "cuda" (scripts/gpu-check: every engine test on the
     * GPU) or "stub-device" (the CPU kernels behind memory posing as a device: the engine's
     * device path without a GPU).
     */
    static Supplier<KernelBackend> backend() {
        String k = System.getProperty("radixkv.test.kernels", "cpu");
        return switch (k) {
            case "cpu" -> CpuBackend::new;
            case "java" -> JavaReferenceBackend::new;
            case "cuda" -> () -> Backends.create("cuda");
            case "stub-device" -> StubDeviceBackend::new;
            default -> throw new IllegalArgumentException("radixkv.test.kernels must be cpu, java, cuda or stub-device, got "
                    + k);
        };
    }

    static EngineConfig.Builder tiny(int pageSize, DType kvDtype, boolean prefixCache, int numPages) {
        return EngineConfig.builder().model("tiny").weightsSeed(7).kvDtype(kvDtype).pageSize(pageSize)
                .numPages(numPages).prefixCache(prefixCache).maxBatchTokens(64).maxRunning(8).backend("cpu");
    }

    private static ModelWeights weights;

    /** The tiny preset's weights (seed 7), made once and shared by every test engine. */
    static synchronized ModelWeights weights() {
        if (weights == null) {
            weights = ModelWeights.random(ModelPresets.tiny(), DType.F32, 7);
        }
        return weights;
    }

    static Engine start(EngineConfig cfg) {
        return Engine.start(cfg, backend(), weights(), null);
    }

    static Engine start(EngineConfig cfg, java.util.function.UnaryOperator<ModelRunner.Forward> wrapper) {
        return Engine.start(cfg, backend(), weights(), wrapper);
    }

    /** Greedy outputs of {@code prompts} from a cold engine with the prefix cache off and a large pool. */
    static List<int[]> reference(List<int[]> prompts, int maxTokens, int pageSize, DType dtype) {
        try (Engine e = start(tiny(pageSize, dtype, false, 4096).build())) {
            List<int[]> out = new ArrayList<>();
            for (RequestResult r : e.runConcurrently(greedyRequests(prompts, maxTokens))) {
                if (!r.ok()) {
                    throw new AssertionError("reference run failed: " + r);
                }
                out.add(r.outputTokens());
            }
            return out;
        }
    }

    static int[] randomTokens(SplittableRandom rnd, int n) {
        int[] t = new int[n];
        for (int i = 0; i < n; i++) {
            t[i] = 1 + rnd.nextInt(31_999);
        }
        return t;
    }

    static int[] concat(int[] a, int[] b) {
        int[] r = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, r, a.length, b.length);
        return r;
    }

    /**
     * Prompts sharing prefixes at several depths: a common system prefix, sub-families that
     * extend it, exact repeats (full hits), prompts that are prefixes of others, and unrelated
     * ones (misses).
     */
    static List<int[]> promptFamily(long seed, int count) {
        SplittableRandom rnd = new SplittableRandom(seed);
        int[] system = randomTokens(rnd, 37);
        int[] branchA = concat(system, randomTokens(rnd, 21));
        int[] branchB = concat(system, randomTokens(rnd, 9));
        List<int[]> out = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            int[] p = switch (i % 6) {
                case 0 -> concat(system, randomTokens(rnd, 5 + rnd.nextInt(20)));
                case 1 -> concat(branchA, randomTokens(rnd, 1 + rnd.nextInt(12)));
                case 2 -> concat(branchB, randomTokens(rnd, 3 + rnd.nextInt(30)));
                case 3 -> out.isEmpty() ? system.clone() : out.get(rnd.nextInt(out.size())).clone(); // repeat
                case 4 -> java.util.Arrays.copyOf(branchA, 17 + rnd.nextInt(branchA.length - 17)); // prefix of one
                default -> randomTokens(rnd, 4 + rnd.nextInt(40)); // unrelated
            };
            out.add(p);
        }
        return out;
    }

    static List<GenerateRequest> greedyRequests(List<int[]> prompts, int maxTokens) {
        List<GenerateRequest> out = new ArrayList<>();
        for (int i = 0; i < prompts.size(); i++) {
            out.add(new GenerateRequest("r" + i, prompts.get(i), SamplingParams.greedy(maxTokens)));
        }
        return out;
    }
}
