package io.radixkv.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.radixkv.kernels.DType;
import io.radixkv.model.Architecture.Activation;
import io.radixkv.model.Architecture.Norm;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/** config.json files as the Hub carries them, read into the model description; refusals. */
class HfConfigTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    static ObjectNode json(String s) {
        try {
            return (ObjectNode) JSON.readTree(s);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** meta-llama/Llama-3.2-3B-Instruct (transformers 4.x fields). */
    static final String LLAMA_32_3B = """
            {"architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
             "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009], "head_dim": 128, "hidden_act": "silu",
             "hidden_size": 3072, "initializer_range": 0.02, "intermediate_size": 8192,
             "max_position_embeddings": 131072, "mlp_bias": false, "model_type": "llama", "num_attention_heads": 24,
             "num_hidden_layers": 28, "num_key_value_heads": 8, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
             "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                              "original_max_position_embeddings": 8192, "rope_type": "llama3"},
             "rope_theta": 500000.0, "tie_word_embeddings": true, "torch_dtype": "bfloat16",
             "transformers_version": "4.45.0.dev0", "use_cache": true, "vocab_size": 128256}""";

    /** Qwen/Qwen2.5-0.5B-Instruct: sliding_window set but use_sliding_window false. */
    static final String QWEN25_05B = """
            {"architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
             "eos_token_id": 151645, "hidden_act": "silu", "hidden_size": 896, "initializer_range": 0.02,
             "intermediate_size": 4864, "max_position_embeddings": 32768, "max_window_layers": 21,
             "model_type": "qwen2", "num_attention_heads": 14, "num_hidden_layers": 24, "num_key_value_heads": 2,
             "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 32768, "tie_word_embeddings": true,
             "torch_dtype": "bfloat16", "transformers_version": "4.43.1", "use_cache": true,
             "use_sliding_window": false, "vocab_size": 151936}""";

    /** Qwen/Qwen3-4B. */
    static final String QWEN3_4B = """
            {"architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
             "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu",
             "hidden_size": 2560, "initializer_range": 0.02, "intermediate_size": 9728,
             "max_position_embeddings": 40960, "max_window_layers": 36, "model_type": "qwen3",
             "num_attention_heads": 32, "num_hidden_layers": 36, "num_key_value_heads": 8, "rms_norm_eps": 1e-06,
             "rope_scaling": null, "rope_theta": 1000000, "sliding_window": null, "tie_word_embeddings": true,
             "torch_dtype": "bfloat16", "transformers_version": "4.51.0", "use_cache": true,
             "use_sliding_window": false, "vocab_size": 151936}""";

    /** mistralai/Mistral-7B-v0.1. */
    static final String MISTRAL_7B = """
            {"architectures": ["MistralForCausalLM"], "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu",
             "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 14336,
             "max_position_embeddings": 32768, "model_type": "mistral", "num_attention_heads": 32,
             "num_hidden_layers": 32, "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_theta": 10000.0,
             "sliding_window": 4096, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
             "transformers_version": "4.34.0.dev0", "use_cache": true, "vocab_size": 32000}""";

    /** google/gemma-3-1b-it (sliding_window_pattern form). */
    static final String GEMMA3_1B = """
            {"architectures": ["Gemma3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
             "attn_logit_softcapping": null, "bos_token_id": 2, "cache_implementation": "hybrid",
             "eos_token_id": [1, 106], "final_logit_softcapping": null, "head_dim": 256,
             "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 1152, "initializer_range": 0.02,
             "intermediate_size": 6912, "max_position_embeddings": 32768, "model_type": "gemma3_text",
             "num_attention_heads": 4, "num_hidden_layers": 26, "num_key_value_heads": 1, "pad_token_id": 0,
             "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000,
             "rope_scaling": null, "rope_theta": 1000000, "sliding_window": 512, "sliding_window_pattern": 6,
             "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0", "use_cache": true,
             "vocab_size": 262144}""";

    /** google/gemma-3-270m (layer_types form). */
    static final String GEMMA3_270M = """
            {"_sliding_window_pattern": 6, "architectures": ["Gemma3ForCausalLM"], "attention_bias": false,
             "attention_dropout": 0.0, "attn_logit_softcapping": null, "bos_token_id": 2, "eos_token_id": 1,
             "final_logit_softcapping": null, "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh",
             "hidden_size": 640, "initializer_range": 0.02, "intermediate_size": 2048,
             "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention",
               "sliding_attention", "full_attention", "sliding_attention", "sliding_attention", "sliding_attention",
               "sliding_attention", "sliding_attention", "full_attention", "sliding_attention", "sliding_attention",
               "sliding_attention", "sliding_attention", "sliding_attention", "full_attention"],
             "max_position_embeddings": 32768, "model_type": "gemma3_text", "num_attention_heads": 4,
             "num_hidden_layers": 18, "num_key_value_heads": 1, "pad_token_id": 0, "query_pre_attn_scalar": 256,
             "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000.0, "rope_scaling": null, "rope_theta": 1000000.0,
             "sliding_window": 512, "torch_dtype": "bfloat16", "transformers_version": "4.55.0.dev0",
             "use_bidirectional_attention": false, "use_cache": true, "vocab_size": 262144}""";

    @Test
    void llama32() {
        ModelConfig c = HfConfig.parse(json(LLAMA_32_3B));
        assertEquals(3072, c.hidden());
        assertEquals(128, c.headDim());
        assertTrue(c.tiedEmbeddings());
        assertEquals(Architecture.LLAMA, c.arch());
        RopeSpec r = c.layerAttention().get(0).rope();
        assertEquals(RopeSpec.llama3(500000, 32, 1, 4, 8192), r);
        assertTrue(c.layerAttention().stream().allMatch(l -> !l.sliding() && l.rope().equals(r)));
        assertEquals(3_212_749_824L, c.parameterCount()); // Llama 3.2 3B
    }

    /** The llama3 bands: short wavelengths unchanged, long ones / factor, a linear blend between. */
    @Test
    void llama3FrequencyBands() {
        int d = 128;
        double[] inv = RopeSpec.llama3(500000, 32, 1, 4, 8192).invFreq(d);
        double[] plain = RopeSpec.plain(500000).invFreq(d);
        int high = 0;
        int low = 0;
        int mid = 0;
        for (int i = 0; i < d / 2; i++) {
            double wl = 2 * Math.PI / plain[i];
            if (wl < 8192 / 4.0) {
                assertEquals(plain[i], inv[i], 0.0, "i=" + i);
                high++;
            } else if (wl > 8192 / 1.0) {
                assertEquals(plain[i] / 32, inv[i], 1e-18, "i=" + i);
                low++;
            } else {
                double s = (8192 / wl - 1) / (4 - 1);
                assertEquals((1 - s) * plain[i] / 32 + s * plain[i], inv[i], 1e-15, "i=" + i);
                assertTrue(inv[i] < plain[i] && inv[i] > plain[i] / 32);
                mid++;
            }
        }
        assertTrue(high > 0 && low > 0 && mid > 0, high + " " + mid + " " + low);
        assertEquals(1.0, inv[0]);
        double[] lin = RopeSpec.linear(10000, 4).invFreq(8);
        assertEquals(Math.pow(10000, -2.0 / 8) / 4, lin[1], 1e-15);
    }

    @Test
    void qwen25IgnoresSlidingWindowUnlessUsed() {
        ModelConfig c = HfConfig.parse(json(QWEN25_05B));
        assertTrue(c.arch().qkvBias());
        assertFalse(c.arch().qkNorm());
        assertEquals(64, c.headDim());
        assertTrue(c.layerAttention().stream().noneMatch(LayerAttention::sliding), "use_sliding_window is false");
        assertEquals(RopeSpec.plain(1e6), c.layerAttention().get(0).rope());
        ObjectNode on = json(QWEN25_05B);
        on.put("use_sliding_window", true);
        on.put("sliding_window", 64);
        ModelConfig s = HfConfig.parse(on);
        // max_window_layers 21: layers 21.. slide.
        for (int i = 0; i < 24; i++) {
            assertEquals(i >= 21 ? 64 : 0, s.layerAttention().get(i).slidingWindow(), "layer " + i);
        }
    }

    @Test
    void qwen3() {
        ModelConfig c = HfConfig.parse(json(QWEN3_4B));
        assertTrue(c.arch().qkNorm());
        assertFalse(c.arch().qkvBias());
        assertEquals(128, c.headDim()); // explicit, not 2560 / 32 = 80
        assertEquals(32, c.heads());
        assertEquals(Norm.WEIGHT, c.arch().norm());
        assertTrue(c.layerAttention().stream().noneMatch(LayerAttention::sliding));
        assertEquals(40960, c.maxPositions());
    }

    @Test
    void mistralWindowDefaults() {
        ModelConfig c = HfConfig.parse(json(MISTRAL_7B));
        assertTrue(c.layerAttention().stream().allMatch(l -> l.slidingWindow() == 4096));
        assertEquals(4095, c.layerAttention().get(3).windowLeft());
        ObjectNode absent = json(MISTRAL_7B);
        absent.remove("sliding_window");
        assertTrue(HfConfig.parse(absent).layerAttention().stream().allMatch(l -> l.slidingWindow() == 4096));
        ObjectNode none = json(MISTRAL_7B);
        none.putNull("sliding_window");
        assertTrue(HfConfig.parse(none).layerAttention().stream().noneMatch(LayerAttention::sliding));
        assertFalse(c.arch().qkvBias());
    }

    @Test
    void gemma3PatternForm() {
        ModelConfig c = HfConfig.parse(json(GEMMA3_1B));
        Architecture a = c.arch();
        assertEquals(Norm.ONE_PLUS_WEIGHT, a.norm());
        assertEquals(Activation.GELU_TANH, a.activation());
        assertTrue(a.qkNorm() && a.sandwichNorms() && a.scaleEmbeddings());
        assertEquals(0f, a.finalLogitSoftCap());
        assertTrue(c.tiedEmbeddings(), "Gemma 3 ties by default");
        assertEquals(1f / 16, c.smScale());
        for (int i = 0; i < 26; i++) {
            LayerAttention l = c.layerAttention().get(i);
            boolean global = (i + 1) % 6 == 0;
            assertEquals(global ? 0 : 512, l.slidingWindow(), "layer " + i);
            assertEquals(global ? RopeSpec.plain(1e6) : RopeSpec.plain(1e4), l.rope(), "layer " + i);
        }
        assertEquals(34.0f, c.embedScale(DType.BF16)); // sqrt(1152) = 33.94 rounded to bf16
        assertEquals((float) Math.sqrt(1152), c.embedScale(DType.F32));
        ObjectNode noPattern = json(GEMMA3_1B);
        noPattern.remove("sliding_window_pattern");
        assertEquals(c, HfConfig.parse(noPattern), "default pattern 6");
        ObjectNode caps = json(GEMMA3_1B);
        caps.put("final_logit_softcapping", 30.0);
        caps.put("attn_logit_softcapping", 50.0);
        assertEquals(30f, HfConfig.parse(caps).arch().finalLogitSoftCap());
        ObjectNode scalar = json(GEMMA3_1B);
        scalar.put("query_pre_attn_scalar", 144);
        assertEquals(1f / 12, HfConfig.parse(scalar).smScale());
    }

    @Test
    void gemma3LayerTypesFormAndScaling() {
        ModelConfig c = HfConfig.parse(json(GEMMA3_270M));
        List<Integer> globals = IntStream.range(0, 18).filter(i -> !c.layerAttention().get(i).sliding()).boxed().toList();
        assertEquals(List.of(5, 11, 17), globals);
        ObjectNode types = json(GEMMA3_270M);
        var arr = types.putArray("layer_types");
        for (int i = 0; i < 18; i++) {
            arr.add(i % 2 == 0 ? "full_attention" : "sliding_attention");
        }
        types.putObject("rope_scaling").put("rope_type", "linear").put("factor", 8.0);
        ModelConfig t = HfConfig.parse(types);
        assertFalse(t.layerAttention().get(0).sliding());
        assertTrue(t.layerAttention().get(1).sliding());
        // rope_scaling only on global layers; sliding ones keep plain rope_local_base_freq.
        assertEquals(RopeSpec.linear(1e6, 8), t.layerAttention().get(0).rope());
        assertEquals(RopeSpec.plain(1e4), t.layerAttention().get(1).rope());
    }

    /** transformers 5.x: rope_parameters (one block, or per layer kind). */
    @Test
    void ropeParameters() {
        ObjectNode l = json(LLAMA_32_3B);
        l.remove("rope_theta");
        l.set("rope_parameters", l.remove("rope_scaling"));
        ((ObjectNode) l.get("rope_parameters")).put("rope_theta", 500000.0);
        assertEquals(HfConfig.parse(json(LLAMA_32_3B)), HfConfig.parse(l));
        ObjectNode g = json(GEMMA3_1B);
        g.remove("rope_theta");
        g.remove("rope_local_base_freq");
        g.remove("rope_scaling");
        ObjectNode p = g.putObject("rope_parameters");
        p.putObject("full_attention").put("rope_type", "linear").put("factor", 8.0).put("rope_theta", 1e6);
        p.putObject("sliding_attention").put("rope_type", "default").put("rope_theta", 1e4);
        ModelConfig c = HfConfig.parse(g);
        assertEquals(RopeSpec.linear(1e6, 8), c.layerAttention().get(5).rope());
        assertEquals(RopeSpec.plain(1e4), c.layerAttention().get(0).rope());
    }

    @Test
    void defaults() {
        ObjectNode l = json(LLAMA_32_3B);
        l.remove("rope_theta");
        l.putNull("rope_scaling");
        assertEquals(RopeSpec.plain(10000), HfConfig.parse(l).layerAttention().get(0).rope());
    }

    @Test
    void roundTrips() {
        for (String s : List.of(LLAMA_32_3B, QWEN25_05B, QWEN3_4B, MISTRAL_7B, GEMMA3_1B, GEMMA3_270M)) {
            ModelConfig c = HfConfig.parse(json(s));
            assertEquals(c, HfConfig.parse(HfConfig.toJson(c)), s);
        }
    }

    private static void refused(ObjectNode c, String... words) {
        var e = assertThrows(IllegalArgumentException.class, () -> HfConfig.parse(c));
        for (String w : words) {
            assertTrue(e.getMessage().contains(w), e.getMessage());
        }
        assertFalse(e.getMessage().contains("\n"), "one line: " + e.getMessage());
    }

    @Test
    void refusals() {
        ObjectNode t = json(LLAMA_32_3B);
        t.put("model_type", "phi3");
        refused(t, "model_type", "phi3");
        ObjectNode q = json(QWEN3_4B);
        q.putObject("quantization_config").put("quant_method", "awq");
        refused(q, "quantization_config", "awq");
        ObjectNode y = json(LLAMA_32_3B);
        ((ObjectNode) y.get("rope_scaling")).put("rope_type", "yarn");
        refused(y, "rope_scaling.rope_type", "yarn");
        ObjectNode y5 = json(QWEN3_4B);
        y5.putObject("rope_parameters").put("rope_type", "dynamic").put("rope_theta", 1e6).put("factor", 2.0);
        refused(y5, "rope_parameters.rope_type", "dynamic");
        ObjectNode mm = json(GEMMA3_1B);
        mm.putArray("architectures").add("Gemma3ForConditionalGeneration");
        refused(mm, "architectures", "Gemma3ForConditionalGeneration");
        ObjectNode mmType = json(GEMMA3_1B);
        mmType.put("model_type", "gemma3");
        refused(mmType, "model_type", "gemma3");
        ObjectNode text = json(MISTRAL_7B);
        text.put("num_hidden_layers", "32");
        refused(text, "num_hidden_layers");
        ObjectNode theta = json(MISTRAL_7B);
        theta.put("rope_theta", "ten thousand");
        refused(theta, "rope_theta");
        ObjectNode bias = json(LLAMA_32_3B);
        bias.put("attention_bias", true);
        refused(bias, "attention_bias");
        ObjectNode act = json(GEMMA3_1B);
        act.put("hidden_activation", "gelu");
        refused(act, "hidden_activation", "gelu");
        ObjectNode miss = json(LLAMA_32_3B);
        ((ObjectNode) miss.get("rope_scaling")).remove("low_freq_factor");
        refused(miss, "rope_scaling", "low_freq_factor");
        ObjectNode partial = json(QWEN3_4B);
        partial.put("partial_rotary_factor", 0.5);
        refused(partial, "partial_rotary_factor");
    }
}
