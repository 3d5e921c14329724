package io.radixkv.cli.report;

/**
 * What the benchmark driver observed for one request. Times are {@link System#nanoTime}
 * values; {@code tokenNanos[i]} is when output token i became available (token 0 is the
 * first token, so {@code tokenNanos[0]} is the first-token time).
 *
 * @param id workload request id
 * @param promptTokens prompt length
 * @param cachedTokens prompt tokens whose KV came from the prefix cache
 * @param sentNanos when the request was handed to the engine
 * @param tokenNanos output token times (empty for a failed request that produced nothing)
 * @param finishNanos when the request finished (or failed)
 * @param failed whether the request failed (rejected, aborted, error)
 */
public record RequestRecord(int id, int promptTokens, int cachedTokens, long sentNanos, long[] tokenNanos,
                            long finishNanos, boolean failed) {
    public RequestRecord {
        if (promptTokens < 0 || cachedTokens < 0 || cachedTokens > promptTokens) {
            throw new IllegalArgumentException("request " + id + ": cachedTokens " + cachedTokens
                    + " must be in [0, promptTokens=" + promptTokens + "]");
        }
        tokenNanos = tokenNanos.clone();
        long prev = sentNanos;
        for (long t : tokenNanos) {
            if (t < prev) {
                throw new IllegalArgumentException("request " + id + ": token times must not decrease and not precede the send time");
            }
            prev = t;
        }
        if (finishNanos < prev) {
            throw new IllegalArgumentException("request " + id + ": finish time precedes its last token");
        }
    }

    public int outputTokens() {
        return tokenNanos.length;
    }

    /** Time to first token, or -1 without tokens. */
    public long ttftNanos() {
        return tokenNanos.length == 0 ? -1 : tokenNanos[0] - sentNanos;
    }

    public long e2eNanos() {
        return finishNanos - sentNanos;
    }

    @Override
    public long[] tokenNanos() {
        return tokenNanos.clone();
    }
}
