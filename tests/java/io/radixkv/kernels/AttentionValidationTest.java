package io.radixkv.kernels;

import io.radixkv.kernels.cpu.CpuAttentionKernels;
import io.radixkv.kernels.reference.JavaAttentionKernels;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/**
 * Bad arguments fail with IllegalArgumentException before any native call (never a
 * NativeException, never a crash) and leave the output untouched, for the native CPU kernels
 * and the Java reference alike.
 */
class AttentionValidationTest {
    private final AttentionKernels[] all = {new CpuAttentionKernels(), new JavaAttentionKernels()};

    private static final int NUM_QO = 4;
    private static final int HD = 64;

    /** Runs decode with a page table built from the given arrays; expects IAE mentioning `fragment`. */
    private void expectBadTable(int[] indptr, int[] indices, int[] last, String fragment) {
        try (AttentionFixture f = new AttentionFixture(DType.BF16, 16, 2, HD, new long[] {40, 20}, 1)) {
            int batch = last.length;
            PageTableCsr t = new PageTableCsr(f.ints(indptr), f.ints(indices), f.ints(last), batch);
            expect(f, fragment, k -> {
                long n = (long) batch * NUM_QO * HD;
                MemorySegment q = f.randomTensor(DType.F32, n);
                MemorySegment out = f.sentinel(DType.F32, n);
                byte[] before = out.toArray(ValueLayout.JAVA_BYTE);
                try {
                    k.decode(q, DType.F32, out, DType.F32, MemorySegment.NULL, f.cache, t, AttentionParams.of(NUM_QO, HD));
                } finally {
                    assertArrayEquals(before, out.toArray(ValueLayout.JAVA_BYTE), "output modified");
                }
            });
        }
    }

    private void expect(AttentionFixture f, String fragment, Consumer<AttentionKernels> call) {
        for (AttentionKernels k : all) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> call.accept(k),
                    k.getClass().getSimpleName());
            assertTrue(e.getMessage().contains(fragment), k.getClass().getSimpleName() + ": " + e.getMessage());
        }
    }

    @Test
    void indptrNotMonotone() {
        expectBadTable(new int[] {0, 3, 2}, new int[] {0, 1, 2, 3}, new int[] {8, 4}, "not monotone");
    }

    @Test
    void indptrNotStartingAtZero() {
        expectBadTable(new int[] {1, 3, 4}, new int[] {0, 1, 2, 3}, new int[] {8, 4}, "kv_indptr[0]");
    }

    @Test
    void pageIndexOutOfRange() {
        expectBadTable(new int[] {0, 3, 4}, new int[] {0, 1, 999, 3}, new int[] {8, 4}, "kv_indices[2]");
        expectBadTable(new int[] {0, 3, 4}, new int[] {0, -1, 2, 3}, new int[] {8, 4}, "kv_indices[1]");
    }

    @Test
    void lastPageLenOutsideRange() {
        expectBadTable(new int[] {0, 3, 4}, new int[] {0, 1, 2, 3}, new int[] {0, 4}, "kv_last_page_len[0]");
        expectBadTable(new int[] {0, 3, 4}, new int[] {0, 1, 2, 3}, new int[] {8, 17}, "kv_last_page_len[1]");
    }

    @Test
    void badShapesAndDtypes() {
        try (AttentionFixture f = new AttentionFixture(DType.F32, 16, 2, HD, new long[] {40, 20}, 1)) {
            PageTableCsr t = f.table();
            long n = 2L * NUM_QO * HD;
            MemorySegment q = f.randomTensor(DType.F32, n);
            MemorySegment out = f.sentinel(DType.F32, n);
            expect(f, "q holds", k -> k.decode(q.asSlice(0, 100), DType.F32, out, DType.F32, MemorySegment.NULL,
                    f.cache, t, AttentionParams.of(NUM_QO, HD)));
            expect(f, "out holds", k -> k.decode(q, DType.F32, out.asSlice(0, 100), DType.F32, MemorySegment.NULL,
                    f.cache, t, AttentionParams.of(NUM_QO, HD)));
            expect(f, "lse holds", k -> k.decode(q, DType.F32, out, DType.F32, f.sentinel(DType.F32, 3),
                    f.cache, t, AttentionParams.of(NUM_QO, HD)));
            expect(f, "not a multiple", k -> k.decode(q, DType.F32, out, DType.F32, MemorySegment.NULL,
                    f.cache, t, AttentionParams.of(3, HD)));
            expect(f, "outDtype", k -> k.decode(q, DType.F32, out, DType.FP8_E4M3, MemorySegment.NULL,
                    f.cache, t, AttentionParams.of(NUM_QO, HD)));
        }
    }

    @Test
    void badPrefillArguments() {
        try (AttentionFixture f = new AttentionFixture(DType.F16, 16, 2, HD, new long[] {40, 20}, 1)) {
            PageTableCsr t = f.table();
            long n = 60L * NUM_QO * HD;
            MemorySegment q = f.randomTensor(DType.F32, n);
            MemorySegment out = f.sentinel(DType.F32, n);
            AttentionParams p = AttentionParams.of(NUM_QO, HD);
            MemorySegment none = MemorySegment.NULL;
            expect(f, "q_len 21 > kv_len 20", k -> k.appendPrefill(q, DType.F32, out, DType.F32, none,
                    f.ints(0, 30, 51), f.cache, t, none, none, p));
            expect(f, "qo_indptr is not monotone", k -> k.appendPrefill(q, DType.F32, out, DType.F32, none,
                    f.ints(0, 30, 10), f.cache, t, none, none, p));
            expect(f, "qo_indptr[0]", k -> k.appendPrefill(q, DType.F32, out, DType.F32, none,
                    f.ints(2, 30, 40), f.cache, t, none, none, p));
            expect(f, "q holds", k -> k.appendPrefill(q.asSlice(0, 4L * 10 * NUM_QO * HD), DType.F32, out, DType.F32,
                    none, f.ints(0, 30, 50), f.cache, t, none, none, p));
            expect(f, "region 1 of sequence 1", k -> k.appendPrefill(q, DType.F32, out, DType.F32, none,
                    f.ints(0, 30, 50), f.cache, t, f.ints(0, 1, 2), f.ints(0, 40, 5, 21), p));
            expect(f, "region 0 of sequence 0", k -> k.appendPrefill(q, DType.F32, out, DType.F32, none,
                    f.ints(0, 30, 50), f.cache, t, f.ints(0, 1, 1), f.ints(7, 7), p));
            expect(f, "both be NULL", k -> k.appendPrefill(q, DType.F32, out, DType.F32, none,
                    f.ints(0, 30, 50), f.cache, t, f.ints(0, 0, 0), none, p));
        }
    }

    @Test
    void badMergeArguments() {
        try (AttentionFixture f = new AttentionFixture(DType.F32, 16, 1, HD, new long[] {1}, 1)) {
            MemorySegment v = f.randomTensor(DType.F32, 2L * 3 * HD);
            MemorySegment s = f.randomTensor(DType.F32, 6);
            expect(f, "vb holds", k -> k.mergeState(v, s, v.asSlice(0, 16), s, v, s, 2, 3, HD));
            expect(f, "sOut holds", k -> k.mergeState(v, s, v, s, v, s.asSlice(0, 8), 2, 3, HD));
            expect(f, "numHeads", k -> k.mergeState(v, s, v, s, v, s, 2, 0, HD));
        }
    }
}
