package io.radixkv.sched;

import io.radixkv.cache.Namespace;
import io.radixkv.cache.NodeRef;
import java.util.Arrays;
import java.util.Objects;

/**
 * One request as the scheduler sees it: its tokens (prompt, then everything generated so
 * far), where its KV stands, and the per-request counters the engine reports. Mutable and
 * confined to the engine thread.
 *
 * <p>Token positions: the sequence's tokens are {@code prompt ++ output}. In an attempt
 * (admission to release) the scheduler prefills the first {@link #prefillTarget()} tokens
 * (the prompt, plus the output generated before a preemption: recompute), in chunks; the
 * last prefill chunk yields the next token. During decode the input is the newest output
 * token at position {@code totalTokens() - 1}, so {@code kvLen == totalTokens() - 1}
 * before each decode step.
 */
public final class Sequence {
    /** Where a sequence is in its lifecycle. */
    public enum Status {
        /** Queued (new, or preempted and requeued). */
        WAITING,
        /** Admitted; prompt KV being computed chunk by chunk. */
        PREFILL,
        /** Admitted; one token per step. */
        DECODE,
        /** Done (any reason); resources released or about to be. */
        FINISHED
    }

    private final long order;
    private final String id;
    private final Namespace namespace;
    private final int[] prompt;
    private final int maxTokens;
    private final int[] stopTokens;
    private final Object attachment;
    private final boolean usesPrefixCache;

    private int[] output = new int[16];
    private int outputLen;

    private Status status = Status.WAITING;
    /** The samples this sequence stands for: n until its prompt is prefilled and forked, then 1. */
    private int samples = 1;
    /** KvSequences slot while admitted, else -1. */
    int slot = -1;
    /** Tokens whose KV is computed (or mapped from the cache) in the current attempt. */
    int kvLen;
    /** Tokens to prefill in the current attempt (fixed at admission). */
    int prefillTarget;
    /** The cache node this sequence holds its single lock on (null: none). */
    NodeRef lockedNode;
    /** The tokens of the current attempt, as the prefix store's key (built at admission). */
    PrefixStore.Key cacheKey;
    /** Snapshot of prompt ++ output at admission (what this attempt prefills). */
    int[] attemptTokens;

    // ---- counters for the request's stats ----
    private final long submitNanos;
    private long firstAdmitNanos = -1;
    private long lastTokenNanos = -1;
    private long firstTokenNanos = -1;
    private long[] interToken = new long[16];
    private int interTokenLen;
    private int cachedPromptTokens;
    private int computedPromptTokens;
    private long recomputedTokens;
    private int preemptions;
    private int attempts;

    private volatile boolean cancelRequested;
    /** Every prompt position's logits are wanted (prompt log-probabilities); set before enqueueing. */
    private boolean promptLogits;
    private FinishReason finishReason;
    private String error;

    /**
     * @param order submission order (FCFS priority; preemption picks the largest)
     * @param namespace the prefix-cache namespace (its KV is shared only within it)
     * @param stopTokens token ids that end generation (the stop token is kept in the output)
     * @param attachment the engine's per-request state (handle, sampler)
     */
    public Sequence(long order, String id, Namespace namespace, int[] prompt, int maxTokens, int[] stopTokens,
                    Object attachment, long submitNanos) {
        this(order, id, namespace, prompt, maxTokens, stopTokens, attachment, submitNanos, true);
    }

    /**
     * @param usesPrefixCache false: the sequence neither reuses nor inserts cached pages (the
     *     engine's start-up warm-up, which must leave the cache and its events untouched)
     */
    public Sequence(long order, String id, Namespace namespace, int[] prompt, int maxTokens, int[] stopTokens,
                    Object attachment, long submitNanos, boolean usesPrefixCache) {
        this.order = order;
        this.usesPrefixCache = usesPrefixCache;
        this.id = Objects.requireNonNull(id, "id");
        this.namespace = Objects.requireNonNull(namespace, "namespace");
        Objects.requireNonNull(prompt, "prompt");
        if (prompt.length == 0) {
            throw new IllegalArgumentException("request " + id + ": the prompt must hold at least one token");
        }
        if (maxTokens <= 0) {
            throw new IllegalArgumentException("request " + id + ": maxTokens must be positive, got " + maxTokens);
        }
        this.prompt = prompt.clone();
        this.maxTokens = maxTokens;
        this.stopTokens = stopTokens == null ? new int[0] : stopTokens.clone();
        Arrays.sort(this.stopTokens);
        this.attachment = attachment;
        this.submitNanos = submitNanos;
    }

