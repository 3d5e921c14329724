package io.radixkv.kernels;

/**
 * Attention parameters shared by decode and append prefill.
 *
 * @param numQoHeads query/output heads; a multiple of the cache's KV heads (GQA, MQA, MHA)
 * @param smScale softmax scale applied to q·k (usually 1/sqrt(head_dim))
 * @param logitsSoftCap soft cap ({@code cap * tanh(logit / cap)}) after scaling; 0 disables it
 */
public record AttentionParams(int numQoHeads, float smScale, float logitsSoftCap) {
    public AttentionParams {
        Checks.requirePositive("numQoHeads", numQoHeads);
        if (!Float.isFinite(smScale) || smScale <= 0f) {
            throw new IllegalArgumentException("smScale must be positive and finite, got " + smScale);
        }
        if (!Float.isFinite(logitsSoftCap) || logitsSoftCap < 0f) {
            throw new IllegalArgumentException("logitsSoftCap must be >= 0 and finite, got " + logitsSoftCap);
        }
    }

    /** Default scale 1/sqrt(headDim), no soft cap. */
    public static AttentionParams of(int numQoHeads, int headDim) {
        return new AttentionParams(numQoHeads, (float) (1.0 / Math.sqrt(headDim)), 0f);
    }
}
