package io.radixkv.model;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.radixkv.model.Architecture.Activation;
import io.radixkv.model.Architecture.Norm;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Reads a Hugging Face {@code config.json} into a {@link ModelConfig}: each supported
 * {@code model_type}'s rules (read from transformers' configuration and modeling files)
 * become data, with transformers' defaults for absent keys. Both the 4.x fields
 * ({@code rope_theta}, {@code rope_scaling}, {@code rope_local_base_freq},
 * {@code sliding_window_pattern}) and 5.x {@code rope_parameters} (one block, or one per
 * layer kind) are read. Anything radixkv cannot compute exactly (another architecture, a
 * {@code rope_type} other than default/linear/llama3, quantized weights, extra biases) is
 * refused with one line naming the field.
 */
public final class HfConfig {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String FULL = "full_attention";
    private static final String SLIDING = "sliding_attention";

    private HfConfig() {}

    /** Which layers slide, by family. */
    private enum WindowRule {
        /** Never (Llama). */
        NONE,
        /** Every layer when {@code sliding_window} is set; absent means 4096, null none (Mistral). */
        ALL_LAYERS,
        /** Only with {@code use_sliding_window}, layers from {@code max_window_layers} on (Qwen2, Qwen3). */
        QWEN,
        /** {@code layer_types}, else every layer but each {@code sliding_window_pattern}-th (Gemma 3). */
        GEMMA3
    }

    /** A family's rules and transformers' defaults. */
    private record Family(String modelType, String architecture, Norm norm, boolean qkvBias, boolean qkNorm,
                          boolean sandwich, String actKey, String defaultAct, Activation activation,
                          boolean scaleEmbeddings, double defaultTheta, boolean defaultTied, int defaultMaxPositions,
                          WindowRule windowRule) {}

    private static final Map<String, Family> FAMILIES = Map.of(
            "llama", new Family("llama", "LlamaForCausalLM", Norm.WEIGHT, false, false, false, "hidden_act", "silu",
                    Activation.SILU, false, 10000, false, 2048, WindowRule.NONE),
            "mistral", new Family("mistral", "MistralForCausalLM", Norm.WEIGHT, false, false, false, "hidden_act",
                    "silu", Activation.SILU, false, 10000, false, 131072, WindowRule.ALL_LAYERS),
            "qwen2", new Family("qwen2", "Qwen2ForCausalLM", Norm.WEIGHT, true, false, false, "hidden_act", "silu",
                    Activation.SILU, false, 10000, false, 32768, WindowRule.QWEN),
            "qwen3", new Family("qwen3", "Qwen3ForCausalLM", Norm.WEIGHT, false, true, false, "hidden_act", "silu",
                    Activation.SILU, false, 10000, false, 32768, WindowRule.QWEN),
            "gemma3_text", new Family("gemma3_text", "Gemma3ForCausalLM", Norm.ONE_PLUS_WEIGHT, false, true, true,
                    "hidden_activation", "gelu_pytorch_tanh", Activation.GELU_TANH, true, 1_000_000, true, 131072,
                    WindowRule.GEMMA3));

    /** Reads and interprets {@code configJson}; errors name the file. */
    public static ModelConfig read(Path configJson) throws IOException {
        JsonNode root;
        try {
            root = JSON.readTree(configJson.toFile());
        } catch (IOException e) {
            throw new IOException("cannot parse " + configJson + ": " + e.getMessage(), e);
        }
        try {
            return parse(root);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(configJson + ": " + e.getMessage(), e);
        }
    }

