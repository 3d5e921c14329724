package io.radixkv.kernels;

/** Kernels of libradixkv (C++, vectorized, OpenMP) over host memory. */
public final class CpuBackend implements KernelBackend {
    private final HostMemory memory = new HostMemory();
    private final CpuKvCacheKernels kv;
    private final CpuAttentionKernels attention;

    public CpuBackend() {
        NativeLibrary.loadCpu();
        this.kv = new CpuKvCacheKernels();
        this.attention = new CpuAttentionKernels();
    }

    @Override
    public String name() {
        return "cpu";
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
