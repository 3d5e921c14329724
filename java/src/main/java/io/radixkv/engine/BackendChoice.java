package io.radixkv.engine;

import io.radixkv.kernels.KernelBackend;
import io.radixkv.kernels.select.Backends;

/**
 * The engine's backend: "cuda" needs a device and cuBLAS (else the engine refuses to start,
 * naming why); "auto" takes CUDA when it is usable and otherwise the CPU with one log line
 * naming the reason ({@link Backends#create}); "cpu" and "java" as named. The same engine,
 * scheduler, cache and page tables drive every backend.
 */
final class BackendChoice {
    private BackendChoice() {}

    static KernelBackend create(String choice) {
        if (choice.equals("cuda")) {
            String why = Backends.cudaUnavailableReason();
            if (!why.isEmpty()) {
                throw new IllegalArgumentException("backend cuda unavailable: " + why);
            }
        }
        return Backends.create(choice);
    }
}
