package io.radixkv.kernels.select;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.radixkv.kernels.KernelBackend;
import io.radixkv.kernels.cpu.CpuBackend;
import io.radixkv.kernels.cpu.CpuDenseKernels;
import io.radixkv.kernels.cpu.CpuKvCacheKernels;
import io.radixkv.kernels.cuda.CudaBackend;
import io.radixkv.kernels.reference.JavaDenseKernels;
import io.radixkv.kernels.reference.JavaKvCacheKernels;
import org.junit.jupiter.api.Test;

/**
 * Backend choice: "auto" uses CUDA only where a device exists, else falls back to the CPU
 * (the reason is available from {@link Backends#cudaUnavailableReason()}); "cuda" without a
 * device fails with that reason. On a GPU machine the CUDA branch is checked instead.
 */
class BackendSelectionTest {
    @Test
    void autoFallsBackToCpuOrUsesCuda() {
        String why = Backends.cudaUnavailableReason();
        try (KernelBackend b = Backends.create("auto")) {
            if (why.isEmpty()) {
                assertInstanceOf(CudaBackend.class, b);
                assertTrue(b.deviceMemory());
            } else {
                assertInstanceOf(CpuBackend.class, b);
                assertEquals("cpu", b.name());
                assertFalse(b.deviceMemory());
            }
        }
    }

    @Test
    void cudaWithoutDeviceThrowsWithTheReason() {
        String why = Backends.cudaUnavailableReason();
        if (why.isEmpty()) {
            try (KernelBackend b = Backends.create("cuda")) {
                assertEquals("cuda", b.name());
            }
            return;
        }
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> Backends.create("cuda"));
        assertTrue(e.getMessage().contains(why), e.getMessage());
        // the reason says what is missing: the library, the runtime or a device
        assertTrue(why.contains("libradixkv_cuda") || why.contains("CUDA device") || why.contains("libcudart")
                || why.contains("libcublas"), why);
        assertThrows(IllegalStateException.class, CudaBackend::new);
    }

    @Test
    void explicitBackendsAndUnknownNames() {
        try (KernelBackend cpu = Backends.create("cpu"); KernelBackend java = Backends.create(" Java ")) {
            assertEquals("cpu", cpu.name());
            assertEquals("java", java.name());
            assertTrue(cpu.sampling().isPresent(), "libradixkv samples for the CPU backend");
            assertTrue(java.sampling().isEmpty(), "the Java reference samples in Java");
            assertInstanceOf(CpuKvCacheKernels.class, cpu.kv());
            assertInstanceOf(JavaKvCacheKernels.class, java.kv());
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Backends.create("tpu"));
        assertTrue(e.getMessage().contains("tpu"));
    }

    /** The probe's answer matches what constructing the backend does. */
    @Test
    void probeAgreesWithConstruction() {
        String why = CudaBackend.probe();
        if (why.isEmpty()) {
            try (CudaBackend b = new CudaBackend()) {
                assertTrue(b.deviceMemory());
            }
        } else {
            IllegalStateException e = assertThrows(IllegalStateException.class, CudaBackend::new);
            assertTrue(e.getMessage().contains(why), e.getMessage());
        }
    }

    /** Each backend provides its own dense kernels (CUDA: cuBLAS GEMMs and CUDA kernels over device memory). */
    @Test
    void backendsProvideTheirDenseKernels() {
        try (KernelBackend cpu = Backends.create("cpu"); KernelBackend java = Backends.create("java")) {
            assertInstanceOf(CpuDenseKernels.class, cpu.dense());
            assertInstanceOf(JavaDenseKernels.class, java.dense());
            assertEquals("cpu", cpu.dense().name());
            assertEquals("java", java.dense().name());
        }
        if (Backends.cudaUnavailableReason().isEmpty()) {
            try (KernelBackend cuda = Backends.create("cuda")) {
                assertEquals("cuda", cuda.dense().name());
            }
        }
    }
}
