package io.radixkv.engine;

import io.radixkv.cache.Namespace;
import io.radixkv.model.SamplingParams;
import java.util.Objects;

/**
 * One generation request: prompt token ids, the cache namespace its KV belongs to (LoRA adapter /
 * cache salt: requests only share prefixes within one namespace; the adapter also selects the
 * LoRA weights the request runs with), and sampling parameters.
 * The prompt array is copied on submission.
 */
public record GenerateRequest(String id, int[] promptTokens, Namespace ns, SamplingParams params) {
    public GenerateRequest {
        if (id == null || id.isEmpty()) {
            throw new IllegalArgumentException("request id must not be null or empty");
        }
        Objects.requireNonNull(promptTokens, "promptTokens");
        if (promptTokens.length == 0) {
            throw new IllegalArgumentException("request " + id + ": the prompt must hold at least one token");
        }
        if (ns == null) {
            ns = Namespace.DEFAULT;
        }
        Objects.requireNonNull(params, "params");
    }

    /**
     * The LoRA adapter the request runs with ({@link Engine#loadAdapter}), or null for the base
     * model: its namespace's {@code loraId}, so its KV is cached apart from other adapters'.
     */
    public String lora() {
        return ns.loraId();
    }

    /** A request in the default namespace. */
    public GenerateRequest(String id, int[] promptTokens, SamplingParams params) {
        this(id, promptTokens, Namespace.DEFAULT, params);
    }
}
