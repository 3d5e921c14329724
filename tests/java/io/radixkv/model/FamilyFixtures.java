package io.radixkv.model;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.radixkv.kernels.Bf16;
import io.radixkv.kernels.DType;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * Tiny checkpoints of every family in transformers' layout: a {@code config.json} with the
 * fields the real Hub files carry (small sizes), random tensors under their HF names written
 * as f32 or bf16 safetensors (single file or two shards with an index), and the
 * {@link ReferenceDecoder.Spec} the family's rules give for it, worked out here by hand (not by
 * the production parser).
 */
final class FamilyFixtures {
    private static final ObjectMapper JSON = new ObjectMapper();
    static final int VOCAB = 96;

    /** A family fixture: config.json text and the reference's view of the same model. */
    record Fixture(String name, String configJson, ReferenceDecoder.Spec spec, boolean needsWindows) {}

    private FamilyFixtures() {}

    // ---- RoPE tables, from the rules (independent of RopeSpec)

    static double[] plain(double theta, int d) {
        double[] f = new double[d / 2];
        for (int i = 0; i < f.length; i++) {
            f[i] = Math.pow(theta, -2.0 * i / d);
        }
        return f;
    }

    static double[] linear(double theta, int d, double factor) {
        double[] f = plain(theta, d);
        for (int i = 0; i < f.length; i++) {
            f[i] /= factor;
        }
        return f;
    }

    static double[] llama3(double theta, int d, double factor, double low, double high, double origMax) {
        double[] f = plain(theta, d);
        for (int i = 0; i < f.length; i++) {
            double wl = 2 * Math.PI / f[i];
            if (wl > origMax / low) {
                f[i] /= factor;
            } else if (wl >= origMax / high) {
                double s = (origMax / wl - low) / (high - low);
                f[i] = (1 - s) * f[i] / factor + s * f[i];
            }
        }
        return f;
    }

    private static double[][] perLayer(int layers, java.util.function.IntFunction<double[]> f) {
        double[][] out = new double[layers][];
        for (int l = 0; l < layers; l++) {
            out[l] = f.apply(l);
        }
        return out;
    }

    static double bf16(double v) {
        return Bf16.round(((float) v));
    }

    // ---- the families

    /** Llama 3.2 layout: llama3 rope bands (L = 64 so all three bands occur at head_dim 16), tied. */
    static Fixture llama32() {
        String cfg = """
                {"architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
                 "bos_token_id": 1, "eos_token_id": [2, 3], "head_dim": 16, "hidden_act": "silu", "hidden_size": 64,
                 "initializer_range": 0.02, "intermediate_size": 96, "max_position_embeddings": 2048,
                 "mlp_bias": false, "model_type": "llama", "num_attention_heads": 4, "num_hidden_layers": 2,
                 "num_key_value_heads": 2, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
                 "rope_scaling": {"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                                  "original_max_position_embeddings": 64, "rope_type": "llama3"},
                 "rope_theta": 10000.0, "tie_word_embeddings": true, "torch_dtype": "bfloat16",
                 "transformers_version": "4.45.0.dev0", "use_cache": true, "vocab_size": 96}""";
        double[] inv = llama3(10000, 16, 8, 1, 4, 64);
        return new Fixture("llama3.2", cfg, new ReferenceDecoder.Spec(64, 96, 2, 4, 2, 16, VOCAB, 1e-5, 0, false, false,
                false, false, 1, 0.25, 0, new int[2], perLayer(2, l -> inv), true), false);
    }

    /** The same Llama in transformers 5.x form: rope_parameters instead of rope_theta + rope_scaling. */
    static Fixture llama32v5() {
        ObjectNode c = json(llama32().configJson());
        c.remove("rope_theta");
        ObjectNode p = (ObjectNode) c.remove("rope_scaling");
        p.put("rope_theta", 10000.0);
        c.set("rope_parameters", p);
        c.put("transformers_version", "5.0.0");
        return new Fixture("llama3.2-v5", c.toString(), llama32().spec(), false);
    }