    /** Interprets a parsed {@code config.json}; unsupported features are refused, never ignored. */
    public static ModelConfig parse(JsonNode c) {
        if (c == null || !c.isObject()) {
            throw new IllegalArgumentException("config.json must be a JSON object");
        }
        String type = c.path("model_type").asText("");
        Family f = FAMILIES.get(type);
        if (f == null) {
            throw new IllegalArgumentException("model_type '" + type + "' is not supported (supported: "
                    + FAMILIES.keySet().stream().sorted().toList() + ")");
        }
        if (present(c, "quantization_config")) {
            throw new IllegalArgumentException("quantization_config (quant_method '"
                    + c.get("quantization_config").path("quant_method").asText("?")
                    + "') is not supported: radixkv runs f32/bf16/f16 weights only");
        }
        JsonNode archs = c.get("architectures");
        if (archs != null && archs.isArray()) {
            for (JsonNode a : archs) {
                if (!a.asText().equals(f.architecture())) {
                    throw new IllegalArgumentException("architectures '" + a.asText() + "' is not supported for model_type "
                            + type + " (expected " + f.architecture() + ")");
                }
            }
        }
        refuseTrue(c, "attention_bias");
        refuseTrue(c, "mlp_bias");
        refuseTrue(c, "use_bidirectional_attention");
        double partial = number(c, "partial_rotary_factor", 1.0);
        if (partial != 1.0) {
            throw new IllegalArgumentException("partial_rotary_factor " + partial + " is not supported (1.0 only)");
        }
        String act = present(c, f.actKey()) ? c.get(f.actKey()).asText() : f.defaultAct();
        if (!act.equals(f.defaultAct())) {
            throw new IllegalArgumentException(f.actKey() + " '" + act + "' is not supported for " + type + " (expected '"
                    + f.defaultAct() + "')");
        }
        int hidden = requiredInt(c, "hidden_size");
        int heads = requiredInt(c, "num_attention_heads");
        int kvHeads = present(c, "num_key_value_heads") ? requiredInt(c, "num_key_value_heads") : heads;
        int layers = requiredInt(c, "num_hidden_layers");
        int headDim;
        if (present(c, "head_dim")) {
            headDim = requiredInt(c, "head_dim");
        } else if (f.windowRule() == WindowRule.GEMMA3) {
            headDim = 256; // Gemma3TextConfig's default
        } else {
            if (heads <= 0 || hidden % heads != 0) {
                throw new IllegalArgumentException("hidden_size " + hidden + " is not divisible by num_attention_heads "
                        + heads + " and head_dim is not given");
            }
            headDim = hidden / heads;
        }
        float queryScalar = 0f;
        float finalCap = 0f;
        if (f.windowRule() == WindowRule.GEMMA3) {
            queryScalar = (float) number(c, "query_pre_attn_scalar", 256);
            if (!(queryScalar > 0)) {
                throw new IllegalArgumentException("query_pre_attn_scalar must be positive, got " + queryScalar);
            }
            // attn_logit_softcapping is not applied by transformers' Gemma 3 attention: ignored here too.
            finalCap = (float) number(c, "final_logit_softcapping", 0);
            if (!(finalCap >= 0)) {
                throw new IllegalArgumentException("final_logit_softcapping must be >= 0, got " + finalCap);
            }
        }
        Architecture arch = new Architecture(type, f.norm(), f.qkvBias(), f.qkNorm(), f.sandwich(), f.activation(),
                f.scaleEmbeddings(), queryScalar, finalCap);
        List<LayerAttention> la = layerAttention(c, f, layers);
        boolean tied = present(c, "tie_word_embeddings") ? bool(c, "tie_word_embeddings") : f.defaultTied();
        int maxPos = present(c, "max_position_embeddings") ? requiredInt(c, "max_position_embeddings")
                : f.defaultMaxPositions();
        return new ModelConfig(hidden, requiredInt(c, "intermediate_size"), layers, heads, kvHeads, headDim,
                requiredInt(c, "vocab_size"), (float) number(c, "rms_norm_eps", 1e-6), tied, maxPos, arch, la);
    }

    /** Per layer: window (by the family's rule) and RoPE (per layer kind). */
    private static List<LayerAttention> layerAttention(JsonNode c, Family f, int layers) {
        int window = 0;
        List<String> kinds = new ArrayList<>();
        switch (f.windowRule()) {
            case NONE -> fill(kinds, layers, FULL);
            case ALL_LAYERS -> {
                // MistralConfig: sliding_window=4096 when the key is absent; null disables it.
                window = c.has("sliding_window") ? optionalWindow(c) : 4096;
                fill(kinds, layers, window > 0 ? SLIDING : FULL);
            }
            case QWEN -> {
                // Qwen2/Qwen3Config: sliding_window is kept only when use_sliding_window is true.
                boolean use = present(c, "use_sliding_window") && bool(c, "use_sliding_window");
                window = use ? (c.has("sliding_window") ? optionalWindow(c) : 4096) : 0;
                if (present(c, "layer_types")) {
                    kinds = layerTypes(c, layers);
                } else {
                    int from = present(c, "max_window_layers") ? requiredInt(c, "max_window_layers") : 28;
                    for (int i = 0; i < layers; i++) {
                        kinds.add(window > 0 && i >= from ? SLIDING : FULL);
                    }
                }
            }
            case GEMMA3 -> {
                window = c.has("sliding_window") ? optionalWindow(c) : 4096;
                if (present(c, "layer_types")) {
                    kinds = layerTypes(c, layers);
                } else {
                    int pattern = present(c, "sliding_window_pattern") ? requiredInt(c, "sliding_window_pattern") : 6;
                    if (pattern <= 0) {
                        throw new IllegalArgumentException("sliding_window_pattern must be positive, got " + pattern);
                    }
                    for (int i = 0; i < layers; i++) {
                        kinds.add((i + 1) % pattern != 0 ? SLIDING : FULL);
                    }
                }
            }
            default -> throw new IllegalStateException();
        }
        if (window <= 0 && kinds.contains(SLIDING)) {
            throw new IllegalArgumentException("layer_types has sliding_attention layers but sliding_window is not set");
        }
        RopeSpec global;
        RopeSpec local;
        JsonNode params = c.get("rope_parameters");
        if (params != null && !params.isNull()) {
            // transformers 5.x: one block, or one per layer kind (Gemma 3).
            if (!params.isObject()) {
                throw new IllegalArgumentException("rope_parameters must be an object, got " + params);
            }
            if (params.has(FULL) || params.has(SLIDING)) {
                global = rope(params.path(FULL), "rope_parameters." + FULL, f.defaultTheta(), true);
                local = params.has(SLIDING) ? rope(params.get(SLIDING), "rope_parameters." + SLIDING, 10000, true)
                        : global;
            } else {
                global = rope(params, "rope_parameters", f.defaultTheta(), true);
                local = global;
            }
        } else {
            double theta = number(c, "rope_theta", f.defaultTheta());
            JsonNode scaling = c.get("rope_scaling");
            global = scaling == null || scaling.isNull() ? RopeSpec.plain(theta)
                    : rope(scaling, "rope_scaling", theta, false);
            // Gemma 3 (4.x): sliding layers use rope_local_base_freq and plain RoPE.
            local = f.windowRule() == WindowRule.GEMMA3 ? RopeSpec.plain(number(c, "rope_local_base_freq", 10000))
                    : global;
        }
        List<LayerAttention> out = new ArrayList<>(layers);
        for (String k : kinds) {
            out.add(k.equals(SLIDING) ? new LayerAttention(window, local) : LayerAttention.global(global));
        }
        return out;
    }

