package io.radixkv.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.radixkv.kernels.DType;
import io.radixkv.kernels.DenseKernels;
import io.radixkv.kernels.KernelBackend;
import io.radixkv.kernels.cpu.CpuBackend;
import io.radixkv.kernels.cpu.CpuDenseKernels;
import io.radixkv.kernels.reference.JavaDenseKernels;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.function.DoubleUnaryOperator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * LlamaModel.forward over mixed batches (prefill from scratch, prefill chunks after cached
 * tokens, decode) against {@link ReferenceLlama} on the tiny preset.
 */
class LlamaModelTest {
    private static final ModelConfig TINY = ModelPresets.tiny();

    private static int[] randomTokens(Random r, int n) {
        int[] t = new int[n];
        for (int i = 0; i < n; i++) {
            t[i] = r.nextInt(TINY.vocab());
        }
        return t;
    }

    /** Max |a - b| over the row, relative to the row's largest |reference| logit. */
    private static double relError(MemorySegment logits, int row, double[] ref) {
        double maxRef = 0;
        double maxErr = 0;
        for (int i = 0; i < ref.length; i++) {
            maxRef = Math.max(maxRef, Math.abs(ref[i]));
            maxErr = Math.max(maxErr, Math.abs(ref[i] - logits.getAtIndex(ValueLayout.JAVA_FLOAT, (long) row * ref.length + i)));
        }
        return maxErr / maxRef;
    }

    private static void checkStep(PagedHarness.Step st, ReferenceLlama ref, double tol, String what) {
        for (int r = 0; r < st.batch().numLogitRows(); r++) {
            PagedHarness.Seq seq = st.rowSeqs().get(r);
            int[] tokens = seq.tokenArray();
            double[] expected = ref.logits(tokens, st.rowPositions()[r])[0];
            double err = relError(st.logits(), r, expected);
            assertTrue(err <= tol, what + ": logit row " + r + " (position " + st.rowPositions()[r] + ") relative error "
                    + err + " > " + tol);
        }
    }

    /**
     * Three steps over three sequences: (1) prefill from scratch, one sequence only partly;
     * (2) mixed: the rest of that prompt after its cached part plus two decodes; (3) pure decode
     * (the decode attention path).
     */
    static void runMixedSteps(ModelWeights w, DenseKernels dense, KernelBackend backend, DType cacheDtype,
                              int pageSize, DoubleUnaryOperator kvRound, double tol) {
        runMixedSteps(w, w, dense, backend, cacheDtype, pageSize, kvRound, tol);
    }

    /** As above, the reference reading {@code refWeights} (the same values, row-major). */
    static void runMixedSteps(ModelWeights w, ModelWeights refWeights, DenseKernels dense, KernelBackend backend,
                              DType cacheDtype, int pageSize, DoubleUnaryOperator kvRound, double tol) {
        ModelConfig c = w.config();
        Random r = new Random(7);
        // a device backend's pools live in its memory; the reference reads the host weights
        ModelWeights hostWeights = refWeights;
        ModelWeights runWeights = backend.deviceMemory() ? w.copyTo(backend.memory()) : w;
        try (PagedHarness hs = new PagedHarness(c, cacheDtype, 64, pageSize, 11,
                backend.deviceMemory() ? backend.memory() : null);
             LlamaModel model = new LlamaModel(c, runWeights, dense, backend, 64)) {
            ReferenceLlama ref = new ReferenceLlama(hostWeights, kvRound);
            List<PagedHarness.Seq> seqs = List.of(new PagedHarness.Seq(), new PagedHarness.Seq(), new PagedHarness.Seq());
            int[] prompt0 = randomTokens(r, 13);
            var s1 = hs.step(seqs, List.of(java.util.Arrays.copyOf(prompt0, 8), randomTokens(r, 9), randomTokens(r, 6)),
                    c.vocab());
            model.forward(s1.batch(), hs.caches, s1.logits());
            checkStep(s1, ref, tol, "prefill");
            var s2 = hs.step(seqs, List.of(java.util.Arrays.copyOfRange(prompt0, 8, 13), randomTokens(r, 1),
                    randomTokens(r, 1)), c.vocab());
            model.forward(s2.batch(), hs.caches, s2.logits());
            checkStep(s2, ref, tol, "mixed");
            var s3 = hs.step(seqs, List.of(randomTokens(r, 1), randomTokens(r, 1), randomTokens(r, 1)), c.vocab());
            model.forward(s3.batch(), hs.caches, s3.logits());
            checkStep(s3, ref, tol, "decode");
        }
    }

