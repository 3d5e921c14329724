package io.radixkv.kernels;

import io.radixkv.kernels.cpu.CpuAttentionKernels;
import io.radixkv.kernels.reference.JavaAttentionKernels;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

/** merge_state: decode over two halves of the KV range, merged, equals decode over the whole. */
class AttentionMergeTest {
    private final AttentionKernels cpu = new CpuAttentionKernels();
    private final AttentionKernels reference = new JavaAttentionKernels();

    @Test
    void mergeOfSplitHalvesEqualsWhole() {
        for (AttentionKernels k : new AttentionKernels[] {cpu, reference}) {
            splitHalves(k, DType.F32, 16, new long[] {1000, 48, 17});
            splitHalves(k, DType.FP8_E4M3, 32, new long[] {4096, 33});
        }
    }

    private void splitHalves(AttentionKernels kernels, DType dtype, int ps, long[] lens) {
        int numQo = 8;
        int hd = 128;
        try (AttentionFixture f = new AttentionFixture(dtype, ps, 2, hd, lens, 3)) {
            int batch = lens.length;
            long n = (long) batch * numQo * hd;
            long rows = (long) batch * numQo;
            MemorySegment q = f.randomTensor(DType.F32, n);
            AttentionParams params = AttentionParams.of(numQo, hd);
            // split each sequence at a page boundary: both halves are non-empty
            int[][] first = new int[batch][];
            int[][] second = new int[batch][];
            long[] firstLen = new long[batch];
            long[] secondLen = new long[batch];
            for (int b = 0; b < batch; b++) {
                int pages = f.pages[b].length;
                int split = pages / 2;
                first[b] = java.util.Arrays.copyOfRange(f.pages[b], 0, split);
                second[b] = java.util.Arrays.copyOfRange(f.pages[b], split, pages);
                firstLen[b] = (long) split * ps;
                secondLen[b] = lens[b] - firstLen[b];
            }
            MemorySegment whole = f.sentinel(DType.F32, n);
            MemorySegment wholeLse = f.sentinel(DType.F32, rows);
            kernels.decode(q, DType.F32, whole, DType.F32, wholeLse, f.cache, f.table(), params);
            MemorySegment va = f.sentinel(DType.F32, n);
            MemorySegment sa = f.sentinel(DType.F32, rows);
            MemorySegment vb = f.sentinel(DType.F32, n);
            MemorySegment sb = f.sentinel(DType.F32, rows);
            kernels.decode(q, DType.F32, va, DType.F32, sa, f.cache, f.table(first, firstLen), params);
            kernels.decode(q, DType.F32, vb, DType.F32, sb, f.cache, f.table(second, secondLen), params);
            // merge in place into (va, sa): aliasing the output with the first input is allowed
            kernels.mergeState(va, sa, vb, sb, va, sa, batch, numQo, hd);
            AttentionFixture.assertClose(kernels.getClass().getSimpleName() + " merged out",
                    AttentionFixture.toFloats(whole, DType.F32, n), AttentionFixture.toFloats(va, DType.F32, n), 2e-5);
            AttentionFixture.assertClose(kernels.getClass().getSimpleName() + " merged lse",
                    AttentionFixture.toFloats(wholeLse, DType.F32, rows), AttentionFixture.toFloats(sa, DType.F32, rows),
                    2e-5);
        }
    }

    @Test
    void nativeMergeMatchesReferenceIncludingEmptyStates() {
        try (AttentionFixture f = new AttentionFixture(DType.F32, 16, 1, 64, new long[] {0}, 1)) {
            int tokens = 5;
            int heads = 3;
            int hd = 64;
            long n = (long) tokens * heads * hd;
            MemorySegment va = f.randomTensor(DType.F32, n);
            MemorySegment vb = f.randomTensor(DType.F32, n);
            MemorySegment sa = f.randomTensor(DType.F32, (long) tokens * heads);
            MemorySegment sb = f.randomTensor(DType.F32, (long) tokens * heads);
            // row 0: a empty; row 1: b empty; row 2: both empty; row 3: very different magnitudes
            sa.setAtIndex(ValueLayout.JAVA_FLOAT, 0, Float.NEGATIVE_INFINITY);
            sb.setAtIndex(ValueLayout.JAVA_FLOAT, 1, Float.NEGATIVE_INFINITY);
            sa.setAtIndex(ValueLayout.JAVA_FLOAT, 2, Float.NEGATIVE_INFINITY);
            sb.setAtIndex(ValueLayout.JAVA_FLOAT, 2, Float.NEGATIVE_INFINITY);
            sa.setAtIndex(ValueLayout.JAVA_FLOAT, 3, 80f);
            sb.setAtIndex(ValueLayout.JAVA_FLOAT, 3, -80f);
            MemorySegment vN = f.sentinel(DType.F32, n);
            MemorySegment sN = f.sentinel(DType.F32, (long) tokens * heads);
            MemorySegment vJ = f.sentinel(DType.F32, n);
            MemorySegment sJ = f.sentinel(DType.F32, (long) tokens * heads);
            cpu.mergeState(va, sa, vb, sb, vN, sN, tokens, heads, hd);
            reference.mergeState(va, sa, vb, sb, vJ, sJ, tokens, heads, hd);
            AttentionFixture.assertClose("v", AttentionFixture.toFloats(vJ, DType.F32, n),
                    AttentionFixture.toFloats(vN, DType.F32, n), 1e-6);
            AttentionFixture.assertClose("s", AttentionFixture.toFloats(sJ, DType.F32, (long) tokens * heads),
                    AttentionFixture.toFloats(sN, DType.F32, (long) tokens * heads), 1e-6);
            assertEquals(Float.NEGATIVE_INFINITY, sN.getAtIndex(ValueLayout.JAVA_FLOAT, 2));
            for (int d = 0; d < hd; d++) {
                assertEquals(vb.getAtIndex(ValueLayout.JAVA_FLOAT, d), vN.getAtIndex(ValueLayout.JAVA_FLOAT, d));
                assertEquals(0f, vN.getAtIndex(ValueLayout.JAVA_FLOAT, 2L * hd + d));
            }
        }
    }
}
