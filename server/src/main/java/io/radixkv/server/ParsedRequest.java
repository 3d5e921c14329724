package io.radixkv.server;

import io.radixkv.cache.Namespace;
import io.radixkv.structured.Grammar;
import java.util.List;

/**
 * A validated {@code /v1/completions} or {@code /v1/chat/completions} request.
 *
 * @param prompts one token-id prompt per choice (a chat request has one)
 * @param maxTokens tokens to generate at most; 0 = what the context leaves (vLLM's default)
 * @param stops stop strings, matched on the detokenized text
 * @param stopTokenIds extra stop token ids (vLLM's {@code stop_token_ids}), besides the model's EOS
 * @param ns cache namespace ({@code cache_salt}): tenants never share prefix pages
 * @param output how generated tokens become text (vLLM's output options)
 * @param sampling vLLM's sampling fields beyond temperature and top-p (top_k, min_p, penalties,
 *     logit_bias, min_tokens)
 * @param logprobs the log-probabilities and echo asked for ({@link LogprobsRequest#NONE}: none)
 * @param grammar the structured output every generated text must match, or null
 * @param chatOutput how a chat response reads the text (tool calls, reasoning); plain for completions
 */
record ParsedRequest(boolean chat, List<int[]> prompts, int maxTokens, float temperature, float topP, long seed,
                     List<String> stops, List<Integer> stopTokenIds, boolean stream, boolean includeUsage,
                     Namespace ns, Output output, SamplingFields sampling, LogprobsRequest logprobs, Grammar grammar,
                     ChatOutput chatOutput) {
    /**
     * vLLM's output options.
     *
     * @param ignoreEos generation does not end at the model's EOS / generation-config stop ids
     *     ({@code stop_token_ids} still end it)
     * @param includeStopString a matched stop string stays at the end of the text
     * @param skipSpecialTokens special tokens are left out of the text
     */
    record Output(boolean ignoreEos, boolean includeStopString, boolean skipSpecialTokens) {
    }

    ParsedRequest {
        prompts = List.copyOf(prompts);
        stops = List.copyOf(stops);
        stopTokenIds = List.copyOf(stopTokenIds);
    }
}
