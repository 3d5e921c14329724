package io.radixkv.kernels;

import java.lang.foreign.MemorySegment;

/**
 * Log-probabilities of rows of f32 logits in host memory: the log-softmax of the raw logits (no
 * temperature) at a target token, and each row's top-k tokens (ties by lower id). NaN logits
 * count as -inf. Values agree with a double-precision log-softmax within 1e-5.
 */
public interface LogprobKernels {
    /** The most top tokens a row may ask for (OpenAI's and vLLM's limit). */
    int MAX_TOP_K = 20;

    /**
     * @param logits f32 {@code [numRows, vocab]} in native host memory
     * @param rowIndex which rows of {@code logits}, one per result row
     * @param targets one token id per result row, in [0, vocab)
     * @param topK top tokens per row, 0..min({@link #MAX_TOP_K}, vocab)
     * @throws IllegalArgumentException for an index out of range, before anything runs
     */
    LogprobRows compute(MemorySegment logits, int numRows, int vocab, int[] rowIndex, int[] targets, int topK);

    /** The Java-side checks every implementation runs first. */
    static void check(MemorySegment logits, int numRows, int vocab, int[] rowIndex, int[] targets, int topK) {
        if (vocab <= 0 || numRows < 0) {
            throw new IllegalArgumentException("vocab must be positive and numRows not negative (" + vocab + ", "
                    + numRows + ")");
        }
        if (topK < 0 || topK > MAX_TOP_K || topK > vocab) {
            throw new IllegalArgumentException("topK = " + topK + " is outside [0, min(" + MAX_TOP_K + ", vocab "
                    + vocab + ")]");
        }
        if (rowIndex.length != targets.length) {
            throw new IllegalArgumentException(rowIndex.length + " row indices but " + targets.length + " targets");
        }
        Checks.requireBytes("logits", logits, (long) numRows * vocab * 4L);
        for (int r = 0; r < rowIndex.length; r++) {
            if (rowIndex[r] < 0 || rowIndex[r] >= numRows) {
                throw new IllegalArgumentException("row index " + rowIndex[r] + " is outside [0, " + numRows + ")");
            }
            if (targets[r] < 0 || targets[r] >= vocab) {
                throw new IllegalArgumentException("target " + targets[r] + " is outside the vocabulary [0, " + vocab
                        + ")");
            }
        }
    }
}
