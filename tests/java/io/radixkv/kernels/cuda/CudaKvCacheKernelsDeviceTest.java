package io.radixkv.kernels.cuda;

import io.radixkv.kernels.BackendMemory;
import io.radixkv.kernels.DType;
import io.radixkv.kernels.KernelBackend;
import io.radixkv.kernels.KvCacheView;
import io.radixkv.kernels.NativeException;
import io.radixkv.kernels.PagedKvLayout;
import io.radixkv.kernels.select.Backends;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * CUDA reshape_and_cache with a device-resident slot mapping that is never copied back per
 * call: a bad slot skips its token (nothing out of bounds, the other tokens written) and is
 * reported by {@link KernelBackend#checkDeviceErrors()} naming the token and the slot; good
 * slots land where the CPU kernel puts them. copy_blocks (host mapping uploaded from pinned
 * staging) against the CPU. Needs a device (see CudaDenseKernelsDeviceTest for
 * -Dradixkv.requireCuda).
 */
class CudaKvCacheKernelsDeviceTest {
    private static void assertPool(String what, MemorySegment want, BackendMemory dm, MemorySegment dev, Arena arena) {
        MemorySegment got = arena.allocate(want.byteSize());
        dm.copyToHost(dev, got, want.byteSize());
        float[] w = want.toArray(ValueLayout.JAVA_FLOAT), g = got.toArray(ValueLayout.JAVA_FLOAT);
        for (int i = 0; i < w.length; i++) {
            if (Float.floatToRawIntBits(w[i]) != Float.floatToRawIntBits(g[i])) {
                fail(what + "[" + i + "]: GPU " + g[i] + " vs CPU " + w[i]);
            }
        }
    }

    @Test
    void badSlotIsSkippedAndReportedOnceAndGoodSlotsMatchTheCpu() {
        PagedKvLayout layout = new PagedKvLayout(DType.F32, 4, 2, 2, 8);
        int tokens = 3;
        long row = 2L * 8;
        try (KernelBackend cuda = CudaDevice.backendOrSkip(); KernelBackend cpu = Backends.create("cpu");
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
            KvCacheView hcache = KvCacheView.of(cpu.memory().allocate(layout.poolBytes()),
                    cpu.memory().allocate(layout.poolBytes()), layout);
            cuda.checkDeviceErrors();  // clean start

            MemorySegment badSlots = arena.allocateFrom(ValueLayout.JAVA_LONG, 0, 8, 3);  // 8 = 4 pages * 2
            MemorySegment dBad = dm.allocate(24);
            dm.copyFromHost(badSlots, dBad, 24);
            cuda.kv().reshapeAndCache(dk, dv, DType.F32, dBad, tokens, dcache);  // nothing waits: no error here
            dm.synchronize();
            NativeException e = assertThrows(NativeException.class, cuda::checkDeviceErrors);
            assertTrue(e.getMessage().contains("rkv_cuda_reshape_and_cache") && e.getMessage().contains("slot_mapping[1] = 8")
                    && e.getMessage().contains("[0, 8)"), e.getMessage());
            cuda.checkDeviceErrors();  // the record was reset
            // the bad token was skipped, the others written: what the CPU writes with it as padding
            cpu.kv().reshapeAndCache(hk, hv, DType.F32, arena.allocateFrom(ValueLayout.JAVA_LONG, 0, -1, 3), tokens,
                    hcache);
            assertPool("k after bad slot", hcache.kCache(), dm, dcache.kCache(), arena);
            assertPool("v after bad slot", hcache.vCache(), dm, dcache.vCache(), arena);

            MemorySegment slots = arena.allocateFrom(ValueLayout.JAVA_LONG, 7, -1, 2);
            MemorySegment dSlots = dm.allocate(24);
            dm.copyFromHost(slots, dSlots, 24);
            cuda.kv().reshapeAndCache(dk, dv, DType.F32, dSlots, tokens, dcache);
            cpu.kv().reshapeAndCache(hk, hv, DType.F32, slots, tokens, hcache);
            assertPool("k", hcache.kCache(), dm, dcache.kCache(), arena);
            assertPool("v", hcache.vCache(), dm, dcache.vCache(), arena);
            cuda.checkDeviceErrors();

            // copy_blocks over two layers: the host mapping is validated, staged and uploaded
            KvCacheView dcache2 = KvCacheView.of(dm.allocate(layout.poolBytes()), dm.allocate(layout.poolBytes()), layout);
            KvCacheView hcache2 = KvCacheView.of(cpu.memory().allocate(layout.poolBytes()),
                    cpu.memory().allocate(layout.poolBytes()), layout);
            cuda.kv().reshapeAndCache(dk, dv, DType.F32, dSlots, tokens, dcache2);
            cpu.kv().reshapeAndCache(hk, hv, DType.F32, slots, tokens, hcache2);
            MemorySegment mapping = arena.allocateFrom(ValueLayout.JAVA_LONG, 3, 0, 1, 2);
            cuda.kv().copyBlocks(List.of(dcache, dcache2), mapping, 2);
            cpu.kv().copyBlocks(List.of(hcache, hcache2), mapping, 2);
            assertPool("copy_blocks k0", hcache.kCache(), dm, dcache.kCache(), arena);
            assertPool("copy_blocks v0", hcache.vCache(), dm, dcache.vCache(), arena);
            assertPool("copy_blocks k1", hcache2.kCache(), dm, dcache2.kCache(), arena);
            assertPool("copy_blocks v1", hcache2.vCache(), dm, dcache2.vCache(), arena);
            IllegalArgumentException bad = assertThrows(IllegalArgumentException.class, () -> cuda.kv().copyBlocks(
                    List.of(dcache), arena.allocateFrom(ValueLayout.JAVA_LONG, 0, 4), 1));
            assertTrue(bad.getMessage().contains("page 4"), bad.getMessage());
            cuda.checkDeviceErrors();
        }
    }
}
