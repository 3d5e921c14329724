package io.radixkv.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
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
        assertTrue(why.contains("libradixkv_cuda") || why.contains("CUDA device") || why.contains("libcudart"), why);
        assertThrows(IllegalStateException.class, CudaBackend::new);
    }

    @Test
    void explicitBackendsAndUnknownNames() {
        try (KernelBackend cpu = Backends.create("cpu"); KernelBackend java = Backends.create(" Java ")) {
            assertEquals("cpu", cpu.name());
            assertEquals("java", java.name());
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

    /** The check runs once, even when many threads ask first at the same time. */
    @Test
    void probeRunsItsCheckOnceUnderConcurrentFirstCalls() throws Exception {
        AtomicInteger runs = new AtomicInteger();
        CountDownLatch go = new CountDownLatch(1);
        CachedProbe probe = new CachedProbe(() -> {
            runs.incrementAndGet();
            try {
                Thread.sleep(20); // widen the window a racy cache would lose in
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return "no device (run " + runs.get() + ")";
        });
        List<Thread> threads = new ArrayList<>();
        List<String> answers = new CopyOnWriteArrayList<>();
        for (int i = 0; i < 8; i++) {
            threads.add(Thread.ofPlatform().start(() -> {
                try {
                    go.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                answers.add(probe.reason());
            }));
        }
        go.countDown();
        for (Thread t : threads) {
            t.join();
        }
        assertEquals(1, runs.get());
        assertEquals(8, answers.size());
        assertTrue(answers.stream().allMatch("no device (run 1)"::equals), answers.toString());
        assertEquals("no device (run 1)", probe.reason());
        assertEquals(1, runs.get());
    }

    /** A check that throws (a library that fails to link) is an answer, not an exception, and is not retried. */
    @Test
    void probeTurnsAFailingCheckIntoItsReason() {
        AtomicInteger runs = new AtomicInteger();
        CachedProbe probe = new CachedProbe(() -> {
            runs.incrementAndGet();
            throw new UnsatisfiedLinkError("libcudart.so.12: cannot open shared object file");
        });
        assertEquals("libcudart.so.12: cannot open shared object file", probe.reason());
        assertEquals("libcudart.so.12: cannot open shared object file", probe.reason());
        assertEquals(1, runs.get());
        CachedProbe available = new CachedProbe(() -> "");
        assertEquals("", available.reason());
    }

    /** Each backend provides its own dense kernels; CUDA has none yet and says so. */
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
                UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class, cuda::dense);
                assertTrue(e.getMessage().contains("CUDA"), e.getMessage());
            }
        }
    }
}