    @ParameterizedTest(name = "page size {0}")
    @CsvSource({"1", "4", "16"})
    void forwardMatchesReferenceF32(int pageSize) {
        try (ModelWeights w = ModelWeights.random(TINY, DType.F32, 1);
             KernelBackend backend = new ContiguousTestBackend()) {
            runMixedSteps(w, new CpuDenseKernels(), backend, DType.F32, pageSize, v -> v, 1e-4);
        }
    }

    @Test
    void forwardWithJavaDenseKernelsMatchesReference() {
        try (ModelWeights w = ModelWeights.random(TINY, DType.F32, 2);
             KernelBackend backend = new ContiguousTestBackend()) {
            runMixedSteps(w, new JavaDenseKernels(), backend, DType.F32, 4, v -> v, 1e-4);
        }
    }

    @Test
    void tiedEmbeddings() {
        try (ModelWeights w = ModelWeights.random(TINY.withTiedEmbeddings(true), DType.F32, 3);
             KernelBackend backend = new ContiguousTestBackend()) {
            assertTrue(w.lmHead() == w.embed());
            runMixedSteps(w, new CpuDenseKernels(), backend, DType.F32, 4, v -> v, 1e-4);
        }
    }

    @Test
    void bf16CacheRoundsKv() {
        try (ModelWeights w = ModelWeights.random(TINY, DType.F32, 4);
             KernelBackend backend = new ContiguousTestBackend()) {
            // The reference rounds K (after RoPE) and V to bf16 like the cache does.
            runMixedSteps(w, new CpuDenseKernels(), backend, DType.BF16, 4, ReferenceLlama::bf16Round, 1e-3);
        }
    }

    @Test
    void bf16Weights() {
        try (ModelWeights w = ModelWeights.random(TINY, DType.BF16, 5);
             KernelBackend backend = new ContiguousTestBackend()) {
            // Native bf16 GEMMs with >= 8 rows round activations to bf16: a looser bound.
            runMixedSteps(w, new CpuDenseKernels(), backend, DType.F32, 4, v -> v, 2e-2);
            runMixedSteps(w, new JavaDenseKernels(), backend, DType.F32, 4, v -> v, 1e-4);
        }
    }

    /**
     * bf16, f16 and f32 weights packed for the CPU kernels (where the CPU has the layout) give the reference's
     * logits, and the same logits as the row-major weights up to summation order; the Java kernels,
     * which have no packed layout, refuse them.
     */
    @ParameterizedTest
    @ValueSource(strings = {"bf16", "f16", "f32"})
    void packedWeights(String dtype) {
        DType dt = DType.parse(dtype);
        CpuDenseKernels cpu = new CpuDenseKernels();
        try (ModelWeights plain = ModelWeights.random(TINY, dt, 5);
             ModelWeights packed = ModelWeights.random(TINY, dt, 5);
             KernelBackend backend = new ContiguousTestBackend()) {
            assumeTrue(cpu.packsLinearWeights(dt, TINY.qkvDim(), TINY.hidden()), "no packed " + dtype + " layout here");
            assertTrue(packed.packLinearWeights(cpu));
            assertTrue(packed.layersPacked() && packed.lmHeadPacked());
            assertFalse(packed.packLinearWeights(cpu), "packing twice");
            assertFalse(packed.lmHead().mismatch(plain.lmHead()) == -1, "the LM head was not rearranged");
            runMixedSteps(packed, plain, cpu, backend, DType.F32, 4, v -> v, 2e-2);
            assertEquals(0.0, maxLogitDifference(plain, packed, cpu, backend), 1e-5);
            assertThrows(IllegalArgumentException.class, () -> new LlamaModel(TINY, packed, new JavaDenseKernels(),
                    backend, 64));
        }
        try (ModelWeights tied = ModelWeights.random(TINY.withTiedEmbeddings(true), dt, 6)) {
            assumeTrue(tied.packLinearWeights(cpu));
            assertTrue(tied.layersPacked());
            assertFalse(tied.lmHeadPacked(), "the LM head tied to the embeddings must stay row-major");
        }
    }

