package io.radixkv.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.radixkv.kernels.DType;
import io.radixkv.kernels.DenseKernels;
import io.radixkv.kernels.KernelBackend;
import io.radixkv.kernels.NativeException;
import io.radixkv.kernels.cpu.CpuBackend;
import io.radixkv.kernels.cuda.CudaDevice;
import io.radixkv.kernels.select.Backends;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The model on a device-memory backend. Without a GPU: {@link StubDeviceBackend} (the CPU
 * kernels behind memory that claims to be a device) must give the host model's logits bit for
 * bit while the step plans attention once, runs it per layer, uploads the inputs
 * asynchronously and synchronizes once (the logits copy), then checks device errors. With a
 * GPU ({@code scripts/gpu-check}, {@code -Dradixkv.requireCuda=true}): the CUDA backend against
 * the double-precision reference, as the CPU backend is in {@link LlamaModelTest}.
 */
class ModelOnDeviceTest {
    private static final ModelConfig TINY = ModelPresets.tiny();

    private static List<int[]> tokens(Random r, int... lengths) {
        return Arrays.stream(lengths).mapToObj(n -> r.ints(n, 0, TINY.vocab()).toArray()).toList();
    }

    @Test
    void stubDeviceGivesTheHostLogitsAndPlansOncePerStep() {
        try (ModelWeights w = ModelWeights.random(TINY, DType.F32, 21);
             CpuBackend cpu = new CpuBackend();
             StubDeviceBackend dev = new StubDeviceBackend()) {
            ModelWeights wd = w.copyTo(dev.memory());
            assertTrue(wd.onDevice());
            try (PagedHarness hostHarness = new PagedHarness(TINY, DType.BF16, 64, 4, 11);
                 PagedHarness devHarness = new PagedHarness(TINY, DType.BF16, 64, 4, 11, dev.memory());
                 LlamaModel host = new LlamaModel(TINY, w, cpu.dense(), cpu, 64);
                 LlamaModel device = new LlamaModel(TINY, wd, dev.dense(), dev, 64)) {
                List<PagedHarness.Seq> hs = List.of(new PagedHarness.Seq(), new PagedHarness.Seq(), new PagedHarness.Seq());
                List<PagedHarness.Seq> ds = List.of(new PagedHarness.Seq(), new PagedHarness.Seq(), new PagedHarness.Seq());
                Random r = new Random(5);
                // prefill (one sequence partly), mixed (a prompt's rest + two decodes), pure decode
                for (List<int[]> step : List.of(tokens(r, 8, 9, 6), tokens(r, 5, 1, 1), tokens(r, 1, 1, 1))) {
                    var a = hostHarness.step(hs, step, TINY.vocab());
                    var b = devHarness.step(ds, step, TINY.vocab());
                    host.forward(a.batch(), hostHarness.caches, a.logits());
                    dev.log.clear();
                    device.forward(b.batch(), devHarness.caches, b.logits());
                    assertArrayEquals(a.logits().toArray(ValueLayout.JAVA_FLOAT), b.logits().toArray(ValueLayout.JAVA_FLOAT),
                            "device-path logits differ from the host model's");
                    assertEquals(1, dev.count("plan"), dev.log::toString);
                    assertEquals(TINY.layers(), dev.count("run"), dev.log::toString);
                    assertEquals(3, dev.count("upload"), "token ids, positions, slot mapping: " + dev.log);
                    assertEquals(0, dev.count("copyFromHost"), "no synchronous upload inside a step: " + dev.log);
                    assertEquals(1, dev.count("download") + dev.count("sync"), "one synchronization per step: " + dev.log);
                    assertEquals(1, dev.count("check-errors"), dev.log::toString);
                    assertTrue(dev.log.indexOf("plan") < dev.log.indexOf("run"), dev.log::toString);
                    assertTrue(dev.log.lastIndexOf("run") < dev.log.indexOf(dev.log.stream().filter(e -> e.startsWith("download")).findFirst().orElseThrow()), dev.log::toString);
                    assertEquals("check-errors", dev.log.getLast(), "errors are read after the step's sync: " + dev.log);
                }
            }
        }
    }

