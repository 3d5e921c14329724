package io.radixkv.kernels;

/**
 * Plain-Java kernels: the independent reference the native kernels are tested against,
 * and the baseline in benchmarks. Straightforward loops, double accumulation where it
 * matters; it shares no code with the native path except argument validation.
 */
public final class JavaReferenceBackend implements KernelBackend {
    private final HostMemory memory = new HostMemory();
    private final JavaKvCacheKernels kv = new JavaKvCacheKernels();
    private final JavaAttentionKernels attention = new JavaAttentionKernels();

    @Override
    public String name() {
        return "java";
    }

    @Override
    public KvCacheKernels kv() {
        return kv;
    }

    @Override
    public AttentionKernels attention() {
        return attention;
    }

    @Override
    public BackendMemory memory() {
        return memory;
    }

    @Override
    public void close() {
        memory.close();
    }
}
