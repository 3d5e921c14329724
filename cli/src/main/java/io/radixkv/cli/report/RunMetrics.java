package io.radixkv.cli.report;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Results of one benchmark run (one prefix-cache setting).
 *
 * @param prefixCache "on" or "off" in process; "server" over HTTP (the server's own setting)
 * @param target "in-process", or the URL of the server the run was sent to
 * @param ttft time to first token (successful requests)
 * @param itl inter-token latency: gaps between consecutive output tokens of a request
 * @param e2e end-to-end latency: send to finish (successful requests)
 * @param outputTokPerS output tokens of successful requests / wall time of the run
 * @param hitRate cached prompt tokens / prompt tokens (successful requests), -1 when unknown (a
 *     server that does not report cached tokens)
 * @param requests requests in the workload
 * @param failed requests that failed
 * @param promptTokens prompt tokens of successful requests
 * @param cachedTokens of those, tokens served from the prefix cache, -1 when unknown
 * @param outputTokens output tokens of successful requests
 * @param durationSeconds first send to last finish
 * @param pagesUsed peak KV pages in use (requests + cache), -1 when unknown
 * @param totalPages KV pages in the pool, -1 when unknown
 * @param preemptions requests preempted (KV freed and recomputed later), -1 when unknown
 * @param ttftByRequestMs TTFT of each request in workload order (NaN for failed ones)
 * @param errors why requests failed: each distinct reason with its count, most frequent first
 */
public record RunMetrics(String prefixCache, String target, LatencySummary ttft, LatencySummary itl, LatencySummary e2e,
                         double outputTokPerS, double hitRate, int requests, int failed, long promptTokens,
                         long cachedTokens, long outputTokens, double durationSeconds, long pagesUsed,
                         long totalPages, long preemptions, double[] ttftByRequestMs,
                         Map<String, Integer> errors) {
    public static final String IN_PROCESS = "in-process";

    public RunMetrics {
        ttftByRequestMs = ttftByRequestMs.clone();
        errors = Collections.unmodifiableMap(new LinkedHashMap<>(errors));
    }

    /** The column header of this run in the table. */
    public String label() {
        return target.equals(IN_PROCESS) ? "cache " + prefixCache : "server";
    }

    @Override
    public double[] ttftByRequestMs() {
        return ttftByRequestMs.clone();
    }

    /** Prompt tokens the engine prefilled (computed): prompt tokens minus cached ones; -1 when unknown. */
    public long computedPromptTokens() {
        return cachedTokens < 0 ? -1 : promptTokens - cachedTokens;
    }

    /** Aggregates per-request records of an in-process run. */
    public static RunMetrics of(String prefixCache, List<RequestRecord> records, long pagesUsed, long totalPages,
                                long preemptions) {
        return of(prefixCache, IN_PROCESS, records, pagesUsed, totalPages, preemptions);
    }

    /**
     * Aggregates per-request records; cached tokens (and so the hit rate) are unknown when any
     * successful record does not know them.
     */
    public static RunMetrics of(String prefixCache, String target, List<RequestRecord> records, long pagesUsed,
                                long totalPages, long preemptions) {
        List<RequestRecord> sorted = new ArrayList<>(records);
        sorted.sort(Comparator.comparingInt(RequestRecord::id));
        List<Long> ttft = new ArrayList<>();
        List<Long> itl = new ArrayList<>();
        List<Long> e2e = new ArrayList<>();
        long prompt = 0;
        long cached = 0;
        long output = 0;
        boolean cacheKnown = true;
        int failed = 0;
        Map<String, Integer> errors = new HashMap<>();
        long first = Long.MAX_VALUE;
        long last = Long.MIN_VALUE;
        double[] byRequest = new double[sorted.size()];
        for (int i = 0; i < sorted.size(); i++) {
            RequestRecord r = sorted.get(i);
            first = Math.min(first, r.sentNanos());
            last = Math.max(last, r.finishNanos());
            if (r.failed() || r.tokenNanos().length == 0) {
                failed++;
                errors.merge(r.failed() ? oneLine(r.error()) : "no output token", 1, Integer::sum);
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
            cacheKnown &= r.cachedTokens() >= 0;
            cached += Math.max(0, r.cachedTokens());
            output += r.outputTokens();
        }
        double seconds = sorted.isEmpty() ? 0 : (last - first) / 1e9;
        Map<String, Integer> byCount = new LinkedHashMap<>();
        errors.entrySet().stream().sorted(Map.Entry.<String, Integer>comparingByValue().reversed()
                        .thenComparing(Map.Entry.comparingByKey()))
                .forEach(e -> byCount.put(e.getKey(), e.getValue()));
        if (!cacheKnown) {
            cached = -1;
        }
        return new RunMetrics(prefixCache, target, LatencySummary.ofNanos(toArray(ttft)), LatencySummary.ofNanos(toArray(itl)),
                LatencySummary.ofNanos(toArray(e2e)), seconds > 0 ? output / seconds : 0,
                cached < 0 ? -1 : prompt > 0 ? (double) cached / prompt : 0, sorted.size(), failed, prompt, cached, output, seconds,
                pagesUsed, totalPages, preemptions, byRequest, byCount);
    }

    /** A failure reason as one line (server error bodies may hold several). */
    private static String oneLine(String s) {
        return s.strip().replaceAll("\\s*\\R\\s*", " ");
    }

    private static long[] toArray(List<Long> xs) {
        return xs.stream().mapToLong(Long::longValue).toArray();
    }
}
