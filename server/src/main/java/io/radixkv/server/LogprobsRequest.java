package io.radixkv.server;

import com.fasterxml.jackson.databind.JsonNode;
import io.radixkv.engine.LogprobOptions;
import io.radixkv.kernels.LogprobKernels;

/**
 * The log-probability fields of a request, as OpenAI and vLLM define them.
 *
 * <ul>
 *   <li>{@code /v1/completions}: {@code logprobs: k} (0..20; 0 = only the chosen token) and
 *       {@code echo: true} (the prompt's text before the completion, and with {@code logprobs}
 *       the prompt tokens' log-probabilities first, the first one null). With {@code echo},
 *       {@code max_tokens: 0} returns the prompt alone (lm-eval's loglikelihood request): the
 *       engine computes one token that is not returned, as vLLM does.</li>
 *   <li>{@code /v1/chat/completions}: {@code logprobs: true} with {@code top_logprobs: k} (0..20).</li>
 * </ul>
 *
 * @param topK top tokens per position, or -1 when no log-probabilities are returned
 * @param echo the prompt comes back first (completions only)
 * @param promptOnly {@code echo} with {@code max_tokens: 0}: nothing generated is returned
 */
record LogprobsRequest(int topK, boolean echo, boolean promptOnly) {
    static final LogprobsRequest NONE = new LogprobsRequest(-1, false, false);

    boolean wanted() {
        return topK >= 0;
    }

    /** What the engine computes: the generated tokens' log-probabilities, and the prompt's with echo. */
    LogprobOptions engineOptions() {
        return new LogprobOptions(topK, echo ? topK : -1);
    }

    /** {@code logprobs}, {@code echo} and whether {@code max_tokens} is 0, of a completions body. */
    static LogprobsRequest completion(JsonNode body) {
        int k = -1;
        JsonNode n = body.get("logprobs");
        if (n != null && !n.isNull()) {
            k = topK(n, "logprobs");
        }
        boolean echo = RequestParser.bool(body, "echo", false);
        JsonNode max = body.get("max_tokens");
        boolean zero = max != null && max.isIntegralNumber() && max.canConvertToInt() && max.asInt() == 0;
        if (zero && !echo) {
            throw ApiException.badRequest("max_tokens", "'max_tokens' must be at least 1 (0 only with 'echo': true)");
        }
        return new LogprobsRequest(k, echo, zero);
    }

    /** {@code logprobs} (a boolean) and {@code top_logprobs} of a chat body. */
    static LogprobsRequest chat(JsonNode body) {
        boolean on = RequestParser.bool(body, "logprobs", false);
        JsonNode top = body.get("top_logprobs");
        int k = top == null || top.isNull() ? 0 : topK(top, "top_logprobs");
        if (!on && k > 0) {
            throw ApiException.badRequest("top_logprobs", "'top_logprobs' needs 'logprobs': true");
        }
        JsonNode echo = body.get("echo");
        if (echo != null && !echo.isNull() && !(echo.isBoolean() && !echo.asBoolean())) {
            throw ApiException.badRequest("echo", "unsupported value for 'echo' (" + echo
                    + "): echoing the prompt is not supported for chat");
        }
        return on ? new LogprobsRequest(k, false, false) : NONE;
    }

    private static int topK(JsonNode n, String field) {
        if (!n.isIntegralNumber() || !n.canConvertToInt()) {
            throw ApiException.badRequest(field, "'" + field + "' must be an integer, got " + RequestParser.kind(n));
        }
        int k = n.asInt();
        if (k < 0 || k > LogprobKernels.MAX_TOP_K) {
            throw ApiException.badRequest(field, "'" + field + "' must be in [0, " + LogprobKernels.MAX_TOP_K
                    + "], got " + k);
        }
        return k;
    }
}
