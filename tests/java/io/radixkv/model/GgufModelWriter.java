package io.radixkv.model;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.radixkv.checkpoint.gguf.GgufTestWriter;
import io.radixkv.quant.GgmlQuantReference;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;

/**
 * Writes a GGUF file of a model as llama.cpp's convert_hf_to_gguf.py would: the architecture's
 * metadata keys from the {@code config.json} fields, the tensors under GGUF names
 * ({@code token_embd}, {@code blk.N.attn_q}, ...), 2-D tensors in the file type and 1-D ones
 * (norms, biases) as F32, llama's q/k rows permuted per head into interleaved pairs, and gemma3's
 * norm weights stored as 1 + w. Written from the converter's rules, independently of the loader.
 */
final class GgufModelWriter {
    /** ggml's Q4_1, which the loader does not convert. */
    static final int Q4_1 = 3;

    private GgufModelWriter() {}

    /** HF tensor name to GGUF name (gguf-py's tensor map for these architectures). */
    static String name(String hf, boolean gemma) {
        if (hf.equals("model.embed_tokens.weight")) {
            return "token_embd.weight";
        }
        if (hf.equals("model.norm.weight")) {
            return "output_norm.weight";
        }
        if (hf.equals("lm_head.weight")) {
            return "output.weight";
        }
        String[] p = hf.split("\\.", 4); // model, layers, N, rest
        Map<String, String> parts = Map.ofEntries(Map.entry("self_attn.q_proj.weight", "attn_q.weight"),
                Map.entry("self_attn.k_proj.weight", "attn_k.weight"), Map.entry("self_attn.v_proj.weight", "attn_v.weight"),
                Map.entry("self_attn.q_proj.bias", "attn_q.bias"), Map.entry("self_attn.k_proj.bias", "attn_k.bias"),
                Map.entry("self_attn.v_proj.bias", "attn_v.bias"), Map.entry("self_attn.o_proj.weight", "attn_output.weight"),
                Map.entry("self_attn.q_norm.weight", "attn_q_norm.weight"),
                Map.entry("self_attn.k_norm.weight", "attn_k_norm.weight"), Map.entry("mlp.gate_proj.weight", "ffn_gate.weight"),
                Map.entry("mlp.up_proj.weight", "ffn_up.weight"), Map.entry("mlp.down_proj.weight", "ffn_down.weight"),
                Map.entry("input_layernorm.weight", "attn_norm.weight"),
                Map.entry("post_attention_layernorm.weight", gemma ? "post_attention_norm.weight" : "ffn_norm.weight"),
                Map.entry("pre_feedforward_layernorm.weight", "ffn_norm.weight"),
                Map.entry("post_feedforward_layernorm.weight", "post_ffw_norm.weight"));
        return "blk." + p[2] + "." + parts.get(p[3]);
    }

    /** Rows of a [rows, cols] matrix reordered per head as LlamaModel.permute does: (h, 2, d/2) -> (h, d/2, 2). */
    static float[] permute(float[] w, int heads, int cols) {
        int rows = w.length / cols;
        int d = rows / heads;
        float[] out = new float[w.length];
        for (int h = 0; h < heads; h++) {
            for (int half = 0; half < 2; half++) {
                for (int i = 0; i < d / 2; i++) {
                    int src = h * d + half * (d / 2) + i;
                    int dst = h * d + 2 * i + half;
                    System.arraycopy(w, src * cols, out, dst * cols, cols);
                }
            }
        }
        return out;
    }

    /**
     * The GGUF of {@code config} (a config.json tree) and its HF tensors; 2-D tensors as
     * {@code type} (F32, F16 or BF16 type id).
     */
    static Path write(Path file, String arch, JsonNode config, Map<String, SafetensorsTestWriter.T> tensors,
                      int type) throws IOException {
        return write(file, arch, config, tensors, type, true, null);
    }

    /**
     * As {@link #write(Path, String, JsonNode, Map, int)}, optionally without the converter's
     * transforms (permutation, 1 + w) and with one tensor ({@code oddOne}, an HF name) written as
     * Q4_1 blocks (zeros), a type the loader does not convert. {@code type} may also be Q8_0, Q4_0,
     * Q5_0, Q4_K or Q6_K, quantized by ggml's reference quantizers ({@link GgmlQuantReference}).
     */
    static Path write(Path file, String arch, JsonNode config, Map<String, SafetensorsTestWriter.T> tensors,
                      int type, boolean converterTransforms, String oddOne) throws IOException {
        return write(file, arch, config, tensors, type, converterTransforms, oddOne, llama3Factors(config));
    }

    /**
     * The factors llama.cpp's converter writes as {@code rope_freqs.weight} for a config with
     * llama3 {@code rope_scaling} (null for any other): per frequency {@code f = theta^(-2i/d)}
     * of wavelength {@code w = 2π/f}, 1 below {@code L/high_freq_factor}, {@code factor} above
     * {@code L/low_freq_factor}, and {@code 1 / ((1 - s)/factor + s)} with
     * {@code s = (L/w - low) / (high - low)} in between.
     */
    static float[] llama3Factors(JsonNode config) {
        JsonNode r = config.get("rope_scaling");
        if (r == null || r.isNull() || !r.path("rope_type").asText().equals("llama3")) {
            return null;
        }
        double factor = r.get("factor").asDouble();
        double low = r.get("low_freq_factor").asDouble();
        double high = r.get("high_freq_factor").asDouble();
        double len = r.get("original_max_position_embeddings").asDouble();
        int d = config.get("head_dim").asInt();
        float[] out = new float[d / 2];
        for (int i = 0; i < out.length; i++) {
            double wavelen = 2 * Math.PI * Math.pow(config.get("rope_theta").asDouble(), 2.0 * i / d);
            if (wavelen < len / high) {
                out[i] = 1f;
            } else if (wavelen > len / low) {
                out[i] = (float) factor;
            } else {
                double smooth = (len / wavelen - low) / (high - low);
                out[i] = (float) (1 / ((1 - smooth) / factor + smooth));
            }
        }
        return out;
    }

