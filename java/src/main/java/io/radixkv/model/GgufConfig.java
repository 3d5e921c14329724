package io.radixkv.model;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.radixkv.checkpoint.CheckpointException;
import io.radixkv.checkpoint.gguf.GgmlType;
import io.radixkv.checkpoint.gguf.GgufFile;
import io.radixkv.checkpoint.gguf.GgufMetadata;
import io.radixkv.checkpoint.gguf.GgufTensor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Reads the model shape from a GGUF file's metadata ({@code general.architecture} and its
 * {@code <arch>.*} keys, as llama.cpp's converter writes them) by translating it into the
 * {@code config.json} fields {@link HfConfig} reads, so both paths share one set of family rules.
 * Supported: {@code llama}, {@code qwen2}, {@code qwen3}, {@code gemma3}. Every {@code <arch>.*}
 * key must be one this class maps or checks; any other is refused with one line naming it, as is
 * a value that radixkv cannot run exactly (another RoPE scaling, a value length unlike the key
 * length, a partial rotary dimension). {@code general.*}, {@code tokenizer.*} and other prefixes
 * are not model shape and are not read here.
 *
 * <p>Where a GGUF has no key, llama.cpp's choice applies: RoPE base 10000; for gemma3, local
 * layers with base 10000, every 6th layer global, and query scale {@code head_dim^-0.5}
 * ({@code (hidden/heads)^-0.5} for the 62-layer model, as llama.cpp decides by size). The vocabulary
 * size is {@code token_embd.weight}'s row count; embeddings are tied when {@code output.weight}
 * is absent. A llama file's {@code rope_freqs.weight} (F32, {@code head_dim/2} factors, as the
 * converter writes Llama 3.1+ {@code llama3} rope bands) divides each inverse frequency by its
 * factor, as llama.cpp's {@code freq_factors} do.
 */
final class GgufConfig {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** GGUF architecture to HF model_type. */
    private static final Map<String, String> MODEL_TYPES = Map.of("llama", "llama", "qwen2", "qwen2", "qwen3", "qwen3",
            "gemma3", "gemma3_text");

    /** The {@code <arch>.} keys read (the rest of a key after the prefix). */
    private static final Set<String> KNOWN = Set.of("context_length", "embedding_length", "block_count",
            "feed_forward_length", "vocab_size", "attention.head_count", "attention.head_count_kv",
            "attention.key_length", "attention.value_length", "attention.layer_norm_rms_epsilon", "rope.freq_base",
            "rope.dimension_count", "rope.scaling.type", "rope.scaling.factor", "rope.scaling.original_context_length",
            "rope.scaling.finetuned", "attention.sliding_window", "attention.sliding_window_pattern",
            "final_logit_softcapping", "attn_logit_softcapping");

    /** Keys that only gemma3 has (sliding layers, soft caps). */
    private static final Set<String> GEMMA_ONLY = Set.of("attention.sliding_window", "attention.sliding_window_pattern",
            "final_logit_softcapping", "attn_logit_softcapping");

    private GgufConfig() {}

    /** The tensor of per-frequency RoPE factors. */
    static final String ROPE_FREQS = "rope_freqs.weight";

    /** The config of the model {@code f} holds. */
    static ModelConfig read(GgufFile f) throws CheckpointException {
        ObjectNode hf = toHfConfig(f);
        ModelConfig c;
        try {
            c = HfConfig.parse(hf);
        } catch (IllegalArgumentException e) {
            throw new CheckpointException(f.file() + ": " + e.getMessage() + " (read from the GGUF metadata)", e);
        }
        return architecture(f).equals("llama") ? withRopeFreqs(f, c) : c;
    }

