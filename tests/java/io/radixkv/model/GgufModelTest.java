package io.radixkv.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.radixkv.checkpoint.CheckpointException;
import io.radixkv.checkpoint.ParamSpec;
import io.radixkv.checkpoint.gguf.GgufTestWriter;
import io.radixkv.engine.Engine;
import io.radixkv.engine.EngineConfig;
import io.radixkv.engine.GenerateRequest;
import io.radixkv.engine.RequestResult;
import io.radixkv.kernels.DType;
import io.radixkv.kernels.cpu.CpuBackend;
import io.radixkv.kernels.cpu.CpuDenseKernels;
import io.radixkv.model.FamilyFixtures.Fixture;
import io.radixkv.quant.GgmlQuantReference;
import io.radixkv.sched.FinishReason;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A model from a GGUF file (written as llama.cpp's converter writes one: GGUF names, llama's
 * permuted q/k rows, gemma3's 1 + w norms) against the same weights from a Hugging Face
 * directory: equal configs, equal parameter blocks and identical logits for F32 and BF16 files
 * (the fixture values are bf16-exact, and 1 + w is exact in f32 for them), logits within f16
 * rounding for F16 files; quantized tensors dequantized at load exactly as ggml does; and each
 * unsupported file refused with one line naming the key or tensor.
 */
class GgufModelTest {
    @TempDir
    Path tmp;

    /** Per GGUF architecture, a family fixture whose config GGUF metadata can express. */
    static Fixture fixture(String arch) {
        return switch (arch) {
            case "llama" -> {
                ObjectNode c = FamilyFixtures.json(FamilyFixtures.llama32().configJson());
                c.putNull("rope_scaling"); // llama3 bands: llama3RopeBandsTravelAsRopeFreqsFactors
                yield new Fixture("llama-plain", c.toString(), FamilyFixtures.llama32().spec(), false);
            }
            case "qwen2" -> FamilyFixtures.qwen25();
            case "qwen3" -> FamilyFixtures.qwen3();
            case "gemma3" -> {
                Fixture g = FamilyFixtures.gemma3(DType.F32);
                ObjectNode c = FamilyFixtures.json(g.configJson());
                c.put("query_pre_attn_scalar", 32); // llama.cpp's gemma3 scales by head_dim
                yield new Fixture("gemma3-gguf", c.toString(), g.spec(), true);
            }
            default -> throw new IllegalArgumentException(arch);
        };
    }

    static Stream<Arguments> archsAndTypes() {
        List<Arguments> out = new ArrayList<>();
        for (String arch : List.of("llama", "qwen2", "qwen3", "gemma3")) {
            for (int type : new int[] {GgufTestWriter.F32, GgufTestWriter.BF16, GgufTestWriter.F16}) {
                out.add(Arguments.of(arch, type));
            }
        }
        return out.stream();
    }

    private record Files2(Path dir, Path gguf) {}

    private Files2 write(String arch, int type, long seed) throws IOException {
        Fixture f = fixture(arch);
        var tensors = FamilyFixtures.tensors(f.spec(), seed);
        Path dir = tmp.resolve(arch + "-hf");
        FamilyFixtures.write(dir, f, tensors, "F32", false);
        Path gguf = GgufModelWriter.write(tmp.resolve(arch + "-" + type + ".gguf"), arch, GgufModelWriter.config(f),
                tensors, type);
        return new Files2(dir, gguf);
    }

    /** Logits of three sequences over a prefill and a decode step. */
    private static float[] logits(ModelWeights w) {
        return logits(w, new int[][] {{13, 9, 5}, {1, 1, 1}});
    }

    /** Logits of three sequences, appending {@code steps[s][i]} tokens to sequence i in step s. */
    private static float[] logits(ModelWeights w, int[][] steps) {
        ModelConfig c = w.config();
        Random r = new Random(3);
        List<Float> out = new ArrayList<>();
        try (CpuBackend backend = new CpuBackend();
             PagedHarness hs = new PagedHarness(c, DType.F32, 64, 4, 3);
             LlamaModel model = new LlamaModel(c, w, new CpuDenseKernels(), backend, 64)) {
            List<PagedHarness.Seq> seqs = List.of(new PagedHarness.Seq(), new PagedHarness.Seq(), new PagedHarness.Seq());
            for (int[] lens : steps) {
                List<int[]> toks = new ArrayList<>();
                for (int n : lens) {
                    int[] t = new int[n];
                    for (int i = 0; i < n; i++) {
                        t[i] = r.nextInt(c.vocab());
                    }
                    toks.add(t);
                }
                var st = hs.step(seqs, toks, c.vocab());
                model.forward(st.batch(), hs.caches, st.logits());
                long n = (long) st.batch().numLogitRows() * c.vocab();
                for (long i = 0; i < n; i++) {
                    out.add(st.logits().getAtIndex(ValueLayout.JAVA_FLOAT, i));
                }
            }
        }
        float[] a = new float[out.size()];
        for (int i = 0; i < a.length; i++) {
            a[i] = out.get(i);
        }
        return a;
    }

    /** Max |a - b| relative to the largest |a|. */
    private static double relError(float[] a, float[] b) {
        double maxRef = 0;
        double maxErr = 0;
        for (int i = 0; i < a.length; i++) {
            maxRef = Math.max(maxRef, Math.abs(a[i]));
            maxErr = Math.max(maxErr, Math.abs(a[i] - b[i]));
        }
        return maxErr / maxRef;
    }

    @ParameterizedTest(name = "{0}, ggml type {1}")
    @MethodSource("archsAndTypes")
    void ggufMatchesTheHuggingFaceDirectory(String arch, int type) throws IOException {
        Files2 f = write(arch, type, arch.hashCode());
        try (ModelWeights hf = ModelWeights.load(f.dir(), DType.F32);
             ModelWeights gg = ModelWeights.load(f.gguf(), DType.F32)) {
            assertEquals(hf.config(), gg.config(), arch + ": configs differ");
            float[] a = logits(hf);
            float[] b = logits(gg);
            if (type == GgufTestWriter.F16) {
                double err = relError(a, b);
                assertTrue(err <= 1e-3, arch + " F16: logits differ by " + err + " of the largest");
                return;
            }
            for (ParamSpec p : hf.store().specs()) {
                MemorySegment x = hf.store().get(p.name());
                MemorySegment y = gg.store().get(p.name());
                assertEquals(-1, x.mismatch(y), arch + ": block " + p.name() + " differs");
            }
            for (int i = 0; i < a.length; i++) {
                assertEquals(Float.floatToRawIntBits(a[i]), Float.floatToRawIntBits(b[i]),
                        arch + ": logit " + i + " differs: " + a[i] + " vs " + b[i]);
            }
        }
    }

    private static List<int[]> generate(Path model) {
        return generate(model, QuantRecipe.AS_STORED);
    }

    private static List<int[]> generate(Path model, QuantRecipe recipe) {
        EngineConfig cfg = EngineConfig.builder().model(model.toString()).backend("cpu").kvDtype("f32")
                .weightsDtype("f32").weightsQuant(recipe).pageSize(4).numPages(64).maxBatchTokens(64).build();
        List<int[]> out = new ArrayList<>();
        try (Engine e = Engine.start(cfg)) {
            for (int i = 0; i < 3; i++) {
                int[] prompt = {1 + i, 7, 30 + i, 2, 50, 11 + 3 * i};
                RequestResult r = e.submit(new GenerateRequest("r" + i, prompt, SamplingParams.greedy(5))).result().join();
                assertEquals(FinishReason.LENGTH, r.reason(), r.error());
                out.add(r.outputTokens());
            }
        }
        return out;
    }

    /** The engine takes a .gguf path as its model and generates what the HF directory generates. */
    @Test
    void engineRunsAGgufFile() throws IOException {
        Files2 f = write("gemma3", GgufTestWriter.BF16, 17);
        List<int[]> a = generate(f.dir());
        List<int[]> b = generate(f.gguf());
        for (int i = 0; i < a.size(); i++) {
            assertArrayEquals(a.get(i), b.get(i), "prompt " + i);
        }
    }

    /**
     * A file written without the converter's transforms (llama's q/k permutation, gemma's 1 + w)
     * gives other logits: the comparison above can tell whether the loader undoes them.
     */
    @Test
    void theConverterTransformsMatter() throws IOException {
        for (String arch : List.of("llama", "gemma3")) {
            Fixture fx = fixture(arch);
            var tensors = FamilyFixtures.tensors(fx.spec(), 9);
            Path dir = tmp.resolve(arch + "-hf9");
            FamilyFixtures.write(dir, fx, tensors, "F32", false);
            Path raw = GgufModelWriter.write(tmp.resolve(arch + "-raw.gguf"), arch, GgufModelWriter.config(fx), tensors,
                    GgufTestWriter.F32, false, null);
            try (ModelWeights hf = ModelWeights.load(dir, DType.F32);
                 ModelWeights gg = ModelWeights.load(raw, DType.F32)) {
                double err = relError(logits(hf), logits(gg));
                assertTrue(err > 0.05, arch + ": the untransformed file changes the logits by only " + err);
            }
        }
    }

    /**
     * A Llama 3.x checkpoint as the converter writes it: no rope scaling keys, the llama3 bands as
     * {@code rope_freqs.weight} factors (at this head size some are 1, some the factor, some
     * smoothed). Its inverse frequencies and its logits over 71 positions equal the Hugging Face
     * directory's within float rounding; the same file without the tensor gives other logits.
     */
    @Test
    void llama3RopeBandsTravelAsRopeFreqsFactors() throws IOException {
        Fixture fx = FamilyFixtures.llama32();
        ObjectNode cfg = GgufModelWriter.config(fx);
        float[] factors = GgufModelWriter.llama3Factors(cfg);
        assertEquals(1f, factors[0]);
        assertEquals(8f, factors[factors.length - 1]);
        assertTrue(factors[1] > 1f && factors[1] < 8f, "smoothed band: " + factors[1]);
        var tensors = FamilyFixtures.tensors(fx.spec(), 5);
        Path dir = tmp.resolve("llama3-hf");
        FamilyFixtures.write(dir, fx, tensors, "F32", false);
        Path gguf = GgufModelWriter.write(tmp.resolve("llama3.gguf"), "llama", cfg, tensors, GgufTestWriter.F32);
        Path noFactors = GgufModelWriter.write(tmp.resolve("llama3-plain.gguf"), "llama", cfg, tensors,
                GgufTestWriter.F32, true, null, null);
        int[][] steps = {{30, 20, 10}, {30, 20, 10}, {10, 10, 10}, {1, 1, 1}};
        try (ModelWeights hf = ModelWeights.load(dir, DType.F32);
             ModelWeights gg = ModelWeights.load(gguf, DType.F32);
             ModelWeights plain = ModelWeights.load(noFactors, DType.F32)) {
            ModelConfig a = hf.config();
            ModelConfig b = gg.config();
            assertEquals(RopeSpec.Scaling.FACTORS, b.layerAttention().get(0).rope().scaling());
            assertEquals(a, b.withLayerAttention(a.layerAttention()), "configs differ beyond RoPE");
            for (int l = 0; l < a.layers(); l++) {
                double[] x = a.layerAttention().get(l).rope().invFreq(a.headDim());
                double[] y = b.layerAttention().get(l).rope().invFreq(b.headDim());
                for (int i = 0; i < x.length; i++) {
                    assertEquals(x[i], y[i], 1e-6 * x[i], "layer " + l + " inv_freq " + i);
                }
            }
            float[] ref = logits(hf, steps);
            double err = relError(ref, logits(gg, steps));
            assertTrue(err <= 1e-5, "logits differ by " + err + " of the largest");
            double without = relError(ref, logits(plain, steps));
            assertTrue(without > 1e-2, "without rope_freqs the logits change by only " + without);
        }
    }

    @Test
    void badRopeFreqsAreRefusedNamingTheTensor() throws IOException {
        Fixture fx = FamilyFixtures.llama32();
        ObjectNode cfg = GgufModelWriter.config(fx);
        var tensors = FamilyFixtures.tensors(fx.spec(), 6);
        Path shortFile = GgufModelWriter.write(tmp.resolve("short.gguf"), "llama", cfg, tensors, GgufTestWriter.F32, true,
                null, new float[] {1f, 2f, 3f});
        assertTrue(refused(shortFile).contains("tensor rope_freqs.weight must be F32 with head_dim/2 = 8 values, got F32 "
                + "[3]"), refused(shortFile));
        float[] nan = GgufModelWriter.llama3Factors(cfg);
        nan[2] = Float.NaN;
        Path nanFile = GgufModelWriter.write(tmp.resolve("nan.gguf"), "llama", cfg, tensors, GgufTestWriter.F32, true,
                null, nan);
        assertTrue(refused(nanFile).contains("tensor rope_freqs.weight value 2 is NaN"), refused(nanFile));
        float[] zero = GgufModelWriter.llama3Factors(cfg);
        zero[0] = 0f;
        Path zeroFile = GgufModelWriter.write(tmp.resolve("zero.gguf"), "llama", cfg, tensors, GgufTestWriter.F32, true,
                null, zero);
        assertTrue(refused(zeroFile).contains("tensor rope_freqs.weight value 0 is 0.0"), refused(zeroFile));
    }

    private String refused(Path gguf) {
        CheckpointException e = assertThrows(CheckpointException.class, () -> ModelWeights.load(gguf, DType.F32).close());
        assertEquals(1, e.getMessage().lines().count(), e.getMessage());
        return e.getMessage();
    }

    @Test
    void unsupportedFilesAreRefusedNamingTheKeyOrTensor() throws IOException {
        Fixture q3 = fixture("qwen3");
        var tensors = FamilyFixtures.tensors(q3.spec(), 1);
        ObjectNode cfg = GgufModelWriter.config(q3);

        Path arch = tmp.resolve("arch.gguf");
        GgufModelWriter.write(arch, "phi3", cfg, tensors, GgufTestWriter.F32);
        assertTrue(refused(arch).contains("general.architecture 'phi3' is not supported"));

        Path yarn = tmp.resolve("yarn.gguf");
        ObjectNode y = cfg.deepCopy();
        y.putObject("rope_scaling").put("rope_type", "yarn").put("factor", 4.0);
        GgufModelWriter.write(yarn, "qwen3", y, tensors, GgufTestWriter.F32);
        assertTrue(refused(yarn).contains("qwen3.rope.scaling.type 'yarn' is not supported"));

        Path extra = tmp.resolve("extra.gguf");
        var more = new java.util.LinkedHashMap<>(tensors);
        more.put("lm_head.weight", new SafetensorsTestWriter.T("lm_head.weight", "F32", new long[] {96, 64},
                new float[96 * 64]));
        more.put("model.layers.0.self_attn.q_proj.bias", new SafetensorsTestWriter.T("model.layers.0.self_attn.q_proj.bias",
                "F32", new long[] {128}, new float[128]));
        GgufModelWriter.write(extra, "qwen3", cfg, more, GgufTestWriter.F32);
        assertTrue(refused(extra).contains("tensor blk.0.attn_q.bias is not part of the qwen3 model"));

        Path missing = tmp.resolve("missing.gguf");
        var fewer = new java.util.LinkedHashMap<>(tensors);
        fewer.remove("model.layers.1.mlp.down_proj.weight");
        GgufModelWriter.write(missing, "qwen3", cfg, fewer, GgufTestWriter.F32);
        assertTrue(refused(missing).contains("no tensor blk.1.ffn_down.weight"));
    }

    /** A qwen3 shape whose rows (256, 512) are whole k-quant super-blocks. */
    static Fixture qwen3Wide() {
        ObjectNode c = FamilyFixtures.json(FamilyFixtures.qwen3().configJson());
        c.put("hidden_size", 256).put("intermediate_size", 512).put("head_dim", 64);
        double[] inv = FamilyFixtures.plain(1e6, 64);
        ReferenceDecoder.Spec s = new ReferenceDecoder.Spec(256, 512, 2, 4, 2, 64, FamilyFixtures.VOCAB, 1e-6, 0, false,
                true, false, false, 1, 1 / 8.0, 0, new int[2], new double[][] {inv, inv}, true);
        return new Fixture("qwen3-wide", c.toString(), s, false);
    }

    static Stream<Arguments> quantizedTypes() {
        return Stream.of(Arguments.of("Q8_0", GgufTestWriter.Q8_0, 0.02), Arguments.of("Q6_K", GgufTestWriter.Q6_K, 0.05),
                Arguments.of("Q4_K", GgufTestWriter.Q4_K, 0.25), Arguments.of("Q4_0", GgufTestWriter.Q4_0, 0.3),
                Arguments.of("Q5_0", GgufTestWriter.Q5_0, 0.15));
    }

    /**
     * Quantized 2-D tensors dequantized at load ({@link QuantRecipe#DEQUANTIZE}): the embedding and
     * down-projection blocks are exactly ggml's dequantization of the file's blocks, and the logits
     * stay near the f32 model's (a loose check of the format's precision, not a bound).
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("quantizedTypes")
    void quantizedTensorsAreDequantizedAtLoad(String label, int type, double logitTolerance) throws IOException {
        Fixture f = qwen3Wide();
        var tensors = FamilyFixtures.tensors(f.spec(), 21);
        Path dir = tmp.resolve("wide-hf");
        FamilyFixtures.write(dir, f, tensors, "F32", false);
        Path gguf = GgufModelWriter.write(tmp.resolve("wide-" + label + ".gguf"), "qwen3", GgufModelWriter.config(f),
                tensors, type);
        try (ModelWeights hf = ModelWeights.load(dir, DType.F32);
             ModelWeights gg = ModelWeights.load(gguf, DType.F32, QuantRecipe.DEQUANTIZE)) {
            for (String[] b : new String[][] {{"model.embed_tokens.weight", WeightLayout.EMBED},
                {"model.layers.1.mlp.down_proj.weight", WeightLayout.layer(1, WeightLayout.DOWN)}}) {
                float[] v = tensors.get(b[0]).values();
                float[] expected = switch (label) {
                    case "Q8_0" -> GgmlQuantReference.deq8_0(GgmlQuantReference.q8_0(v));
                    case "Q4_0" -> GgmlQuantReference.deq4_0(GgmlQuantReference.q4_0(v));
                    case "Q5_0" -> GgmlQuantReference.deq5_0(GgmlQuantReference.q5_0(v));
                    case "Q4_K" -> GgmlQuantReference.deq4_K(GgmlQuantReference.q4_K(v));
                    default -> GgmlQuantReference.deq6_K(GgmlQuantReference.q6_K(v));
                };
                MemorySegment got = gg.block(b[1]);
                for (int i = 0; i < expected.length; i++) {
                    assertEquals(expected[i], got.getAtIndex(ValueLayout.JAVA_FLOAT, i), label + " " + b[0] + " value " + i);
                }
            }
            double err = relError(logits(hf), logits(gg));
            assertTrue(err <= logitTolerance, label + ": logits differ by " + err + " of the largest");
            assertTrue(err > 0, label + ": the quantized model cannot equal the f32 one");
        }
    }

    /**
     * Quantized tensors kept as stored (the default): the blocks are the file's bytes, the model
     * runs them through the quantized kernels, and its logits agree with the dequantize-at-load
     * model's within the activations' 8-bit rounding of the decode rows (the prefill rows run the
     * dequantized weights through the f32 GEMM); greedy tokens through the engine are identical.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("quantizedTypes")
    void quantizedTensorsStayQuantizedAndAgreeWithDequantizing(String label, int type, double ignored) throws IOException {
        Fixture f = qwen3Wide();
        var tensors = FamilyFixtures.tensors(f.spec(), 21);
        Path gguf = GgufModelWriter.write(tmp.resolve("kept-" + label + ".gguf"), "qwen3", GgufModelWriter.config(f),
                tensors, type);
        try (ModelWeights kept = ModelWeights.load(gguf, DType.F32);
             ModelWeights deq = ModelWeights.load(gguf, DType.F32, QuantRecipe.DEQUANTIZE)) {
            float[] v = tensors.get("model.layers.1.mlp.down_proj.weight").values();
            byte[] stored = switch (label) {
                case "Q8_0" -> GgmlQuantReference.q8_0(v);
                case "Q4_0" -> GgmlQuantReference.q4_0(v);
                case "Q5_0" -> GgmlQuantReference.q5_0(v);
                case "Q4_K" -> GgmlQuantReference.q4_K(v);
                default -> GgmlQuantReference.q6_K(v);
            };
            MemorySegment block = kept.block(WeightLayout.layer(1, WeightLayout.DOWN));
            assertArrayEquals(stored, block.toArray(ValueLayout.JAVA_BYTE), label + ": the file's blocks, byte for byte");
            assertTrue(kept.anyQuantized() && !deq.anyQuantized());
            assertEquals(label.toLowerCase(java.util.Locale.ROOT), kept.summary().format());
            assertTrue(kept.bytes() < deq.bytes() / 3, label + ": " + kept.bytes() + " bytes against " + deq.bytes());
            double err = relError(logits(deq), logits(kept));
            assertTrue(err <= 0.02, label + ": logits differ by " + err + " of the largest");
        }
        List<int[]> a = generate(gguf, QuantRecipe.DEQUANTIZE);
        List<int[]> b = generate(gguf, QuantRecipe.AS_STORED);
        for (int i = 0; i < a.size(); i++) {
            assertArrayEquals(a.get(i), b.get(i), label + " prompt " + i);
        }
    }

    @Test
    void unknownArchitectureKeysAndUnconvertedTypesAreRefused() throws IOException {
        Fixture q3 = fixture("qwen3");
        var tensors = FamilyFixtures.tensors(q3.spec(), 2);
        ObjectNode cfg = GgufModelWriter.config(q3);
        Path base = GgufModelWriter.write(tmp.resolve("base.gguf"), "qwen3", cfg, tensors, GgufTestWriter.F32);
        try (ModelWeights w = ModelWeights.load(base, DType.F32)) {
            assertEquals(64, w.config().hidden());
        }
        // A key the loader cannot map, appended through a second writer over the same tensors.
        Path expert = tmp.resolve("expert.gguf");
        var w2 = new GgufTestWriter().str("general.architecture", "qwen3").u32("qwen3.expert_count", 8);
        w2.write(expert);
        assertTrue(refused(expert).contains("metadata key qwen3.expert_count is not supported for qwen3"));

        Path quant = GgufModelWriter.write(tmp.resolve("quant.gguf"), "qwen3", cfg, tensors, GgufTestWriter.F32, true,
                "model.layers.0.mlp.up_proj.weight");
        assertTrue(refused(quant).contains("tensor blk.0.ffn_up.weight has dtype 'Q4_1', not one of F32, BF16, F16, Q8_0, "
                + "Q4_0, Q5_0, Q4_K, Q6_K"));
    }
}
