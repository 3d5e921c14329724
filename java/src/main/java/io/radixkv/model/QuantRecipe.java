package io.radixkv.model;

import io.radixkv.quant.BlockFormat;
import java.util.Locale;

/**
 * How a model's matrices are held: as the checkpoint stores them, dequantized, or quantized at
 * load with llama.cpp's recipe for a file type ({@code llama_tensor_get_type} of its
 * {@code src/llama-quant.cpp}, followed for the tensors this decoder has and without an
 * importance matrix). Norm weights and biases always stay f32.
 *
 * <ul>
 *   <li>{@link #AS_STORED}: quantized GGUF tensors stay in their block format; f32/bf16/f16
 *       tensors become the weights dtype;
 *   <li>{@link #DEQUANTIZE}: every matrix becomes the weights dtype (quantized tensors are
 *       dequantized at load, bit-exactly as ggml);
 *   <li>{@link #Q8_0}, {@link #Q4_0}, {@link #Q4_K_M}: f32/bf16/f16 matrices are quantized at load
 *       (quantized GGUF tensors stay as stored). Q8_0: every matrix Q8_0. Q4_0: Q4_0, the output
 *       projection Q6_K. Q4_K_M: Q4_K; the output projection Q6_K; {@code v_proj} and
 *       {@code down_proj} Q6_K in the layers where llama.cpp's {@code use_more_bits} holds (the
 *       first and last eighth, and every third layer between). Token embeddings take the base
 *       format, or the output projection's when they are tied to it. A row length that is not a
 *       whole number of the chosen format's blocks falls back as llama.cpp does (Q4_K to Q5_0,
 *       Q6_K to Q8_0; else the weights dtype).
 * </ul>
 */
public enum QuantRecipe {
    AS_STORED(null),
    DEQUANTIZE(null),
    Q8_0(BlockFormat.Q8_0),
    Q4_0(BlockFormat.Q4_0),
    Q4_K_M(BlockFormat.Q4_K);

    private final BlockFormat base;

    QuantRecipe(BlockFormat base) {
        this.base = base;
    }

    /** Whether f32/bf16/f16 matrices are quantized at load. */
    public boolean quantizes() {
        return base != null;
    }

    /** The recipe of a {@code --weights-dtype} value q8_0, q4_0 or q4_k (Q4_K_M), or null for any other value. */
    public static QuantRecipe ofWeightsDtype(String name) {
        return switch (name.trim().toLowerCase(Locale.ROOT)) {
            case "q8_0" -> Q8_0;
            case "q4_0" -> Q4_0;
            case "q4_k", "q4_k_m" -> Q4_K_M;
            default -> null;
        };
    }

    /**
     * The format the recipe gives the Hugging Face tensor {@code hfName} with rows of {@code k}
     * values in a model of {@code layers} layers, or null where it stays dense (the weights
     * dtype): always null for {@link #AS_STORED} and {@link #DEQUANTIZE}.
     */
    public BlockFormat formatOf(String hfName, long k, int layers, boolean tiedEmbeddings) {
        if (base == null) {
            return null;
        }
        BlockFormat f = base;
        boolean output = hfName.equals("lm_head.weight") || (tiedEmbeddings && hfName.equals("model.embed_tokens.weight"));
        if (output) {
            if (k % base.blockElements() != 0) {
                f = BlockFormat.Q8_0;
            } else if (base != BlockFormat.Q8_0) {
                f = BlockFormat.Q6_K;
            }
        } else if (this == Q4_K_M && (hfName.endsWith(".self_attn.v_proj.weight") || hfName.endsWith(".mlp.down_proj.weight"))
                && useMoreBits(layerOf(hfName), layers)) {
            f = BlockFormat.Q6_K;
        }
        if (k % f.blockElements() != 0) {
            f = switch (f) {
                case Q4_K -> BlockFormat.Q5_0;
                case Q6_K -> BlockFormat.Q8_0;
                default -> f;
            };
        }
        return k % f.blockElements() == 0 ? f : null;
    }

    /** llama.cpp's use_more_bits: the first and last eighth of the layers, and every third one between. */
    static boolean useMoreBits(int layer, int layers) {
        return layer < layers / 8 || layer >= 7 * layers / 8 || (layer - layers / 8) % 3 == 2;
    }

    private static int layerOf(String hfName) {
        String prefix = "model.layers.";
        return Integer.parseInt(hfName.substring(prefix.length(), hfName.indexOf('.', prefix.length())));
    }
}