    public long order() {
        return order;
    }

    public String id() {
        return id;
    }

    public Namespace namespace() {
        return namespace;
    }

    /** False when this sequence bypasses the prefix cache (see the constructor). */
    public boolean usesPrefixCache() {
        return usesPrefixCache;
    }

    /**
     * Marks the sequence as wanting the logits of every prompt position (prompt
     * log-probabilities): its prefill chunks share {@link Scheduler#PROMPT_LOGIT_ROWS_PER_STEP}
     * rows a step. Call before {@link Scheduler#enqueue}.
     */
    public void wantPromptLogits() {
        promptLogits = true;
    }

    public boolean wantsPromptLogits() {
        return promptLogits;
    }

    public Object attachment() {
        return attachment;
    }

    /**
     * The samples this sequence stands for: the request's {@code n} while its prompt is
     * prefilled (admission counts each against {@code maxRunning}), 1 once it has been forked.
     */
    public int samples() {
        return samples;
    }

    /**
     * Asks for {@code n} samples of this request: after its prompt's prefill the scheduler forks
     * {@code n - 1} more sequences that share the prompt's pages. Call before it is enqueued.
     */
    public void setSamples(int n) {
        if (n < 1) {
            throw new IllegalArgumentException("request " + id + ": samples must be positive, got " + n);
        }
        if (status != Status.WAITING || attempts > 0) {
            throw new IllegalStateException("setSamples on " + this + ", which was already admitted");
        }
        this.samples = n;
    }

    /** One sample was forked from this sequence. */
    void forkedOne() {
        samples--;
    }

    /**
     * A new sample of this request with {@code id} and {@code attachment}: the same prompt,
     * limits, order (so the same page owner) and prompt statistics, no output. WAITING, no pages.
     */
    Sequence forkChild(String childId, Object childAttachment) {
        Sequence c = new Sequence(order, childId, namespace, prompt, maxTokens, stopTokens, childAttachment,
                submitNanos, usesPrefixCache);
        c.firstAdmitNanos = firstAdmitNanos;
        c.cachedPromptTokens = cachedPromptTokens;
        c.computedPromptTokens = computedPromptTokens;
        c.preemptions = preemptions;
        c.attempts = attempts;
        return c;
    }

    public int promptLength() {
        return prompt.length;
    }

    public int[] prompt() {
        return prompt.clone();
    }

    public int maxTokens() {
        return maxTokens;
    }

    public Status status() {
        return status;
    }

    void setStatus(Status s) {
        this.status = s;
    }

    public boolean isRunning() {
        return status == Status.PREFILL || status == Status.DECODE;
    }

    public int outputLength() {
        return outputLen;
    }

    public int[] output() {
        return Arrays.copyOf(output, outputLen);
    }

    public int lastOutputToken() {
        if (outputLen == 0) {
            throw new IllegalStateException("request " + id + " has no output yet");
        }
        return output[outputLen - 1];
    }

    /** Prompt plus generated tokens. */
    public int totalTokens() {
        return prompt.length + outputLen;
    }

    public int tokenAt(int i) {
        return i < prompt.length ? prompt[i] : output[i - prompt.length];
    }

    /** prompt ++ output as a new array. */
    public int[] allTokens() {
        int[] all = Arrays.copyOf(prompt, prompt.length + outputLen);
        System.arraycopy(output, 0, all, prompt.length, outputLen);
        return all;
    }

    /** KV tokens computed in the current attempt. */
    public int kvLen() {
        return kvLen;
    }

    public int prefillTarget() {
        return prefillTarget;
    }

