package io.radixkv.engine;

/**
 * One token's log-probability and the most probable tokens at its position (most probable first,
 * ties by lower id), from the log-softmax of the raw logits. Values may be -inf (a NaN or -inf
 * logit); never NaN.
 */
public record TokenLogprob(int token, double logprob, int[] topIds, double[] topLogprobs) {
    public TokenLogprob {
        topIds = topIds.clone();
        topLogprobs = topLogprobs.clone();
        if (topIds.length != topLogprobs.length) {
            throw new IllegalArgumentException(topIds.length + " top ids but " + topLogprobs.length + " values");
        }
    }

    @Override
    public int[] topIds() {
        return topIds.clone();
    }

    @Override
    public double[] topLogprobs() {
        return topLogprobs.clone();
    }

    public int topCount() {
        return topIds.length;
    }

    public int topId(int j) {
        return topIds[j];
    }

    public double topLogprob(int j) {
        return topLogprobs[j];
    }
}
