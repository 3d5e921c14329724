package io.radixkv.engine;

import io.radixkv.kernels.Backends;
import io.radixkv.kernels.KernelBackend;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * The engine's backend: the model runs its dense math on the host, so it needs a
 * host-memory backend. "auto" takes the CPU backend even where CUDA is present (with a log
 * line); "cuda" is refused.
 */
final class BackendChoice {
    private static final Logger LOG = LogManager.getLogger(BackendChoice.class);

    private BackendChoice() {}

    static KernelBackend create(String choice) {
        if (choice.equals("cuda")) {
            throw new IllegalArgumentException("backend cuda: the model runner computes on the host and needs a "
                    + "host-memory backend (cpu, java or auto)");
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
