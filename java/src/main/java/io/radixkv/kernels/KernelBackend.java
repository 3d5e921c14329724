package io.radixkv.kernels;

import java.util.Optional;

/**
 * A set of kernel implementations over one kind of memory. Implementations:
 * {@code CpuBackend} (libradixkv through FFM), {@code CudaBackend} (libradixkv_cuda; its
 * segments are device memory) and {@code JavaReferenceBackend} (plain Java, the
 * independent reference for tests and a benchmark baseline).
 */
public interface KernelBackend extends AutoCloseable {
    /** Short name: "cpu", "cuda", "java". */
    String name();

    KvCacheKernels kv();

    AttentionKernels attention();

    /**
     * The dense kernels (GEMM, norms, rotary, activations) the model runner uses with this
     * backend's memory.
     */
    DenseKernels dense();

    /**
     * Sampling over f32 logits in host memory, where this backend has a kernel for it; empty
     * where the caller samples in Java.
     */
    default Optional<SamplingKernels> sampling() {
        return Optional.empty();
    }

    /**
     * Log-probabilities over f32 logits in host memory (the step's logits land on the host on
     * every backend); empty where this backend has none.
     */
    default Optional<LogprobKernels> logprobs() {
        return Optional.empty();
    }

    /**
     * Constrained decoding's token masks over f32 logits in host memory (the logits a step
     * samples from); the plain-Java implementation unless this backend has a kernel.
     */
    default TokenBitmaskKernels tokenBitmask() {
        return TokenBitmaskKernels.java();
    }

    /** Memory this backend's kernels operate on (host arena or device allocations). */
    BackendMemory memory();

    /** True when segments passed to kernels must be device memory. */
    default boolean deviceMemory() {
        return false;
    }

    /**
     * Called once per engine step, after its results were copied to the host: throws if a
     * kernel found bad input on the device since the last call (a slot or token id out of range,
     * which device kernels flag instead of writing). Host backends report such errors at the
     * call, so this does nothing.
     *
     * @throws NativeException naming the kernel and the bad value
     */
    default void checkDeviceErrors() {}

    @Override
    void close();
}
