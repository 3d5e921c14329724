package io.radixkv.engine;

/**
 * Per-request timings and prompt accounting.
 *
 * @param queueNanos submission to first admission (-1 if never admitted)
 * @param ttftNanos submission to first output token (-1 if none)
 * @param interTokenNanos gaps between consecutive output tokens
 * @param e2eNanos submission to completion
 * @param promptTokens prompt length
 * @param cachedPromptTokens prompt tokens whose KV came from the prefix cache (first
 *     admission, including pages adopted from a concurrent request's prefill)
 * @param computedPromptTokens prompt tokens prefilled in the first admission
 *     ({@code cached + computed == promptTokens} unless it was preempted before its prompt was
 *     done; recompute after a preemption is counted in {@link EngineStats#prefillTokens()})
 * @param preemptions times the request was preempted (each one re-prefills its tokens, mostly
 *     from the cache)
 */
public record RequestStats(long queueNanos, long ttftNanos, long[] interTokenNanos, long e2eNanos, int promptTokens,
                           int cachedPromptTokens, int computedPromptTokens, int preemptions) {
    public RequestStats {
        interTokenNanos = interTokenNanos == null ? new long[0] : interTokenNanos.clone();
    }

    @Override
    public long[] interTokenNanos() {
        return interTokenNanos.clone();
    }
}
