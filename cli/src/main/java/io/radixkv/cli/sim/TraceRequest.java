package io.radixkv.cli.sim;

/**
 * One request of a simulation trace.
 *
 * @param tokens prompt token ids (non-empty)
 * @param output generated token ids (may be empty)
 * @param namespace cache namespace (e.g. a LoRA adapter or tenant), or null for the default tree
 * @param priority insert priority for the {@code priority} eviction policy (higher stays longer)
 */
public record TraceRequest(int[] tokens, int[] output, String namespace, int priority) {
    public TraceRequest {
        if (tokens == null || tokens.length == 0) {
            throw new IllegalArgumentException("tokens must be a non-empty array");
        }
        tokens = tokens.clone();
        output = output == null ? new int[0] : output.clone();
    }

    public TraceRequest(int[] tokens, int[] output, String namespace) {
        this(tokens, output, namespace, 0);
    }

    public TraceRequest(int... tokens) {
        this(tokens, null, null, 0);
    }

    @Override
    public int[] tokens() {
        return tokens.clone();
    }

    @Override
    public int[] output() {
        return output.clone();
    }

    int promptLength() {
        return tokens.length;
    }

    int outputLength() {
        return output.length;
    }
}
