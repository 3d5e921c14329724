package io.radixkv.kernels;

import java.lang.foreign.MemorySegment;

/**
 * Token sampling over rows of f32 logits in host memory: row r is softmax(logits / t[r]) cut
 * to the top-p[r] nucleus and drawn with the caller's uniform number u[r] (t[r] = 0: argmax).
 * The caller chooses u, so a token depends only on the request's seed and step, not on the
 * backend's threads.
 */
public interface SamplingKernels {
    /**
     * @param logits f32 {@code [rows, vocab]} in native host memory, rows = {@code temperature.length}
     * @return one token id per row
     */
    int[] sampleRows(MemorySegment logits, int vocab, float[] temperature, float[] topP, double[] uniform);
}
