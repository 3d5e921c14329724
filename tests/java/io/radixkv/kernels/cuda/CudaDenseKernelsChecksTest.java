package io.radixkv.kernels.cuda;

import io.radixkv.kernels.DType;
import io.radixkv.kernels.HostMemory;
import io.radixkv.kernels.RecordingMemory;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * CudaDenseKernels' Java-side checks, without a GPU: a stub "device" memory (host segments
 * flagged as device) lets the class be built; every call here is malformed, so each must be
 * refused in Java, naming the bad value, before any downcall (a downcall would reach
 * libradixkv_cuda, which has no device here, and fail differently).
 */
class CudaDenseKernelsChecksTest {
    private final Arena arena = Arena.ofShared();
    private final RecordingMemory stubDevice = new RecordingMemory(true);
    private final CudaDenseKernels k = new CudaDenseKernels(stubDevice, MemorySegment.NULL, stubDevice.allocate(32));

    @AfterEach
    void close() {
        stubDevice.close();
        arena.close();
    }

    private MemorySegment f32(long n) {
        return arena.allocate(4 * n, 64);
    }

    private static void refused(String expected, Runnable call) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call::run);
        assertTrue(e.getMessage().contains(expected), () -> "message should name '" + expected + "': " + e.getMessage());
    }

    @Test
    void takesF32AndBf16WeightsOnly() {
        assertEquals(java.util.EnumSet.of(DType.F32, DType.BF16), k.weightDtypes());
    }

    @Test
    void needsDeviceMemory() {
        try (HostMemory host = new HostMemory()) {
            assertThrows(IllegalArgumentException.class,
                    () -> new CudaDenseKernels(host, MemorySegment.NULL, MemorySegment.NULL));
        }
    }

    @Test
    void f16WeightsAreRefusedWithTheReason() {
        UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class,
                () -> k.linear(f32(6), arena.allocate(24, 64), DType.F16, f32(8), 2, 4, 3, false));
        assertTrue(e.getMessage().contains("f16"), e.getMessage());
    }

    @Test
    void linearShapesAndCublasIntRange() {
        refused("y", () -> k.linear(f32(6), f32(12), DType.F32, f32(3), 2, 4, 3, false));
        refused("w", () -> k.linear(f32(6), f32(11), DType.F32, f32(8), 2, 4, 3, false));
        refused("w", () -> k.linear(f32(6), f32(12), DType.FP8_E4M3, f32(8), 2, 4, 3, false));
        // distinct fake address ranges, never dereferenced: refused before any downcall
        MemorySegment x = MemorySegment.ofAddress(1L << 40).reinterpret(1L << 36);
        MemorySegment w = MemorySegment.ofAddress(2L << 40).reinterpret(1L << 36);
        MemorySegment y = MemorySegment.ofAddress(3L << 40).reinterpret(1L << 36);
        refused("int32", () -> k.linear(x, w, DType.F32, y, 1L << 31, 1, 1, false));
    }

    @Test
    void normRopeAndElementwiseShapes() {
        refused("eps", () -> k.rmsnorm(f32(8), f32(4), f32(8), 2, 4, -1f, 0f));
        refused("y", () -> k.rmsnorm(f32(8), f32(4), f32(7), 2, 4, 1e-6f, 1f));
        refused("headDim", () -> k.ropeTable(f32(30), f32(30), f32(2), 2, 3, 1, 5, arena.allocate(16)));
        refused("positions", () -> k.ropeTable(f32(32), f32(16), f32(1), 2, 2, 1, 8, arena.allocate(32)));
        refused("invFreq", () -> k.ropeTable(f32(32), f32(16), f32(2), 2, 2, 1, 8, arena.allocate(24)));
        refused("theta", () -> k.rope(f32(32), f32(16), f32(2), 2, 2, 1, 8, 0f));
        refused("gateUp", () -> k.siluMul(f32(7), f32(4), 1, 4));
        refused("out", () -> k.geluTanhMul(f32(8), f32(3), 1, 4));
        refused("bias", () -> k.addBias(f32(8), f32(3), 2, 4));
        refused("soft cap", () -> k.softCap(f32(8), 8, Float.NaN));
        refused("scale", () -> k.scale(f32(8), 8, Float.POSITIVE_INFINITY));
        refused("x", () -> k.addInplace(f32(8), f32(7), 8));
        refused("out", () -> k.argmax(f32(20), 2, 10, arena.allocate(4)));
    }

    @Test
    void embeddingShapes() {
        refused("ids", () -> k.embedding(arena.allocate(8), 3, f32(40), DType.F32, 10, 4, f32(12)));
        refused("table", () -> k.embedding(arena.allocate(12), 3, f32(39), DType.F32, 10, 4, f32(12)));
        refused("table dtype", () -> k.embedding(arena.allocate(12), 3, f32(40), DType.F16, 10, 4, f32(12)));
        refused("out", () -> k.embedding(arena.allocate(12), 3, f32(40), DType.F32, 10, 4, f32(11)));
    }
}