    /** Tokens still to prefill in the current attempt. */
    public int prefillRemaining() {
        return status == Status.PREFILL ? prefillTarget - kvLen : 0;
    }

    /** The KvSequences slot while admitted, else -1. */
    public int slot() {
        return slot;
    }

    /** Output tokens still allowed. */
    public int remainingOutput() {
        return maxTokens - outputLen;
    }

    /**
     * Appends a sampled token and records its timing. Returns true when the sequence is
     * done: a stop token or {@code maxTokens} reached.
     */
    boolean appendToken(int token, long nowNanos) {
        if (outputLen == output.length) {
            output = Arrays.copyOf(output, output.length * 2);
        }
        output[outputLen++] = token;
        if (firstTokenNanos < 0) {
            firstTokenNanos = nowNanos;
        } else {
            if (interTokenLen == interToken.length) {
                interToken = Arrays.copyOf(interToken, interToken.length * 2);
            }
            interToken[interTokenLen++] = nowNanos - lastTokenNanos;
        }
        lastTokenNanos = nowNanos;
        return Arrays.binarySearch(stopTokens, token) >= 0 || outputLen >= maxTokens;
    }

    boolean isStopToken(int token) {
        return Arrays.binarySearch(stopTokens, token) >= 0;
    }

    // ---- cancellation (any thread) ----

    public void requestCancel() {
        cancelRequested = true;
    }

    public boolean cancelRequested() {
        return cancelRequested;
    }

    // ---- finish bookkeeping ----

    /** Why the sequence finished, or null while it has not. */
    public FinishReason finishReason() {
        return finishReason;
    }

    public String error() {
        return error;
    }

    void finish(FinishReason reason, String error) {
        this.status = Status.FINISHED;
        this.finishReason = reason;
        this.error = error;
    }

    // ---- stats ----

    void noteAdmitted(long nowNanos) {
        if (firstAdmitNanos < 0) {
            firstAdmitNanos = nowNanos;
        }
        attempts++;
    }

    /**
     * Records tokens reused from the cache (kv mapped without compute). Only the first attempt
     * counts towards the request's prompt stats; later attempts are recompute.
     */
    void noteCached(int fromPos, int toPos) {
        if (attempts == 1) {
            cachedPromptTokens += overlapWithPrompt(fromPos, toPos);
        }
    }

    /** Records tokens actually prefilled in [fromPos, toPos). */
    void noteComputed(int fromPos, int toPos) {
        if (attempts == 1) {
            computedPromptTokens += overlapWithPrompt(fromPos, toPos);
        } else {
            recomputedTokens += toPos - fromPos;
        }
    }

    private int overlapWithPrompt(int from, int to) {
        return Math.max(0, Math.min(to, prompt.length) - from);
    }

    void notePreempted() {
        preemptions++;
    }

    public long submitNanos() {
        return submitNanos;
    }

    /** Nanos from submission to first admission; -1 if never admitted. */
    public long queueNanos() {
        return firstAdmitNanos < 0 ? -1 : firstAdmitNanos - submitNanos;
    }

    /** Nanos from submission to the first output token; -1 if none. */
    public long ttftNanos() {
        return firstTokenNanos < 0 ? -1 : firstTokenNanos - submitNanos;
    }

    public long[] interTokenNanos() {
        return Arrays.copyOf(interToken, interTokenLen);
    }

    public long lastTokenNanos() {
        return lastTokenNanos;
    }

    /** Prompt tokens reused from the prefix cache in the first attempt. */
    public int cachedPromptTokens() {
        return cachedPromptTokens;
    }

    /** Prompt tokens prefilled in the first attempt. */
    public int computedPromptTokens() {
        return computedPromptTokens;
    }

    /** Tokens prefilled again after preemptions. */
    public long recomputedTokens() {
        return recomputedTokens;
    }

    public int preemptions() {
        return preemptions;
    }

    @Override
    public String toString() {
        return "Sequence[" + id + ", " + status + ", prompt=" + prompt.length + ", out=" + outputLen + ", kv=" + kvLen
                + "/" + prefillTarget + ", slot=" + slot + "]";
    }
}
