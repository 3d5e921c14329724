package io.radixkv.bench;

import io.radixkv.cache.Namespace;
import io.radixkv.engine.Engine;
import io.radixkv.engine.EngineConfig;
import io.radixkv.engine.EngineStats;
import io.radixkv.engine.GenerateRequest;
import io.radixkv.engine.RequestHandle;
import io.radixkv.engine.RequestResult;
import io.radixkv.model.SamplingParams;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.HdrHistogram.Histogram;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The {@code prefix_caching} workload through the whole engine: {@code requests}
 * requests sharing a {@code prefixTokens}-token system prompt, each with 32..128 unique
 * suffix tokens, {@code maxTokens} greedy output tokens, arriving every {@code arrivalMs} ms;
 * prefix cache on vs off. One invocation serves the whole workload (time = makespan); every
 * invocation uses a fresh cache namespace, so it starts cold and the first request pays the
 * full prefill. Secondary results ({@code ttftMeanMs}, {@code ttftP50Ms}, {@code ttftP99Ms}:
 * time to first token; {@code prefillTokens}: positions computed; {@code hitRate}: cached
 * prompt fraction; {@code steps}, {@code forwardMs} / {@code stepMs}: engine steps and time in
 * the model vs the whole step) are per invocation, summed by JMH over the measured iterations: divide by
 * Cnt.
 */
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@State(Scope.Benchmark)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED"})
@Warmup(iterations = 1)
@Measurement(iterations = 3)
public class EnginePrefixCacheBench {
    @Param({"true", "false"})
    public boolean prefixCache;

    @Param({"tiny"})
    public String model;

    @Param({"16"})
    public int requests;

    @Param({"512"})
    public int prefixTokens;

    @Param({"8"})
    public int maxTokens;

    @Param({"16"})
    public int pageSize;

    @Param({"20"})
    public int arrivalMs;

    private Engine engine;
    private List<int[]> prompts;
    private int invocation;

    /** Per-iteration latency figures (JMH averages them over the measured iterations). */
    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.EVENTS)
    public static class Latency {
        public double ttftMeanMs;
        public double ttftP50Ms;
        public double ttftP99Ms;
        public double prefillTokens;
        public double hitRate;
        public double steps;
        public double forwardMs;
        public double stepMs;

        @Setup(Level.Iteration)
        public void clear() {
            ttftMeanMs = ttftP50Ms = ttftP99Ms = prefillTokens = hitRate = steps = forwardMs = stepMs = 0;
        }
    }

    @Setup(Level.Trial)
    public void setUp() {
        engine = Engine.start(EngineConfig.builder().model(model).backend("cpu").kvDtype("bf16").pageSize(pageSize)
                // room for every request's prompt and output at once (the cache-off case) plus slack
                .numPages(requests * (prefixTokens + 128 + maxTokens + 2 * pageSize) / pageSize + 64)
                .prefixCache(prefixCache)
                .maxBatchTokens(512).maxRunning(Math.max(16, requests)).build());
        SplittableRandom rnd = new SplittableRandom(42);
        int[] system = tokens(rnd, prefixTokens);
        prompts = new ArrayList<>();
        for (int i = 0; i < requests; i++) {
            int[] suffix = tokens(rnd, 32 + rnd.nextInt(97));
            int[] p = java.util.Arrays.copyOf(system, system.length + suffix.length);
            System.arraycopy(suffix, 0, p, system.length, suffix.length);
            prompts.add(p);
        }
    }

    private static int[] tokens(SplittableRandom rnd, int n) {
        int[] t = new int[n];
        for (int i = 0; i < n; i++) {
            t[i] = 1 + rnd.nextInt(31_999);
        }
        return t;
    }

    @Benchmark
    public long workload(Latency lat) throws Exception {
        Namespace ns = Namespace.ofSalt("invocation-" + invocation++);
        EngineStats before = engine.snapshot();
        List<RequestHandle> handles = new ArrayList<>();
        for (int i = 0; i < requests; i++) {
            handles.add(engine.submit(new GenerateRequest("r" + i, prompts.get(i), ns,
                    SamplingParams.greedy(maxTokens))));
            if (arrivalMs > 0 && i + 1 < requests) {
                Thread.sleep(arrivalMs);
            }
        }
        Histogram ttft = new Histogram(3);
        long tokens = 0;
        long cached = 0;
        long prompt = 0;
        for (RequestHandle h : handles) {
            RequestResult r = h.result().get(10, TimeUnit.MINUTES);
            if (!r.ok()) {
                throw new IllegalStateException("request failed: " + r);
            }
            ttft.recordValue(Math.max(1, r.stats().ttftNanos() / 1000));
            tokens += r.outputTokens().length;
            cached += r.stats().cachedPromptTokens();
            prompt += r.stats().promptTokens();
        }
        EngineStats s = engine.snapshot();
        lat.ttftMeanMs = ttft.getMean() / 1000.0;
        lat.ttftP50Ms = ttft.getValueAtPercentile(50) / 1000.0;
        lat.ttftP99Ms = ttft.getValueAtPercentile(99) / 1000.0;
        lat.prefillTokens = s.prefillTokens() - before.prefillTokens();
        lat.steps = s.steps() - before.steps();
        lat.forwardMs = (s.forwardNanos() - before.forwardNanos()) / 1e6;
        lat.stepMs = (s.stepNanos() - before.stepNanos()) / 1e6;
        lat.hitRate = (double) cached / prompt;
        return tokens;
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        engine.close();
    }
}
