package io.radixkv.server;

import com.fasterxml.jackson.databind.JsonNode;
import io.radixkv.engine.Engine;
import io.radixkv.engine.GenerateRequest;
import io.radixkv.engine.MultiSampleHandle;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.function.IntPredicate;

/**
 * OpenAI's {@code n}: several choices for one prompt. The engine prefills the prompt once and
 * forks n samples from it (sample i draws from seed + i); each becomes a {@link Generation} of
 * its own (its own stop strings, finish reason and cancellation), and only the first reports
 * the prompt's tokens, so usage counts the prompt once and the completion tokens of every
 * choice. {@code best_of} is vLLM V1's: absent or equal to {@code n}.
 */
final class MultiSample {
    private MultiSample() {}

    /**
     * The request's {@code n}: absent or null is 1; otherwise an integer in 1 ..
     * {@code limit} (the engine's maxSamples, at most its maxRunning), else a 400 naming
     * {@code n}. {@code best_of}, when present, must equal it (400 naming {@code best_of}).
     */
    static int parse(JsonNode body, int limit) {
        int n = 1;
        JsonNode v = body.get("n");
        if (v != null && !v.isNull()) {
            if (!v.isIntegralNumber() || !v.canConvertToInt() || v.asInt() < 1 || v.asInt() > limit) {
                throw ApiException.badRequest("n", "'n' must be an integer in 1.." + limit + ", got " + v);
            }
            n = v.asInt();
        }
        JsonNode b = body.get("best_of");
        if (b != null && !b.isNull() && !(b.isIntegralNumber() && b.canConvertToInt() && b.asInt() == n)) {
            throw ApiException.badRequest("best_of", "'best_of' must equal 'n' (" + n + ") or be left out, got " + b
                    + ": choosing the best of more samples than are returned is not supported");
        }
        return n;
    }

    /** The most {@code n} this engine serves: its maxSamples, and no more than run at once. */
    static int limit(Engine engine) {
        return Math.min(engine.config().maxSamples(), engine.config().maxRunning());
    }

    /**
     * Submits one prompt for {@code n} samples and returns their generations in sample order.
     * Throws as {@link Generation#start} does.
     */
    static List<Generation> start(Engine engine, String id, int[] prompt, ParsedRequest req, int maxTokens, int n,
                                  TextModel text, Generation.Listener listener, IntPredicate fault) {
        GenerateRequest request = Generation.request(id, prompt, req, maxTokens, text);
        List<LinkedBlockingQueue<Integer>> queues = new ArrayList<>(n);
        List<java.util.function.IntConsumer> feeds = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            LinkedBlockingQueue<Integer> q = new LinkedBlockingQueue<>();
            queues.add(q);
            feeds.add(Generation.feed(q, fault));
        }
        MultiSampleHandle h = Generation.submit(() -> engine.submit(request, n,
                (sample, token) -> feeds.get(sample).accept(token)), all -> all.sample(0));
        List<Generation> gens = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            gens.add(Generation.of(h.sample(i), queues.get(i), prompt, i == 0 ? prompt.length : 0, req, text, listener));
        }
        return gens;
    }
}
