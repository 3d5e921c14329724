package io.radixkv.engine;

import io.radixkv.model.SamplingParams;
import io.radixkv.model.TokenCounts;
import io.radixkv.sched.FinishReason;
import java.util.List;
import java.util.function.IntConsumer;
import java.util.function.IntFunction;

/**
 * The samples of one request for n > 1, as the engine forks them: sample i's handle, its
 * sampling parameters (seed + i) and its token listener. Sample 0 is the sequence that
 * prefills the prompt. Engine thread, except construction.
 */
final class SampleGroup {
    private final SamplingParams params;
    private final List<RequestHandle> handles;
    private final IntFunction<IntConsumer> listeners;

    SampleGroup(SamplingParams params, List<RequestHandle> handles, IntFunction<IntConsumer> listeners) {
        this.params = params;
        this.handles = List.copyOf(handles);
        this.listeners = listeners;
    }

    int n() {
        return handles.size();
    }

    RequestHandle handle(int i) {
        return handles.get(i);
    }

    /**
     * Sample {@code i}'s state, forked from sample 0's {@code first} before its first token: its
     * handle, the request's parameters with seed + i, its listener, and its own token counts,
     * log-probabilities (the prompt's, already computed, copied) and grammar position (the start).
     */
    RequestState state(int i, RequestState first, int[] prompt) {
        return new RequestState(handles.get(i), params.withSeed(params.seed() + i), listeners.apply(i),
                first.counts() == null ? null : new TokenCounts(prompt),
                first.logprobs() == null ? null : first.logprobs().forkBeforeFirstToken(),
                first.matcher() == null ? null : first.matcher().grammar().newMatcher(), null);
    }

    /**
     * Completes the samples that were never forked ({@code first} .. n-1) as sample 0 ended
     * before its prompt was prefilled: the same reason and error, no tokens.
     */
    void completeUnforked(int first, FinishReason reason, RequestStats stats, String error) {
        for (int i = first; i < handles.size(); i++) {
            RequestHandle h = handles.get(i);
            h.complete(new RequestResult(h.id(), new int[0], reason, stats, error));
        }
    }
}
