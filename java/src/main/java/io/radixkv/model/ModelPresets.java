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
     * The default demo/benchmark model (~125M parameters, GPT-2-small-sized: hidden 768,
     * 12 layers, 12 query / 4 KV heads of 64, MLP 2048). Sized so the prefix-caching benchmark
     * (48 requests, ~1024-token shared prompt + 32-128 unique tokens) runs with the cache off
     * and on in about 1-3 minutes on 2 cores while prefill dominates time to first token.
     * Measured (f32 weights, CPU backend, one thread): ~725 prefill tokens per CPU-second for
     * a 1024-token prompt, i.e. ~1,400 tokens/s on 2 idle cores; 52,800 prompt tokens with
     * the cache off take ~40 s. (hidden 512 / 8 layers ran ~2,000 tokens per CPU-second:
     * the whole benchmark in ~25 s, too short to show much.)
     */
    public static ModelConfig small() {
        return new ModelConfig(768, 2048, 12, 12, 4, 64, VOCAB, 10000f, 1e-5f, false, 8192);
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
