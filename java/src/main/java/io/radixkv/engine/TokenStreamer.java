package io.radixkv.engine;

import io.radixkv.kernels.LogprobKernels;
import io.radixkv.kernels.SamplingKernels;
import io.radixkv.model.Sampler;
import io.radixkv.model.SamplingParams;
import io.radixkv.model.TokenCounts;
import io.radixkv.sched.Scheduler;
import io.radixkv.sched.Sequence;
import io.radixkv.sched.StepPlan;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.List;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * What leaves the engine: tokens sampled from a forward pass's logits and streamed to the
 * request's listener, and results completing the requests' futures. A failure of one
 * request's sampling or listener, Errors included, ends only that request (as ERROR, with
 * the throwable in its reason). Engine thread only (the probe may be
 * set from any thread).
 */
final class TokenStreamer {
    private static final Logger LOG = LogManager.getLogger(TokenStreamer.class);

    private final Scheduler scheduler;
    private final ModelRunner runner;
    private final SamplingKernels sampling; // null: rows are sampled in Java
    private final EngineCounters counters;
    private final LogprobKernels logprobs; // null: the backend computes none (requests wanting them are refused)
    private final ConstrainedRows constrained;
    private volatile Engine.LogitsProbe probe;

    TokenStreamer(Scheduler scheduler, ModelRunner runner, SamplingKernels sampling, EngineCounters counters,
                  LogprobKernels logprobs, ConstrainedRows constrained) {
        this.constrained = constrained;
        this.scheduler = scheduler;
        this.runner = runner;
        this.sampling = sampling;
        this.counters = counters;
        this.logprobs = logprobs;
    }

    void setProbe(Engine.LogitsProbe probe) {
        this.probe = probe;
    }

    /**
     * True when a step over {@code entries} needs the full logits on the host: a logits probe is
     * set, a sequence that samples this step is not a plain argmax (not greedy, or its logits are
     * edited: bias, penalties, min-tokens, bad words), one has a grammar (its mask changes the argmax), or one
     * wants log-probabilities. Otherwise the rows' argmax is enough.
     */
    boolean needsFullLogits(List<StepPlan.Entry> entries) {
        if (probe != null || StepLogprobs.wanted(entries) || ConstrainedRows.any(entries)) {
            return true;
        }
        for (StepPlan.Entry e : entries) {
            SamplingParams p = ((RequestState) e.seq().attachment()).params();
            if (e.needsLogits() && !p.isArgmaxAt(e.seq().outputLength())) {
                return true;
            }
        }
        return false;
    }

    /**
     * The next token of every logits row of the last forward pass, sampled at once (the rows in
     * parallel), where it produced full logits: the entries that need logits, in row order. Null
     * where it did not, or where the batch failed: then {@link #emit} samples row by row, which
     * fails only the request whose row fails.
     */
    int[] sampleRows(List<StepPlan.Entry> entries) {
        if (!runner.hasFullLogits()) {
            return null;
        }
        constrained.apply(entries, runner.logits(), runner.numLogitRows(), runner.vocab());
        // One plain pass (a stream and a second pass took 0.1-0.2 ms of a 64-row step while this
        // code, run once a step, is still interpreted: the engine's first few hundred steps)
        int n = entries.size();
        SamplingParams[] params = new SamplingParams[n];
        long[] steps = new long[n];
        TokenCounts[] counts = null; // only where some row has penalties or bad words
        int rows = 0;
        for (int i = 0; i < n; i++) {
            StepPlan.Entry e = entries.get(i);
            if (e.needsLogits()) {
                RequestState a = (RequestState) e.seq().attachment();
                if (a.counts() != null) {
                    if (counts == null) {
                        counts = new TokenCounts[n];
                    }
                    counts[rows] = a.counts();
                }
                params[rows] = a.params();
                steps[rows++] = e.seq().outputLength();
            }
        }
        if (rows < n) {
            params = Arrays.copyOf(params, rows);
            steps = Arrays.copyOf(steps, rows);
            counts = counts == null ? null : Arrays.copyOf(counts, rows);
        }
        try {
            return Sampler.sampleRows(sampling, runner.logits(), runner.vocab(), params, steps, counts);
        } catch (RuntimeException ex) {
            LOG.debug("batch sampling failed ({}); sampling row by row", ex.toString());
            return null;
        }
    }

    /**
     * The step's log-probabilities ({@link StepLogprobs#compute}), or null when nobody wants any. A
     * failure fails the requests that wanted them, not the step.
     */
    StepLogprobs logprobs(List<StepPlan.Entry> entries, int[] sampled) {
        if (logprobs == null || !StepLogprobs.wanted(entries)) {
            return null;
        }
        try {
            return StepLogprobs.compute(logprobs, runner, entries, sampled);
        } catch (RuntimeException ex) {
            LOG.warn("log-probabilities of a step failed; failing the requests that wanted them", ex);
            for (StepPlan.Entry e : entries) {
                if (StepLogprobs.options(e.seq()).any() && e.seq().status() != Sequence.Status.FINISHED) {
                    scheduler.fail(e.seq(), "log-probabilities failed: " + ex);
                }
            }
            return null;
        }
    }

