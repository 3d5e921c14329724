package io.radixkv.kernels;

/** PLACEHOLDER: the CUDA backend (libradixkv_cuda + cudart bindings), written by the foundation kernels work. */
public final class CudaBackend implements KernelBackend {
    /** "" when a CUDA device can be used, else the reason it cannot. */
    static String probe() {
        return "not implemented yet";
    }

    @Override public String name() { return "cuda"; }
    @Override public KvCacheKernels kv() { throw new UnsupportedOperationException(); }
    @Override public AttentionKernels attention() { throw new UnsupportedOperationException(); }
    @Override public BackendMemory memory() { throw new UnsupportedOperationException(); }
    @Override public boolean deviceMemory() { return true; }
    @Override public void close() {}
}
