package io.radixkv.cli.report;

/**
 * What the benchmark driver observed for one request. Times are {@link System#nanoTime}
 * values; {@code tokenNanos[i]} is when output event i arrived: one per token in process, one
 * per streamed chunk over HTTP (a chunk may carry several tokens), so {@code tokenNanos[0]} is
 * the first-token time and the gaps are the inter-token latencies as a streaming client sees
 * them.
 *
 * @param id workload request id
 * @param promptTokens prompt length
 * @param cachedTokens prompt tokens whose KV came from the prefix cache, or -1 when the server
 *     does not report it
 * @param sentNanos when the request was handed to the engine (or sent to the server)
 * @param tokenNanos output event times (empty for a failed request that produced nothing)
 * @param outputTokens output tokens generated (at least the events seen unless a server reports
 *     fewer; usually {@code tokenNanos.length})
 * @param finishNanos when the request finished (or failed)
 * @param error why the request failed (finish reason and message, HTTP status and body), or
 *     null when it ran to its end
 */
public record RequestRecord(int id, int promptTokens, int cachedTokens, long sentNanos, long[] tokenNanos,
                            int outputTokens, long finishNanos, String error) {
    public RequestRecord {
        if (promptTokens < 0 || cachedTokens < -1 || cachedTokens > promptTokens) {
            throw new IllegalArgumentException("request " + id + ": cachedTokens " + cachedTokens
                    + " must be in [0, promptTokens=" + promptTokens + "] or -1 (unknown)");
        }
        if (outputTokens < 0) {
            throw new IllegalArgumentException("request " + id + ": outputTokens must be >= 0, got " + outputTokens);
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

    /** A record with one event per output token; {@code failed} without a reason says "failed". */
    public RequestRecord(int id, int promptTokens, int cachedTokens, long sentNanos, long[] tokenNanos,
                         long finishNanos, boolean failed) {
        this(id, promptTokens, cachedTokens, sentNanos, tokenNanos, tokenNanos.length, finishNanos,
                failed ? "failed" : null);
    }

    /** A request that failed with {@code error} (never null) and produced nothing usable. */
    public static RequestRecord failed(int id, int promptTokens, long sentNanos, long finishNanos, String error) {
        return new RequestRecord(id, promptTokens, 0, sentNanos, new long[0], 0, Math.max(sentNanos, finishNanos),
                error == null || error.isBlank() ? "failed" : error);
    }

    public boolean failed() {
        return error != null;
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
