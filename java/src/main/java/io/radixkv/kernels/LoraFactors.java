package io.radixkv.kernels;

/**
 * One adapter slot's low-rank factors of one projection, for {@link DenseKernels#lora}: the
 * delta of a row is {@code scale · B (A x)}.
 *
 * @param a {@code [rank, k]} f32 row-major (host memory)
 * @param b {@code [n, rank]} f32 row-major (host memory)
 * @param rank the rank, at least 1
 * @param scale {@code lora_alpha / rank}, or {@code lora_alpha / sqrt(rank)} with rsLoRA
 */
public record LoraFactors(java.lang.foreign.MemorySegment a, java.lang.foreign.MemorySegment b, int rank,
                          float scale) {
    public LoraFactors {
        Checks.requirePositive("rank", rank);
        if (!Float.isFinite(scale)) {
            throw new IllegalArgumentException("scale must be finite, got " + scale);
        }
    }
}
