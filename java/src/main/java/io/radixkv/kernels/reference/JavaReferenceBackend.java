package io.radixkv.kernels.reference;

import io.radixkv.kernels.BackendBase;
import io.radixkv.kernels.DenseKernels;
import io.radixkv.kernels.LogprobKernels;
import java.util.Optional;
import io.radixkv.kernels.HostMemory;

/**
 * Plain-Java kernels: the independent reference the native kernels are tested against,
 * and the baseline in benchmarks. Straightforward loops, double accumulation where it
 * matters; it shares no code with the native path except argument validation.
 */
public final class JavaReferenceBackend extends BackendBase {
    private final JavaDenseKernels dense = new JavaDenseKernels();

    public JavaReferenceBackend() {
        super("java", new HostMemory(), new JavaKvCacheKernels(), new JavaAttentionKernels(), null);
    }

    private final JavaLogprobs logprobs = new JavaLogprobs();

    @Override
    public Optional<LogprobKernels> logprobs() {
        return Optional.of(logprobs);
    }

    @Override
    public DenseKernels dense() {
        return dense;
    }
}
