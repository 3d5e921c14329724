package io.radixkv.bench;

/**
 * A kernel and its bandwidth baseline timed call by call in the same invocations: the ratio of
 * their bandwidths comes from the same seconds, which a host whose bandwidth wanders between
 * time windows would otherwise skew. Accumulates over one iteration, prints one line, resets.
 */
final class SameWindowRatio {
    private long kernelNanos;
    private long kernelBytes;
    private long baselineNanos;
    private long baselineBytes;

    void add(long kernelNanos, long kernelBytes, long baselineNanos, long baselineBytes) {
        this.kernelNanos += kernelNanos;
        this.kernelBytes += kernelBytes;
        this.baselineNanos += baselineNanos;
        this.baselineBytes += baselineBytes;
    }

    /** Prints "# interleaved LABEL: K GB/s, read R GB/s, ratio X" and resets; nothing if empty. */
    void reportAndReset(String label) {
        if (kernelNanos == 0 || baselineNanos == 0) {
            return;
        }
        double kernel = kernelBytes / (double) kernelNanos, baseline = baselineBytes / (double) baselineNanos;
        System.out.printf("# interleaved %s: %.1f GB/s, read %.1f GB/s, ratio %.2f%n", label, kernel, baseline,
                kernel / baseline);
        kernelNanos = 0;
        kernelBytes = 0;
        baselineNanos = 0;
        baselineBytes = 0;
    }
}
