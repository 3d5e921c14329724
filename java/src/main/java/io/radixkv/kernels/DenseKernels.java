package io.radixkv.kernels;

import io.radixkv.quant.BlockFormat;
import java.lang.foreign.MemorySegment;
import java.util.EnumSet;
import java.util.Set;

/**
 * Dense math of the model runner over host memory: f32 activations, weights f32 or bf16.
 * Every implementation validates all arguments (sizes, dtypes, aliasing, token ids,
 * positions) before computing and throws {@link IllegalArgumentException} naming the bad
 * value; a rejected call writes nothing.
 *
 * <p>Implementations: {@code CpuDenseKernels} (libradixkv: oneDNN GEMM, vectorized OpenMP
 * loops) and {@code JavaDenseKernels} (plain Java, double accumulation: the reference).
 */
public interface DenseKernels {
    /** Short name: "cpu", "cuda" or "java". */
    String name();

    /** The weight dtypes {@link #linear} and {@link #embedding} take (f32, bf16 and f16 unless said otherwise). */
    default Set<DType> weightDtypes() {
        return EnumSet.of(DType.F32, DType.BF16, DType.F16);
    }

    /**
     * {@code y[m, n] = x[m, k] · w[n, k]ᵀ} (plus the old y when {@code accumulate}). x and y f32;
     * w f32 or bf16, row-major. y must not overlap x or w. Native bf16 GEMMs with many rows
     * round x to bf16 (as bf16 inference does), so they differ from f32 math by ~2^-9 relative.
     */
    void linear(MemorySegment x, MemorySegment w, DType wDtype, MemorySegment y, long m, long n, long k,
                boolean accumulate);

    /**
     * Whether this implementation has a packed layout for {@code wDtype [n, k]} linear weights
     * ({@link #packLinearWeights}, {@link #linearPacked}): a rearrangement of the same bytes that
     * its decode GEMV streams faster. None by default.
     */
    default boolean packsLinearWeights(DType wDtype, long n, long k) {
        return false;
    }

    /**
     * Rearranges row-major {@code w [n, k]} in place into the packed layout ({@link
     * #packsLinearWeights} must be true; {@code unpack} reverses it).
     *
     * @throws UnsupportedOperationException where there is no packed layout for it
     */
    default void packLinearWeights(MemorySegment w, DType wDtype, long n, long k, boolean unpack) {
        throw new UnsupportedOperationException(name() + " dense kernels have no packed layout for " + wDtype
                + " [" + n + ", " + k + "]");
    }

    /**
     * {@link #linear} with weights in the packed layout: the same result up to the order of the
     * sums.
     *
     * @throws UnsupportedOperationException where there is no packed layout for them
     */
    default void linearPacked(MemorySegment x, MemorySegment w, DType wDtype, MemorySegment y, long m, long n, long k,
                              boolean accumulate) {
        throw new UnsupportedOperationException(name() + " dense kernels have no packed layout for " + wDtype
                + " [" + n + ", " + k + "]");
    }

    /** The block formats {@link #linearQuantized} and {@link #embeddingQuantized} take: none by default. */
    default Set<BlockFormat> quantizedFormats() {
        return EnumSet.noneOf(BlockFormat.class);
    }

    /**
     * {@code y[i, j] (+)= Σ_c x[i, c] · w[j, c]} for w {@code [n, k]} rows of {@code format} blocks as
     * ggml stores them; x rows {@code ldx} floats apart, y rows {@code ldy} apart ({@code ldy ≥ n}:
     * a band of a wider output; the columns past n are not written). Decode batches quantize x to 8
     * bits per block as llama.cpp does, so the result differs from the dequantized weights' f32
     * product by up to half a step of x's grid per value ({@link QuantChecks}).
     *
     * @throws UnsupportedOperationException where {@link #quantizedFormats} lacks the format
     */
    default void linearQuantized(MemorySegment x, long ldx, MemorySegment w, BlockFormat format, MemorySegment y,
                                 long ldy, long m, long n, long k, boolean accumulate) {
        throw new UnsupportedOperationException(name() + " dense kernels do not run " + format + " weights");
    }

