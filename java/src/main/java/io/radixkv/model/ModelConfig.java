package io.radixkv.model;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Set;

/**
 * Shape of a Llama-architecture decoder: RMSNorm, rotary embeddings (rotate-half, base
 * {@code ropeTheta}), grouped-query attention ({@code heads} query heads sharing
 * {@code kvHeads} K/V heads), SwiGLU MLP, optionally tied input/output embeddings.
 *
 * @param hidden residual width
 * @param intermediate MLP width (gate and up projections each produce this many features)
 * @param layers decoder layers
 * @param heads query heads
 * @param kvHeads K/V heads; divides {@code heads}
 * @param headDim per-head width; even (RoPE rotates pairs)
 * @param vocab vocabulary size; token ids are in [0, vocab)
 * @param ropeTheta RoPE base
 * @param rmsEps RMSNorm epsilon
 * @param tiedEmbeddings the output projection is the embedding table
 * @param maxPositions positions must be below this
 */
public record ModelConfig(int hidden, int intermediate, int layers, int heads, int kvHeads, int headDim, int vocab,
                          float ropeTheta, float rmsEps, boolean tiedEmbeddings, int maxPositions) {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** HF {@code model_type}s with exactly this architecture (no biases, plain RoPE). */
    private static final Set<String> LLAMA_TYPES = Set.of("llama", "mistral");

    public ModelConfig {
        positive("hidden", hidden);
        positive("intermediate", intermediate);
        positive("layers", layers);
        positive("heads", heads);
        positive("kvHeads", kvHeads);
        positive("headDim", headDim);
        positive("vocab", vocab);
        positive("maxPositions", maxPositions);
        if (heads % kvHeads != 0) {
            throw new IllegalArgumentException("heads (" + heads + ") must be a multiple of kvHeads (" + kvHeads + ")");
        }
        if (headDim % 2 != 0) {
            throw new IllegalArgumentException("headDim must be even for rotary embeddings, got " + headDim);
        }
        if (!Float.isFinite(ropeTheta) || ropeTheta <= 0f) {
            throw new IllegalArgumentException("ropeTheta must be positive and finite, got " + ropeTheta);
        }
        if (!Float.isFinite(rmsEps) || rmsEps < 0f) {
            throw new IllegalArgumentException("rmsEps must be >= 0 and finite, got " + rmsEps);
        }
        // Fused QKV / gate-up weight matrices must stay addressable with int rows.
        Math.multiplyExact(Math.multiplyExact(qDim() + 2 * kvDim(), hidden), 4);
        Math.multiplyExact(Math.multiplyExact(2 * intermediate, hidden), 4);
    }

    private static void positive(String name, int v) {
        if (v <= 0) {
            throw new IllegalArgumentException(name + " must be positive, got " + v);
        }
    }

    /** Query width: heads * headDim. */
    public int qDim() {
        return heads * headDim;
    }

    /** K (or V) width: kvHeads * headDim. */
    public int kvDim() {
        return kvHeads * headDim;
    }

    /** Rows of the fused QKV projection: qDim + 2 * kvDim. */
    public int qkvDim() {
        return qDim() + 2 * kvDim();
    }

    /** Number of parameters (the tied output projection counted once). */
    public long parameterCount() {
        long perLayer = (long) qkvDim() * hidden + (long) hidden * qDim() + 3L * intermediate * hidden + 2L * hidden;
        long embed = (long) vocab * hidden;
        return embed + (tiedEmbeddings ? 0 : embed) + layers * perLayer + hidden;
    }

    /** Multiply-adds per token for the dense layers (excluding attention over the context), times 2. */
    public long flopsPerToken() {
        long perLayer = (long) qkvDim() * hidden + (long) hidden * qDim() + 3L * intermediate * hidden;
        return 2L * (layers * perLayer + (long) vocab * hidden);
    }

    /** A copy with tied or untied output embeddings. */
    public ModelConfig withTiedEmbeddings(boolean tied) {
        return new ModelConfig(hidden, intermediate, layers, heads, kvHeads, headDim, vocab, ropeTheta, rmsEps, tied,
                maxPositions);
    }

    /** Reads a Hugging Face {@code config.json} of a Llama-family model. */
    public static ModelConfig fromHfConfig(Path configJson) throws IOException {
        JsonNode root;
        try {
            root = JSON.readTree(configJson.toFile());
        } catch (IOException e) {
            throw new IOException("cannot parse " + configJson + ": " + e.getMessage(), e);
        }
        try {
            return fromHfConfig(root);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(configJson + ": " + e.getMessage(), e);
        }
    }

    /** Interprets a parsed HF {@code config.json}; unsupported architecture features are rejected, not ignored. */
    public static ModelConfig fromHfConfig(JsonNode c) {
        if (c == null || !c.isObject()) {
            throw new IllegalArgumentException("config.json must be a JSON object");
        }
        String type = c.path("model_type").asText("");
        if (!LLAMA_TYPES.contains(type)) {
            throw new IllegalArgumentException("model_type '" + type + "' is not supported (expected one of "
                    + LLAMA_TYPES + ")");
        }
        JsonNode scaling = c.get("rope_scaling");
        if (scaling != null && !scaling.isNull()) {
            throw new IllegalArgumentException("rope_scaling " + scaling + " is not supported (plain RoPE only)");
        }
        if (c.path("attention_bias").asBoolean(false) || c.path("mlp_bias").asBoolean(false)) {
            throw new IllegalArgumentException("attention_bias / mlp_bias are not supported");
        }
        JsonNode window = c.get("sliding_window");
        if (window != null && !window.isNull()) {
            throw new IllegalArgumentException("sliding_window attention is not supported");
        }
        String act = c.path("hidden_act").asText("silu");
        if (!act.equals("silu")) {
            throw new IllegalArgumentException("hidden_act '" + act + "' is not supported (silu only)");
        }
        int hidden = requiredInt(c, "hidden_size");
        int heads = requiredInt(c, "num_attention_heads");
        int kvHeads = c.has("num_key_value_heads") && !c.get("num_key_value_heads").isNull()
                ? requiredInt(c, "num_key_value_heads") : heads;
        int headDim;
        if (c.has("head_dim") && !c.get("head_dim").isNull()) {
            headDim = requiredInt(c, "head_dim");
        } else {
            if (hidden % heads != 0) {
                throw new IllegalArgumentException("hidden_size " + hidden + " is not divisible by num_attention_heads "
                        + heads + " and head_dim is not given");
            }
            headDim = hidden / heads;
        }
        return new ModelConfig(hidden, requiredInt(c, "intermediate_size"), requiredInt(c, "num_hidden_layers"), heads,
                kvHeads, headDim, requiredInt(c, "vocab_size"), (float) c.path("rope_theta").asDouble(10000.0),
                (float) c.path("rms_norm_eps").asDouble(1e-6), c.path("tie_word_embeddings").asBoolean(false),
                c.path("max_position_embeddings").asInt(4096));
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

    /** This config as an HF-style {@code config.json} tree (model_type llama). */
    public JsonNode toHfConfig() {
        var o = JSON.createObjectNode();
        o.put("model_type", "llama");
        o.putArray("architectures").add("LlamaForCausalLM");
        o.put("hidden_size", hidden);
        o.put("intermediate_size", intermediate);
        o.put("num_hidden_layers", layers);
        o.put("num_attention_heads", heads);
        o.put("num_key_value_heads", kvHeads);
        o.put("head_dim", headDim);
        o.put("vocab_size", vocab);
        o.put("rope_theta", (double) ropeTheta);
        o.put("rms_norm_eps", (double) rmsEps);
        o.put("tie_word_embeddings", tiedEmbeddings);
        o.put("max_position_embeddings", maxPositions);
        o.put("hidden_act", "silu");
        return o;
    }
}
