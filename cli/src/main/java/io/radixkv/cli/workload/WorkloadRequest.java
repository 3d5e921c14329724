package io.radixkv.cli.workload;

import java.util.Arrays;

/**
 * One request of a synthetic workload.
 *
 * @param id position in the workload (0-based)
 * @param arrivalSeconds when the request arrives, relative to the start of the run
 * @param prompt prompt token ids (each in [1, vocab))
 * @param maxTokens tokens to generate
 * @param after id of a request that must finish before this one may be sent (a conversation's
 *     previous turn), or -1
 * @param afterDelaySeconds pause between that request finishing and this one being sent (a
 *     user's think time); 0 without {@code after}
 * @param replyTokens with {@code after}: the prompt continues the earlier request's prompt, then
 *     holds this many stand-in tokens for the earlier request's reply; a live replay puts the
 *     tokens actually generated there (what a chat client sends back). 0 otherwise.
 */
public record WorkloadRequest(int id, double arrivalSeconds, int[] prompt, int maxTokens, int after,
                              double afterDelaySeconds, int replyTokens) {
    public WorkloadRequest {
        if (id < 0) {
            throw new IllegalArgumentException("id must be >= 0, got " + id);
        }
        if (!(arrivalSeconds >= 0) || Double.isInfinite(arrivalSeconds)) {
            throw new IllegalArgumentException("arrivalSeconds must be finite and >= 0, got " + arrivalSeconds);
        }
        if (prompt == null || prompt.length == 0) {
            throw new IllegalArgumentException("request " + id + ": prompt must not be empty");
        }
        if (maxTokens < 1) {
            throw new IllegalArgumentException("request " + id + ": maxTokens must be >= 1, got " + maxTokens);
        }
        if (after >= id || after < -1) {
            throw new IllegalArgumentException("request " + id + ": after must be -1 or an earlier id, got " + after);
        }
        if (!(afterDelaySeconds >= 0) || Double.isInfinite(afterDelaySeconds)) {
            throw new IllegalArgumentException("request " + id + ": afterDelaySeconds must be >= 0, got " + afterDelaySeconds);
        }
        if (replyTokens < 0 || (after < 0 && replyTokens != 0) || replyTokens >= prompt.length) {
            throw new IllegalArgumentException("request " + id + ": replyTokens must be 0 without 'after' and in [0, "
                    + prompt.length + "), got " + replyTokens);
        }
        prompt = prompt.clone();
    }

    /** A request with no dependency. */
    public static WorkloadRequest independent(int id, double arrivalSeconds, int[] prompt, int maxTokens) {
        return new WorkloadRequest(id, arrivalSeconds, prompt, maxTokens, -1, 0, 0);
    }

    @Override
    public int[] prompt() {
        return prompt.clone();
    }

    public int promptLength() {
        return prompt.length;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof WorkloadRequest r && id == r.id && arrivalSeconds == r.arrivalSeconds
                && maxTokens == r.maxTokens && after == r.after && afterDelaySeconds == r.afterDelaySeconds
                && replyTokens == r.replyTokens && Arrays.equals(prompt, r.prompt);
    }

    @Override
    public int hashCode() {
        return 31 * Integer.hashCode(id) + Arrays.hashCode(prompt);
    }

    @Override
    public String toString() {
        return "WorkloadRequest[id=" + id + ", arrival=" + arrivalSeconds + "s, prompt=" + prompt.length
                + " tokens, maxTokens=" + maxTokens + (after >= 0 ? ", after=" + after + "+" + afterDelaySeconds + "s, reply=" + replyTokens : "") + "]";
    }
}