    /**
     * As {@link #write(Path, String, JsonNode, Map, int, boolean, String)} with {@code ropeFreqs}
     * (any length and values; null for none) as the {@code rope_freqs.weight} tensor. A llama3
     * {@code rope_scaling} writes no metadata keys, as the converter writes none.
     */
    static Path write(Path file, String arch, JsonNode config, Map<String, SafetensorsTestWriter.T> tensors,
                      int type, boolean converterTransforms, String oddOne, float[] ropeFreqs) throws IOException {
        boolean gemma = arch.equals("gemma3");
        String a = arch + ".";
        int heads = config.get("num_attention_heads").asInt();
        int kvHeads = config.get("num_key_value_heads").asInt();
        GgufTestWriter w = new GgufTestWriter().str("general.architecture", arch).str("general.name", "test model")
                .u32("general.file_type", 0)
                .u32(a + "context_length", config.get("max_position_embeddings").asLong())
                .u32(a + "embedding_length", config.get("hidden_size").asLong())
                .u32(a + "block_count", config.get("num_hidden_layers").asLong())
                .u32(a + "feed_forward_length", config.get("intermediate_size").asLong())
                .u32(a + "attention.head_count", heads)
                .u32(a + "attention.head_count_kv", kvHeads)
                .f32(a + "attention.layer_norm_rms_epsilon", (float) config.get("rms_norm_eps").asDouble())
                .f32(a + "rope.freq_base", (float) config.get("rope_theta").asDouble())
                .str("tokenizer.ggml.model", "gpt2");
        if (config.has("head_dim")) {
            w.u32(a + "attention.key_length", config.get("head_dim").asLong())
                    .u32(a + "attention.value_length", config.get("head_dim").asLong())
                    .u32(a + "rope.dimension_count", config.get("head_dim").asLong());
        }
        JsonNode scaling = config.get("rope_scaling");
        if (scaling != null && !scaling.isNull() && !scaling.path("rope_type").asText().equals("llama3")) {
            w.str(a + "rope.scaling.type", scaling.get("rope_type").asText())
                    .f32(a + "rope.scaling.factor", (float) scaling.get("factor").asDouble());
        }
        if (gemma) {
            w.u32(a + "attention.sliding_window", config.get("sliding_window").asLong())
                    .u32(a + "attention.sliding_window_pattern", config.get("sliding_window_pattern").asLong())
                    .f32(a + "final_logit_softcapping", (float) config.get("final_logit_softcapping").asDouble())
                    .f32(a + "attn_logit_softcapping", (float) config.get("attn_logit_softcapping").asDouble());
        }
        int hidden = config.get("hidden_size").asInt();
        for (SafetensorsTestWriter.T t : tensors.values()) {
            float[] v = t.values();
            boolean llama = arch.equals("llama") && converterTransforms;
            if (llama && t.name().endsWith("q_proj.weight")) {
                v = permute(v, heads, hidden);
            } else if (llama && t.name().endsWith("k_proj.weight")) {
                v = permute(v, kvHeads, hidden);
            }
            if (gemma && converterTransforms && t.name().endsWith("norm.weight")) {
                v = v.clone();
                for (int i = 0; i < v.length; i++) {
                    v[i] = 1f + v[i];
                }
            }
            long[] shape = t.shape();
            long[] ne = new long[shape.length];
            for (int i = 0; i < shape.length; i++) {
                ne[i] = shape[shape.length - 1 - i];
            }
            int tt = t.name().equals(oddOne) ? Q4_1 : shape.length == 1 ? GgufTestWriter.F32 : type;
            byte[] data = switch (tt) {
                case Q4_1 -> new byte[v.length / 32 * 20];
                case GgufTestWriter.Q8_0 -> GgmlQuantReference.q8_0(v);
                case GgufTestWriter.Q4_0 -> GgmlQuantReference.q4_0(v);
                case GgufTestWriter.Q5_0 -> GgmlQuantReference.q5_0(v);
                case GgufTestWriter.Q4_K -> GgmlQuantReference.q4_K(v);
                case GgufTestWriter.Q6_K -> GgmlQuantReference.q6_K(v);
                case GgufTestWriter.F32 -> GgufTestWriter.f32(v);
                case GgufTestWriter.F16 -> GgufTestWriter.f16(v);
                case GgufTestWriter.BF16 -> GgufTestWriter.bf16Exact(v);
                default -> throw new IllegalArgumentException("type " + tt);
            };
            w.tensor(name(t.name(), gemma), tt, data, ne);
        }
        if (ropeFreqs != null) {
            w.tensor("rope_freqs.weight", GgufTestWriter.F32, GgufTestWriter.f32(ropeFreqs), new long[] {ropeFreqs.length});
        }
        return w.write(file);
    }

    /** The fixture's config.json as a tree. */
    static ObjectNode config(FamilyFixtures.Fixture f) {
        return FamilyFixtures.json(f.configJson());
    }
}
