package io.radixkv.model;

import com.fasterxml.jackson.databind.JsonNode;
import io.radixkv.kernels.Bf16;
import io.radixkv.kernels.DType;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Collections;
import java.util.List;

/**
 * A decoder-only transformer as the one decoder ({@link LlamaModel}) runs it: pre-norm
 * residual blocks of RMSNorm, grouped-query attention ({@code heads} query heads sharing
 * {@code kvHeads} K/V heads) with rotate-half RoPE, and a gated MLP; what a family changes
 * is data in {@link #arch()} and, per layer, {@link #layerAttention()}.
 *
 * @param hidden residual width
 * @param intermediate MLP width (gate and up projections each produce this many features)
 * @param layers decoder layers
 * @param heads query heads
 * @param kvHeads K/V heads; divides {@code heads}
 * @param headDim per-head width; even (RoPE rotates pairs)
 * @param vocab vocabulary size; token ids are in [0, vocab)
 * @param rmsEps RMSNorm epsilon
 * @param tiedEmbeddings the output projection is the embedding table
 * @param maxPositions positions must be below this
 * @param arch the family's features
 * @param layerAttention per layer: global or sliding window, and its RoPE table ({@code layers} entries)
 */
public record ModelConfig(int hidden, int intermediate, int layers, int heads, int kvHeads, int headDim, int vocab,
                          float rmsEps, boolean tiedEmbeddings, int maxPositions, Architecture arch,
                          List<LayerAttention> layerAttention) {

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
        if (!Float.isFinite(rmsEps) || rmsEps < 0f) {
            throw new IllegalArgumentException("rmsEps must be >= 0 and finite, got " + rmsEps);
        }
        if (arch == null || layerAttention == null) {
            throw new IllegalArgumentException("arch and layerAttention must not be null");
        }
        layerAttention = List.copyOf(layerAttention);
        if (layerAttention.size() != layers) {
            throw new IllegalArgumentException("layerAttention has " + layerAttention.size() + " entries for " + layers
                    + " layers");
        }
        // Fused QKV / gate-up weight matrices must stay addressable with int rows.
        Math.multiplyExact(Math.multiplyExact(heads * headDim + 2 * kvHeads * headDim, hidden), 4);
        Math.multiplyExact(Math.multiplyExact(2 * intermediate, hidden), 4);
    }

    /** A plain Llama shape: every layer global with RoPE base {@code ropeTheta}. */
    public ModelConfig(int hidden, int intermediate, int layers, int heads, int kvHeads, int headDim, int vocab,
                       float ropeTheta, float rmsEps, boolean tiedEmbeddings, int maxPositions) {
        this(hidden, intermediate, layers, heads, kvHeads, headDim, vocab, rmsEps, tiedEmbeddings, maxPositions,
                Architecture.LLAMA, Collections.nCopies(Math.max(layers, 0),
                        LayerAttention.global(RopeSpec.plain(ropeTheta))));
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

    /** Softmax scale of q·k: {@code query_pre_attn_scalar^-0.5}, by default {@code head_dim^-0.5}. */
    public float smScale() {
        double s = arch.queryPreAttnScalar() > 0 ? arch.queryPreAttnScalar() : headDim;
        return (float) (1.0 / Math.sqrt(s));
    }

    /**
     * The factor embeddings are multiplied by (1 without {@link Architecture#scaleEmbeddings()}):
     * sqrt(hidden) rounded to the compute dtype, as transformers casts it to the weights' dtype
     * (bf16 weights turn sqrt(1152) = 33.94 into 34.0).
     */
    public float embedScale(DType computeDtype) {
        if (!arch.scaleEmbeddings()) {
            return 1f;
        }
        float s = (float) Math.sqrt(hidden);
        return switch (computeDtype) {
            case F32 -> s;
            case BF16 -> Bf16.round(s);
            case F16 -> Float.float16ToFloat(Float.floatToFloat16(s));
            default -> throw new IllegalArgumentException("compute dtype " + computeDtype + " is not f32, bf16 or f16");
        };
    }

    /** Number of parameters (the tied output projection counted once). */
    public long parameterCount() {
        long perLayer = (long) qkvDim() * hidden + (long) hidden * qDim() + 3L * intermediate * hidden + 2L * hidden
                + (arch.qkvBias() ? qkvDim() : 0) + (arch.qkNorm() ? 2L * headDim : 0)
                + (arch.sandwichNorms() ? 2L * hidden : 0);
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
        return new ModelConfig(hidden, intermediate, layers, heads, kvHeads, headDim, vocab, rmsEps, tied, maxPositions,
                arch, layerAttention);
    }

    /** A copy with other per-layer attention ({@code layers} entries). */
    public ModelConfig withLayerAttention(List<LayerAttention> perLayer) {
        return new ModelConfig(hidden, intermediate, layers, heads, kvHeads, headDim, vocab, rmsEps, tiedEmbeddings,
                maxPositions, arch, perLayer);
    }

    /** Reads a Hugging Face {@code config.json} ({@link HfConfig#read}). */
    public static ModelConfig fromHfConfig(Path configJson) throws IOException {
        return HfConfig.read(configJson);
    }

    /** Interprets a parsed HF {@code config.json} ({@link HfConfig#parse}). */
    public static ModelConfig fromHfConfig(JsonNode c) {
        return HfConfig.parse(c);
    }

    /** This config as an HF-style {@code config.json} tree ({@link HfConfig#toJson}). */
    public JsonNode toHfConfig() {
        return HfConfig.toJson(this);
    }
}
