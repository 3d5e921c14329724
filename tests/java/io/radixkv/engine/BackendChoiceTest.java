package io.radixkv.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.radixkv.kernels.Backends;
import io.radixkv.kernels.KernelBackend;
import org.junit.jupiter.api.Test;

/**
 * The engine's backend choice: "auto" always ends on a host-memory backend (the model runner
 * computes on the host), "cuda" is refused with the reason CUDA is unavailable when it is.
 */
class BackendChoiceTest {
    @Test
    void cudaIsRefusedNamingWhyItIsUnavailable() {
        String why = Backends.cudaUnavailableReason();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> BackendChoice.create("cuda"));
        if (why.isEmpty()) {
            assertTrue(e.getMessage().contains("host-memory backend"), e.getMessage());
        } else {
            assertEquals("backend cuda unavailable: " + why, e.getMessage());
        }
    }

    @Test
    void autoEndsOnAHostBackend() {
        try (KernelBackend b = BackendChoice.create("auto")) {
            assertFalse(b.deviceMemory());
            assertEquals("cpu", b.name());
        }
    }
}
