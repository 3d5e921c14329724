package io.radixkv.model;

import java.util.List;
import java.util.Locale;

/**
 * Named model shapes for random-weight models. All use a 32,000-id vocabulary so realistic
 * token ids work.
 */
public final class ModelPresets {
    private ModelPresets() {}

    public static final int VOCAB = 32000;

    /** For tests: 2 layers, hidden 64, 4 query / 2 KV heads of 16, MLP 128. */
    public static ModelConfig tiny() {
        return new ModelConfig(64, 128, 2, 4, 2, 16, VOCAB, 10000f, 1e-5f, false, 8192);
    }

    /**
     * The default demo/benchmark model: sized so the prefix-caching benchmark (48 requests,
     * ~1024-token shared prompt) runs with the cache off and on in a few minutes on 2 cores
     * while prefill still dominates time to first token.
     */
    public static ModelConfig small() {
        return new ModelConfig(512, 1536, 8, 8, 2, 64, VOCAB, 10000f, 1e-5f, false, 8192);
    }

    public static List<String> names() {
        return List.of("tiny", "small");
    }

    /** Preset by name ("tiny", "small"). */
    public static ModelConfig byName(String name) {
        return switch (name.trim().toLowerCase(Locale.ROOT)) {
            case "tiny" -> tiny();
            case "small" -> small();
            default -> throw new IllegalArgumentException("unknown model preset '" + name + "' (expected one of "
                    + names() + ")");
        };
    }
}
