package io.radixkv.server;

import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.CounterWithCallback;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.radixkv.engine.EngineStats;
import io.radixkv.engine.RequestResult;
import io.radixkv.engine.RequestStats;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.function.Supplier;

/**
 * Prometheus metrics with vLLM's names under a prefix ({@code vllm:X} → {@code radixkv:X} by
 * default; {@code vllm} scrapes as vLLM's own names): per-request counters and latency histograms fed as requests finish,
 * engine gauges read from {@link EngineStats} at scrape time. A registry per server, so
 * several servers in one JVM (tests) never mix their numbers.
 */
final class ServerMetrics {
    static final String CONTENT_TYPE = PrometheusTextFormatWriter.CONTENT_TYPE;
    // vLLM's buckets (seconds)
    private static final double[] TTFT_BUCKETS = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
            1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
    private static final double[] ITL_BUCKETS = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0,
            2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0};
    private static final double[] E2E_BUCKETS = {0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0,
            50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

    private final PrometheusRegistry registry = new PrometheusRegistry();
    private final String modelName;
    private final String prefix;
    private final Counter promptTokens;
    private final Counter generationTokens;
    private final Counter cacheQueries;
    private final Counter cacheHits;
    private final Counter requestSuccess;
    private final Histogram ttft;
    private final Histogram interToken;
    private final Histogram e2e;
    private final Histogram queueTime;

    /** Registers series of a part beside the metrics here (LoRA): {@code how} gets the registry and the prefix. */
    void register(java.util.function.BiConsumer<PrometheusRegistry, String> how) {
        how.accept(registry, prefix);
    }

    ServerMetrics(String modelName, String prefix, Supplier<EngineStats> stats) {
        this.modelName = modelName;
        this.prefix = prefix;
        promptTokens = Counter.builder().name(prefix + ":prompt_tokens").help("Prefill tokens processed (prompt tokens)")
                .labelNames("model_name").register(registry);
        generationTokens = Counter.builder().name(prefix + ":generation_tokens").help("Generation tokens produced")
                .labelNames("model_name").register(registry);
        cacheQueries = Counter.builder().name(prefix + ":prefix_cache_queries")
                .help("Prompt tokens looked up in the prefix cache").labelNames("model_name").register(registry);
        cacheHits = Counter.builder().name(prefix + ":prefix_cache_hits")
                .help("Prompt tokens whose KV came from the prefix cache").labelNames("model_name").register(registry);
        requestSuccess = Counter.builder().name(prefix + ":request_success").help("Finished requests by finish reason")
                .labelNames("model_name", "finished_reason").register(registry);
        ttft = histogram(prefix + ":time_to_first_token_seconds", "Time to first token", TTFT_BUCKETS);
        interToken = histogram(prefix + ":inter_token_latency_seconds", "Time between consecutive output tokens",
                ITL_BUCKETS);
        e2e = histogram(prefix + ":e2e_request_latency_seconds", "Submission to last token", E2E_BUCKETS);
        queueTime = histogram(prefix + ":request_queue_time_seconds", "Time waiting before first admission",
                E2E_BUCKETS);
        gauge(modelName, prefix + ":num_requests_running", "Requests admitted to the engine", () -> stats.get().running());
        gauge(modelName, prefix + ":num_requests_waiting", "Requests waiting for admission", () -> stats.get().waiting());
        gauge(modelName, prefix + ":kv_pages_total", "KV pool size in pages", () -> stats.get().numPages());
        gauge(modelName, prefix + ":kv_pages_free", "KV pages free", () -> stats.get().freePages());
        gauge(modelName, prefix + ":kv_pages_cached", "KV pages owned by the prefix cache", () -> stats.get().cachedPages());
        gauge(modelName, prefix + ":kv_pages_used", "KV pages held privately by running requests", () -> {
            EngineStats s = stats.get();
            return s.numPages() - s.freePages() - s.cachedPages();
        });
        gauge(modelName, prefix + ":kv_cache_usage_perc", "Fraction of KV pages allocated (private + cached)", () -> {
            EngineStats s = stats.get();
            return (double) (s.numPages() - s.freePages()) / s.numPages();
        });
        counter(modelName, prefix + ":num_preemptions", "Requests preempted for lack of KV pages",
                () -> stats.get().preemptions());
        counter(modelName, prefix + ":kv_pages_evicted", "Cached KV pages evicted", () -> stats.get().evictedPages());
    }

    private Histogram histogram(String name, String help, double[] buckets) {
        return Histogram.builder().name(name).help(help).labelNames("model_name").classicOnly()
                .classicUpperBounds(buckets).register(registry);
    }

    private void gauge(String model, String name, String help, Supplier<Number> value) {
        GaugeWithCallback.builder().name(name).help(help).labelNames("model_name")
                .callback(cb -> cb.call(value.get().doubleValue(), model)).register(registry);
    }

    /**
     * A counter read from {@code value} at each scrape (for parts outside the server: KV events,
     * KV tier); {@code name} gets the prefix.
     */
    void counter(String name, String help, Supplier<Number> value) {
        counter(modelName, prefix + ":" + name, help, value);
    }

    private void counter(String model, String name, String help, Supplier<Number> value) {
        CounterWithCallback.builder().name(name).help(help).labelNames("model_name")
                .callback(cb -> cb.call(value.get().doubleValue(), model)).register(registry);
    }

    /** Records a finished request (any thread). */
    void finished(RequestResult r, String finishReason, int completionTokens) {
        requestSuccess.labelValues(modelName, finishReason).inc();
        generationTokens.labelValues(modelName).inc(completionTokens);
        RequestStats s = r.stats();
        if (s == null) {
            return;
        }
        promptTokens.labelValues(modelName).inc(s.promptTokens());
        if (s.queueNanos() >= 0) {
            // admitted at least once: its prompt was looked up in the cache
            cacheQueries.labelValues(modelName).inc(s.promptTokens());
            cacheHits.labelValues(modelName).inc(s.cachedPromptTokens());
            queueTime.labelValues(modelName).observe(s.queueNanos() / 1e9);
        }
        if (s.ttftNanos() >= 0) {
            ttft.labelValues(modelName).observe(s.ttftNanos() / 1e9);
        }
        for (long gap : s.interTokenNanos()) {
            interToken.labelValues(modelName).observe(gap / 1e9);
        }
        e2e.labelValues(modelName).observe(s.e2eNanos() / 1e9);
    }

    /** The Prometheus text exposition of every metric. */
    String scrape() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try {
            new PrometheusTextFormatWriter(false).write(out, registry.scrape());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out.toString(java.nio.charset.StandardCharsets.UTF_8);
    }
}
