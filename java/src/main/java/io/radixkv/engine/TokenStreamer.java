package io.radixkv.engine;

import io.radixkv.kernels.SamplingKernels;
import io.radixkv.model.Sampler;
import io.radixkv.model.SamplingParams;
import io.radixkv.sched.Scheduler;
import io.radixkv.sched.Sequence;
import io.radixkv.sched.StepPlan;
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
    private final ConstrainedRows constrained;
    private volatile Engine.LogitsProbe probe;

    TokenStreamer(Scheduler scheduler, ModelRunner runner, SamplingKernels sampling, EngineCounters counters,
                  ConstrainedRows constrained) {
        this.constrained = constrained;
        this.scheduler = scheduler;
        this.runner = runner;
        this.sampling = sampling;
        this.counters = counters;
    }

    void setProbe(Engine.LogitsProbe probe) {
        this.probe = probe;
    }

    /**
     * True when a step over {@code entries} needs the full logits on the host: a logits probe is
     * set, a sequence that samples this step is not greedy, or one has a grammar (its mask
     * changes the argmax). Otherwise the rows' argmax is enough.
     */
    boolean needsFullLogits(List<StepPlan.Entry> entries) {
        if (probe != null || ConstrainedRows.any(entries)) {
            return true;
        }
        for (StepPlan.Entry e : entries) {
            if (e.needsLogits() && !((RequestState) e.seq().attachment()).params().isGreedy()) {
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
        int rows = 0;
        for (int i = 0; i < n; i++) {
            StepPlan.Entry e = entries.get(i);
            if (e.needsLogits()) {
                params[rows] = ((RequestState) e.seq().attachment()).params();
                steps[rows++] = e.seq().outputLength();
            }
        }
        if (rows < n) {
            params = Arrays.copyOf(params, rows);
            steps = Arrays.copyOf(steps, rows);
        }
        try {
            return Sampler.sampleRows(sampling, runner.logits(), runner.vocab(), params, steps);
        } catch (RuntimeException ex) {
            LOG.debug("batch sampling failed ({}); sampling row by row", ex.toString());
            return null;
        }
    }

    /**
     * Streams {@code s}'s next token: {@code sampled[row]} where the step sampled its rows at once
     * ({@link #sampleRows}), else sampled here from logit row {@code row} of the last forward pass.
     */
    void emit(Sequence s, int row, long now, int[] sampled) {
        RequestState a = (RequestState) s.attachment();
        String masking = constrained.failure(s);
        if (masking != null) {
            scheduler.fail(s, masking);
            return;
        }
        int token;
        try {
            Engine.LogitsProbe p = probe;
            if (p != null && runner.hasFullLogits()) {
                p.onLogits(s.id(), s.outputLength(), runner.logitsRow(row).toArray(ValueLayout.JAVA_FLOAT));
            }
            token = sampled != null ? sampled[row]
                    : a.params().isGreedy() && a.matcher() == null ? runner.argmax(row) // the model's, unmasked
                    : Sampler.sample(runner.logits(), row, runner.vocab(), a.params(), s.outputLength());
        } catch (Throwable ex) { // even an Error here is this request's failure, not the engine's
            LOG.warn("sampling for request {} failed; failing it", s.id(), ex);
            scheduler.fail(s, "sampling failed: " + ex);
            return;
        }
        if (!constrained.advance(s, token)) {
            return;
        }
        scheduler.onToken(s, token, now);
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

    /** Completes the requests' futures, after publishing stats that already count them. */
    void complete(List<Sequence> done, long now) {
        if (done.isEmpty()) {
            return;
        }
        counters.countFinished(done.size());
        counters.publish();
        for (Sequence s : done) {
            RequestState a = (RequestState) s.attachment();
            a.handle().complete(new RequestResult(s.id(), s.output(), s.finishReason(),
                    EngineCounters.requestStats(s, now), s.error()));
        }
    }
}