    private static void fill(List<String> kinds, int n, String kind) {
        for (int i = 0; i < n; i++) {
            kinds.add(kind);
        }
    }

    private static int optionalWindow(JsonNode c) {
        if (c.get("sliding_window").isNull()) {
            return 0;
        }
        int w = requiredInt(c, "sliding_window");
        if (w <= 0) {
            throw new IllegalArgumentException("sliding_window must be positive or null, got " + w);
        }
        return w;
    }

    private static List<String> layerTypes(JsonNode c, int layers) {
        JsonNode t = c.get("layer_types");
        if (!t.isArray() || t.size() != layers) {
            throw new IllegalArgumentException("layer_types must list " + layers + " layer kinds, got " + t);
        }
        List<String> out = new ArrayList<>();
        for (JsonNode k : t) {
            String s = k.asText();
            if (!s.equals(FULL) && !s.equals(SLIDING)) {
                throw new IllegalArgumentException("layer_types entry '" + s + "' is not supported (" + FULL + ", "
                        + SLIDING + ")");
            }
            out.add(s);
        }
        return out;
    }

    /** A rope block: 4.x {@code rope_scaling} (theta given beside it) or 5.x {@code rope_parameters} (theta inside). */
    private static RopeSpec rope(JsonNode r, String field, double theta, boolean thetaInside) {
        if (!r.isObject()) {
            throw new IllegalArgumentException(field + " must be an object, got " + r);
        }
        if (thetaInside) {
            theta = number(r, "rope_theta", theta);
        }
        String type = r.has("rope_type") ? r.get("rope_type").asText() : r.path("type").asText("default");
        double pf = number(r, "partial_rotary_factor", 1.0);
        if (pf != 1.0) {
            throw new IllegalArgumentException(field + ".partial_rotary_factor " + pf + " is not supported (1.0 only)");
        }
        try {
            return switch (type) {
                case "default" -> RopeSpec.plain(theta);
                case "linear" -> RopeSpec.linear(theta, requiredNumber(r, "factor", field));
                case "llama3" -> RopeSpec.llama3(theta, requiredNumber(r, "factor", field),
                        requiredNumber(r, "low_freq_factor", field), requiredNumber(r, "high_freq_factor", field),
                        (int) requiredNumber(r, "original_max_position_embeddings", field));
                default -> throw new IllegalArgumentException(field + ".rope_type '" + type
                        + "' is not supported (default, linear, llama3)");
            };
        } catch (IllegalArgumentException e) {
            throw e.getMessage().startsWith(field) ? e : new IllegalArgumentException(field + ": " + e.getMessage(), e);
        }
    }

    private static boolean present(JsonNode c, String field) {
        return c.has(field) && !c.get(field).isNull();
    }

    private static void refuseTrue(JsonNode c, String field) {
        if (present(c, field) && bool(c, field)) {
            throw new IllegalArgumentException(field + " true is not supported");
        }
    }

    private static boolean bool(JsonNode c, String field) {
        JsonNode n = c.get(field);
        if (!n.isBoolean()) {
            throw new IllegalArgumentException("config.json \"" + field + "\" must be true or false, got " + n);
        }
        return n.booleanValue();
    }