    /**
     * {@code out[i, :] = dequantized row ids[i]} of a table {@code [vocab, dim]} of {@code format}
     * rows, bit-exactly as ggml dequantizes.
     *
     * @throws IllegalArgumentException for an id outside [0, vocab), naming the id and its index
     * @throws UnsupportedOperationException where {@link #quantizedFormats} lacks the format
     */
    default void embeddingQuantized(MemorySegment ids, long n, MemorySegment table, BlockFormat format, int vocab,
                                    int dim, MemorySegment out) {
        throw new UnsupportedOperationException(name() + " dense kernels do not run " + format + " weights");
    }

    /** {@code y[r, :] = x[r, :] / sqrt(mean(x[r, :]²) + eps) * w}; y may be x itself (not a partial overlap). */
    default void rmsnorm(MemorySegment x, MemorySegment w, MemorySegment y, long rows, int dim, float eps) {
        rmsnorm(x, w, y, rows, dim, eps, 0f);
    }

    /**
     * {@code y[r, :] = x[r, :] / sqrt(mean(x[r, :]²) + eps) * (weightOffset + w)}: weightOffset 0
     * is the usual {@code x̂·w}, 1 Gemma's {@code x̂·(1+w)}. y may be x itself (not a partial
     * overlap). Per-head q/k norms are rows = tokens·heads of dim = head_dim.
     */
    void rmsnorm(MemorySegment x, MemorySegment w, MemorySegment y, long rows, int dim, float eps, float weightOffset);

    /**
     * Rotary embedding in place, Llama/NeoX rotate-half layout: for pair (i, i + d/2) of every head,
     * angle = position · theta^(-2i/d). q: {@code [n, numQHeads, headDim]}, k: {@code [n, numKvHeads, headDim]},
     * positions int32[n] ≥ 0; headDim even.
     */
    void rope(MemorySegment q, MemorySegment k, MemorySegment positions, long numTokens, int numQHeads,
              int numKvHeads, int headDim, float theta);

    /**
     * The same rotation with {@code angle = position · invFreq[i]}, invFreq f64[headDim / 2]
     * finite and ≥ 0: any RoPE scaling (default, linear, llama3) or per-layer theta.
     */
    void ropeTable(MemorySegment q, MemorySegment k, MemorySegment positions, long numTokens, int numQHeads,
                   int numKvHeads, int headDim, MemorySegment invFreq);

    /** {@code out[r, i] = gelu_tanh(gateUp[r, i]) * gateUp[r, inter + i]} (GELU, tanh approximation); shapes as {@link #siluMul}. */
    void geluTanhMul(MemorySegment gateUp, MemorySegment out, long rows, int inter);

    /** {@code y[r, i] += bias[i]} for r &lt; rows, i &lt; n (f32); bias must not overlap y. */
    void addBias(MemorySegment y, MemorySegment bias, long rows, int n);

    /** {@code x[i] = cap·tanh(x[i] / cap)} for i &lt; n; cap &gt; 0 and finite. */
    void softCap(MemorySegment x, long n, float cap);

    /** {@code x[i] *= s} for i &lt; n; s finite. */
    void scale(MemorySegment x, long n, float s);

    /** {@code out[r, i] = silu(gateUp[r, i]) * gateUp[r, inter + i]}; gateUp {@code [rows, 2*inter]}, out {@code [rows, inter]}. */
    void siluMul(MemorySegment gateUp, MemorySegment out, long rows, int inter);

    /**
     * {@code out[i, :] = table[ids[i], :]}, table {@code [vocab, dim]} of f32 or bf16, ids int32[n].
     *
     * @throws IllegalArgumentException for an id outside [0, vocab), naming the id and its index
     */
    void embedding(MemorySegment ids, long n, MemorySegment table, DType dtype, int vocab, int dim, MemorySegment out);

    /** {@code y[i] += x[i]} for i &lt; n (f32). */
    void addInplace(MemorySegment y, MemorySegment x, long n);

    /**
     * Adds one projection's LoRA deltas to a batch of rows segmented by adapter slot ({@link
     * LoraBatch}: one call per projection for the whole batch, base-model rows untouched).
     *
     * @throws UnsupportedOperationException where these kernels do not run adapters (the CUDA ones)
     */
    default void lora(LoraBatch batch) {
        throw new UnsupportedOperationException("the " + name() + " dense kernels do not run LoRA adapters; serve"
                + " adapters on the cpu backend (--backend cpu)");
    }

    /** {@code out[r] = argmax(logits[r, :])}, the first maximum; NaNs never win unless the row is all NaN (then 0). */
    void argmax(MemorySegment logits, long rows, int vocab, MemorySegment out);
}
