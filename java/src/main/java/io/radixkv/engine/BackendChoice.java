package io.radixkv.engine;

import io.radixkv.kernels.Backends;
import io.radixkv.kernels.KernelBackend;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * The engine's backend: the model runs its dense math on the host, so it needs a
 * host-memory backend. "auto" takes the CPU backend even where CUDA (a device and cuBLAS) is
 * present (with a log line); "cuda" is refused, naming why CUDA is unavailable when it is.
 */
final class BackendChoice {
    private static final Logger LOG = LogManager.getLogger(BackendChoice.class);

    private BackendChoice() {}

    static KernelBackend create(String choice) {
        if (choice.equals("cuda")) {
            String why = Backends.cudaUnavailableReason();
            if (!why.isEmpty()) {
                throw new IllegalArgumentException("backend cuda unavailable: " + why);
            }
            throw new IllegalArgumentException("backend cuda: the model runner keeps weights and activations on the "
                    + "host and needs a host-memory backend (cpu, java or auto)");
        }
        KernelBackend b = Backends.create(choice);
        if (b.deviceMemory()) {
            LOG.info("backend auto chose {}, but the model runner needs host memory: using the CPU backend", b.name());
            b.close();
            b = Backends.create("cpu");
        }
        return b;
    }
}
