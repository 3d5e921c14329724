package io.radixkv.sched;

/** Why a request ended. */
public enum FinishReason {
    /** A stop token was generated (it is the last output token). */
    STOP,
    /** {@code maxTokens} tokens were generated. */
    LENGTH,
    /** The caller cancelled it. */
    CANCELLED,
    /** Refused before running: invalid, or it can never fit the KV pool / sequence limit. */
    REJECTED,
    /** It failed while running (its own error; other requests are unaffected). */
    ERROR,
    /** The engine shut down first. */
    ABORTED
}
