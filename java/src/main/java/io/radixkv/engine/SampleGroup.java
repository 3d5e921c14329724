package io.radixkv.engine;

import io.radixkv.model.SamplingParams;
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

    /** Sample {@code i}'s state: its handle, the request's parameters with seed + i, its listener. */
    RequestState state(int i) {
        return new RequestState(handles.get(i), params.withSeed(params.seed() + i), listeners.apply(i));
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
