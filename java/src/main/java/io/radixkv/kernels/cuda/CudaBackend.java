package io.radixkv.kernels.cuda;

import io.radixkv.bindings.radixkv_h;
import io.radixkv.kernels.BackendBase;
import io.radixkv.kernels.DenseKernels;
import io.radixkv.kernels.LogprobKernels;
import io.radixkv.kernels.cpu.CpuLogprobs;
import io.radixkv.kernels.cpu.CpuSampling;
import io.radixkv.kernels.cpu.NativeLibrary;
import java.lang.foreign.MemorySegment;
import java.util.Optional;

/**
 * Kernels of libradixkv_cuda over device memory owned by {@link CudaMemory}. Usable only
 * when libradixkv_cuda loads, the CUDA runtime library loads, at least one device exists and
 * cuBLAS (the dense kernels' GEMMs, loaded at run time from the user's CUDA installation)
 * loads; {@link #probe()} says why not otherwise, and {@code Backends.create} falls back to
 * the CPU backend with one log line.
 */
public final class CudaBackend extends BackendBase {
    private static final CachedProbe PROBE = new CachedProbe(CudaBackend::computeProbe);

    private final CudaDenseKernels dense;
    private final CudaDeviceErrors errors;

    public CudaBackend() {
        this(probedMemory());
    }

    private CudaBackend(CudaMemory memory) {
        this(memory, new CudaDeviceErrors(memory));
    }

    private CudaBackend(CudaMemory memory, CudaDeviceErrors errors) {
        super("cuda", memory, new CudaKvCacheKernels(memory.stream(), errors, CudaStaging.of(memory)),
                CudaAttentionKernels.of(memory), CpuSampling.instance()); // logits are copied to the host to sample
        this.errors = errors;
        this.dense = new CudaDenseKernels(memory, memory.stream(), errors.record());
    }

    /** The step's logits are copied to the host: their log-probabilities are libradixkv's. */
    @Override
    public Optional<LogprobKernels> logprobs() {
        return Optional.of(CpuLogprobs.instance());
    }

    /**
     * The backend's one CUDA stream (a cudaStream_t): every kernel and copy of this backend is
     * ordered on it; {@code memory().synchronize()} waits for it.
     */
    public MemorySegment stream() {
        return ((CudaMemory) memory()).stream();
    }

    /**
     * Reads the device error record (one small copy that waits for the stream), resets it and
     * throws when a kernel met a bad slot, token id or page id since the last call: those
     * kernels skip the bad row and record it instead of failing the launch.
     */
    @Override
    public void checkDeviceErrors() {
        errors.check();
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
    public static String probe() {
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
        String blas = CudaDenseKernels.blasUnavailableReason();
        if (!blas.isEmpty()) {
            return "cuBLAS unavailable: " + blas;
        }
        return "";
    }

    /**
     * The dense kernels over device memory (cuBLAS GEMMs, CUDA element-wise kernels). The model
     * runner still keeps weights and activations on the host, so the engine does not run on
     * this backend yet ({@code engine.BackendChoice}).
     */
    /** The step's logits are on the host when a constrained row needs them: libradixkv masks them. */
    @Override
    public io.radixkv.kernels.TokenBitmaskKernels tokenBitmask() {
        return io.radixkv.kernels.cpu.CpuTokenBitmask.instance();
    }

    @Override
    public DenseKernels dense() {
        return dense;
    }
}
