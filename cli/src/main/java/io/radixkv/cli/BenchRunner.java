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
import io.radixkv.model.SamplingParams;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReferenceArray;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarStyle;

/**
 * Replays a workload through one {@link Engine} with arrivals in (scaled) real time: each
 * independent request is submitted at its arrival time, a dependent one (a conversation's next
 * turn) when its predecessor has finished plus the think time. Greedy decoding, no stop tokens,
 * so every request generates exactly its {@code maxTokens}.
 *
 * <p>Before timing, a short warm-up (in its own cache namespace, so it shares no prefix with the
 * workload) runs the same code paths, so JIT compilation does not land on whichever run goes
 * first.
 */
final class BenchRunner {
    /** A run that has not finished after this long is cut off; unfinished requests count as failed. */
    private static final long DEADLINE_SECONDS = 1800;

    record Outcome(Workload workload, RunMetrics metrics) {}

    private BenchRunner() {}

    static EngineConfig engineConfig(BenchCommand.Settings s, boolean prefixCache) {
        EngineConfig.Builder b = EngineConfig.builder().model(s.model()).kvDtype(s.kvDtype()).pageSize(s.pageSize())
                .prefixCache(prefixCache).backend(s.backend()).weightsDtype(s.weightsDtype());
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

    /** Why the engine would refuse these settings (a usage error), or null. */
    static String configError(BenchCommand.Settings s) {
        try {
            engineConfig(s, true);
            return null;
        } catch (IllegalArgumentException e) {
            return e.getMessage();
        }
    }

    static Outcome run(BenchCommand.Settings s, boolean prefixCache, PrintWriter log) {
        String label = prefixCache ? "on" : "off";
        try (Engine engine = Engine.start(engineConfig(s, prefixCache))) {
            Workload w = s.workload(engine.modelConfig().vocab());
            log.printf(Locale.ROOT, "bench: prefix cache %s: %s (%d prompt tokens), model %s, %d KV pages of %d tokens%n",
                    label, w.name(), w.promptTokens(), s.model(), engine.numPages(), s.pageSize());
            log.flush();
            warmUp(engine, w);
            List<RequestRecord> records = replay(engine, w, s.timeScale(), label, log);
            EngineStats st = engine.snapshot();
            RunMetrics m = RunMetrics.of(label, records, st.peakPagesAllocated(), st.numPages(), st.preemptions());
            log.printf(Locale.ROOT, "bench: prefix cache %s done in %.1f s (%d failed)%n", label, m.durationSeconds(),
                    m.failed());
            log.flush();
            return new Outcome(w, m);
        }
    }

    /** Two short requests through prefill and decode, outside the workload's namespace. */
    private static void warmUp(Engine engine, Workload w) {
        SplittableRandom rnd = new SplittableRandom(12345);
        int vocab = Math.min(engine.modelConfig().vocab(), 32000);
        int len = Math.min(256, Math.max(16, (int) (w.promptTokens() / Math.max(1, w.size()))));
        List<GenerateRequest> reqs = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            int[] p = new int[len];
            for (int k = 0; k < len; k++) {
                p[k] = rnd.nextInt(1, vocab);
            }
            reqs.add(new GenerateRequest("warmup-" + i, p, Namespace.ofSalt("radixkv-bench-warmup"),
                    SamplingParams.greedy(8)));
        }
        engine.runConcurrently(reqs);
    }

