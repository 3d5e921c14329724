package io.radixkv.kernels;

import io.radixkv.bindings.radixkv_h;

/**
 * Kernels of libradixkv_cuda over device memory owned by {@link CudaMemory}. Usable only
 * when libradixkv_cuda loads, the CUDA runtime library loads and at least one device
 * exists; {@link #probe()} says why not otherwise, and {@link Backends#create} falls back
 * to the CPU backend with one log line.
 */
public final class CudaBackend implements KernelBackend {
    private static String probeResult;

    private final CudaMemory memory;
    private final CudaKvCacheKernels kv = new CudaKvCacheKernels();
    private final CudaAttentionKernels attention = new CudaAttentionKernels();

    public CudaBackend() {
        String why = probe();
        if (!why.isEmpty()) {
            throw new IllegalStateException("CUDA backend unavailable: " + why);
        }
        this.memory = new CudaMemory();
    }

    /** "" when a CUDA device can be used, else the reason it cannot. Never throws; cached. */
    static synchronized String probe() {
        if (probeResult == null) {
            probeResult = computeProbe();
        }
        return probeResult;
    }

    private static String computeProbe() {
        try {
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
        } catch (LinkageError | RuntimeException e) {
            return e.getMessage() == null ? e.toString() : e.getMessage();
        }
    }

    @Override
    public String name() {
        return "cuda";
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
    public boolean deviceMemory() {
        return true;
    }

    @Override
    public void close() {
        memory.close();
    }
}
