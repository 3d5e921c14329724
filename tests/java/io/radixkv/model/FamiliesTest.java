package io.radixkv.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.radixkv.engine.Engine;
import io.radixkv.engine.EngineConfig;
import io.radixkv.engine.GenerateRequest;
import io.radixkv.engine.RequestResult;
import io.radixkv.kernels.DType;
import io.radixkv.kernels.DenseKernels;
import io.radixkv.kernels.cpu.CpuBackend;
import io.radixkv.kernels.cpu.CpuDenseKernels;
import io.radixkv.kernels.reference.JavaDenseKernels;
import io.radixkv.model.FamilyFixtures.Fixture;
import io.radixkv.model.ReferenceDecoder.Spec;
import io.radixkv.sched.FinishReason;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every family, from a checkpoint directory in transformers' layout through the loader and the
 * one decoder, against the independent double-precision {@link ReferenceDecoder}: logits of
 * prefill chunks, mixed steps and decodes (prompts longer than the sliding windows) within 1e-4
 * relative; greedy tokens through the engine equal with the prefix cache on and off.
 */
class FamiliesTest {
    private static final double TOL = 1e-4;

    @TempDir
    Path tmp;

    static List<Fixture> fixtures() {
        return List.of(FamilyFixtures.llama32(), FamilyFixtures.llama32v5(), FamilyFixtures.qwen25(),
                FamilyFixtures.qwen3(), FamilyFixtures.mistral(), FamilyFixtures.mistralNoWindow(),
                FamilyFixtures.gemma3(DType.F32), FamilyFixtures.gemma3LayerTypesV5());
    }

    static Stream<Arguments> fixturesAndFiles() {
        List<Arguments> out = new ArrayList<>();
        int i = 0;
        for (Fixture f : fixtures()) {
            out.add(Arguments.of(f.name(), i % 2 == 0 ? "F32" : "BF16", i % 3 == 0));
            i++;
        }
        return out.stream();
    }

    private static Fixture fixture(String name) {
        return fixtures().stream().filter(f -> f.name().equals(name)).findFirst().orElseThrow();
    }

    /** Max |a - b| over the row relative to the row's largest |reference| value. */
    private static double relError(double[] ref, MemorySegment logits, int row) {
        double maxRef = 0;
        double maxErr = 0;
        for (int i = 0; i < ref.length; i++) {
            maxRef = Math.max(maxRef, Math.abs(ref[i]));
            maxErr = Math.max(maxErr, Math.abs(ref[i] - logits.getAtIndex(ValueLayout.JAVA_FLOAT, (long) row * ref.length + i)));
        }
        return maxErr / maxRef;
    }

    private static double relError(double[] ref, double[] other) {
        double maxRef = 0;
        double maxErr = 0;
        for (int i = 0; i < ref.length; i++) {
            maxRef = Math.max(maxRef, Math.abs(ref[i]));
            maxErr = Math.max(maxErr, Math.abs(ref[i] - other[i]));
        }
        return maxErr / maxRef;
    }

    private static int[] tokens(Random r, int n) {
        int[] t = new int[n];
        for (int i = 0; i < n; i++) {
            t[i] = r.nextInt(FamilyFixtures.VOCAB);
        }
        return t;
    }

    /**
     * Four steps over three sequences: prefill chunks (one prompt in two chunks, 21 tokens in
     * all: past every window), a mixed step, two decode steps; every logit row checked.
     */
    private static void runAgainstReference(ModelWeights w, DenseKernels dense, ReferenceDecoder ref, String what) {
        ModelConfig c = w.config();
        Random r = new Random(5);
        try (CpuBackend backend = new CpuBackend();
             PagedHarness hs = new PagedHarness(c, DType.F32, 64, 4, 3);
             LlamaModel model = new LlamaModel(c, w, dense, backend, 64)) {
            List<PagedHarness.Seq> seqs = List.of(new PagedHarness.Seq(), new PagedHarness.Seq(), new PagedHarness.Seq());
            List<List<int[]>> steps = List.of(
                    List.of(tokens(r, 13), tokens(r, 9), tokens(r, 5)),
                    List.of(tokens(r, 8), tokens(r, 1), tokens(r, 11)),
                    List.of(tokens(r, 1), tokens(r, 1), tokens(r, 1)),
                    List.of(tokens(r, 1), tokens(r, 1), tokens(r, 1)));
            for (int s = 0; s < steps.size(); s++) {
                var st = hs.step(seqs, steps.get(s), c.vocab());
                model.forward(st.batch(), hs.caches, st.logits());
                for (int row = 0; row < st.batch().numLogitRows(); row++) {
                    int pos = st.rowPositions()[row];
                    double[] expected = ref.logits(st.rowSeqs().get(row).tokenArray(), pos)[0];
                    double err = relError(expected, st.logits(), row);
                    assertTrue(err <= TOL, what + ": step " + s + " row " + row + " (position " + pos
                            + ") relative error " + err);
                }
            }
        }
    }

