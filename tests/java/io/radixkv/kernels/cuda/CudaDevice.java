package io.radixkv.kernels.cuda;

import io.radixkv.kernels.KernelBackend;
import io.radixkv.kernels.select.Backends;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The CUDA backend for device tests: skips the test without a usable device, unless
 * {@code -Dradixkv.requireCuda=true} (scripts/gpu-check), which turns a missing device into a
 * failure naming why.
 */
public final class CudaDevice {
    private CudaDevice() {}

    /** A new CUDA backend (the caller closes it), or the test is skipped / failed as above. */
    public static KernelBackend backendOrSkip() {
        String why = Backends.cudaUnavailableReason();
        if (Boolean.getBoolean("radixkv.requireCuda") && !why.isEmpty()) {
            throw new AssertionError("-Dradixkv.requireCuda=true but CUDA is unavailable: " + why);
        }
        assumeTrue(why.isEmpty(), () -> "no CUDA: " + why);
        return Backends.create("cuda");
    }
}