    private static double number(JsonNode c, String field, double dflt) {
        if (!present(c, field)) {
            return dflt;
        }
        JsonNode n = c.get(field);
        if (!n.isNumber()) {
            throw new IllegalArgumentException("config.json \"" + field + "\" must be a number, got " + n);
        }
        return n.doubleValue();
    }

    private static double requiredNumber(JsonNode c, String field, String where) {
        if (!present(c, field)) {
            throw new IllegalArgumentException(where + " lacks \"" + field + "\"");
        }
        return number(c, field, 0);
    }

    private static int requiredInt(JsonNode c, String field) {
        JsonNode n = c.get(field);
        if (n == null || n.isNull()) {
            throw new IllegalArgumentException("config.json lacks \"" + field + "\"");
        }
        if (!n.canConvertToInt() || !n.isIntegralNumber()) {
            throw new IllegalArgumentException("config.json \"" + field + "\" must be an integer, got " + n);
        }
        return n.intValue();
    }

    /**
     * A transformers-4.x-style {@code config.json} that {@link #parse} reads back into an equal
     * config (per-layer kinds as {@code layer_types} where a family has them); a config with
     * per-frequency RoPE factors ({@link RopeSpec.Scaling#FACTORS}) has none and is refused.
     */
    public static JsonNode toJson(ModelConfig m) {
        Architecture a = m.arch();
        Family f = FAMILIES.get(a.modelType());
        if (f == null) {
            throw new IllegalArgumentException("model_type '" + a.modelType() + "' has no config.json form");
        }
        ObjectNode o = JSON.createObjectNode();
        o.put("model_type", f.modelType());
        o.putArray("architectures").add(f.architecture());
        o.put("hidden_size", m.hidden());
        o.put("intermediate_size", m.intermediate());
        o.put("num_hidden_layers", m.layers());
        o.put("num_attention_heads", m.heads());
        o.put("num_key_value_heads", m.kvHeads());
        o.put("head_dim", m.headDim());
        o.put("vocab_size", m.vocab());
        o.put("rms_norm_eps", (double) m.rmsEps());
        o.put("tie_word_embeddings", m.tiedEmbeddings());
        o.put("max_position_embeddings", m.maxPositions());
        o.put(f.actKey(), f.defaultAct());
        LayerAttention global = m.layerAttention().stream().filter(l -> !l.sliding()).findFirst()
                .orElse(m.layerAttention().get(0));
        int window = m.layerAttention().stream().mapToInt(LayerAttention::slidingWindow).max().orElse(0);
        o.put("rope_theta", global.rope().theta());
        putScaling(o, global.rope());
        switch (f.windowRule()) {
            case NONE -> { }
            case ALL_LAYERS -> {
                if (window > 0) {
                    o.put("sliding_window", window);
                } else {
                    o.putNull("sliding_window");
                }
            }
            case QWEN, GEMMA3 -> {
                if (f.windowRule() == WindowRule.QWEN) {
                    o.put("use_sliding_window", window > 0);
                }
                if (window > 0) {
                    o.put("sliding_window", window);
                } else {
                    o.putNull("sliding_window");
                }
                var types = o.putArray("layer_types");
                for (LayerAttention l : m.layerAttention()) {
                    types.add(l.sliding() ? SLIDING : FULL);
                }
            }
            default -> throw new IllegalStateException();
        }
        if (f.windowRule() == WindowRule.GEMMA3) {
            m.layerAttention().stream().filter(LayerAttention::sliding).findFirst()
                    .ifPresent(l -> o.put("rope_local_base_freq", l.rope().theta()));
            o.put("query_pre_attn_scalar", (double) a.queryPreAttnScalar());
            if (a.finalLogitSoftCap() > 0) {
                o.put("final_logit_softcapping", (double) a.finalLogitSoftCap());
            } else {
                o.putNull("final_logit_softcapping");
            }
        }
        return o;
    }

    private static void putScaling(ObjectNode o, RopeSpec r) {
        if (r.scaling() == RopeSpec.Scaling.NONE) {
            o.putNull("rope_scaling");
            return;
        }
        if (r.scaling() == RopeSpec.Scaling.FACTORS) {
            throw new IllegalArgumentException("per-frequency RoPE factors (a GGUF rope_freqs tensor) have no "
                    + "config.json form");
        }
        ObjectNode s = o.putObject("rope_scaling");
        s.put("rope_type", r.scaling().hfName());
        s.put("factor", r.factor());
        if (r.scaling() == RopeSpec.Scaling.LLAMA3) {
            s.put("low_freq_factor", r.lowFreqFactor());
            s.put("high_freq_factor", r.highFreqFactor());
            s.put("original_max_position_embeddings", r.originalMaxPositions());
        }
    }
}