    @ParameterizedTest(name = "{0}, {1} file, sharded {2}")
    @MethodSource("fixturesAndFiles")
    void checkpointMatchesReference(String name, String fileDtype, boolean sharded) throws IOException {
        Fixture f = fixture(name);
        var tensors = FamilyFixtures.tensors(f.spec(), name.hashCode());
        Path dir = tmp.resolve(name);
        FamilyFixtures.write(dir, f, tensors, fileDtype, sharded);
        ReferenceDecoder ref = new ReferenceDecoder(f.spec(), FamilyFixtures.values(tensors));
        try (ModelWeights w = ModelWeights.load(dir, DType.F32)) {
            runAgainstReference(w, new CpuDenseKernels(), ref, name);
        }
    }

    /**
     * bf16 weights: Gemma's embedding scale is sqrt(hidden) rounded to bf16 (8.485 → 8.5). The
     * Java dense kernels keep activations f32, so 1e-4 still holds; the reference with the
     * unrounded scale is far off (the check can tell the two apart).
     */
    @Test
    void gemmaBf16WeightsRoundTheEmbeddingScale() throws IOException {
        Fixture f = FamilyFixtures.gemma3(DType.BF16);
        var tensors = FamilyFixtures.tensors(f.spec(), 77);
        Path dir = tmp.resolve("gemma-bf16");
        FamilyFixtures.write(dir, f, tensors, "BF16", false);
        Map<String, float[]> values = FamilyFixtures.values(tensors);
        ReferenceDecoder ref = new ReferenceDecoder(f.spec(), values);
        try (ModelWeights w = ModelWeights.load(dir, DType.BF16)) {
            assertEquals(DType.BF16, w.dtype());
            runAgainstReference(w, new JavaDenseKernels(), ref, "gemma3 bf16 weights");
        }
        Spec unrounded = with(f.spec(), s -> new Spec(s.hidden(), s.inter(), s.layers(), s.heads(), s.kvHeads(),
                s.headDim(), s.vocab(), s.eps(), s.normOffset(), s.qkvBias(), s.qkNorm(), s.sandwich(), s.gelu(),
                Math.sqrt(72), s.attnScale(), s.finalCap(), s.window(), s.invFreq(), s.tied()));
        assertDiscriminates(f.spec(), unrounded, values, "embedding scale rounding");
    }

    private static Spec with(Spec s, UnaryOperator<Spec> f) {
        return f.apply(s);
    }

    /** The reference with one rule broken differs by far more than the tolerance over a 22-token prompt. */
    private static void assertDiscriminates(Spec good, Spec broken, Map<String, float[]> values, String rule) {
        int[] prompt = tokens(new Random(9), 22);
        double[] a = new ReferenceDecoder(good, values).logits(prompt, 21)[0];
        double[] b = new ReferenceDecoder(broken, values).logits(prompt, 21)[0];
        double err = relError(a, b);
        assertTrue(err > 20 * TOL, rule + ": breaking it changes the logits by only " + err);
    }

    /**
     * Each rule matters for the fixtures above: breaking it in the reference moves the logits
     * far past the tolerance, so the comparison with the decoder would catch the decoder
     * breaking it (checked by hand, see the branch's report, for the decoder itself).
     */
    @Test
    void everyRuleIsVisibleInTheLogits() {
        Spec gem = FamilyFixtures.gemma3(DType.F32).spec();
        Map<String, float[]> gv = FamilyFixtures.values(FamilyFixtures.tensors(gem, 3));
        assertDiscriminates(gem, copy(gem, 0, gem.qkNorm(), gem.sandwich(), gem.window(), gem.invFreq(),
                gem.finalCap(), gem.qkvBias()), gv, "Gemma x.(1+w)");
        assertDiscriminates(gem, copy(gem, 1, false, gem.sandwich(), gem.window(), gem.invFreq(), gem.finalCap(),
                gem.qkvBias()), gv, "q/k norm");
        assertDiscriminates(gem, copy(gem, 1, gem.qkNorm(), false, gem.window(), gem.invFreq(), gem.finalCap(),
                gem.qkvBias()), gv, "sandwich norms");
        assertDiscriminates(gem, copy(gem, 1, gem.qkNorm(), gem.sandwich(), new int[4], gem.invFreq(), gem.finalCap(),
                gem.qkvBias()), gv, "Gemma sliding windows");
        double[][] allLocal = new double[4][];
        Arrays.fill(allLocal, gem.invFreq()[0]);
        assertDiscriminates(gem, copy(gem, 1, gem.qkNorm(), gem.sandwich(), gem.window(), allLocal, gem.finalCap(),
                gem.qkvBias()), gv, "Gemma per-layer rope");
        assertDiscriminates(gem, copy(gem, 1, gem.qkNorm(), gem.sandwich(), gem.window(), gem.invFreq(), 0,
                gem.qkvBias()), gv, "final soft cap");

        Spec ll = FamilyFixtures.llama32().spec();
        Map<String, float[]> lv = FamilyFixtures.values(FamilyFixtures.tensors(ll, 4));
        double[][] plain = new double[2][];
        Arrays.fill(plain, FamilyFixtures.plain(10000, 16));
        assertDiscriminates(ll, copy(ll, 0, false, false, ll.window(), plain, 0, false), lv, "llama3 bands");

        Spec qw = FamilyFixtures.qwen25().spec();
        Map<String, float[]> qv = FamilyFixtures.values(FamilyFixtures.tensors(qw, 5));
        assertDiscriminates(qw, copy(qw, 0, false, false, new int[] {8, 8}, qw.invFreq(), 0, true), qv,
                "Qwen2 ignores sliding_window");
        assertDiscriminates(qw, copy(qw, 0, false, false, qw.window(), qw.invFreq(), 0, false), qv, "Qwen2 biases");

        Spec q3 = FamilyFixtures.qwen3().spec();
        Map<String, float[]> q3v = FamilyFixtures.values(FamilyFixtures.tensors(q3, 6));
        assertDiscriminates(q3, copy(q3, 0, false, false, q3.window(), q3.invFreq(), 0, false), q3v, "Qwen3 q/k norm");

        Spec mi = FamilyFixtures.mistral().spec();
        Map<String, float[]> mv = FamilyFixtures.values(FamilyFixtures.tensors(mi, 7));
        assertDiscriminates(mi, copy(mi, 0, false, false, new int[2], mi.invFreq(), 0, false), mv, "Mistral window");
    }

