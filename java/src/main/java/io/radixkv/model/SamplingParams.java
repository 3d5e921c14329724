package io.radixkv.model;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * How a request's tokens are chosen, with vLLM's parameters and order: {@code logitBias}, the
 * {@code minTokens} mask, the bad words and the penalties edit the raw logits; temperature 0 takes the argmax
 * of the edited logits; otherwise softmax(logits / temperature), then {@code minP},
 * {@code topK}, then the {@code topP} nucleus.
 *
 * @param maxTokens tokens to generate at most (≥ 1)
 * @param temperature 0 = greedy (argmax, first maximum); otherwise logits are divided by it
 * @param topP nucleus sampling: keep the most likely tokens whose probabilities sum to at least
 *     topP (in (0, 1]; 1 disables it)
 * @param seed seed of the request's random stream: the same seed, params and logits give the
 *     same tokens, whatever else is in the batch
 * @param stopTokenIds generation ends after emitting one of these
 * @param topK keep only the topK most probable tokens (and those tied with the last); ≤ 0 (vLLM's
 *     -1 or 0) disables it; ≥ -1
 * @param minP drop tokens whose probability is below minP times the largest (in [0, 1]; 0 disables it)
 * @param repetitionPenalty over the tokens of prompt and output: a positive logit is divided by
 *     it, any other multiplied (Hugging Face's rule; &gt; 0, 1 disables it)
 * @param presencePenalty subtracted from the logit of every token the output holds (in [-2, 2])
 * @param frequencyPenalty subtracted once per occurrence in the output (in [-2, 2])
 * @param logitBias added to the logits of the given token ids (finite; ids ≥ 0, checked against
 *     the vocabulary by the engine)
 * @param minTokens the stop tokens ({@code stopTokenIds}) get probability 0 until this many
 *     tokens were generated (0 ≤ minTokens ≤ maxTokens)
 * @param badWords token sequences never generated (vLLM's {@code bad_words}): a sequence's last
 *     token gets probability 0 where the output ends with the rest of it (one-token sequences
 *     always); each non-empty, ids ≥ 0
 */
public record SamplingParams(int maxTokens, float temperature, float topP, long seed, List<Integer> stopTokenIds,
                             int topK, float minP, float repetitionPenalty, float presencePenalty,
                             float frequencyPenalty, Map<Integer, Float> logitBias, int minTokens,
                             List<List<Integer>> badWords) {
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
        if (topK < -1) {
            throw new IllegalArgumentException("topK must be -1 or 0 (off) or at least 1, got " + topK);
        }
        if (!(minP >= 0f && minP <= 1f)) {
            throw new IllegalArgumentException("minP must be in [0, 1], got " + minP);
        }
        if (!(repetitionPenalty > 0f && Float.isFinite(repetitionPenalty))) {
            throw new IllegalArgumentException("repetitionPenalty must be > 0 and finite, got " + repetitionPenalty);
        }
        if (!(presencePenalty >= -2f && presencePenalty <= 2f)) {
            throw new IllegalArgumentException("presencePenalty must be in [-2, 2], got " + presencePenalty);
        }
        if (!(frequencyPenalty >= -2f && frequencyPenalty <= 2f)) {
            throw new IllegalArgumentException("frequencyPenalty must be in [-2, 2], got " + frequencyPenalty);
        }
        logitBias = logitBias == null ? Map.of() : java.util.Collections.unmodifiableMap(new TreeMap<>(logitBias));
        for (Map.Entry<Integer, Float> e : logitBias.entrySet()) {
            if (e.getKey() < 0 || !Float.isFinite(e.getValue())) {
                throw new IllegalArgumentException("logit bias " + e.getKey() + " -> " + e.getValue()
                        + " needs an id >= 0 and a finite bias");
            }
        }
        if (minTokens < 0 || minTokens > maxTokens) {
            throw new IllegalArgumentException("minTokens must be in [0, maxTokens = " + maxTokens + "], got "
                    + minTokens);
        }
        badWords = badWords == null ? List.of() : badWords.stream().map(List::copyOf).toList();
        for (List<Integer> w : badWords) {
            if (w.isEmpty() || w.stream().anyMatch(id -> id < 0)) {
                throw new IllegalArgumentException("a bad word must be a non-empty sequence of token ids >= 0, got "
                        + w);
            }
        }
    }

    /** Every parameter but the bad words. */
    public SamplingParams(int maxTokens, float temperature, float topP, long seed, List<Integer> stopTokenIds,
                          int topK, float minP, float repetitionPenalty, float presencePenalty,
                          float frequencyPenalty, Map<Integer, Float> logitBias, int minTokens) {
        this(maxTokens, temperature, topP, seed, stopTokenIds, topK, minP, repetitionPenalty, presencePenalty,
                frequencyPenalty, logitBias, minTokens, List.of());
    }

    /** Temperature and top-p only: every other parameter at its neutral value. */
    public SamplingParams(int maxTokens, float temperature, float topP, long seed, List<Integer> stopTokenIds) {
        this(maxTokens, temperature, topP, seed, stopTokenIds, 0, 0f, 1f, 0f, 0f, Map.of(), 0, List.of());
    }

    /** Greedy decoding of up to {@code maxTokens} tokens, no stop tokens. */
    public static SamplingParams greedy(int maxTokens) {
        return new SamplingParams(maxTokens, 0f, 1f, 0L, List.of());
    }

    /** The same parameters with another seed (sample {@code i} of a request draws from seed + i). */
    public SamplingParams withSeed(long newSeed) {
        return new SamplingParams(maxTokens, temperature, topP, newSeed, stopTokenIds, topK, minP, repetitionPenalty,
                presencePenalty, frequencyPenalty, logitBias, minTokens, badWords);
    }

    public boolean isGreedy() {
        return temperature == 0f;
    }

    public boolean isStop(int tokenId) {
        return stopTokenIds.contains(tokenId);
    }

    /** Whether a penalty applies. */
    public boolean penalizes() {
        return repetitionPenalty != 1f || presencePenalty != 0f || frequencyPenalty != 0f;
    }

    /** Whether the sampler needs the sequence's {@link TokenCounts}: penalties or bad words. */
    public boolean needsTokenCounts() {
        return penalizes() || !badWords.isEmpty();
    }

    /**
     * Calls {@code banned} with the last token of each bad word whose other tokens end the
     * output so far ({@code tokens}' output, needed where there are bad words), as vLLM's
     * bad-words processor does.
     */
    public void forEachBanned(TokenCounts tokens, java.util.function.IntConsumer banned) {
        if (badWords.isEmpty()) {
            return; // tokens may be null
        }
        int n = tokens.outputLength();
        for (List<Integer> w : badWords) {
            int prefix = w.size() - 1;
            if (prefix > n) {
                continue;
            }
            boolean match = true;
            for (int i = 0; i < prefix && match; i++) {
                match = tokens.outputToken(n - prefix + i) == w.get(i);
            }
            if (match) {
                banned.accept(w.get(prefix));
            }
        }
    }

    /** Whether the stop tokens are masked at output position {@code step} (min_tokens). */
    public boolean masksStopsAt(long step) {
        return step < minTokens && !stopTokenIds.isEmpty();
    }

    /**
     * Whether the token at output position {@code step} is the argmax of the raw logits: greedy
     * and no edit of the logits (bias, mask, penalty), so a step may skip the full logits.
     */
    public boolean isArgmaxAt(long step) {
        return isGreedy() && logitBias.isEmpty() && !penalizes() && !masksStopsAt(step) && badWords.isEmpty();
    }
}
