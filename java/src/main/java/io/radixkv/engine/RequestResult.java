package io.radixkv.engine;

import io.radixkv.sched.FinishReason;

/**
 * The outcome of a request.
 *
 * @param outputTokens generated token ids (a stop token, when one ended it, is the last)
 * @param error what went wrong for REJECTED / ERROR / ABORTED; null otherwise
 */
public record RequestResult(String id, int[] outputTokens, FinishReason reason, RequestStats stats, String error) {
    public RequestResult {
        outputTokens = outputTokens == null ? new int[0] : outputTokens.clone();
    }

    @Override
    public int[] outputTokens() {
        return outputTokens.clone();
    }

    /** True for STOP and LENGTH: the request ran to its end. */
    public boolean ok() {
        return reason == FinishReason.STOP || reason == FinishReason.LENGTH;
    }
}
