package io.radixkv.kernels;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Constrained decoding's token masks over rows of f32 logits in host memory: for each masked
 * row, every token whose bit is clear gets the logit -inf (before any sampling parameter), so
 * greedy, temperature and top-p sampling all see only the allowed tokens. A mask is int32
 * words, bit {@code t & 31} of word {@code t >>> 5} for token t.
 */
public interface TokenBitmaskKernels {
    /**
     * @param logits f32 {@code [rows, vocab]}, masked in place
     * @param masks {@code masks[i]} applies to logits row {@code rowIndices[i]}; at least
     *     {@code ceil(vocab / 32)} words each (words past the vocabulary are ignored)
     * @param rowIndices distinct rows in {@code [0, rows)}, one per mask
     */
    void applyTokenBitmask(MemorySegment logits, int rows, int vocab, int[][] masks, int[] rowIndices);

    /** The plain-Java implementation (any memory): the reference the native kernel is tested against. */
    static TokenBitmaskKernels java() {
        return (logits, rows, vocab, masks, rowIndices) -> {
            check(logits, rows, vocab, masks, rowIndices);
            for (int i = 0; i < masks.length; i++) {
                long base = (long) rowIndices[i] * vocab;
                int[] m = masks[i];
                for (int t = 0; t < vocab; t++) {
                    if ((m[t >>> 5] >>> (t & 31) & 1) == 0) {
                        logits.setAtIndex(ValueLayout.JAVA_FLOAT, base + t, Float.NEGATIVE_INFINITY);
                    }
                }
            }
        };
    }

    /** The Java-side argument checks both implementations share. */
    static void check(MemorySegment logits, int rows, int vocab, int[][] masks, int[] rowIndices) {
        if (rows < 0 || vocab <= 0) {
            throw new IllegalArgumentException("rows must be >= 0 and vocab positive, got " + rows + ", " + vocab);
        }
        if (masks.length != rowIndices.length) {
            throw new IllegalArgumentException(masks.length + " masks for " + rowIndices.length + " row indices");
        }
        Checks.requireBytes("logits", logits, 4L * rows * vocab);
        int words = (vocab + 31) >>> 5;
        boolean[] seen = new boolean[rows];
        for (int i = 0; i < masks.length; i++) {
            if (masks[i].length < words) {
                throw new IllegalArgumentException("mask " + i + " has " + masks[i].length + " words; a vocabulary of "
                        + vocab + " needs " + words);
            }
            int r = rowIndices[i];
            if (r < 0 || r >= rows || seen[r]) {
                throw new IllegalArgumentException("row index " + r + " is outside [0, " + rows + ") or repeated");
            }
            seen[r] = true;
        }
    }
}
