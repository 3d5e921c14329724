package io.radixkv.cli.report;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * Results of one benchmark run (one prefix-cache setting).
 *
 * @param prefixCache "on" or "off"
 * @param ttft time to first token (successful requests)
 * @param itl inter-token latency: gaps between consecutive output tokens of a request
 * @param e2e end-to-end latency: send to finish (successful requests)
 * @param outputTokPerS output tokens of successful requests / wall time of the run
 * @param hitRate cached prompt tokens / prompt tokens (successful requests)
 * @param requests requests in the workload
 * @param failed requests that failed
 * @param promptTokens prompt tokens of successful requests
 * @param cachedTokens of those, tokens served from the prefix cache
 * @param outputTokens output tokens of successful requests
 * @param durationSeconds first send to last finish
 * @param pagesUsed peak KV pages in use (requests + cache), -1 when unknown
 * @param totalPages KV pages in the pool, -1 when unknown
 * @param preemptions requests preempted (KV freed and recomputed later)
 * @param ttftByRequestMs TTFT of each request in workload order (NaN for failed ones)
 */
public record RunMetrics(String prefixCache, LatencySummary ttft, LatencySummary itl, LatencySummary e2e,
                         double outputTokPerS, double hitRate, int requests, int failed, long promptTokens,
                         long cachedTokens, long outputTokens, double durationSeconds, long pagesUsed,
                         long totalPages, long preemptions, double[] ttftByRequestMs) {
    public RunMetrics {
        ttftByRequestMs = ttftByRequestMs.clone();
    }

    @Override
    public double[] ttftByRequestMs() {
        return ttftByRequestMs.clone();
    }

    /** Prompt tokens the engine prefilled (computed): prompt tokens minus cached ones. */
    public long computedPromptTokens() {
        return promptTokens - cachedTokens;
    }

    /** Aggregates per-request records. */
    public static RunMetrics of(String prefixCache, List<RequestRecord> records, long pagesUsed, long totalPages,
                                long preemptions) {
        List<RequestRecord> sorted = new ArrayList<>(records);
        sorted.sort(Comparator.comparingInt(RequestRecord::id));
        List<Long> ttft = new ArrayList<>();
        List<Long> itl = new ArrayList<>();
        List<Long> e2e = new ArrayList<>();
        long prompt = 0;
        long cached = 0;
        long output = 0;
        int failed = 0;
        long first = Long.MAX_VALUE;
        long last = Long.MIN_VALUE;
        double[] byRequest = new double[sorted.size()];
        for (int i = 0; i < sorted.size(); i++) {
            RequestRecord r = sorted.get(i);
            first = Math.min(first, r.sentNanos());
            last = Math.max(last, r.finishNanos());
            if (r.failed() || r.outputTokens() == 0) {
                failed++;
                byRequest[i] = Double.NaN;
                continue;
            }
            long[] t = r.tokenNanos();
            ttft.add(r.ttftNanos());
            byRequest[i] = r.ttftNanos() / 1e6;
            for (int k = 1; k < t.length; k++) {
                itl.add(t[k] - t[k - 1]);
            }
            e2e.add(r.e2eNanos());
            prompt += r.promptTokens();
            cached += r.cachedTokens();
            output += r.outputTokens();
        }
        double seconds = sorted.isEmpty() ? 0 : (last - first) / 1e9;
        return new RunMetrics(prefixCache, LatencySummary.ofNanos(toArray(ttft)), LatencySummary.ofNanos(toArray(itl)),
                LatencySummary.ofNanos(toArray(e2e)), seconds > 0 ? output / seconds : 0,
                prompt > 0 ? (double) cached / prompt : 0, sorted.size(), failed, prompt, cached, output, seconds,
                pagesUsed, totalPages, preemptions, byRequest);
    }

    private static long[] toArray(List<Long> xs) {
        return xs.stream().mapToLong(Long::longValue).toArray();
    }
}
