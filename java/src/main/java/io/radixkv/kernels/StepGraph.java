package io.radixkv.kernels;

/**
 * Work issued once on a backend's stream and recorded for replay ({@link BackendMemory#capture}):
 * a CUDA graph. Replaying re-runs the recorded kernels and copies with the arguments they were
 * recorded with, reading whatever the buffers they point to hold at replay time.
 */
public interface StepGraph extends AutoCloseable {
    /** Enqueues one replay on the stream it was captured on (asynchronous, like a kernel). */
    void launch();

    /** Frees the graph; idempotent. */
    @Override
    void close();
}