    @Test
    void aGreedyStepCopiesOnlyTheArgmaxBack() {
        try (ModelWeights w = ModelWeights.random(TINY, DType.F32, 25);
             CpuBackend cpu = new CpuBackend();
             StubDeviceBackend dev = new StubDeviceBackend()) {
            ModelWeights wd = w.copyTo(dev.memory());
            try (PagedHarness hh = new PagedHarness(TINY, DType.F32, 32, 4, 9);
                 PagedHarness dh = new PagedHarness(TINY, DType.F32, 32, 4, 9, dev.memory());
                 LlamaModel host = new LlamaModel(TINY, w, cpu.dense(), cpu, 32);
                 LlamaModel device = new LlamaModel(TINY, wd, dev.dense(), dev, 32);
                 java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
                List<int[]> step = tokens(new Random(3), 7, 5, 9);
                var a = hh.step(List.of(new PagedHarness.Seq(), new PagedHarness.Seq(), new PagedHarness.Seq()), step,
                        TINY.vocab());
                var b = dh.step(List.of(new PagedHarness.Seq(), new PagedHarness.Seq(), new PagedHarness.Seq()), step,
                        TINY.vocab());
                host.forward(a.batch(), hh.caches, a.logits());
                var ids = arena.allocate(4L * 3);
                long before = dev.downloadedBytes();
                device.forward(b.batch(), dh.caches, new StepOutput(b.logits(), ids, false));
                assertEquals(4L * 3, dev.downloadedBytes() - before, "only the three argmax ids come back");
                float[] all = a.logits().toArray(ValueLayout.JAVA_FLOAT);
                for (int r = 0; r < 3; r++) {
                    float[] row = Arrays.copyOfRange(all, r * TINY.vocab(), (r + 1) * TINY.vocab());
                    assertEquals(Sampler.argmax(row), ids.getAtIndex(ValueLayout.JAVA_INT, r), "row " + r);
                }
            }
        }
    }

    @Test
    void aDeviceErrorFailsTheStep() {
        try (ModelWeights w = ModelWeights.random(TINY, DType.F32, 22);
             StubDeviceBackend dev = new StubDeviceBackend()) {
            ModelWeights wd = w.copyTo(dev.memory());
            try (PagedHarness h = new PagedHarness(TINY, DType.F32, 16, 4, 3, dev.memory());
                 LlamaModel m = new LlamaModel(TINY, wd, dev.dense(), dev, 16)) {
                var s = h.step(List.of(new PagedHarness.Seq()), List.of(new int[] {1, 2, 3}), TINY.vocab());
                dev.failNextErrorCheck("slot 99999 at row 2 is outside the pool");
                NativeException e = assertThrows(NativeException.class, () -> m.forward(s.batch(), h.caches, s.logits()));
                assertTrue(e.getMessage().contains("slot 99999 at row 2"), e.getMessage());
            }
        }
    }

    @Test
    void weightsMustLiveWhereTheBackendComputes() {
        try (ModelWeights w = ModelWeights.random(TINY, DType.F32, 23);
             CpuBackend cpu = new CpuBackend();
             StubDeviceBackend dev = new StubDeviceBackend()) {
            IllegalArgumentException a = assertThrows(IllegalArgumentException.class,
                    () -> new LlamaModel(TINY, w, dev.dense(), dev, 8));
            assertTrue(a.getMessage().contains("device memory but the weights are in host memory"), a.getMessage());
            ModelWeights wd = w.copyTo(dev.memory());
            assertThrows(IllegalArgumentException.class, () -> new LlamaModel(TINY, wd, cpu.dense(), cpu, 8));
        }
    }

