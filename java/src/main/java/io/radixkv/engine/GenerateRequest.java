package io.radixkv.engine;

import io.radixkv.cache.Namespace;
import io.radixkv.model.SamplingParams;
import io.radixkv.structured.Grammar;
import java.util.Objects;

/**
 * One generation request: prompt token ids, the cache namespace its KV belongs to (LoRA id /
 * cache salt: requests only share prefixes within one namespace), sampling parameters, and
 * optionally a structured-output grammar (its vocabulary must be the model's) that every
 * generated token must keep the text within. The prompt array is copied on submission.
 */
public record GenerateRequest(String id, int[] promptTokens, Namespace ns, SamplingParams params, Grammar grammar) {
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

    /** A request without a grammar. */
    public GenerateRequest(String id, int[] promptTokens, Namespace ns, SamplingParams params) {
        this(id, promptTokens, ns, params, null);
    }

    /** A request in the default namespace. */
    public GenerateRequest(String id, int[] promptTokens, SamplingParams params) {
        this(id, promptTokens, Namespace.DEFAULT, params);
    }
}
