package io.radixkv.engine;

import io.radixkv.sched.Scheduler;
import io.radixkv.sched.Sequence;
import io.radixkv.sched.StepPlan;
import java.util.List;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * One engine step: retire finished → admit → plan the batch → forward
 * pass → commit → sample and stream. A forward pass that throws is retried one sequence at
 * a time so only the culprit fails. Engine thread only.
 */
final class StepExecutor implements EngineLoop.Work {
    private static final Logger LOG = LogManager.getLogger(StepExecutor.class);

    private final Scheduler scheduler;
    private final ModelRunner runner;
    private final EngineCounters counters;
    private final TokenStreamer streamer;
    private final SampleForks forks;
    private final EngineAdapters adapters;
    private StepBreakdown lastStepEnd;

    StepExecutor(Scheduler scheduler, ModelRunner runner, EngineCounters counters, TokenStreamer streamer,
                 EngineAdapters adapters) {
        this.scheduler = scheduler;
        this.adapters = adapters;
        this.runner = runner;
        this.counters = counters;
        this.streamer = streamer;
        this.forks = new SampleForks(scheduler, streamer);
        this.lastStepEnd = breakdown();
    }

    @Override
    public boolean hasWork() {
        return scheduler.hasWork();
    }

    @Override
    public void step() {
        long now = System.nanoTime();
        try {
            streamer.complete(scheduler.retire(), now);
            scheduler.admit(now);
            StepPlan plan = scheduler.plan();
            counters.notePeaks();
            counters.addScheduleNanos(System.nanoTime() - now);
            if (!plan.isEmpty()) {
                counters.countStep();
                execute(plan.entries());
            }
            adapters.afterStep();
        } finally {
            counters.addStepNanos(System.nanoTime() - now);
            lastStepEnd = breakdown();
        }
        // requests that finished in this step are retired (pages released, results completed) at
        // the start of the next one: the loop runs another step while the scheduler holds them
        counters.publish();
    }

    /** Ends every queued and running request with {@code why} (shutdown, engine failure). */
    @Override
    public void abortAll(String why) {
        streamer.complete(scheduler.abortAll(why), System.nanoTime());
    }

    /** Forward + commit + sample; on a forward failure, isolates the failing sequence(s). */
    private void execute(List<StepPlan.Entry> entries) {
        long t0 = System.nanoTime();
        try {
            adapters.prepare(entries);
            runner.run(entries, streamer.needsFullLogits(entries));
        } catch (RuntimeException e) {
            counters.addForwardNanos(System.nanoTime() - t0);
            if (entries.size() == 1) {
                Sequence s = entries.get(0).seq();
                LOG.warn("request {} failed in the forward pass: {}", s.id(), e.toString());
                scheduler.fail(s, "forward pass failed: " + e.getMessage());
                return;
            }
            // nothing was committed: rerun one sequence at a time so only the culprit fails
            for (StepPlan.Entry one : entries) {
                execute(List.of(one));
            }
            return;
        }
        long now = System.nanoTime();
        counters.addForwardNanos(now - t0);
        int[] sampled = streamer.sampleRows(entries);
        StepLogprobs lp = streamer.logprobs(entries, sampled);
        int row = 0;
        for (int i = 0; i < entries.size(); i++) {
            StepPlan.Entry e = entries.get(i);
            scheduler.complete(e);
            if (e.decode()) {
                counters.countDecodeToken();
            }
            if (lp != null) {
                lp.deliverPrompt(runner.promptRows(), i, e.seq()); // before the request's first token
            }
            if (e.needsLogits()) {
                forks.forkAfterPrefill(e.seq(), row, now); // a prompt of n samples: the others start from its row
                streamer.emit(e.seq(), row++, now, sampled, lp);
            }
        }
        counters.addSampleNanos(System.nanoTime() - now);
    }

    /** Where the step time went so far. Engine thread. */
    StepBreakdown breakdown() {
        return counters.breakdown(runner.modelNanos());
    }

    /** {@link #breakdown()} as it was at the end of the last step (whole steps only). Engine thread. */
    StepBreakdown lastStepEnd() {
        return lastStepEnd;
    }
}