    /**
     * Largest |logit difference| / largest |logit| between models on {@code a} and {@code b} over a
     * 23-token prefill (oneDNN past 16 rows) and a 3-sequence decode step (the small-m path).
     */
    private static double maxLogitDifference(ModelWeights a, ModelWeights b, DenseKernels dense, KernelBackend backend) {
        Random r = new Random(9);
        List<int[]> prefill = List.of(randomTokens(r, 8), randomTokens(r, 9), randomTokens(r, 6));
        List<int[]> decode = List.of(randomTokens(r, 1), randomTokens(r, 1), randomTokens(r, 1));
        double worst = 0;
        try (PagedHarness ha = new PagedHarness(TINY, DType.F32, 64, 4, 11);
             PagedHarness hb = new PagedHarness(TINY, DType.F32, 64, 4, 11);
             LlamaModel ma = new LlamaModel(TINY, a, dense, backend, 64);
             LlamaModel mb = new LlamaModel(TINY, b, dense, backend, 64)) {
            List<PagedHarness.Seq> sa = List.of(new PagedHarness.Seq(), new PagedHarness.Seq(), new PagedHarness.Seq());
            List<PagedHarness.Seq> sb = List.of(new PagedHarness.Seq(), new PagedHarness.Seq(), new PagedHarness.Seq());
            for (List<int[]> tokens : List.of(prefill, decode)) {
                var st = ha.step(sa, tokens, TINY.vocab());
                var su = hb.step(sb, tokens, TINY.vocab());
                ma.forward(st.batch(), ha.caches, st.logits());
                mb.forward(su.batch(), hb.caches, su.logits());
                long count = (long) st.batch().numLogitRows() * TINY.vocab();
                double max = 0, diff = 0;
                for (long i = 0; i < count; i++) {
                    float x = st.logits().getAtIndex(ValueLayout.JAVA_FLOAT, i);
                    float y = su.logits().getAtIndex(ValueLayout.JAVA_FLOAT, i);
                    max = Math.max(max, Math.abs(x));
                    diff = Math.max(diff, Math.abs(x - y));
                }
                worst = Math.max(worst, diff / max);
            }
        }
        return worst;
    }

    /** The real CPU kernels (CpuBackend attention + scatter, CpuDenseKernels) against the double-precision reference. */
    @ParameterizedTest(name = "{0} cache, page size {1}")
    @CsvSource({"f32, 16", "f32, 1", "bf16, 4"})
    void forwardWithCpuBackend(String cacheDtype, int pageSize) {
        DType dt = DType.parse(cacheDtype);
        try (ModelWeights w = ModelWeights.random(TINY, DType.F32, 6); CpuBackend backend = new CpuBackend()) {
            runMixedSteps(w, new CpuDenseKernels(), backend, dt, pageSize,
                    dt == DType.BF16 ? ReferenceLlama::bf16Round : v -> v, dt == DType.BF16 ? 1e-3 : 1e-4);
        }
    }

    @Test
    void badTokenIdIsRejectedBeforeAnything() {
        try (ModelWeights w = ModelWeights.random(TINY, DType.F32, 8);
             KernelBackend backend = new ContiguousTestBackend();
             PagedHarness hs = new PagedHarness(TINY, DType.F32, 16, 4, 1);
             LlamaModel model = new LlamaModel(TINY, w, new CpuDenseKernels(), backend, 32)) {
            List<PagedHarness.Seq> seqs = List.of(new PagedHarness.Seq(), new PagedHarness.Seq());
            var st = hs.step(seqs, List.of(new int[] {1, 2, 3}, new int[] {4, 32000}), TINY.vocab());
            byte[] before = hs.poolBytes();
            var e = assertThrows(IllegalArgumentException.class, () -> model.forward(st.batch(), hs.caches, st.logits()));
            assertTrue(e.getMessage().contains("token id 32000"), e.getMessage());
            st.batch().tokenIds().setAtIndex(ValueLayout.JAVA_INT, 4, -3);
            e = assertThrows(IllegalArgumentException.class, () -> model.forward(st.batch(), hs.caches, st.logits()));
            assertTrue(e.getMessage().contains("token id -3"), e.getMessage());
            assertArrayEquals(before, hs.poolBytes(), "a rejected step changed the cache");
            assertTrue(isZero(st.logits()), "a rejected step wrote logits");
        }
    }

