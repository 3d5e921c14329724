package io.radixkv.engine;

/**
 * Receives the tokens of a request for several samples ({@link Engine#submit(GenerateRequest,
 * int, SampleTokenListener)}) as they are sampled, on the engine thread. If it throws (anything,
 * Errors included), that sample ends as ERROR and the others go on.
 */
@FunctionalInterface
public interface SampleTokenListener {
    /** Token {@code token} of sample {@code sample} (0 .. n-1). */
    void onToken(int sample, int token);
}
