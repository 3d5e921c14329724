package io.radixkv.engine;

/**
 * Which log-probabilities a request wants (OpenAI's {@code logprobs} / {@code top_logprobs}, vLLM's
 * {@code prompt_logprobs}). Values are the log-softmax of the model's raw logits, before
 * temperature or any other sampling parameter (vLLM's default, "raw_logprobs").
 *
 * @param topK per generated token: its log-probability and this many top tokens (0..20), or -1
 *     for none
 * @param promptTopK per prompt token after the first: its log-probability given the tokens before
 *     it and this many top tokens (0..20), or -1 for none. A request that wants them does not
 *     read or fill the prefix cache: a cached page has no logits, so the prompt is computed whole
 *     (as vLLM does)
 */
public record LogprobOptions(int topK, int promptTopK) {
    /** No log-probabilities. */
    public static final LogprobOptions NONE = new LogprobOptions(-1, -1);

    public LogprobOptions {
        check("topK", topK);
        check("promptTopK", promptTopK);
    }

    private static void check(String name, int k) {
        if (k < -1 || k > io.radixkv.kernels.LogprobKernels.MAX_TOP_K) {
            throw new IllegalArgumentException(name + " must be -1 (none) or in [0, "
                    + io.radixkv.kernels.LogprobKernels.MAX_TOP_K + "], got " + k);
        }
    }

    public boolean sampled() {
        return topK >= 0;
    }

    public boolean prompt() {
        return promptTopK >= 0;
    }

    public boolean any() {
        return sampled() || prompt();
    }
}
