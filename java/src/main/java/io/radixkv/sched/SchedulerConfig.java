package io.radixkv.sched;

/**
 * Scheduling limits.
 *
 * @param maxRunning most sequences admitted at once (prefilling or decoding)
 * @param maxBatchTokens token budget of one step: decode tokens plus prefill chunks; at least
 *     {@code maxRunning} so every decoding sequence fits in every step
 * @param decodeReserveFraction bound on the decode-growth reserve, as a fraction of the pool
 *     (the reserve itself is the pages the running requests' remaining output may need)
 * @param maxSeqLen most KV positions one sequence may reach (prompt + maxTokens - 1), exactly,
 *     not rounded to whole pages; 0 = only the page table's capacity limits it
 */
public record SchedulerConfig(int maxRunning, int maxBatchTokens, double decodeReserveFraction, int maxSeqLen) {
    /** Limits with no sequence-length bound beyond the page table's capacity. */
    public SchedulerConfig(int maxRunning, int maxBatchTokens, double decodeReserveFraction) {
        this(maxRunning, maxBatchTokens, decodeReserveFraction, 0);
    }

    public SchedulerConfig {
        if (maxRunning <= 0) {
            throw new IllegalArgumentException("maxRunning must be positive, got " + maxRunning);
        }
        if (maxBatchTokens < maxRunning) {
            throw new IllegalArgumentException("maxBatchTokens (" + maxBatchTokens + ") must be at least maxRunning ("
                    + maxRunning + ") so that every decoding sequence fits in one step");
        }
        if (!(decodeReserveFraction >= 0 && decodeReserveFraction < 1)) {
            throw new IllegalArgumentException("decodeReserveFraction must be in [0, 1), got " + decodeReserveFraction);
        }
        if (maxSeqLen < 0) {
            throw new IllegalArgumentException("maxSeqLen must not be negative (0 = no limit), got " + maxSeqLen);
        }
    }
}
