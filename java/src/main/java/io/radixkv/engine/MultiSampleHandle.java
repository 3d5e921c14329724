package io.radixkv.engine;

import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;

/**
 * A submitted request for n samples ({@link Engine#submit(GenerateRequest, int,
 * SampleTokenListener)}): one {@link RequestHandle} per sample, each with its own result
 * (tokens, finish reason, stats) and its own cancellation, and {@link #cancel()} for all of
 * them. Sample i draws its tokens from seed + i, exactly as a request of its own with that seed
 * would. Thread-safe; results complete on the engine thread.
 */
public final class MultiSampleHandle {
    private final String id;
    private final List<RequestHandle> samples;

    MultiSampleHandle(String id, List<RequestHandle> samples) {
        this.id = Objects.requireNonNull(id, "id");
        this.samples = List.copyOf(samples);
    }

    /** The request's id (sample 0's; sample i's handle is named {@code id/i}). */
    public String id() {
        return id;
    }

    /** The number of samples, n. */
    public int n() {
        return samples.size();
    }

    /** Sample {@code i}'s handle. */
    public RequestHandle sample(int i) {
        return samples.get(i);
    }

    /** The samples' handles in sample order. */
    public List<RequestHandle> samples() {
        return samples;
    }

    /** Every sample's result, in sample order, once all have ended. */
    public CompletableFuture<List<RequestResult>> results() {
        CompletableFuture<?>[] all = samples.stream().map(RequestHandle::result).toArray(CompletableFuture[]::new);
        return CompletableFuture.allOf(all).thenApply(v -> samples.stream().map(h -> h.result().join()).toList());
    }

    public boolean isDone() {
        return samples.stream().allMatch(RequestHandle::isDone);
    }

    /** Cancels every sample ({@link RequestHandle#cancel()}): the request's pages are all released. */
    public void cancel() {
        for (RequestHandle h : samples) {
            h.cancel();
        }
    }
}
