package io.radixkv.engine;

import io.radixkv.sched.FinishReason;
import io.radixkv.sched.Sequence;
import java.util.concurrent.CompletableFuture;

/**
 * A submitted request: its eventual result and cancellation. Thread-safe. The result future
 * is completed on the engine thread (attach heavy continuations with the async variants).
 */
public final class RequestHandle {
    private final String id;
    private final CompletableFuture<RequestResult> result = new CompletableFuture<>();
    private final Runnable onCancel;
    private volatile Sequence sequence;
    private volatile boolean cancelAsked;

    RequestHandle(String id, Runnable onCancel) {
        this.id = id;
        this.onCancel = onCancel;
    }

    public String id() {
        return id;
    }

    public CompletableFuture<RequestResult> result() {
        return result;
    }

    public boolean isDone() {
        return result.isDone();
    }

    /**
     * Asks the engine to stop the request: it ends with {@link FinishReason#CANCELLED} at the
     * next step (its pages are released then), keeping the tokens generated so far. No effect
     * once it has finished. For one sample of a {@link MultiSampleHandle} it stops that sample
     * (one not yet forked ends as soon as it is); sample 0 carries the samples not yet forked
     * while the prompt is prefilled, so cancelling it then ends them too.
     */
    public void cancel() {
        cancelAsked = true;
        Sequence s = sequence;
        if (s != null && !result.isDone()) {
            s.requestCancel();
            onCancel.run();
        }
    }

    /**
     * The request's log-probabilities as far as computed, or null when it asked for none
     * ({@link GenerateRequest#logprobs()}).
     */
    public RequestLogprobs logprobs() {
        Sequence s = sequence;
        return s == null ? null : ((RequestState) s.attachment()).logprobs();
    }

    void bind(Sequence s) {
        this.sequence = s;
        if (cancelAsked && !result.isDone()) {
            s.requestCancel(); // cancelled before its sequence existed (a sample not yet forked)
        }
    }

    void complete(RequestResult r) {
        result.complete(r);
    }
}
