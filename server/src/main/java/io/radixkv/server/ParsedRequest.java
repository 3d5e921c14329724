package io.radixkv.server;

import io.radixkv.cache.Namespace;
import java.util.List;

/**
 * A validated {@code /v1/completions} or {@code /v1/chat/completions} request.
 *
 * @param prompts one token-id prompt per choice (a chat request has one)
 * @param maxTokens tokens to generate at most; 0 = what the context leaves (vLLM's default)
 * @param stops stop strings, matched on the detokenized text
 * @param stopTokenIds extra stop token ids (vLLM's {@code stop_token_ids}), besides the model's EOS
 * @param ns cache namespace ({@code cache_salt}): tenants never share prefix pages
 */
record ParsedRequest(boolean chat, List<int[]> prompts, int maxTokens, float temperature, float topP, long seed,
                     List<String> stops, List<Integer> stopTokenIds, boolean stream, boolean includeUsage,
                     Namespace ns) {
    ParsedRequest {
        prompts = List.copyOf(prompts);
        stops = List.copyOf(stops);
        stopTokenIds = List.copyOf(stopTokenIds);
    }
}
