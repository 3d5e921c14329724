package io.radixkv.cli;

import io.radixkv.cli.http.CompletionStream;
import io.radixkv.cli.http.OpenAiClient;
import io.radixkv.cli.report.RequestRecord;
import io.radixkv.cli.report.RunMetrics;
import io.radixkv.cli.workload.Workload;
import io.radixkv.cli.workload.Workloads;
import java.io.IOException;
import java.io.PrintWriter;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * {@code bench --url}: the same workload and schedule as in process, sent to an OpenAI-compatible
 * server as streamed {@code /v1/completions} with token-id prompts. It measures what a client
 * can: TTFT, inter-token and end-to-end latency from the stream, output tokens and (where the
 * server reports {@code cached_tokens}) the prefix-cache hit rate; pages and preemptions are the
 * server's business (n/a). A conversation's next turn sends the workload's stand-in reply (the
 * API returns text, not token ids).
 */
final class HttpBench {
    private HttpBench() {}

    static BenchRunner.Outcome run(BenchCommand.Settings s, PrintWriter log) {
        try (OpenAiClient client = new OpenAiClient(s.url())) {
            String model = s.servedModelName() != null ? s.servedModelName() : firstModel(client);
            Workload w = s.workload(Workloads.DEFAULT_VOCAB);
            testRequest(client, model, s.ignoreEos());
            log.printf(Locale.ROOT, "bench: server %s, model %s: %s (%d prompt tokens)%n", client.base(), model,
                    w.name(), w.promptTokens());
            log.flush();
            List<RequestRecord> records = Replay.run(w, s.timeScale(), s.maxDurationSeconds(), "server", log,
                    (r, prompt, done) -> Thread.ofVirtual().name("radixkv-bench-http-" + r.id()).start(() -> {
                        long t0 = System.nanoTime();
                        RequestRecord rec;
                        try {
                            rec = record(r.id(), prompt.length,
                                    client.streamCompletion(model, prompt, r.maxTokens(), s.ignoreEos()));
                        } catch (RuntimeException e) {
                            // the replay waits for every request: one that blew up still reports
                            rec = RequestRecord.failed(r.id(), prompt.length, t0, System.nanoTime(), Main.describe(e));
                        }
                        done.accept(rec, null);
                    }));
            RunMetrics m = RunMetrics.of("server", client.base().toString(), records, -1, -1, -1);
            log.printf(Locale.ROOT, "bench: server done in %.1f s (%d failed)%n", m.durationSeconds(), m.failed());
            log.flush();
            return new BenchRunner.Outcome(w, m, records, null, null, null, -1);
        }
    }

    /** The served model when the server serves exactly one, else an error asking for --served-model-name. */
    private static String firstModel(OpenAiClient client) {
        List<String> ids;
        try {
            ids = client.modelIds();
        } catch (IOException e) {
            throw new IllegalStateException("cannot list the models at " + client.base() + " (" + Main.describe(e)
                    + "); give --served-model-name", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
        if (ids.size() != 1) {
            throw new IllegalStateException("the server at " + client.base() + " serves " + ids
                    + "; pick one with --served-model-name");
        }
        return ids.get(0);
    }

    /**
     * One short request before the timed run (as vLLM's benchmark does): a wrong URL or model
     * fails here, once, with the server's answer, and the server's first-request costs stay out
     * of the numbers. Its random prompt shares no page with the workload.
     */
    private static void testRequest(OpenAiClient client, String model, boolean ignoreEos) {
        int[] prompt = new SplittableRandom(12345).ints(32, 1, Workloads.DEFAULT_VOCAB).toArray();
        CompletionStream.Result r = client.streamCompletion(model, prompt, 4, ignoreEos);
        if (!r.ok()) {
            throw new IllegalStateException("the test request to " + client.base() + " failed: " + r.error());
        }
    }

    /** The benchmark record of one streamed completion. */
    static RequestRecord record(int id, int promptLength, CompletionStream.Result r) {
        if (!r.ok()) {
            return RequestRecord.failed(id, promptLength, r.sentNanos(), r.endNanos(), r.error());
        }
        long[] events = r.eventNanos();
        int cached = r.cachedTokens() < 0 ? -1 : Math.min(r.cachedTokens(), promptLength);
        int output = r.completionTokens() >= 0 ? r.completionTokens() : events.length;
        return new RequestRecord(id, promptLength, cached, r.sentNanos(), events, output,
                Math.max(r.endNanos(), events[events.length - 1]), null);
    }
}
