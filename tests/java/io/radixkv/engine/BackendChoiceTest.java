package io.radixkv.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.radixkv.kernels.KernelBackend;
import io.radixkv.kernels.select.Backends;
import org.junit.jupiter.api.Test;

/**
 * The engine's backend choice: "cuda" is refused naming why CUDA is unavailable, and used when
 * it is; "auto" takes CUDA exactly when it is usable, else the CPU. Runs both ways: without a
 * GPU here, with one under scripts/gpu-check.
 */
class BackendChoiceTest {
    @Test
    void cudaIsRefusedNamingWhyItIsUnavailableOrUsed() {
        String why = Backends.cudaUnavailableReason();
        if (why.isEmpty()) {
            try (KernelBackend b = BackendChoice.create("cuda")) {
                assertEquals("cuda", b.name());
                assertEquals(true, b.deviceMemory());
            }
        } else {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> BackendChoice.create("cuda"));
            assertEquals("backend cuda unavailable: " + why, e.getMessage());
        }
    }

    @Test
    void autoTakesCudaExactlyWhenItIsUsable() {
        boolean cuda = Backends.cudaUnavailableReason().isEmpty();
        try (KernelBackend b = BackendChoice.create("auto")) {
            assertEquals(cuda ? "cuda" : "cpu", b.name());
            assertEquals(cuda, b.deviceMemory());
        }
    }
}