    /** Qwen2.5 layout: q/k/v biases; sliding_window 8 present but use_sliding_window false (no window). */
    static Fixture qwen25() {
        String cfg = """
                {"architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1, "eos_token_id": 2,
                 "hidden_act": "silu", "hidden_size": 64, "initializer_range": 0.02, "intermediate_size": 96,
                 "max_position_embeddings": 32768, "max_window_layers": 1, "model_type": "qwen2",
                 "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 2, "rms_norm_eps": 1e-06,
                 "rope_theta": 1000000.0, "sliding_window": 8, "tie_word_embeddings": false,
                 "torch_dtype": "bfloat16", "transformers_version": "4.43.1", "use_cache": true,
                 "use_sliding_window": false, "vocab_size": 96}""";
        double[] inv = plain(1e6, 16);
        return new Fixture("qwen2.5", cfg, new ReferenceDecoder.Spec(64, 96, 2, 4, 2, 16, VOCAB, 1e-6, 0, true, false,
                false, false, 1, 0.25, 0, new int[2], perLayer(2, l -> inv), false), false);
    }

    /** Qwen3 layout: q/k norms before RoPE, head_dim 32 independent of hidden / heads = 16. */
    static Fixture qwen3() {
        String cfg = """
                {"architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
                 "bos_token_id": 1, "eos_token_id": 2, "head_dim": 32, "hidden_act": "silu", "hidden_size": 64,
                 "initializer_range": 0.02, "intermediate_size": 96, "max_position_embeddings": 40960,
                 "max_window_layers": 2, "model_type": "qwen3", "num_attention_heads": 4, "num_hidden_layers": 2,
                 "num_key_value_heads": 2, "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000,
                 "sliding_window": null, "tie_word_embeddings": true, "torch_dtype": "bfloat16",
                 "transformers_version": "4.51.0", "use_cache": true, "use_sliding_window": false,
                 "vocab_size": 96}""";
        double[] inv = plain(1e6, 32);
        return new Fixture("qwen3", cfg, new ReferenceDecoder.Spec(64, 96, 2, 4, 2, 32, VOCAB, 1e-6, 0, false, true,
                false, false, 1, 1 / Math.sqrt(32), 0, new int[2], perLayer(2, l -> inv), true), false);
    }

    /** Mistral layout with every layer on an 8-token window. */
    static Fixture mistral() {
        String cfg = """
                {"architectures": ["MistralForCausalLM"], "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu",
                 "hidden_size": 64, "initializer_range": 0.02, "intermediate_size": 96,
                 "max_position_embeddings": 32768, "model_type": "mistral", "num_attention_heads": 4,
                 "num_hidden_layers": 2, "num_key_value_heads": 1, "rms_norm_eps": 1e-05, "rope_theta": 10000.0,
                 "sliding_window": 8, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
                 "transformers_version": "4.34.0.dev0", "use_cache": true, "vocab_size": 96}""";
        double[] inv = plain(10000, 16);
        return new Fixture("mistral", cfg, new ReferenceDecoder.Spec(64, 96, 2, 4, 1, 16, VOCAB, 1e-5, 0, false, false,
                false, false, 1, 0.25, 0, new int[] {8, 8}, perLayer(2, l -> inv), false), true);
    }

    /** Mistral with "sliding_window": null: no window. */
    static Fixture mistralNoWindow() {
        ObjectNode c = json(mistral().configJson());
        c.putNull("sliding_window");
        ReferenceDecoder.Spec s = mistral().spec();
        return new Fixture("mistral-nowindow", c.toString(), new ReferenceDecoder.Spec(s.hidden(), s.inter(), s.layers(),
                s.heads(), s.kvHeads(), s.headDim(), s.vocab(), s.eps(), 0, false, false, false, false, 1, s.attnScale(),
                0, new int[2], s.invFreq(), false), false);
    }

