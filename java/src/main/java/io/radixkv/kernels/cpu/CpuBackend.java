package io.radixkv.kernels.cpu;

import io.radixkv.kernels.BackendBase;
import io.radixkv.kernels.DenseKernels;
import io.radixkv.kernels.LogprobKernels;
import java.util.Optional;
import io.radixkv.kernels.HostMemory;

/** Kernels of libradixkv (C++, vectorized, OpenMP) over host memory. */
public final class CpuBackend extends BackendBase {
    private final CpuDenseKernels dense = new CpuDenseKernels();

    public CpuBackend() {
        // arguments are evaluated in order: libradixkv is loaded before the kernel classes bind to it
        super("cpu", loadLibraryThenMemory(), new CpuKvCacheKernels(), new CpuAttentionKernels(),
                CpuSampling.instance());
    }

    private static HostMemory loadLibraryThenMemory() {
        NativeLibrary.loadCpu();
        return new HostMemory();
    }

    @Override
    public Optional<LogprobKernels> logprobs() {
        return Optional.of(CpuLogprobs.instance());
    }

    @Override
    public io.radixkv.kernels.TokenBitmaskKernels tokenBitmask() {
        return CpuTokenBitmask.instance();
    }

    @Override
    public DenseKernels dense() {
        return dense;
    }
}
