package io.radixkv.engine;

/**
 * Where the engine thread's step time went (cumulative nanoseconds): scheduling (retire,
 * admit, plan), building the batch tables and token ids, the model's forward itself, and
 * committing + sampling + streaming. Everything but {@code modelNanos} is per-step overhead.
 *
 * @param steps steps that ran a forward pass
 * @param decodeTokens decode tokens those steps produced
 * @param stepNanos whole steps
 * @param scheduleNanos retire, admit and plan
 * @param tablesNanos page-table CSR, slot mapping, positions and token ids
 * @param modelNanos the model's forward pass
 * @param sampleNanos commit, sampling, token listeners
 */
record StepBreakdown(long steps, long decodeTokens, long stepNanos, long scheduleNanos, long tablesNanos,
                     long modelNanos, long sampleNanos) {
    /** Step time not spent in the model's forward pass. */
    long outsideModelNanos() {
        return stepNanos - modelNanos;
    }

    /** The time between an earlier reading and this one. */
    StepBreakdown since(StepBreakdown earlier) {
        return new StepBreakdown(steps - earlier.steps, decodeTokens - earlier.decodeTokens,
                stepNanos - earlier.stepNanos, scheduleNanos - earlier.scheduleNanos, tablesNanos - earlier.tablesNanos,
                modelNanos - earlier.modelNanos, sampleNanos - earlier.sampleNanos);
    }

    @Override
    public String toString() {
        double step = Math.max(1, stepNanos);
        return String.format(java.util.Locale.ROOT,
                "%d steps, %d decode tokens, %.3f ms/step: model %.1f%%, outside the model %.2f%% "
                        + "(schedule %.2f%%, tables %.2f%%, commit+sample %.2f%%)",
                steps, decodeTokens, stepNanos / 1e6 / Math.max(1, steps), 100 * modelNanos / step,
                100 * outsideModelNanos() / step, 100 * scheduleNanos / step, 100 * tablesNanos / step,
                100 * sampleNanos / step);
    }
}
