package io.radixkv.engine;

import io.radixkv.sched.Scheduler;
import io.radixkv.sched.Sequence;

/**
 * The engine's counters, written on the engine thread, and the latest {@link EngineStats}
 * built from them, published for any thread after every step.
 */
final class EngineCounters {
    private final KvState kv;
    private final Scheduler scheduler;
    private volatile EngineStats published;

    private long steps;
    private long submitted;
    private long finished;
    private long decodeTokens;
    private long forwardNanos;
    private long stepNanos;
    private long scheduleNanos;
    private long sampleNanos;
    private int peakPinned;
    private int peakAllocated;

    EngineCounters(KvState kv, Scheduler scheduler) {
        this.kv = kv;
        this.scheduler = scheduler;
        this.published = build();
    }

    void countStep() {
        steps++;
    }

    void countSubmitted() {
        submitted++;
    }

    void countFinished(int n) {
        finished += n;
    }

    void countDecodeToken() {
        decodeTokens++;
    }

    void addForwardNanos(long n) {
        forwardNanos += n;
    }

    void addStepNanos(long n) {
        stepNanos += n;
    }

    void addScheduleNanos(long n) {
        scheduleNanos += n;
    }

    void addSampleNanos(long n) {
        sampleNanos += n;
    }

    /** Where the step time went so far, given the model's own forward time. Engine thread. */
    StepBreakdown breakdown(long modelNanos) {
        return new StepBreakdown(steps, decodeTokens, stepNanos, scheduleNanos, forwardNanos - modelNanos, modelNanos,
                sampleNanos);
    }

    void notePeaks() {
        peakPinned = Math.max(peakPinned, kv.manager().pinnedPages());
        peakAllocated = Math.max(peakAllocated, kv.allocator().allocatedPages());
    }

    /** Publishes the current counters (engine thread). */
    void publish() {
        published = build();
    }

    /** The counters as last published. Any thread. */
    EngineStats latest() {
        return published;
    }

    private EngineStats build() {
        long reused = kv.manager().reusedTokens();
        long computed = kv.manager().computedTokens();
        double hit = reused + computed == 0 ? 0.0 : (double) reused / (reused + computed);
        var a = kv.allocator();
        return new EngineStats(steps, submitted, finished, hit, reused, computed, decodeTokens,
                scheduler.preemptions(), kv.evictedPages(), scheduler.deferrals(), kv.manager().duplicatePagesDropped(),
                a.numPages(), a.freePages(), a.cachedPages(), peakPinned, peakAllocated,
                scheduler.runningCount(), scheduler.waitingCount(), forwardNanos, stepNanos);
    }

    /** One request's timings and cache use at {@code now}. */
    static RequestStats requestStats(Sequence s, long now) {
        return new RequestStats(s.queueNanos(), s.ttftNanos(), s.interTokenNanos(), now - s.submitNanos(),
                s.promptLength(), s.cachedPromptTokens(), s.computedPromptTokens(), s.preemptions());
    }
}
