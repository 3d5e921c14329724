package io.radixkv.kernels;

/**
 * Attention parameters shared by decode and append prefill.
 *
 * @param numQoHeads query/output heads; a multiple of the cache's KV heads (GQA, MQA, MHA)
 * @param smScale softmax scale applied to q·k (usually 1/sqrt(head_dim))
 * @param logitsSoftCap soft cap ({@code cap * tanh(logit / cap)}) after scaling; 0 disables it
 * @param windowLeft sliding window in FlashInfer's convention: a query at KV position {@code q}
 *     sees only keys {@code k >= q - windowLeft} (a window of {@code windowLeft + 1} keys
 *     counting itself); -1 means no window. Keys before the window are never read.
 */
public record AttentionParams(int numQoHeads, float smScale, float logitsSoftCap, int windowLeft) {
    /** {@link #windowLeft} of attention without a sliding window. */
    public static final int NO_WINDOW = -1;

    public AttentionParams {
        Checks.requirePositive("numQoHeads", numQoHeads);
        if (!Float.isFinite(smScale) || smScale <= 0f) {
            throw new IllegalArgumentException("smScale must be positive and finite, got " + smScale);
        }
        if (!Float.isFinite(logitsSoftCap) || logitsSoftCap < 0f) {
            throw new IllegalArgumentException("logitsSoftCap must be >= 0 and finite, got " + logitsSoftCap);
        }
        if (windowLeft < NO_WINDOW) {
            throw new IllegalArgumentException("windowLeft must be -1 (no window) or >= 0, got " + windowLeft);
        }
    }

    /** Attention without a sliding window. */
    public AttentionParams(int numQoHeads, float smScale, float logitsSoftCap) {
        this(numQoHeads, smScale, logitsSoftCap, NO_WINDOW);
    }

    /** Default scale 1/sqrt(headDim), no soft cap, no window. */
    public static AttentionParams of(int numQoHeads, int headDim) {
        return new AttentionParams(numQoHeads, (float) (1.0 / Math.sqrt(headDim)), 0f);
    }

    /** These parameters with the given sliding window ({@code -1}: none). */
    public AttentionParams withWindowLeft(int windowLeft) {
        return new AttentionParams(numQoHeads, smScale, logitsSoftCap, windowLeft);
    }

    /** First KV position a query at position {@code pos} sees. */
    public long windowBegin(long pos) {
        return windowLeft < 0 || pos <= windowLeft ? 0 : pos - windowLeft;
    }
}
