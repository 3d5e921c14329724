package io.radixkv.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.radixkv.checkpoint.ParamSpec;
import io.radixkv.kernels.DType;
import io.radixkv.kernels.reference.JavaDenseKernels;
import io.radixkv.kernels.reference.JavaReferenceBackend;
import io.radixkv.model.FamilyFixtures.Fixture;
import io.radixkv.quant.BlockFormat;
import io.radixkv.quant.GgmlQuantReference;
import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Quantizing at load ({@code --weights-dtype q8_0|q4_0|q4_k}): which tensor gets which format
 * (llama.cpp's {@code llama_tensor_get_type} rules for Q8_0, Q4_0 and Q4_K_M), and the blocks are
 * exactly what ggml's reference quantizers ({@link GgmlQuantReference}) make of the checkpoint's
 * values; a backend without quantized kernels refuses them.
 */
class QuantRecipeTest {
    @TempDir
    Path tmp;

    @Test
    void q4KmGivesQ6KToTheLayersLlamaCppPicks() {
        List<Integer> more = new ArrayList<>();
        for (int l = 0; l < 32; l++) {
            if (QuantRecipe.useMoreBits(l, 32)) {
                more.add(l);
            }
        }
        // llama.cpp's use_more_bits over 32 layers: the first and last 4, and every third between
        assertEquals(List.of(0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31), more);
        QuantRecipe r = QuantRecipe.Q4_K_M;
        assertEquals(BlockFormat.Q6_K, r.formatOf("model.layers.6.self_attn.v_proj.weight", 3072, 32, false));
        assertEquals(BlockFormat.Q4_K, r.formatOf("model.layers.7.self_attn.v_proj.weight", 3072, 32, false));
        assertEquals(BlockFormat.Q6_K, r.formatOf("model.layers.31.mlp.down_proj.weight", 8192, 32, false));
        assertEquals(BlockFormat.Q4_K, r.formatOf("model.layers.31.mlp.up_proj.weight", 3072, 32, false));
        assertEquals(BlockFormat.Q4_K, r.formatOf("model.layers.3.self_attn.q_proj.weight", 3072, 32, false));
        assertEquals(BlockFormat.Q6_K, r.formatOf("lm_head.weight", 3072, 32, false));
        assertEquals(BlockFormat.Q4_K, r.formatOf("model.embed_tokens.weight", 3072, 32, false), "untied: the base type");
        assertEquals(BlockFormat.Q6_K, r.formatOf("model.embed_tokens.weight", 3072, 32, true), "tied: the output's");
        // rows of 896 values (Qwen2.5 0.5B) are no whole super-blocks: llama.cpp's fallbacks
        assertEquals(BlockFormat.Q5_0, r.formatOf("model.layers.5.self_attn.q_proj.weight", 896, 24, false));
        assertEquals(BlockFormat.Q8_0, r.formatOf("model.layers.0.self_attn.v_proj.weight", 896, 24, false));
        assertEquals(BlockFormat.Q8_0, r.formatOf("model.embed_tokens.weight", 896, 24, true));
        assertNull(r.formatOf("model.layers.0.mlp.down_proj.weight", 100, 24, false), "no whole 32-value blocks");
        assertEquals(BlockFormat.Q6_K, QuantRecipe.Q4_0.formatOf("lm_head.weight", 2048, 16, false));
        assertEquals(BlockFormat.Q4_0, QuantRecipe.Q4_0.formatOf("model.layers.0.mlp.down_proj.weight", 2048, 16, false));
        assertEquals(BlockFormat.Q8_0, QuantRecipe.Q8_0.formatOf("lm_head.weight", 2048, 16, false));
        assertNull(QuantRecipe.AS_STORED.formatOf("lm_head.weight", 2048, 16, false));
    }

    @Test
    void quantizingAtLoadWritesTheReferenceQuantizersBytes() throws IOException {
        Fixture f = GgufModelTest.qwen3Wide(); // rows of 256 and 512 values, 2 layers
        var tensors = FamilyFixtures.tensors(f.spec(), 5);
        Path dir = tmp.resolve("hf");
        FamilyFixtures.write(dir, f, tensors, "F32", false);
        try (ModelWeights w = ModelWeights.load(dir, DType.F32, QuantRecipe.Q4_K_M)) {
            // layer 1 of 2 is in the last eighth: Q6_K v rows after the Q4_K q and k rows
            ParamSpec qkv = w.store().spec(WeightLayout.layer(1, WeightLayout.QKV));
            ModelConfig c = w.config();
            assertEquals(List.of(new ParamSpec.Band(c.qDim() + c.kvDim(), BlockFormat.Q4_K),
                    new ParamSpec.Band(c.kvDim(), BlockFormat.Q6_K)), qkv.bands());
            assertEquals(BlockFormat.Q4_K, w.store().spec(WeightLayout.layer(0, WeightLayout.QKV)).bands().get(0).format());
            assertEquals(1, w.store().spec(WeightLayout.layer(0, WeightLayout.QKV)).bands().size(), "layer 0: all Q4_K");
            byte[] q = GgmlQuantReference.q4_K(tensors.get("model.layers.1.self_attn.q_proj.weight").values());
            byte[] k = GgmlQuantReference.q4_K(tensors.get("model.layers.1.self_attn.k_proj.weight").values());
            byte[] v = GgmlQuantReference.q6_K(tensors.get("model.layers.1.self_attn.v_proj.weight").values());
            byte[] got = w.block(1, WeightLayout.QKV).toArray(ValueLayout.JAVA_BYTE);
            assertArrayEquals(q, Arrays.copyOfRange(got, 0, q.length));
            assertArrayEquals(k, Arrays.copyOfRange(got, q.length, q.length + k.length));
            assertArrayEquals(v, Arrays.copyOfRange(got, q.length + k.length, got.length));
            byte[] down = GgmlQuantReference.q6_K(tensors.get("model.layers.1.mlp.down_proj.weight").values());
            assertArrayEquals(down, w.block(1, WeightLayout.DOWN).toArray(ValueLayout.JAVA_BYTE));
            assertTrue(w.summary().format().startsWith("q4_k "), w.summary().format());
            var e = assertThrows(IllegalArgumentException.class, () -> new LlamaModel(c, w, new JavaDenseKernels(),
                    new JavaReferenceBackend(), 16));
            assertTrue(e.getMessage().contains("do not run block-quantized weights [q4_k, q6_k]"), e.getMessage());
        }
        try (ModelWeights w = ModelWeights.load(dir, DType.F32, QuantRecipe.Q8_0)) {
            byte[] emb = GgmlQuantReference.q8_0(tensors.get("model.embed_tokens.weight").values());
            assertArrayEquals(emb, w.embed().toArray(ValueLayout.JAVA_BYTE));
            assertEquals("q8_0", w.summary().format());
            assertEquals(34.0 / 32, w.summary().bytesPerWeight(), 1e-12);
        }
    }
}
