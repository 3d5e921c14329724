package io.radixkv.model;

/**
 * What a model family changes in the decoder, as data the one decoder follows (no code per
 * family). Per-layer attention kinds and RoPE tables live in {@link ModelConfig#layerAttention()}.
 *
 * @param modelType the HF {@code model_type} it was read from (names only; no behaviour keys off it)
 * @param norm how every RMSNorm applies its weight
 * @param qkvBias q/k/v projections carry biases (Qwen2)
 * @param qkNorm per-head RMSNorm of q and k over head_dim, before RoPE (Qwen3, Gemma 3)
 * @param sandwichNorms norms after attention and after the MLP too, before each residual add:
 *     {@code x += post_attn_norm(attn(in_norm x))}, {@code x += post_ff_norm(mlp(pre_ff_norm x))} (Gemma 3)
 * @param activation the gated MLP's activation of the gate
 * @param scaleEmbeddings embeddings multiplied by sqrt(hidden) in the compute dtype (Gemma 3)
 * @param queryPreAttnScalar attention scale is {@code queryPreAttnScalar^-0.5}; 0 means head_dim
 * @param finalLogitSoftCap c &gt; 0: logits become {@code c·tanh(logits/c)}; 0 disables it
 */
public record Architecture(String modelType, Norm norm, boolean qkvBias, boolean qkNorm, boolean sandwichNorms,
                           Activation activation, boolean scaleEmbeddings, float queryPreAttnScalar,
                           float finalLogitSoftCap) {
    /** RMSNorm weight: {@code x̂·w} or Gemma's {@code x̂·(1+w)}. */
    public enum Norm {
        WEIGHT(0f), ONE_PLUS_WEIGHT(1f);

        private final float offset;

        Norm(float offset) {
            this.offset = offset;
        }

        /** The constant added to the stored weight: {@code y = x̂·(offset + w)}. */
        public float weightOffset() {
            return offset;
        }
    }

    /** Activation of the gate in {@code act(gate)·up}. */
    public enum Activation { SILU, GELU_TANH }

    /** Plain Llama: x̂·w norms, no biases, SiLU, scale head_dim^-0.5, no caps. */
    public static final Architecture LLAMA = new Architecture("llama", Norm.WEIGHT, false, false, false,
            Activation.SILU, false, 0f, 0f);

    public Architecture {
        if (modelType == null || norm == null || activation == null) {
            throw new IllegalArgumentException("modelType, norm and activation must not be null");
        }
        if (!Float.isFinite(queryPreAttnScalar) || queryPreAttnScalar < 0) {
            throw new IllegalArgumentException("query_pre_attn_scalar must be > 0, got " + queryPreAttnScalar);
        }
        if (!Float.isFinite(finalLogitSoftCap) || finalLogitSoftCap < 0) {
            throw new IllegalArgumentException("final_logit_softcapping must be >= 0 and finite, got "
                    + finalLogitSoftCap);
        }
    }
}
