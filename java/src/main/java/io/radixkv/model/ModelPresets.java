package io.radixkv.model;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.List;
import java.util.Locale;

/**
 * Named model shapes for random-weight models: {@code tiny} and {@code small} (Llama shapes
 * with a 32,000-id vocabulary), and the three seed models with their exact shapes and family
 * features, read from their {@code config.json} fields ({@code llama-3.2-3b}:
 * meta-llama/Llama-3.2-3B-Instruct, {@code qwen3-4b}: Qwen/Qwen3-4B, {@code gemma-3-1b}:
 * google/gemma-3-1b-it), so benchmarks run the real model sizes where the weights cannot be
 * downloaded. The seed shapes are large (1-4 B parameters): use bf16 weights.
 */
public final class ModelPresets {
    private ModelPresets() {}

    public static final int VOCAB = 32000;
    private static final ObjectMapper JSON = new ObjectMapper();

    /** meta-llama/Llama-3.2-3B-Instruct config.json (architecture fields). */
    private static final String LLAMA_32_3B = """
            {"architectures": ["LlamaForCausalLM"], "attention_bias": false, "head_dim": 128, "hidden_act": "silu",
             "hidden_size": 3072, "intermediate_size": 8192, "max_position_embeddings": 131072, "mlp_bias": false,
             "model_type": "llama", "num_attention_heads": 24, "num_hidden_layers": 28, "num_key_value_heads": 8,
             "rms_norm_eps": 1e-05, "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
             "original_max_position_embeddings": 8192, "rope_type": "llama3"}, "rope_theta": 500000.0,
             "tie_word_embeddings": true, "vocab_size": 128256}""";

    /** Qwen/Qwen3-4B config.json (architecture fields). */
    private static final String QWEN3_4B = """
            {"architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "head_dim": 128, "hidden_act": "silu",
             "hidden_size": 2560, "intermediate_size": 9728, "max_position_embeddings": 40960,
             "max_window_layers": 36, "model_type": "qwen3", "num_attention_heads": 32, "num_hidden_layers": 36,
             "num_key_value_heads": 8, "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000,
             "sliding_window": null, "tie_word_embeddings": true, "use_sliding_window": false,
             "vocab_size": 151936}""";

    /** google/gemma-3-1b-it config.json (architecture fields). */
    private static final String GEMMA_3_1B = """
            {"architectures": ["Gemma3ForCausalLM"], "attention_bias": false, "attn_logit_softcapping": null,
             "final_logit_softcapping": null, "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh",
             "hidden_size": 1152, "intermediate_size": 6912, "max_position_embeddings": 32768,
             "model_type": "gemma3_text", "num_attention_heads": 4, "num_hidden_layers": 26,
             "num_key_value_heads": 1, "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06,
             "rope_local_base_freq": 10000, "rope_scaling": null, "rope_theta": 1000000, "sliding_window": 512,
             "sliding_window_pattern": 6, "vocab_size": 262144}""";

    /** For tests: 2 layers, hidden 64, 4 query / 2 KV heads of 16, MLP 128. */
    public static ModelConfig tiny() {
        return new ModelConfig(64, 128, 2, 4, 2, 16, VOCAB, 10000f, 1e-5f, false, 8192);
    }

    /**
     * The default demo/benchmark model (~125M parameters, GPT-2-small-sized: hidden 768,
     * 12 layers, 12 query / 4 KV heads of 64, MLP 2048). Sized so the prefix-caching benchmark
     * (48 requests, ~1024-token shared prompt + 32-128 unique tokens) runs with the cache off
     * and on in about 1-3 minutes on 2 cores while prefill dominates time to first token.
     * Measured (f32 weights, CPU backend, one thread): ~725 prefill tokens per CPU-second for
     * a 1024-token prompt, i.e. ~1,400 tokens/s on 2 idle cores; 52,800 prompt tokens with
     * the cache off take ~40 s. (hidden 512 / 8 layers ran ~2,000 tokens per CPU-second:
     * the whole benchmark in ~25 s, too short to show much.)
     */
    public static ModelConfig small() {
        return new ModelConfig(768, 2048, 12, 12, 4, 64, VOCAB, 10000f, 1e-5f, false, 8192);
    }

    /** Llama 3.2 3B: 28 layers, hidden 3072, 24 / 8 heads of 128, llama3 RoPE, tied (3.2 B parameters). */
    public static ModelConfig llama32_3b() {
        return fromJson(LLAMA_32_3B);
    }

    /** Qwen3 4B: 36 layers, hidden 2560, 32 / 8 heads of 128, q/k norms, tied (4.0 B parameters). */
    public static ModelConfig qwen3_4b() {
        return fromJson(QWEN3_4B);
    }

    /** Gemma 3 1B: 26 layers, hidden 1152, 4 / 1 heads of 256, 512-token windows on 5 of 6 layers (1.0 B parameters). */
    public static ModelConfig gemma3_1b() {
        return fromJson(GEMMA_3_1B);
    }

    private static ModelConfig fromJson(String json) {
        try {
            return HfConfig.parse(JSON.readTree(json));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public static List<String> names() {
        return List.of("tiny", "small", "llama-3.2-3b", "qwen3-4b", "gemma-3-1b");
    }

    /** Preset by name (see {@link #names()}; case and surrounding blanks are ignored). */
    public static ModelConfig byName(String name) {
        return switch (name.trim().toLowerCase(Locale.ROOT)) {
            case "tiny" -> tiny();
            case "small" -> small();
            case "llama-3.2-3b" -> llama32_3b();
            case "qwen3-4b" -> qwen3_4b();
            case "gemma-3-1b" -> gemma3_1b();
            default -> throw new IllegalArgumentException("unknown model preset '" + name + "' (expected one of "
                    + names() + ")");
        };
    }
}