    /**
     * Streams {@code s}'s next token: {@code sampled[row]} where the step sampled its rows at once
     * ({@link #sampleRows}), else sampled here from logit row {@code row} of the last forward pass;
     * with its log-probabilities first where the request wants them ({@code lp}'s, or computed here).
     */
    void emit(Sequence s, int row, long now, int[] sampled, StepLogprobs lp) {
        emit(s, row, now, sampled, row, lp);
    }

    /**
     * {@link #emit(Sequence, int, long, int[], StepLogprobs)} with {@code s}'s token at
     * {@code sampled[index]} (the forked samples of one prompt share its logits row:
     * {@link #sampleRow}; their log-probabilities are computed here, {@code lp} null).
     */
    void emit(Sequence s, int row, long now, int[] sampled, int index, StepLogprobs lp) {
        if (s.status() == Sequence.Status.FINISHED) {
            return; // failed earlier in this step (its log-probabilities)
        }
        String masking = constrained.failure(s);
        if (masking != null) {
            scheduler.fail(s, masking);
            return;
        }
        RequestState a = (RequestState) s.attachment();
        int token;
        try {
            Engine.LogitsProbe p = probe;
            if (p != null && runner.hasFullLogits()) {
                p.onLogits(s.id(), s.outputLength(), runner.logitsRow(row).toArray(ValueLayout.JAVA_FLOAT));
            }
            token = sampled != null ? sampled[index]
                    : a.params().isArgmaxAt(s.outputLength()) && a.matcher() == null ? runner.argmax(row) // the model's, unmasked
                    : Sampler.sample(runner.logits(), row, runner.vocab(), a.params(), s.outputLength(), a.counts());
            if (a.logprobs() != null && a.logprobs().options().sampled()) {
                TokenLogprob t = lp == null ? null : lp.sampled(row);
                a.logprobs().addGenerated(t != null ? t
                        : StepLogprobs.single(logprobs, runner, row, token, a.logprobs().options().topK()));
            }
        } catch (Throwable ex) { // even an Error here is this request's failure, not the engine's
            LOG.warn("sampling for request {} failed; failing it", s.id(), ex);
            scheduler.fail(s, "sampling failed: " + ex);
            return;
        }
        if (!constrained.advance(s, token)) {
            return;
        }
        scheduler.onToken(s, token, now);
        if (a.counts() != null) {
            a.counts().add(token);
        }
        if (a.listener() != null) {
            try {
                a.listener().accept(token);
            } catch (Throwable ex) { // the caller's code: an Error in it must not stop the engine
                LOG.warn("token listener of request {} threw; failing it", s.id(), ex);
                if (s.status() != Sequence.Status.FINISHED) {
                    scheduler.fail(s, "token listener threw: " + ex);
                }
            }
        }
    }

    /**
     * The first token of each of several samples from logits row {@code row} of the last forward
     * pass, sample k with {@code params[k]}, drawn as {@link #sampleRows} draws a row of its own.
     * Null where the pass produced only the argmax (greedy rows) or the sampling failed: then
     * {@link #emit} samples each on its own.
     */
    int[] sampleRow(int row, SamplingParams[] params, TokenCounts[] counts) {
        if (!runner.hasFullLogits()) {
            return null;
        }
        long rowBytes = 4L * runner.vocab();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment rows = arena.allocate(rowBytes * params.length, 64);
            for (int k = 0; k < params.length; k++) {
                MemorySegment.copy(runner.logitsRow(row), 0, rows, k * rowBytes, rowBytes);
            }
            return Sampler.sampleRows(sampling, rows, runner.vocab(), params, new long[params.length], counts);
        } catch (RuntimeException ex) {
            LOG.debug("sampling the forked samples' first tokens failed ({}); sampling one by one", ex.toString());
            return null;
        }
    }

    /** Completes the requests' futures, after publishing stats that already count them. */
    void complete(List<Sequence> done, long now) {
        if (done.isEmpty()) {
            return;
        }
        counters.countFinished(done.size());
        counters.publish();
        for (Sequence s : done) {
            RequestState a = (RequestState) s.attachment();
            RequestStats stats = EngineCounters.requestStats(s, now);
            a.handle().complete(new RequestResult(s.id(), s.output(), s.finishReason(), stats, s.error()));
            if (a.samples() != null && s.samples() > 1) {
                // ended before its prompt was prefilled: the samples it still carried end with it
                a.samples().completeUnforked(a.samples().n() - s.samples() + 1, s.finishReason(), stats, s.error());
            }
        }
    }
}
