package io.radixkv.kernels;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

/**
 * CUDA reshape_and_cache with a device-resident slot mapping that is never copied back by
 * Java: a bad slot is still an IllegalArgumentException naming it, the pools stay unchanged,
 * and good slots land where the CPU kernel puts them. Needs a device (see
 * CudaDenseKernelsDeviceTest for -Dradixkv.requireCuda).
 */
class CudaKvCacheKernelsDeviceTest {
    @Test
    void badSlotIsRefusedOnTheDeviceAndGoodSlotsMatchTheCpu() {
        String why = Backends.cudaUnavailableReason();
        if (Boolean.getBoolean("radixkv.requireCuda") && !why.isEmpty()) {
            fail("CUDA required but unavailable: " + why);
        }
        assumeTrue(why.isEmpty(), why);
        PagedKvLayout layout = new PagedKvLayout(DType.F32, 4, 2, 2, 8);
        int tokens = 3;
        long row = 2L * 8;
        try (KernelBackend cuda = Backends.create("cuda"); KernelBackend cpu = Backends.create("cpu");
                Arena arena = Arena.ofConfined()) {
            MemorySegment hk = arena.allocate(4 * tokens * row), hv = arena.allocate(4 * tokens * row);
            for (long i = 0; i < tokens * row; i++) {
                hk.setAtIndex(ValueLayout.JAVA_FLOAT, i, i + 1);
                hv.setAtIndex(ValueLayout.JAVA_FLOAT, i, -i - 1);
            }
            BackendMemory dm = cuda.memory();
            MemorySegment dk = dm.allocate(hk.byteSize()), dv = dm.allocate(hv.byteSize());
            dm.copyFromHost(hk, dk, hk.byteSize());
            dm.copyFromHost(hv, dv, hv.byteSize());
            KvCacheView dcache = KvCacheView.of(dm.allocate(layout.poolBytes()), dm.allocate(layout.poolBytes()), layout);
            MemorySegment badSlots = arena.allocateFrom(ValueLayout.JAVA_LONG, 0, 8, 3);  // 8 = 4 pages * 2
            MemorySegment dBad = dm.allocate(24);
            dm.copyFromHost(badSlots, dBad, 24);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> cuda.kv().reshapeAndCache(dk, dv, DType.F32, dBad, tokens, dcache));
            assertTrue(e.getMessage().contains("slot_mapping[1] = 8"), e.getMessage());
            MemorySegment pool = arena.allocate(layout.poolBytes());
            dm.copyToHost(dcache.kCache(), pool, layout.poolBytes());
            assertArrayEquals(new float[(int) (layout.poolBytes() / 4)], pool.toArray(ValueLayout.JAVA_FLOAT),
                    "pool written despite a bad slot");

            MemorySegment slots = arena.allocateFrom(ValueLayout.JAVA_LONG, 7, -1, 2);
            MemorySegment dSlots = dm.allocate(24);
            dm.copyFromHost(slots, dSlots, 24);
            cuda.kv().reshapeAndCache(dk, dv, DType.F32, dSlots, tokens, dcache);
            KvCacheView hcache = KvCacheView.of(cpu.memory().allocate(layout.poolBytes()),
                    cpu.memory().allocate(layout.poolBytes()), layout);
            cpu.kv().reshapeAndCache(hk, hv, DType.F32, slots, tokens, hcache);
            dm.copyToHost(dcache.kCache(), pool, layout.poolBytes());
            assertArrayEquals(hcache.kCache().toArray(ValueLayout.JAVA_FLOAT), pool.toArray(ValueLayout.JAVA_FLOAT));
            dm.copyToHost(dcache.vCache(), pool, layout.poolBytes());
            assertArrayEquals(hcache.vCache().toArray(ValueLayout.JAVA_FLOAT), pool.toArray(ValueLayout.JAVA_FLOAT));
        }
    }
}
