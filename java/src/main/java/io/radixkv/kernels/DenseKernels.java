package io.radixkv.kernels;

import java.lang.foreign.MemorySegment;

/**
 * Dense math of the model runner over host memory: f32 activations, weights f32 or bf16.
 * Every implementation validates all arguments (sizes, dtypes, aliasing, token ids,
 * positions) before computing and throws {@link IllegalArgumentException} naming the bad
 * value; a rejected call writes nothing.
 *
 * <p>Implementations: {@link CpuDenseKernels} (libradixkv: oneDNN GEMM, vectorized OpenMP
 * loops) and {@link JavaDenseKernels} (plain Java, double accumulation: the reference).
 */
public interface DenseKernels {
    /** Short name: "cpu" or "java". */
    String name();

    /**
     * {@code y[m, n] = x[m, k] · w[n, k]ᵀ} (plus the old y when {@code accumulate}). x and y f32;
     * w f32 or bf16, row-major. y must not overlap x or w. Native bf16 GEMMs with many rows
     * round x to bf16 (as bf16 inference does), so they differ from f32 math by ~2^-9 relative.
     */
    void linear(MemorySegment x, MemorySegment w, DType wDtype, MemorySegment y, long m, long n, long k,
                boolean accumulate);

    /** {@code y[r, :] = x[r, :] / sqrt(mean(x[r, :]²) + eps) * w}; y may be x itself (not a partial overlap). */
    void rmsnorm(MemorySegment x, MemorySegment w, MemorySegment y, long rows, int dim, float eps);

    /**
     * Rotary embedding in place, Llama/NeoX rotate-half layout: for pair (i, i + d/2) of every head,
     * angle = position · theta^(-2i/d). q: {@code [n, numQHeads, headDim]}, k: {@code [n, numKvHeads, headDim]},
     * positions int32[n] ≥ 0; headDim even.
     */
    void rope(MemorySegment q, MemorySegment k, MemorySegment positions, long numTokens, int numQHeads,
              int numKvHeads, int headDim, float theta);

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

    /** {@code out[r] = argmax(logits[r, :])}, the first maximum; NaNs never win unless the row is all NaN (then 0). */
    void argmax(MemorySegment logits, long rows, int vocab, MemorySegment out);
}