    /** {@code c} with the file's {@link #ROPE_FREQS} factors applied to every layer, if it has them. */
    private static ModelConfig withRopeFreqs(GgufFile f, ModelConfig c) throws CheckpointException {
        GgufTensor t = f.tensors().get(ROPE_FREQS);
        if (t == null) {
            return c;
        }
        int n = c.headDim() / 2;
        if (t.type() != GgmlType.F32 || t.ne().length != 1 || t.elements() != n) {
            throw new CheckpointException(f.file() + ": tensor " + ROPE_FREQS + " must be F32 with head_dim/2 = " + n
                    + " values, got " + t.type().label() + " " + Arrays.toString(t.ne()));
        }
        MemorySegment data = f.data(t);
        double[] factors = new double[n];
        for (int i = 0; i < n; i++) {
            float v = data.getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), i);
            if (!Float.isFinite(v) || v <= 0) {
                throw new CheckpointException(f.file() + ": tensor " + ROPE_FREQS + " value " + i + " is " + v
                        + " (each factor must be finite and positive)");
            }
            factors[i] = v;
        }
        return c.withLayerAttention(c.layerAttention().stream()
                .map(la -> new LayerAttention(la.slidingWindow(), la.rope().withFreqFactors(factors))).toList());
    }

    /** The GGUF architecture name ({@code general.architecture}). */
    static String architecture(GgufFile f) throws CheckpointException {
        GgufMetadata m = f.metadata();
        String arch = m.string("general.architecture");
        if (!MODEL_TYPES.containsKey(arch)) {
            throw new CheckpointException(f.file() + ": general.architecture '" + arch + "' is not supported (supported: "
                    + MODEL_TYPES.keySet().stream().sorted().toList() + ")");
        }
        return arch;
    }

    /** The metadata as the {@code config.json} fields of the same model. */
    static ObjectNode toHfConfig(GgufFile f) throws CheckpointException {
        GgufMetadata m = f.metadata();
        String arch = architecture(f);
        boolean gemma = arch.equals("gemma3");
        String p = arch + ".";
        for (String key : m.keys()) {
            if (key.startsWith(p)) {
                String k = key.substring(p.length());
                if (!KNOWN.contains(k) || (!gemma && GEMMA_ONLY.contains(k))) {
                    throw new CheckpointException(f.file() + ": metadata key " + key + " is not supported for "
                            + arch + " (radixkv cannot map it onto the model it runs)");
                }
            }
        }
        ObjectNode c = JSON.createObjectNode();
        c.put("model_type", MODEL_TYPES.get(arch));
        int hidden = m.integer(p + "embedding_length", 1);
        int layers = m.integer(p + "block_count", 1);
        int heads = perLayerInt(m, p + "attention.head_count");
        int kvHeads = m.has(p + "attention.head_count_kv") ? perLayerInt(m, p + "attention.head_count_kv") : heads;
        int headDim = m.integer(p + "attention.key_length", 1, heads > 0 && hidden % heads == 0 ? hidden / heads : 0);
        if (headDim <= 0) {
            throw new CheckpointException(f.file() + ": " + p + "attention.key_length is absent and "
                    + p + "embedding_length " + hidden + " is not a multiple of the " + heads + " heads");
        }
        int valueDim = m.integer(p + "attention.value_length", 1, headDim);
        if (valueDim != headDim) {
            throw new CheckpointException(f.file() + ": " + p + "attention.value_length " + valueDim + " differs from "
                    + p + "attention.key_length " + headDim + " (not supported)");
        }
        int ropeDim = m.integer(p + "rope.dimension_count", 1, headDim);
        if (ropeDim != headDim) {
            throw new CheckpointException(f.file() + ": " + p + "rope.dimension_count " + ropeDim
                    + " is not the head size " + headDim + " (partial rotary embeddings are not supported)");
        }
        GgufTensor embd = f.tensors().get("token_embd.weight");
        if (embd == null || embd.ne().length != 2) {
            throw new CheckpointException(f.file() + ": no 2-dimensional tensor token_embd.weight");
        }
        long vocab = embd.ne()[1];
        if (m.has(p + "vocab_size") && m.integer(p + "vocab_size", 1) != vocab) {
            throw new CheckpointException(f.file() + ": " + p + "vocab_size " + m.integer(p + "vocab_size", 1)
                    + " differs from token_embd.weight's " + vocab + " rows");
        }
        c.put("hidden_size", hidden);
        c.put("intermediate_size", perLayerInt(m, p + "feed_forward_length"));
        c.put("num_hidden_layers", layers);
        c.put("num_attention_heads", heads);
        c.put("num_key_value_heads", kvHeads);
        c.put("head_dim", headDim);
        c.put("vocab_size", vocab);
        c.put("max_position_embeddings", m.integer(p + "context_length", 1));
        c.put("rms_norm_eps", m.number(p + "attention.layer_norm_rms_epsilon"));
        c.put("tie_word_embeddings", !f.tensors().containsKey("output.weight"));
        c.put("rope_theta", m.number(p + "rope.freq_base", 10000));
        String scaling = m.has(p + "rope.scaling.type") ? m.string(p + "rope.scaling.type") : "none";
        switch (scaling) {
            case "none" -> c.putNull("rope_scaling");
            case "linear" -> c.putObject("rope_scaling").put("rope_type", "linear")
                    .put("factor", m.number(p + "rope.scaling.factor"));
            default -> throw new CheckpointException(f.file() + ": " + p + "rope.scaling.type '" + scaling
                    + "' is not supported (none, linear)");
        }
        if (gemma) {
            gemmaFields(m, p, c, hidden, heads, headDim, layers);
        }
        return c;
    }

    private static void gemmaFields(GgufMetadata m, String p, ObjectNode c, int hidden, int heads, int headDim,
                                    int layers) throws CheckpointException {
        c.put("sliding_window", m.integer(p + "attention.sliding_window", 1));
        c.put("rope_local_base_freq", 10000.0);
        String patternKey = p + "attention.sliding_window_pattern";
        if (m.get(patternKey) instanceof List<?> kinds) {
            var types = c.putArray("layer_types");
            for (Object k : kinds) {
                if (!(k instanceof Boolean sliding)) {
                    throw new CheckpointException(m.file() + ": metadata key " + patternKey
                            + " must be an integer or an array of bools");
                }
                types.add(sliding ? "sliding_attention" : "full_attention");
            }
        } else {
            c.put("sliding_window_pattern", m.integer(patternKey, 1, 6));
        }
        c.put("query_pre_attn_scalar", layers == 62 ? (double) hidden / heads : headDim);
        c.put("final_logit_softcapping", m.number(p + "final_logit_softcapping", 0));
    }

    /** An integer that llama.cpp allows per layer: a scalar, or an array whose entries are all equal. */
    private static int perLayerInt(GgufMetadata m, String key) throws CheckpointException {
        if (m.get(key) instanceof List<?> values) {
            Object first = values.isEmpty() ? null : values.get(0);
            for (Object v : values) {
                if (!(v instanceof Long) || !v.equals(first) || (Long) v < 1 || (Long) v > Integer.MAX_VALUE) {
                    throw new CheckpointException(m.file() + ": metadata key " + key
                            + " differs between layers or is not a positive integer (not supported)");
                }
            }
            if (first == null) {
                throw new CheckpointException(m.file() + ": metadata key " + key + " is an empty array");
            }
            return (int) (long) (Long) first;
        }
        return m.integer(key, 1);
    }
}