    /**
     * Gemma 3 (gemma-3-1b-it layout, sliding_window_pattern form): 4 layers with pattern 2 (layers 1
     * and 3 global), window 8, linear rope_scaling on global layers only, query_pre_attn_scalar 24
     * (not head_dim 32), final_logit_softcapping 4 (attn_logit_softcapping ignored), hidden 72 so
     * sqrt(hidden) = 8.485 rounds to 8.5 in bf16.
     */
    static Fixture gemma3(DType weights) {
        String cfg = """
                {"architectures": ["Gemma3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
                 "attn_logit_softcapping": 50.0, "bos_token_id": 2, "cache_implementation": "hybrid",
                 "eos_token_id": [1, 106], "final_logit_softcapping": 4.0, "head_dim": 32,
                 "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 72, "initializer_range": 0.02,
                 "intermediate_size": 96, "max_position_embeddings": 32768, "model_type": "gemma3_text",
                 "num_attention_heads": 4, "num_hidden_layers": 4, "num_key_value_heads": 2, "pad_token_id": 0,
                 "query_pre_attn_scalar": 24, "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000,
                 "rope_scaling": {"factor": 4.0, "rope_type": "linear"}, "rope_theta": 1000000,
                 "sliding_window": 8, "sliding_window_pattern": 2, "torch_dtype": "bfloat16",
                 "transformers_version": "4.50.0.dev0", "use_cache": true, "vocab_size": 96}""";
        double[] local = plain(10000, 32);
        double[] global = linear(1e6, 32, 4);
        double scale = weights == DType.BF16 ? bf16(Math.sqrt(72)) : (float) Math.sqrt(72);
        return new Fixture("gemma3-" + (weights == DType.BF16 ? "bf16" : "f32"), cfg, new ReferenceDecoder.Spec(72, 96, 4, 4, 2, 32, VOCAB, 1e-6, 1, false,
                true, true, true, scale, 1 / Math.sqrt(24), 4, new int[] {8, 0, 8, 0},
                perLayer(4, l -> l % 2 == 1 ? global : local), true), true);
    }

    /** Gemma 3 (gemma-3-270m layout: layer_types) in transformers 5.x form (rope_parameters per layer kind). */
    static Fixture gemma3LayerTypesV5() {
        String cfg = """
                {"architectures": ["Gemma3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
                 "attn_logit_softcapping": null, "bos_token_id": 2, "eos_token_id": 1,
                 "final_logit_softcapping": null, "head_dim": 32, "hidden_activation": "gelu_pytorch_tanh",
                 "hidden_size": 64, "initializer_range": 0.02, "intermediate_size": 96,
                 "layer_types": ["sliding_attention", "sliding_attention", "full_attention"],
                 "max_position_embeddings": 32768, "model_type": "gemma3_text", "num_attention_heads": 2,
                 "num_hidden_layers": 3, "num_key_value_heads": 1, "pad_token_id": 0, "query_pre_attn_scalar": 32,
                 "rms_norm_eps": 1e-06,
                 "rope_parameters": {"full_attention": {"rope_type": "default", "rope_theta": 1000000.0},
                                     "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}},
                 "sliding_window": 6, "torch_dtype": "bfloat16", "transformers_version": "5.0.0",
                 "use_bidirectional_attention": false, "use_cache": true, "vocab_size": 96}""";
        double[] local = plain(10000, 32);
        double[] global = plain(1e6, 32);
        return new Fixture("gemma3-270m-v5", cfg, new ReferenceDecoder.Spec(64, 96, 3, 2, 1, 32, VOCAB, 1e-6, 1, false,
                true, true, true, (float) Math.sqrt(64), 1 / Math.sqrt(32), 0, new int[] {6, 6, 0},
                perLayer(3, l -> l == 2 ? global : local), true), true);
    }

