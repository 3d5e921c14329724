package io.radixkv.kernels.select;

import io.radixkv.kernels.KernelBackend;
import io.radixkv.kernels.cpu.CpuBackend;
import io.radixkv.kernels.cuda.CudaBackend;
import io.radixkv.kernels.reference.JavaReferenceBackend;
import java.util.Locale;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/** Chooses a kernel backend: "auto" (CUDA when a device exists, else CPU), "cpu", "cuda" or "java". */
public final class Backends {
    private static final Logger LOG = LogManager.getLogger(Backends.class);

    private Backends() {}

    /** Why CUDA is not used, or "" when it is available. Never throws. */
    public static String cudaUnavailableReason() {
        return CudaBackend.probe();
    }

    public static KernelBackend create(String choice) {
        String c = choice == null ? "auto" : choice.trim().toLowerCase(Locale.ROOT);
        return switch (c) {
            case "cpu" -> new CpuBackend();
            case "java" -> new JavaReferenceBackend();
            case "cuda" -> {
                String why = CudaBackend.probe();
                if (!why.isEmpty()) {
                    throw new IllegalStateException("CUDA backend requested but unavailable: " + why);
                }
                yield new CudaBackend();
            }
            case "auto" -> {
                String why = CudaBackend.probe();
                if (why.isEmpty()) {
                    yield new CudaBackend();
                }
                LOG.info("CUDA backend unavailable ({}); using the CPU backend", why);
                yield new CpuBackend();
            }
            default -> throw new IllegalArgumentException("unknown backend '" + choice + "' (expected auto, cpu, cuda or java)");
        };
    }
}
