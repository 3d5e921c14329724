package io.radixkv.kernels.cpu;

import io.radixkv.kernels.AttentionFixture;
import io.radixkv.kernels.AttentionParams;
import io.radixkv.kernels.AttentionPlan;
import io.radixkv.kernels.DType;
import io.radixkv.kernels.PageTableCsr;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The CPU decode plan/run split: one plan per step validates the tables once and decides the
 * split-KV work once per distinct window; every layer's run gives exactly the one-shot decode's
 * output (same plan, same arithmetic); stale plans and mismatched caches are refused.
 */
class CpuAttentionPlanTest {
    private final CpuAttentionKernels cpu = new CpuAttentionKernels();

    private static AttentionParams params(int heads, int window) {
        return new AttentionParams(heads, 0.125f, 0f, window);
    }

    @ParameterizedTest(name = "{0} cache, page {1}")
    @CsvSource({"f32, 16", "bf16, 4", "fp8_e4m3, 16", "f16, 1"})
    void plannedRunsEqualTheOneShotDecodeAndPlanOncePerWindow(String dtype, int pageSize) {
        DType dt = DType.parse(dtype);
        // long sequences split across threads, a short one, an empty one
        try (AttentionFixture f = new AttentionFixture(dt, pageSize, 2, 64, new long[] {3000, 17, 0, 1200}, 11)) {
            int heads = 8;
            long rows = 4L * heads;
            long n = rows * 64;
            PageTableCsr table = f.table();
            AttentionPlan plan = cpu.plan(f.layout, table, MemorySegment.NULL, heads);
            assertTrue(plan.decode());
            int[] windows = {-1, 100, -1, 100, 1000, -1};  // Gemma-like: sliding and global layers
            for (int layer = 0; layer < windows.length; layer++) {
                AttentionParams p = params(heads, windows[layer]);
                MemorySegment q = f.randomTensor(DType.F32, n);
                MemorySegment want = f.sentinel(DType.F32, n), wantLse = f.sentinel(DType.F32, rows);
                MemorySegment got = f.sentinel(DType.F32, n), gotLse = f.sentinel(DType.F32, rows);
                cpu.decode(q, DType.F32, want, DType.F32, wantLse, f.cache, table, p);
                cpu.run(plan, q, DType.F32, got, DType.F32, gotLse, f.cache, p);
                assertArrayEquals(want.toArray(ValueLayout.JAVA_FLOAT), got.toArray(ValueLayout.JAVA_FLOAT),
                        "layer " + layer + " window " + windows[layer]);
                assertArrayEquals(wantLse.toArray(ValueLayout.JAVA_FLOAT), gotLse.toArray(ValueLayout.JAVA_FLOAT));
            }
            assertEquals(3, cpu.splitPlans(), "one split-KV plan per distinct window (-1, 100, 1000), not per layer");
            cpu.plan(f.layout, table, MemorySegment.NULL, heads);
            assertEquals(0, cpu.splitPlans(), "a new step starts with no split plans");
        }
    }

    @Test
    void stalePlansMismatchedCachesAndBadTablesAreRefused() {
        try (AttentionFixture f = new AttentionFixture(DType.F32, 16, 2, 64, new long[] {40, 7}, 5);
             AttentionFixture other = new AttentionFixture(DType.BF16, 16, 2, 64, new long[] {40, 7}, 5)) {
            long n = 2L * 4 * 64;
            AttentionPlan first = cpu.plan(f.layout, f.table(), MemorySegment.NULL, 4);
            AttentionPlan second = cpu.plan(f.layout, f.table(), MemorySegment.NULL, 4);
            MemorySegment q = f.randomTensor(DType.F32, n);
            MemorySegment out = f.sentinel(DType.F32, n);
            IllegalArgumentException stale = assertThrows(IllegalArgumentException.class,
                    () -> cpu.run(first, q, DType.F32, out, DType.F32, MemorySegment.NULL, f.cache, params(4, -1)));
            assertTrue(stale.getMessage().contains("stale plan"), stale.getMessage());
            IllegalArgumentException layout = assertThrows(IllegalArgumentException.class,
                    () -> cpu.run(second, q, DType.F32, out, DType.F32, MemorySegment.NULL, other.cache, params(4, -1)));
            assertTrue(layout.getMessage().contains("differs from the plan's"), layout.getMessage());
            IllegalArgumentException heads = assertThrows(IllegalArgumentException.class,
                    () -> cpu.run(second, q, DType.F32, out, DType.F32, MemorySegment.NULL, f.cache, params(8, -1)));
            assertTrue(heads.getMessage().contains("numQoHeads"), heads.getMessage());
            // a page id outside the pool: refused at plan time, naming the entry
            PageTableCsr bad = new PageTableCsr(f.ints(0, 1), f.ints((int) f.layout.numPages()), f.ints(3), 1);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> cpu.plan(f.layout, bad, MemorySegment.NULL, 4));
            assertTrue(e.getMessage().contains("kv_indices[0]"), e.getMessage());
        }
    }
}
