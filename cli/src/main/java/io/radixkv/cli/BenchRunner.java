package io.radixkv.cli;

import io.radixkv.cache.Namespace;
import io.radixkv.cli.report.RequestRecord;
import io.radixkv.cli.report.RunMetrics;
import io.radixkv.cli.workload.Workload;
import io.radixkv.cli.workload.WorkloadRequest;
import io.radixkv.engine.Engine;
import io.radixkv.engine.EngineConfig;
import io.radixkv.engine.EngineStats;
import io.radixkv.engine.GenerateRequest;
import io.radixkv.engine.RequestHandle;
import io.radixkv.engine.RequestResult;
import io.radixkv.engine.RequestStats;
import io.radixkv.model.ModelConfig;
import io.radixkv.model.SamplingParams;
import io.radixkv.model.WeightsSummary;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.function.BiConsumer;
import picocli.CommandLine.Model.CommandSpec;

/**
 * Replays a workload through one {@link Engine} with arrivals in (scaled) real time: each
 * independent request is submitted at its arrival time, a dependent one (a conversation's next
 * turn) when its predecessor has finished plus the think time. Greedy decoding, no stop tokens,
 * so every request generates exactly its {@code maxTokens}.
 *
 * <p>Before timing, a short warm-up (in its own cache namespace, so it shares no prefix with the
 * workload) runs the same code paths, so JIT compilation does not land on whichever run goes
 * first; {@code llama_bench} repeats a whole repetition until the JIT is quiet ({@link JitWarmup}).
 */
final class BenchRunner {
    /**
     * One run: its per-request records, and the model (null over HTTP, where it is unknown).
     *
     * @param warmup what the warm-up did (null over HTTP)
     * @param timedJitMillis JIT compilation time while the workload ran, ms (-1 where unknown)
     */
    record Outcome(Workload workload, RunMetrics metrics, List<RequestRecord> records, ModelConfig model,
                   WeightsSummary weights, JitWarmup.Result warmup, long timedJitMillis) {}

    private BenchRunner() {}

    static EngineConfig engineConfig(BenchCommand.Settings s, boolean prefixCache) {
        EngineConfig.Builder b = EngineConfig.builder().model(s.model()).kvDtype(s.kvDtype()).pageSize(s.pageSize())
                .prefixCache(prefixCache).backend(s.backend()).weightsDtype(s.weightsDtype())
                .packWeights(s.packWeights()).weightsQuant(s.weightsQuant());
        if (s.pages() != null) {
            b.numPages(s.pages());
        }
        if (s.maxRunning() != null) {
            b.maxRunning(s.maxRunning());
        }
        if (s.maxBatchTokens() != null) {
            b.maxBatchTokens(s.maxBatchTokens());
        }
        return b.build();
    }

    static Outcome run(CommandSpec spec, BenchCommand.Settings s, boolean prefixCache, PrintWriter log) {
        String label = prefixCache ? "on" : "off";
        try (Engine engine = EngineOptions.start(spec, () -> engineConfig(s, prefixCache),
                BenchCommand.ENGINE_OPTIONS)) {
            Workload w = s.workload(engine.modelConfig().vocab());
            log.printf(Locale.ROOT, "bench: prefix cache %s: %s (%d prompt tokens), model %s, %d KV pages of %d tokens%n",
                    label, w.name(), w.promptTokens(), s.model(), engine.numPages(), s.pageSize());
            log.flush();
            JitWarmup jit = JitWarmup.ofThisJvm();
            JitWarmup.Result warm = warmUp(engine, w, jit, s.warmup());
            if (w.name().equals(BenchCommand.LLAMA_BENCH)) {
                log.printf(Locale.ROOT, "bench: warm-up %d repetition(s) (%s)%n", warm.repetitions(), warm.rule());
                log.flush();
            }
            long jit0 = jit.jitMillis();
            List<RequestRecord> records = Replay.run(w, s.timeScale(), s.maxDurationSeconds(), "cache " + label, log,
                    (r, prompt, done) -> send(engine, r, prompt, done));
            long timedJit = jit0 < 0 ? -1 : jit.jitMillis() - jit0;
            EngineStats st = engine.snapshot();
            RunMetrics m = RunMetrics.of(label, records, st.peakPagesAllocated(), st.numPages(), st.preemptions());
            log.printf(Locale.ROOT, "bench: prefix cache %s done in %.1f s (%d failed%s)%n", label, m.durationSeconds(),
                    m.failed(), timedJit < 0 ? "" : String.format(Locale.ROOT, "; JIT compiling for %.1f s of it",
                            timedJit / 1e3));
            log.flush();
            return new Outcome(w, m, records, engine.modelConfig(), engine.weightsSummary(), warm, timedJit);
        }
    }

