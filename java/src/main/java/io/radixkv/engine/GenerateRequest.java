package io.radixkv.engine;

import io.radixkv.cache.Namespace;
import io.radixkv.model.SamplingParams;
import io.radixkv.structured.Grammar;
import java.util.Objects;

/**
 * One generation request: prompt token ids, the cache namespace its KV belongs to (LoRA adapter /
 * cache salt: requests only share prefixes within one namespace; the adapter also selects the
 * LoRA weights the request runs with), sampling parameters, the log-probabilities it wants
 * ({@link LogprobOptions#NONE} when null) and optionally a structured-output grammar (its
 * vocabulary must be the model's) that every generated token must keep the text within. The
 * prompt array is copied on submission.
 */
public record GenerateRequest(String id, int[] promptTokens, Namespace ns, SamplingParams params,
                              LogprobOptions logprobs, Grammar grammar) {
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
        if (logprobs == null) {
            logprobs = LogprobOptions.NONE;
        }
    }

    /** A request without a grammar. */
    public GenerateRequest(String id, int[] promptTokens, Namespace ns, SamplingParams params, LogprobOptions logprobs) {
        this(id, promptTokens, ns, params, logprobs, null);
    }

    /** A request without log-probabilities. */
    public GenerateRequest(String id, int[] promptTokens, Namespace ns, SamplingParams params, Grammar grammar) {
        this(id, promptTokens, ns, params, LogprobOptions.NONE, grammar);
    }

    /** A request without log-probabilities or a grammar. */
    public GenerateRequest(String id, int[] promptTokens, Namespace ns, SamplingParams params) {
        this(id, promptTokens, ns, params, LogprobOptions.NONE, null);
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
        this(id, promptTokens, Namespace.DEFAULT, params, LogprobOptions.NONE, null);
    }
}
