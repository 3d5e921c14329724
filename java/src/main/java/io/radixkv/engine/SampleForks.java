package io.radixkv.engine;

import io.radixkv.model.SamplingParams;
import io.radixkv.model.TokenCounts;
import io.radixkv.sched.Scheduler;
import io.radixkv.sched.Sequence;
import java.util.ArrayList;
import java.util.List;

/**
 * Forks the samples of a request for n > 1 once its prompt is prefilled: the prompt is
 * computed once, and each further sample starts from its pages ({@link Scheduler#fork}) with its
 * first token drawn from the same logits row as sample 0's, with its own seed (seed + i), so
 * every sample's tokens are those of a request of its own with that seed. Engine thread only.
 */
final class SampleForks {
    private final Scheduler scheduler;
    private final TokenStreamer streamer;

    SampleForks(Scheduler scheduler, TokenStreamer streamer) {
        this.scheduler = scheduler;
        this.streamer = streamer;
    }

    /**
     * Called for a sequence whose logits row {@code row} is about to give its next token: when its
     * prompt was just prefilled and it still carries samples to fork, forks them and streams their
     * first tokens (before sample 0's own, which the caller emits).
     */
    void forkAfterPrefill(Sequence parent, int row, long now) {
        RequestState a = (RequestState) parent.attachment();
        SampleGroup group = a.samples();
        if (group == null || parent.samples() <= 1 || parent.outputLength() != 0) {
            return;
        }
        List<Sequence> forked = new ArrayList<>();
        for (int i = group.n() - parent.samples() + 1; i < group.n(); i++) {
            RequestHandle h = group.handle(i);
            Sequence child = scheduler.fork(parent, h.id(), group.state(i, a, parent.prompt()));
            h.bind(child);
            if (child.status() != Sequence.Status.WAITING && !child.cancelRequested()) {
                forked.add(child); // a queued one prefills the prompt itself and samples then
            }
        }
        SamplingParams[] params = new SamplingParams[forked.size()];
        TokenCounts[] counts = a.counts() == null ? null : new TokenCounts[forked.size()];
        for (int k = 0; k < params.length; k++) {
            RequestState child = (RequestState) forked.get(k).attachment();
            params[k] = child.params();
            if (counts != null) {
                counts[k] = child.counts();
            }
        }
        int[] first = params.length == 0 ? null : streamer.sampleRow(row, params, counts);
        for (int k = 0; k < params.length; k++) {
            streamer.emit(forked.get(k), row, now, first, k, null);
        }
    }
}