    private static Spec copy(Spec s, double normOffset, boolean qkNorm, boolean sandwich, int[] window,
                             double[][] invFreq, double finalCap, boolean qkvBias) {
        return new Spec(s.hidden(), s.inter(), s.layers(), s.heads(), s.kvHeads(), s.headDim(), s.vocab(), s.eps(),
                normOffset, qkvBias, qkNorm, sandwich, s.gelu(), s.embedScale(), s.attnScale(), finalCap, window, invFreq,
                s.tied());
    }

    /** Greedy generation through the engine from the checkpoint directory: same tokens with the prefix cache on and off. */
    @ParameterizedTest(name = "{0}")
    @MethodSource("engineFixtures")
    void engineGreedyTokensEqualWithPrefixCacheOnAndOff(String name) throws IOException {
        Fixture f = fixture(name);
        var tensors = FamilyFixtures.tensors(f.spec(), 11);
        Path dir = tmp.resolve(name);
        FamilyFixtures.write(dir, f, tensors, "BF16", false);
        Random r = new Random(13);
        int[] shared = tokens(r, 14);
        List<int[]> prompts = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            int[] p = Arrays.copyOf(shared, 14 + 3 + i);
            System.arraycopy(tokens(r, 3 + i), 0, p, 14, 3 + i);
            prompts.add(p);
        }
        List<int[]> off = generate(dir, prompts, false);
        List<int[]> on = generate(dir, prompts, true);
        ReferenceDecoder ref = new ReferenceDecoder(f.spec(), FamilyFixtures.values(tensors));
        for (int i = 0; i < prompts.size(); i++) {
            assertArrayEquals(off.get(i), on.get(i), name + ": prompt " + i + " differs with the prefix cache on");
            // The first greedy token is the reference's argmax (unless the top two are within the tolerance).
            double[] lg = ref.logits(prompts.get(i), prompts.get(i).length - 1)[0];
            int best = 0;
            for (int j = 1; j < lg.length; j++) {
                best = lg[j] > lg[best] ? j : best;
            }
            int first = off.get(i)[0];
            assertTrue(first == best || Math.abs(lg[first] - lg[best]) <= TOL * Math.abs(lg[best]),
                    name + ": prompt " + i + " first token " + first + " but the reference's argmax is " + best);
        }
    }

    static Stream<String> engineFixtures() {
        return Stream.of("llama3.2", "qwen2.5", "qwen3", "mistral", "gemma3-f32", "gemma3-270m-v5");
    }

    private static List<int[]> generate(Path dir, List<int[]> prompts, boolean prefixCache) {
        EngineConfig cfg = EngineConfig.builder().model(dir.toString()).backend("cpu").kvDtype("f32").weightsDtype("f32")
                .pageSize(4).numPages(128).prefixCache(prefixCache).maxBatchTokens(64).build();
        List<int[]> out = new ArrayList<>();
        try (Engine e = Engine.start(cfg)) {
            for (int i = 0; i < prompts.size(); i++) {
                RequestResult res = e.submit(new GenerateRequest("r" + i, prompts.get(i), SamplingParams.greedy(6)))
                        .result().join();
                assertEquals(FinishReason.LENGTH, res.reason(), res.error());
                out.add(res.outputTokens());
            }
            if (prefixCache) {
                assertTrue(e.snapshot().reusedTokens() > 0, "the prefix cache was not used");
            }
        }
        return out;
    }
}