    static ObjectNode json(String s) {
        try {
            return (ObjectNode) JSON.readTree(s);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    // ---- checkpoint tensors

    /**
     * Random tensors under their HF names for {@code s}, every value bf16-representable (so f32
     * and bf16 files hold the same numbers). Projections ~ 1/sqrt(fan_in), norm weights act as 1 ± 0.3.
     */
    static Map<String, SafetensorsTestWriter.T> tensors(ReferenceDecoder.Spec s, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        Map<String, SafetensorsTestWriter.T> out = new LinkedHashMap<>();
        int h = s.hidden();
        int q = s.heads() * s.headDim();
        int kv = s.kvHeads() * s.headDim();
        add(out, r, "model.embed_tokens.weight", 0, 1, s.vocab(), h);
        for (int l = 0; l < s.layers(); l++) {
            String p = "model.layers." + l + ".";
            add(out, r, p + "self_attn.q_proj.weight", 0, 1 / Math.sqrt(h), q, h);
            add(out, r, p + "self_attn.k_proj.weight", 0, 1 / Math.sqrt(h), kv, h);
            add(out, r, p + "self_attn.v_proj.weight", 0, 1 / Math.sqrt(h), kv, h);
            add(out, r, p + "self_attn.o_proj.weight", 0, 1 / Math.sqrt(q), h, q);
            add(out, r, p + "mlp.gate_proj.weight", 0, 1 / Math.sqrt(h), s.inter(), h);
            add(out, r, p + "mlp.up_proj.weight", 0, 1 / Math.sqrt(h), s.inter(), h);
            add(out, r, p + "mlp.down_proj.weight", 0, 1 / Math.sqrt(s.inter()), h, s.inter());
            double nm = 1 - s.normOffset();
            add(out, r, p + "input_layernorm.weight", nm, 0.3, h);
            add(out, r, p + "post_attention_layernorm.weight", nm, 0.3, h);
            if (s.qkvBias()) {
                add(out, r, p + "self_attn.q_proj.bias", 0, 0.5, q);
                add(out, r, p + "self_attn.k_proj.bias", 0, 0.5, kv);
                add(out, r, p + "self_attn.v_proj.bias", 0, 0.5, kv);
            }
            if (s.qkNorm()) {
                add(out, r, p + "self_attn.q_norm.weight", nm, 0.3, s.headDim());
                add(out, r, p + "self_attn.k_norm.weight", nm, 0.3, s.headDim());
            }
            if (s.sandwich()) {
                add(out, r, p + "pre_feedforward_layernorm.weight", nm, 0.3, h);
                add(out, r, p + "post_feedforward_layernorm.weight", nm, 0.3, h);
            }
        }
        add(out, r, "model.norm.weight", 1 - s.normOffset(), 0.3, h);
        if (!s.tied()) {
            add(out, r, "lm_head.weight", 0, 2 / Math.sqrt(h), s.vocab(), h);
        }
        return out;
    }

    private static void add(Map<String, SafetensorsTestWriter.T> out, SplittableRandom r, String name, double mean,
                            double std, long... shape) {
        long n = 1;
        for (long d : shape) {
            n *= d;
        }
        float[] v = new float[(int) n];
        double a = std * Math.sqrt(3);
        for (int i = 0; i < v.length; i++) {
            v[i] = (float) bf16(mean + (2 * r.nextDouble() - 1) * a);
        }
        out.put(name, new SafetensorsTestWriter.T(name, "F32", shape, v));
    }

    /** The values by name, for the reference. */
    static Map<String, float[]> values(Map<String, SafetensorsTestWriter.T> tensors) {
        Map<String, float[]> m = new LinkedHashMap<>();
        tensors.forEach((k, t) -> m.put(k, t.values()));
        return m;
    }

    /**
     * Writes {@code dir/config.json} (the fixture's text) and the tensors as {@code fileDtype}
     * ("F32" or "BF16"): one model.safetensors, or two shards with model.safetensors.index.json.
     */
    static void write(Path dir, Fixture f, Map<String, SafetensorsTestWriter.T> tensors, String fileDtype,
                      boolean sharded) throws IOException {
        Files.createDirectories(dir);
        Files.writeString(dir.resolve("config.json"), f.configJson(), StandardCharsets.UTF_8);
        List<SafetensorsTestWriter.T> all = new ArrayList<>();
        for (SafetensorsTestWriter.T t : tensors.values()) {
            all.add(new SafetensorsTestWriter.T(t.name(), fileDtype, t.shape(), t.values()));
        }
        if (!sharded) {
            SafetensorsTestWriter.write(dir.resolve("model.safetensors"), all);
            return;
        }
        int half = all.size() / 2;
        String a = "model-00001-of-00002.safetensors";
        String b = "model-00002-of-00002.safetensors";
        SafetensorsTestWriter.write(dir.resolve(a), all.subList(0, half));
        SafetensorsTestWriter.write(dir.resolve(b), all.subList(half, all.size()));
        ObjectNode index = JSON.createObjectNode();
        index.putObject("metadata").put("total_size", 0);
        ObjectNode map = index.putObject("weight_map");
        for (int i = 0; i < all.size(); i++) {
            map.put(all.get(i).name(), i < half ? a : b);
        }
        Files.writeString(dir.resolve("model.safetensors.index.json"), index.toString(), StandardCharsets.UTF_8);
    }
}