    @Test
    void weightsTheDenseKernelsCannotMultiplyAreRefusedBeforeAnything() {
        try (ModelWeights w = ModelWeights.random(TINY, DType.F16, 26); CpuBackend cpu = new CpuBackend()) {
            // dense kernels that take f32 and bf16 only, as the CUDA ones do
            DenseKernels bf16Only = (DenseKernels) java.lang.reflect.Proxy.newProxyInstance(
                    DenseKernels.class.getClassLoader(), new Class<?>[] {DenseKernels.class},
                    (proxy, m, a) -> m.getName().equals("weightDtypes")
                            ? java.util.EnumSet.of(DType.F32, DType.BF16) : m.invoke(cpu.dense(), a));
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> new LlamaModel(TINY, w, bf16Only, cpu, 8));
            assertTrue(e.getMessage().contains("not f16"), e.getMessage());
        }
    }

    private static KernelBackend cudaOrSkip() {
        return CudaDevice.backendOrSkip();
    }

    /** Decode steps replayed from CUDA graphs give the eagerly issued steps' logits bit for bit. */
    @Test
    void cudaGraphReplaysGiveTheEagerLogits() {
        try (KernelBackend cuda = cudaOrSkip(); ModelWeights w = ModelWeights.random(TINY, DType.BF16, 27)) {
            ModelWeights wd = w.copyTo(cuda.memory());
            String before = System.getProperty("radixkv.cudaGraphs");
            LlamaModel eager;
            System.setProperty("radixkv.cudaGraphs", "false");
            try {
                eager = new LlamaModel(TINY, wd, cuda.dense(), cuda, 64);
            } finally {
                if (before == null) {
                    System.clearProperty("radixkv.cudaGraphs");
                } else {
                    System.setProperty("radixkv.cudaGraphs", before);
                }
            }
            try (eager;
                 LlamaModel graphed = new LlamaModel(TINY, wd, cuda.dense(), cuda, 64);
                 PagedHarness he = new PagedHarness(TINY, DType.BF16, 64, 4, 13, cuda.memory());
                 PagedHarness hg = new PagedHarness(TINY, DType.BF16, 64, 4, 13, cuda.memory())) {
                List<PagedHarness.Seq> se = List.of(new PagedHarness.Seq(), new PagedHarness.Seq());
                List<PagedHarness.Seq> sg = List.of(new PagedHarness.Seq(), new PagedHarness.Seq());
                Random r = new Random(8);
                for (int step = 0; step < 14; step++) {
                    List<int[]> toks = step == 0 ? tokens(r, 20, 9) : tokens(r, 1, 1);
                    var a = he.step(se, toks, TINY.vocab());
                    var b = hg.step(sg, toks, TINY.vocab());
                    eager.forward(a.batch(), he.caches, a.logits());
                    graphed.forward(b.batch(), hg.caches, b.logits());
                    assertArrayEquals(a.logits().toArray(ValueLayout.JAVA_FLOAT), b.logits().toArray(ValueLayout.JAVA_FLOAT),
                            "step " + step);
                }
                long[] counts = graphed.graphCounts();
                assertTrue(counts[0] >= 1 && counts[1] >= 8, "captures " + counts[0] + ", replays " + counts[1]);
                assertEquals(0, eager.graphCounts()[0]);
            }
        }
    }

    /** The CUDA backend end to end (dense, scatter, planned attention) against the double-precision reference. */
    @ParameterizedTest(name = "{0} weights, {1} cache, page size {2}")
    @CsvSource({"f32, f32, 16", "f32, f32, 1", "f32, bf16, 4", "bf16, bf16, 16"})
    void cudaMatchesTheReference(String weights, String cache, int pageSize) {
        DType wt = DType.parse(weights);
        DType ct = DType.parse(cache);
        try (KernelBackend cuda = cudaOrSkip(); ModelWeights w = ModelWeights.random(TINY, wt, 24)) {
            // bf16 GEMMs round activations to bf16 on the GPU at every row count
            double tol = wt == DType.BF16 ? 2e-2 : ct == DType.F32 ? 1e-4 : 1e-3;
            LlamaModelTest.runMixedSteps(w, cuda.dense(), cuda, ct, pageSize,
                    ct == DType.BF16 ? ReferenceLlama::bf16Round : v -> v, tol);
        }
    }
}
