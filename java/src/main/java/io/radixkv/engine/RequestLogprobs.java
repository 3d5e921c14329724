package io.radixkv.engine;

import java.util.ArrayList;
import java.util.List;

/**
 * The log-probabilities of one request as the engine computes them ({@link RequestHandle#logprobs}).
 * The engine thread appends; any thread reads. Every prompt entry is in place before the first
 * generated token reaches the request's listener, and entry i of {@link #generated} before
 * token i does, so a listener's thread may read what it has been told about.
 */
public final class RequestLogprobs {
    private final LogprobOptions options;
    private final List<TokenLogprob> prompt = new ArrayList<>();
    private final List<TokenLogprob> generated = new ArrayList<>();

    RequestLogprobs(LogprobOptions options) {
        this.options = options;
    }

    /** A forked sample's: the same options and the prompt entries computed so far, nothing generated. */
    synchronized RequestLogprobs forkBeforeFirstToken() {
        RequestLogprobs fork = new RequestLogprobs(options);
        fork.prompt.addAll(prompt);
        return fork;
    }

    public LogprobOptions options() {
        return options;
    }

    /** Prompt tokens 1 .. n-1 (the first token has none), as far as computed. */
    public synchronized List<TokenLogprob> prompt() {
        return List.copyOf(prompt);
    }

    /** One entry per generated token, as far as generated. */
    public synchronized List<TokenLogprob> generated() {
        return List.copyOf(generated);
    }

    /** Entry {@code i} of {@link #generated()}. */
    public synchronized TokenLogprob generated(int i) {
        return generated.get(i);
    }

    /** Prompt positions whose next-token row has been computed (the next one wanted). */
    synchronized int promptDone() {
        return prompt.size();
    }

    synchronized void addPrompt(TokenLogprob lp) {
        prompt.add(lp);
    }

    synchronized void addGenerated(TokenLogprob lp) {
        generated.add(lp);
    }
}
