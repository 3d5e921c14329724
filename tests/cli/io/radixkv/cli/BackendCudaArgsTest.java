package io.radixkv.cli;

import static org.junit.jupiter.api.Assumptions.assumeFalse;

import io.radixkv.kernels.select.Backends;
import org.junit.jupiter.api.Test;

/** {@code --backend cuda} on a machine without a usable CUDA device: exit 2, one line naming the reason. */
class BackendCudaArgsTest {
    @Test
    void benchWithCudaAndNoDeviceIsAUsageErrorNamingTheReason() {
        String why = Backends.cudaUnavailableReason();
        assumeFalse(why.isEmpty(), "a CUDA device and cuBLAS are present here");
        CliRun.of("bench", "--workload", "prefix_caching", "--requests", "1", "--model", "tiny", "--backend", "cuda")
                .assertUsageError("--backend cuda: " + why);
    }

    @Test
    void generateWithCudaAndNoDeviceIsAUsageErrorNamingTheReason() {
        String why = Backends.cudaUnavailableReason();
        assumeFalse(why.isEmpty(), "a CUDA device and cuBLAS are present here");
        CliRun.of("generate", "--prompt-tokens", "1,2,3", "--model", "tiny", "--backend", "cuda")
                .assertUsageError("--backend cuda: " + why);
    }
}
