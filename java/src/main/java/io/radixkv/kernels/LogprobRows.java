package io.radixkv.kernels;

/**
 * What {@link LogprobKernels#compute} gives: per result row r, the target's log-probability and
 * {@code topK} (id, log-probability) pairs, most probable first.
 *
 * @param targetLogprob {@code [rows]}
 * @param topIds {@code [rows * topK]}
 * @param topLogprobs {@code [rows * topK]}
 */
public record LogprobRows(int topK, double[] targetLogprob, int[] topIds, double[] topLogprobs) {
    public int rows() {
        return targetLogprob.length;
    }

    /** Row r's top j-th token id. */
    public int topId(int r, int j) {
        return topIds[r * topK + j];
    }

    /** Row r's top j-th log-probability. */
    public double topLogprob(int r, int j) {
        return topLogprobs[r * topK + j];
    }
}
