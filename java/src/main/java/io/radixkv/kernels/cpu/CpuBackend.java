package io.radixkv.kernels.cpu;

import io.radixkv.kernels.BackendBase;
import io.radixkv.kernels.DenseKernels;
import io.radixkv.kernels.HostMemory;
import io.radixkv.kernels.SamplingKernels;
import java.util.Optional;

/** Kernels of libradixkv (C++, vectorized, OpenMP) over host memory. */
public final class CpuBackend extends BackendBase {
    private final CpuDenseKernels dense = new CpuDenseKernels();

    public CpuBackend() {
        // arguments are evaluated in order: libradixkv is loaded before the kernel classes bind to it
        super("cpu", loadLibraryThenMemory(), new CpuKvCacheKernels(), new CpuAttentionKernels());
    }

    private static HostMemory loadLibraryThenMemory() {
        NativeLibrary.loadCpu();
        return new HostMemory();
    }

    @Override
    public DenseKernels dense() {
        return dense;
    }

    /** libradixkv's sampler ({@code rkv_sample}). */
    @Override
    public Optional<SamplingKernels> sampling() {
        return Optional.of(CpuSampling.instance());
    }
}
