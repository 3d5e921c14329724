package io.radixkv.kernels;

import io.radixkv.bindings.radixkv_h;

/**
 * Kernels of libradixkv_cuda over device memory owned by {@link CudaMemory}. Usable only
 * when libradixkv_cuda loads, the CUDA runtime library loads and at least one device
 * exists; {@link #probe()} says why not otherwise, and {@link Backends#create} falls back
 * to the CPU backend with one log line.
 */
public final class CudaBackend extends BackendBase {
    private static final CachedProbe PROBE = new CachedProbe(CudaBackend::computeProbe);

    public CudaBackend() {
        super("cuda", probedMemory(), new CudaKvCacheKernels(), new CudaAttentionKernels());
    }

    /** Device memory, made only once the probe says a device can be used. */
    private static CudaMemory probedMemory() {
        String why = probe();
        if (!why.isEmpty()) {
            throw new IllegalStateException("CUDA backend unavailable: " + why);
        }
        return new CudaMemory();
    }

    /** "" when a CUDA device can be used, else the reason it cannot. Never throws; cached. */
    static String probe() {
        return PROBE.reason();
    }

    private static String computeProbe() {
        if (NativeLibrary.loadCuda().isEmpty()) {
            return "libradixkv_cuda not loaded: " + NativeLibrary.cudaUnavailableReason();
        }
        int n = radixkv_h.rkv_cuda_device_count();
        if (n < 0) {
            return "no CUDA device: " + CudaKvCacheKernels.lastError();
        }
        if (n == 0) {
            return "no CUDA device: cudaGetDeviceCount found 0 devices";
        }
        NativeLibrary.loadCudart();
        return "";
    }

    /**
     * There are no CUDA dense kernels yet: the model runner computes on the host, so the
     * engine refuses (or, for "auto", replaces) a CUDA backend before asking for them.
     */
    @Override
    public DenseKernels dense() {
        throw new UnsupportedOperationException("the CUDA backend has no dense kernels yet (the model runs on the "
                + "host): use the cpu or java backend for the model, CUDA for KV-cache and attention kernels only");
    }
}