    @Test
    void inconsistentBatchesAreRejected() {
        try (ModelWeights w = ModelWeights.random(TINY, DType.F32, 9);
             KernelBackend backend = new ContiguousTestBackend();
             PagedHarness hs = new PagedHarness(TINY, DType.F32, 16, 4, 1);
             LlamaModel model = new LlamaModel(TINY, w, new CpuDenseKernels(), backend, 8)) {
            List<PagedHarness.Seq> seqs = List.of(new PagedHarness.Seq());
            var st = hs.step(seqs, List.of(new int[] {1, 2, 3, 4, 5}), TINY.vocab());
            ForwardBatch b = st.batch();
            byte[] before = hs.poolBytes();
            b.positions().setAtIndex(ValueLayout.JAVA_INT, 2, 7);
            var e = assertThrows(IllegalArgumentException.class, () -> model.forward(b, hs.caches, st.logits()));
            assertTrue(e.getMessage().contains("position 7"), e.getMessage());
            b.positions().setAtIndex(ValueLayout.JAVA_INT, 2, 2);
            long slot = b.slotMapping().getAtIndex(ValueLayout.JAVA_LONG, 3);
            b.slotMapping().setAtIndex(ValueLayout.JAVA_LONG, 3, slot + 1);
            e = assertThrows(IllegalArgumentException.class, () -> model.forward(b, hs.caches, st.logits()));
            assertTrue(e.getMessage().contains("slot " + (slot + 1)), e.getMessage());
            b.slotMapping().setAtIndex(ValueLayout.JAVA_LONG, 3, slot);
            b.logitRows().setAtIndex(ValueLayout.JAVA_INT, 0, 5);
            e = assertThrows(IllegalArgumentException.class, () -> model.forward(b, hs.caches, st.logits()));
            assertTrue(e.getMessage().contains("logit row 5"), e.getMessage());
            b.logitRows().setAtIndex(ValueLayout.JAVA_INT, 0, 4);
            assertThrows(IllegalArgumentException.class, () -> model.forward(b, hs.caches.subList(0, 1), st.logits()));
            assertThrows(IllegalArgumentException.class, () -> model.forward(b, hs.caches, st.logits().asSlice(0, 16)));
            assertArrayEquals(before, hs.poolBytes());
            // Too many tokens for the model's scratch.
            var big = hs.step(List.of(new PagedHarness.Seq()), List.of(new int[9]), TINY.vocab());
            e = assertThrows(IllegalArgumentException.class, () -> model.forward(big.batch(), hs.caches, big.logits()));
            assertTrue(e.getMessage().contains("at most 8"), e.getMessage());
            // After all that, the valid batch still runs.
            model.forward(b, hs.caches, st.logits());
        }
    }

    /** Greedy decoding of the random tiny model depends on the context: not one repeated token. */
    @Test
    void greedyOutputIsNotDegenerate() {
        try (ModelWeights w = ModelWeights.random(TINY, DType.F32, 1234);
             KernelBackend backend = new ContiguousTestBackend();
             PagedHarness hs = new PagedHarness(TINY, DType.F32, 64, 16, 1);
             LlamaModel model = new LlamaModel(TINY, w, new CpuDenseKernels(), backend, 64)) {
            PagedHarness.Seq seq = new PagedHarness.Seq();
            int[] next = randomTokens(new Random(3), 16);
            List<Integer> out = new ArrayList<>();
            for (int i = 0; i < 24; i++) {
                var st = hs.step(List.of(seq), List.of(next), TINY.vocab());
                model.forward(st.batch(), hs.caches, st.logits());
                int tok = Sampler.sample(st.logits(), 0, TINY.vocab(), SamplingParams.greedy(24), i);
                out.add(tok);
                next = new int[] {tok};
            }
            Set<Integer> distinct = new HashSet<>(out);
            assertTrue(distinct.size() >= 6, "greedy output " + out);
        }
    }

    @Test
    void constructorChecks() {
        try (ModelWeights w = ModelWeights.random(TINY, DType.F32, 1);
             KernelBackend backend = new ContiguousTestBackend()) {
            assertThrows(IllegalArgumentException.class,
                    () -> new LlamaModel(TINY.withTiedEmbeddings(true), w, new CpuDenseKernels(), backend));
            assertThrows(IllegalArgumentException.class, () -> new LlamaModel(TINY, w, new CpuDenseKernels(), backend, 0));
            try (LlamaModel m = new LlamaModel(TINY, w, new CpuDenseKernels(), backend)) {
                assertEquals(LlamaModel.DEFAULT_MAX_TOKENS_PER_STEP, m.maxTokensPerStep());
            }
        }
    }

    private static boolean isZero(MemorySegment s) {
        for (long i = 0; i < s.byteSize(); i++) {
            if (s.get(ValueLayout.JAVA_BYTE, i) != 0) {
                return false;
            }
        }
        return true;
    }
}
