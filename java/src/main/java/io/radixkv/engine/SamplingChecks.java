package io.radixkv.engine;

import io.radixkv.model.SamplingParams;

/** The request checks of sampling parameters that need the model: token ids against its vocabulary. */
final class SamplingChecks {
    private SamplingChecks() {}

    /**
     * @throws IllegalArgumentException where a logit-bias id, a bad word's id, or a stop token id
     *     that min-tokens masks, lies outside {@code [0, vocab)}
     */
    static void requireInVocabulary(String request, SamplingParams p, int vocab) {
        for (int id : p.logitBias().keySet()) {
            if (id >= vocab) {
                throw new IllegalArgumentException("request " + request + ": logit bias token " + id
                        + " is outside the vocabulary [0, " + vocab + ")");
            }
        }
        for (var word : p.badWords()) {
            for (int id : word) {
                if (id >= vocab) {
                    throw new IllegalArgumentException("request " + request + ": bad word token " + id
                            + " is outside the vocabulary [0, " + vocab + ")");
                }
            }
        }
        if (p.minTokens() > 0) {
            for (int id : p.stopTokenIds()) {
                if (id >= vocab) {
                    throw new IllegalArgumentException("request " + request + ": stop token " + id
                            + " (masked by min tokens) is outside the vocabulary [0, " + vocab + ")");
                }
            }
        }
    }
}
