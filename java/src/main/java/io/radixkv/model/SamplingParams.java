package io.radixkv.model;

import java.util.List;

/**
 * How a request's tokens are chosen.
 *
 * @param maxTokens tokens to generate at most (≥ 1)
 * @param temperature 0 = greedy (argmax, first maximum); otherwise logits are divided by it
 * @param topP nucleus sampling: keep the most likely tokens whose probabilities sum to at least
 *     topP (in (0, 1]; 1 disables it)
 * @param seed seed of the request's random stream: the same seed, params and logits give the
 *     same tokens, whatever else is in the batch
 * @param stopTokenIds generation ends after emitting one of these
 */
public record SamplingParams(int maxTokens, float temperature, float topP, long seed, List<Integer> stopTokenIds) {
    public SamplingParams {
        if (maxTokens < 1) {
            throw new IllegalArgumentException("maxTokens must be at least 1, got " + maxTokens);
        }
        if (!Float.isFinite(temperature) || temperature < 0f) {
            throw new IllegalArgumentException("temperature must be >= 0 and finite, got " + temperature);
        }
        if (!(topP > 0f && topP <= 1f)) {
            throw new IllegalArgumentException("topP must be in (0, 1], got " + topP);
        }
        stopTokenIds = stopTokenIds == null ? List.of() : List.copyOf(stopTokenIds);
        for (Integer id : stopTokenIds) {
            if (id < 0) {
                throw new IllegalArgumentException("stop token id " + id + " is negative");
            }
        }
    }

    /** Greedy decoding of up to {@code maxTokens} tokens, no stop tokens. */
    public static SamplingParams greedy(int maxTokens) {
        return new SamplingParams(maxTokens, 0f, 1f, 0L, List.of());
    }

    /** The same parameters with another seed (sample {@code i} of a request draws from seed + i). */
    public SamplingParams withSeed(long newSeed) {
        return new SamplingParams(maxTokens, temperature, topP, newSeed, stopTokenIds);
    }

    public boolean isGreedy() {
        return temperature == 0f;
    }

    public boolean isStop(int tokenId) {
        return stopTokenIds.contains(tokenId);
    }
}
