package io.radixkv.engine;

import io.radixkv.cache.Namespace;
import io.radixkv.model.SamplingParams;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * The engine's start-up warm-up ({@link Engine#warmUp}): two greedy requests at once, so that
 * batched prefill and batched decode both run, of a short prompt and a few tokens each.
 * SGLang's server warms up with one request of a short prompt and 8 new tokens; llama.cpp's with
 * one decode. On 2 cores the first client's request otherwise ran beside the JIT compiler: its
 * time to first token was 0.52–0.91 s above the next requests' (docs/measurements/main-job.md).
 */
public final class EngineWarmup {
    static final int REQUESTS = 2;
    static final int PROMPT_TOKENS = 32;
    static final int NEW_TOKENS = 8;

    /**
     * What the warm-up ran.
     *
     * @param requests warm-up requests run
     * @param promptTokens prompt tokens prefilled, all requests together
     * @param generatedTokens tokens generated, all requests together
     * @param nanos wall time
     */
    public record Result(int requests, int promptTokens, int generatedTokens, long nanos) {}

    private EngineWarmup() {}

    /** @param maxPositions most KV positions one sequence may reach (sequence limit and pool) */
    static Result run(Engine engine, int maxPositions) {
        // a sequence reaches prompt + new - 1 positions: shrink both under a small limit
        int newTokens = Math.max(1, Math.min(NEW_TOKENS, maxPositions / 5));
        int promptLen = Math.max(1, Math.min(PROMPT_TOKENS, maxPositions + 1 - newTokens));
        int vocab = engine.modelConfig().vocab();
        SplittableRandom rnd = new SplittableRandom(0x5eed);
        long t0 = System.nanoTime();
        List<GenerateRequest> requests = new ArrayList<>(REQUESTS);
        for (int i = 0; i < REQUESTS; i++) {
            int[] prompt = new int[promptLen];
            for (int k = 0; k < promptLen; k++) {
                prompt[k] = vocab > 1 ? rnd.nextInt(1, vocab) : 0;
            }
            requests.add(new GenerateRequest("radixkv-warmup-" + i, prompt, Namespace.DEFAULT,
                    SamplingParams.greedy(newTokens)));
        }
        int generated = 0;
        for (RequestResult r : engine.runConcurrently(requests, false)) {
            if (!r.ok()) {
                throw new IllegalStateException("warm-up request " + r.id() + " ended " + r.reason()
                        + (r.error() == null ? "" : ": " + r.error()));
            }
            generated += r.outputTokens().length;
        }
        return new Result(REQUESTS, REQUESTS * promptLen, generated, System.nanoTime() - t0);
    }
}