    private static List<RequestRecord> replay(Engine engine, Workload w, double timeScale, String label,
                                              PrintWriter log) {
        int n = w.size();
        AtomicReferenceArray<RequestRecord> records = new AtomicReferenceArray<>(n);
        long[] sent = new long[n];
        int[][] sentPrompts = new int[n][];
        int[][] outputs = new int[n][];
        CountDownLatch done = new CountDownLatch(n);
        List<List<WorkloadRequest>> dependents = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            dependents.add(new ArrayList<>());
        }
        for (WorkloadRequest r : w.requests()) {
            if (r.after() >= 0) {
                dependents.get(r.after()).add(r);
            }
        }
        ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(t -> {
            Thread th = new Thread(t, "radixkv-bench-arrivals");
            th.setDaemon(true);
            return th;
        });
        ProgressBar bar = CliSupport.interactive() ? new ProgressBarBuilder().setTaskName("cache " + label)
                .setInitialMax(n).setStyle(ProgressBarStyle.ASCII).continuousUpdate().build() : null;
        try {
            long start = System.nanoTime();
            // A submission task: sends request r, and when it ends records it and schedules its dependents.
            class Submit implements Runnable {
                final WorkloadRequest r;

                Submit(WorkloadRequest r) {
                    this.r = r;
                }

                @Override
                public void run() {
                    int[] prompt = livePrompt(r, w, sentPrompts, outputs);
                    sentPrompts[r.id()] = prompt;
                    long t0 = System.nanoTime();
                    sent[r.id()] = t0;
                    RequestHandle h;
                    try {
                        h = engine.submit(new GenerateRequest("req-" + r.id(), prompt,
                                SamplingParams.greedy(r.maxTokens())));
                    } catch (RuntimeException e) {
                        finish(failed(r, t0, System.nanoTime()));
                        return;
                    }
                    h.result().whenComplete((res, err) -> {
                        if (err == null) {
                            outputs[r.id()] = res.outputTokens();
                        }
                        finish(err != null ? failed(r, t0, System.nanoTime()) : record(r, prompt.length, t0, res));
                    });
                }

                private void finish(RequestRecord rec) {
                    records.set(r.id(), rec);
                    for (WorkloadRequest d : dependents.get(r.id())) {
                        timer.schedule(new Submit(d), Math.round(d.afterDelaySeconds() * timeScale * 1e9),
                                TimeUnit.NANOSECONDS);
                    }
                    if (bar != null) {
                        bar.step();
                    }
                    done.countDown();
                }
            }
            for (WorkloadRequest r : w.requests()) {
                if (r.after() < 0) {
                    long at = Math.round(r.arrivalSeconds() * timeScale * 1e9);
                    timer.schedule(new Submit(r), Math.max(0, start + at - System.nanoTime()), TimeUnit.NANOSECONDS);
                }
            }
            if (!done.await(DEADLINE_SECONDS, TimeUnit.SECONDS)) {
                log.println("bench: run cut off after " + DEADLINE_SECONDS + " s; unfinished requests count as failed");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for the workload", e);
        } finally {
            timer.shutdownNow();
            if (bar != null) {
                bar.close();
            }
        }
        List<RequestRecord> out = new ArrayList<>(n);
        long now = System.nanoTime();
        for (int i = 0; i < n; i++) {
            RequestRecord rec = records.get(i);
            WorkloadRequest r = w.requests().get(i);
            out.add(rec != null ? rec : failed(r, sent[i] != 0 ? sent[i] : now, now));
        }
        return out;
    }

    /**
     * The prompt to send: the workload's, except for a conversation's next turn whose
     * predecessor finished: then the prompt actually sent there, the reply actually generated
     * (instead of the workload's stand-in) and this turn's new message, as a chat client does.
     */
    static int[] livePrompt(WorkloadRequest r, Workload w, int[][] sentPrompts, int[][] outputs) {
        int a = r.after();
        if (r.replyTokens() == 0 || sentPrompts[a] == null || outputs[a] == null) {
            return r.prompt();
        }
        int[] own = r.prompt();
        int from = w.requests().get(a).promptLength() + r.replyTokens();
        int[] prev = sentPrompts[a];
        int[] reply = outputs[a];
        int[] p = new int[prev.length + reply.length + own.length - from];
        System.arraycopy(prev, 0, p, 0, prev.length);
        System.arraycopy(reply, 0, p, prev.length, reply.length);
        System.arraycopy(own, from, p, prev.length + reply.length, own.length - from);
        return p;
    }

    private static RequestRecord failed(WorkloadRequest r, long sent, long end) {
        return new RequestRecord(r.id(), r.promptLength(), 0, sent, new long[0], Math.max(sent, end), true);
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
        return new RequestRecord(r.id(), promptLength, cached, sent, tokens, finish, !res.ok());
    }
}
