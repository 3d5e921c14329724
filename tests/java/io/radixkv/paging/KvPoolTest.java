package io.radixkv.paging;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.radixkv.kernels.RecordingMemory;
import io.radixkv.kernels.BackendMemory;
import io.radixkv.kernels.DType;
import io.radixkv.kernels.HostMemory;
import io.radixkv.kernels.KvCacheView;
import io.radixkv.kernels.PagedKvLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

class KvPoolTest {

    @Test
    void allocatesOnePoolPairPerLayer() {
        PagedKvLayout layout = new PagedKvLayout(DType.BF16, 10, 16, 2, 64);
        try (HostMemory mem = new HostMemory(); KvPool pool = new KvPool(mem, 3, layout, 1f, 1f)) {
            assertEquals(3, pool.numLayers());
            assertEquals(3, pool.layers().size());
            assertEquals(10, pool.numPages());
            assertEquals(16, pool.pageSize());
            assertEquals(2L * 3 * 16 * 2 * 64 * 2, pool.bytesPerPage());
            assertEquals(pool.bytesPerPage() * 10, pool.totalBytes());
            long addr = -1;
            for (int l = 0; l < 3; l++) {
                KvCacheView v = pool.layer(l);
                assertEquals(layout, v.layout());
                assertEquals(layout.poolBytes(), v.kCache().byteSize());
                assertEquals(layout.poolBytes(), v.vCache().byteSize());
                assertNotEquals(v.kCache().address(), v.vCache().address());
                assertNotEquals(addr, v.kCache().address());
                addr = v.kCache().address();
                assertEquals(0, v.kCache().address() % 64, "aligned");
                // zero-filled
                assertEquals(0, v.kCache().get(ValueLayout.JAVA_BYTE, layout.poolBytes() - 1));
            }
            assertThrows(IndexOutOfBoundsException.class, () -> pool.layer(3));
            // layers do not overlap: writes to one are not visible in another
            pool.layer(0).kCache().fill((byte) 1);
            assertEquals(0, pool.layer(1).kCache().get(ValueLayout.JAVA_BYTE, 0));
            assertEquals(0, pool.layer(0).vCache().get(ValueLayout.JAVA_BYTE, 0));
        }
    }

    @Test
    void fp8ScalesAreCarried() {
        PagedKvLayout layout = new PagedKvLayout(DType.FP8_E4M3, 4, 8, 1, 16);
        try (KvPool pool = KvPool.host(2, layout, 0.5f, 0.25f)) {
            assertEquals(0.5f, pool.layer(1).kScale());
            assertEquals(0.25f, pool.layer(1).vScale());
            assertEquals(2L * 2 * 8 * 16, pool.bytesPerPage());
        }
    }

    @Test
    void badArgumentsAreRejectedBeforeAllocating() {
        PagedKvLayout f16 = new PagedKvLayout(DType.F16, 4, 8, 1, 16);
        RecordingMemory mem = new RecordingMemory(false);
        var e = assertThrows(IllegalArgumentException.class, () -> new KvPool(mem, 2, f16, 0.5f, 1f));
        assertTrue(e.getMessage().contains("0.5"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new KvPool(mem, 0, f16, 1f, 1f));
        PagedKvLayout fp8 = new PagedKvLayout(DType.FP8_E5M2, 4, 8, 1, 16);
        assertThrows(IllegalArgumentException.class, () -> new KvPool(mem, 1, fp8, 0f, 1f));
        assertThrows(IllegalArgumentException.class, () -> new KvPool(mem, 1, fp8, 1f, Float.NaN));
        assertEquals(0, mem.allocations(), "nothing allocated by rejected constructions");
        mem.close();
    }

    @Test
    void closeOfABorrowedMemoryPoolOnlyInvalidates() {
        PagedKvLayout layout = new PagedKvLayout(DType.F32, 2, 4, 1, 4);
        HostMemory mem = new HostMemory();
        KvPool pool = new KvPool(mem, 1, layout, 1f, 1f);
        MemorySegment k = pool.layer(0).kCache();
        pool.close();
        assertThrows(IllegalStateException.class, () -> pool.layer(0));
        k.set(ValueLayout.JAVA_FLOAT, 0, 1f); // memory still alive: the backend owns it
        mem.close();
        assertThrows(IllegalStateException.class, () -> k.get(ValueLayout.JAVA_FLOAT, 0));
    }

    @Test
    void ownedHostPoolFreesOnClose() {
        PagedKvLayout layout = new PagedKvLayout(DType.F32, 2, 4, 1, 4);
        KvPool pool = KvPool.host(1, layout, 1f, 1f);
        MemorySegment k = pool.layer(0).kCache();
        pool.close();
        pool.close(); // idempotent
        assertThrows(IllegalStateException.class, () -> k.get(ValueLayout.JAVA_FLOAT, 0));
    }

    @Test
    void pagesForBudget() {
        // Llama-3.2-3B: 28 layers, 8 KV heads, head_dim 128, bf16, page 16:
        // 2 * 28 * 16 * 8 * 128 * 2 = 1,835,008 bytes per page; 1 GiB / that = 585.1
        assertEquals(1_835_008L, KvPool.bytesPerPage(28, DType.BF16, 16, 8, 128));
        assertEquals(585, KvPool.pagesForBudget(1L << 30, 28, DType.BF16, 16, 8, 128));
        assertEquals(0, KvPool.pagesForBudget(1_835_007L, 28, DType.BF16, 16, 8, 128));
        assertEquals(1, KvPool.pagesForBudget(1_835_008L, 28, DType.BF16, 16, 8, 128));
        // fp8 halves the page: twice the pages
        assertEquals(1170, KvPool.pagesForBudget(1L << 30, 28, DType.FP8_E4M3, 16, 8, 128));
        // capped at the int32 id range
        assertEquals(Integer.MAX_VALUE, KvPool.pagesForBudget(Long.MAX_VALUE, 1, DType.FP8_E4M3, 1, 1, 1));
        assertThrows(IllegalArgumentException.class, () -> KvPool.pagesForBudget(-1, 28, DType.BF16, 16, 8, 128));
        assertThrows(IllegalArgumentException.class, () -> KvPool.pagesForBudget(1, 0, DType.BF16, 16, 8, 128));
        assertThrows(IllegalArgumentException.class, () -> KvPool.pagesForBudget(1, 1, DType.BF16, 0, 8, 128));
        // the budget's pool really fits
        int pages = KvPool.pagesForBudget(1 << 20, 2, DType.F16, 4, 2, 32);
        PagedKvLayout layout = new PagedKvLayout(DType.F16, pages, 4, 2, 32);
        try (KvPool pool = KvPool.host(2, layout, 1f, 1f)) {
            assertTrue(pool.totalBytes() <= 1 << 20);
            assertTrue(pool.totalBytes() + pool.bytesPerPage() > 1 << 20);
        }
    }
}