    /**
     * Two short requests through prefill and decode, outside the workload's namespace. For
     * {@code llama_bench}, whole repetitions instead (llama.cpp's llama-bench warms up with one),
     * {@code warmup} of them or, for {@link JitWarmup#AUTO}, until the JIT is quiet.
     */
    private static JitWarmup.Result warmUp(Engine engine, Workload w, JitWarmup jit, int warmup) {
        SplittableRandom rnd = new SplittableRandom(12345);
        int vocab = Math.min(engine.modelConfig().vocab(), 32000);
        boolean llama = w.name().equals(BenchCommand.LLAMA_BENCH) && !w.requests().isEmpty();
        int len = llama ? w.requests().get(0).prompt().length
                : Math.min(256, Math.max(16, (int) (w.promptTokens() / Math.max(1, w.size()))));
        int maxTokens = llama ? w.requests().get(0).maxTokens() : 8;
        int[][] prompts = new int[llama ? 1 : 2][len];
        for (int[] p : prompts) {
            for (int k = 0; k < len; k++) {
                p[k] = rnd.nextInt(1, vocab);
            }
        }
        int[] round = {0};
        // llama_bench runs with the prefix cache off, so a repeated prompt is computed afresh
        Runnable repetition = () -> {
            List<GenerateRequest> reqs = new ArrayList<>();
            for (int i = 0; i < prompts.length; i++) {
                reqs.add(new GenerateRequest("warmup-" + round[0] + "-" + i, prompts[i],
                        Namespace.ofSalt("radixkv-bench-warmup"), SamplingParams.greedy(maxTokens)));
            }
            round[0]++;
            engine.runConcurrently(reqs);
        };
        return jit.run(llama ? warmup : 1, repetition);
    }

    /** Submits to the engine; the record is made when the request completes. */
    private static void send(Engine engine, WorkloadRequest r, int[] prompt, BiConsumer<RequestRecord, int[]> done) {
        long t0 = System.nanoTime();
        RequestHandle h = engine.submit(new GenerateRequest("req-" + r.id(), prompt,
                SamplingParams.greedy(r.maxTokens())));
        h.result().whenComplete((res, err) -> {
            if (err != null) {
                done.accept(RequestRecord.failed(r.id(), prompt.length, t0, System.nanoTime(), Main.describe(err)), null);
            } else {
                done.accept(record(r, prompt.length, t0, res), res.outputTokens());
            }
        });
    }

    /** Token times rebuilt from the engine's per-request stats (TTFT, then inter-token gaps). */
    static RequestRecord record(WorkloadRequest r, int promptLength, long sent, RequestResult res) {
        RequestStats st = res.stats();
        long[] itl = st.interTokenNanos();
        long[] tokens;
        if (st.ttftNanos() < 0) {
            tokens = new long[0];
        } else {
            tokens = new long[itl.length + 1];
            tokens[0] = sent + st.ttftNanos();
            for (int i = 0; i < itl.length; i++) {
                tokens[i + 1] = tokens[i] + Math.max(0, itl[i]);
            }
        }
        long last = tokens.length == 0 ? sent : tokens[tokens.length - 1];
        long finish = Math.max(last, sent + Math.max(0, st.e2eNanos()));
        int cached = Math.max(0, Math.min(st.cachedPromptTokens(), promptLength));
        return new RequestRecord(r.id(), promptLength, cached, sent, tokens, tokens.length, finish,
                res.ok() ? null : res.reason() + (res.error() == null ? "" : ": " + res.error()));
    }
}
