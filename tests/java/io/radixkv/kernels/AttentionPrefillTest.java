package io.radixkv.kernels;

import io.radixkv.kernels.cpu.CpuAttentionKernels;
import io.radixkv.kernels.reference.JavaAttentionKernels;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Native append prefill against the Java reference: full prefill (q_len = kv_len), prefix hits
 * (q_len < kv_len), q_len = 1 (equals decode), chunked prefill equal to one-shot, bidirectional
 * regions, soft-cap, every cache dtype, GQA/MQA, page sizes 1/16/32, head_dim 64/128/256.
 */
class AttentionPrefillTest {
    private final AttentionKernels cpu = new CpuAttentionKernels();
    private final AttentionKernels reference = new JavaAttentionKernels();

    record Case(DType cache, int pageSize, int headDim, int numQo, int numKv, long[] kvLens, int[] qLens,
                float softCap, boolean bidir) {
        @Override
        public String toString() {
            return cache + " ps=" + pageSize + " hd=" + headDim + " heads=" + numQo + "/" + numKv + " kv="
                    + Arrays.toString(kvLens) + " q=" + Arrays.toString(qLens) + " cap=" + softCap
                    + (bidir ? " bidir" : "");
        }
    }

    static Stream<Arguments> cases() {
        return Stream.of(
                // q_len = kv_len (full prefill)
                new Case(DType.F32, 16, 128, 8, 2, new long[] {1, 17, 100}, new int[] {1, 17, 100}, 0f, false),
                new Case(DType.BF16, 1, 64, 4, 4, new long[] {15, 64}, new int[] {15, 64}, 0f, false),
                new Case(DType.FP8_E4M3, 32, 64, 16, 2, new long[] {200}, new int[] {200}, 0f, false),
                // prefix hits: q_len < kv_len
                new Case(DType.F16, 16, 256, 8, 1, new long[] {300, 16, 40}, new int[] {20, 1, 33}, 0f, false),
                new Case(DType.FP8_E5M2, 16, 128, 32, 4, new long[] {100, 1000}, new int[] {37, 3}, 0f, false),
                new Case(DType.BF16, 32, 64, 8, 8, new long[] {0, 250, 17}, new int[] {0, 90, 16}, 20f, false),
                new Case(DType.F32, 1, 64, 6, 3, new long[] {129, 7}, new int[] {64, 7}, 0f, false),
                // bidirectional (image) regions
                new Case(DType.F32, 16, 64, 8, 2, new long[] {120, 60}, new int[] {120, 25}, 0f, true),
                new Case(DType.FP8_E4M3, 1, 128, 4, 1, new long[] {90}, new int[] {50}, 15f, true)
        ).map(Arguments::of);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void matchesReference(Case c) {
        try (AttentionFixture f = new AttentionFixture(c.cache(), c.pageSize(), c.numKv(), c.headDim(), c.kvLens(), 11)) {
            int[] qo = indptr(c.qLens());
            MemorySegment bi = MemorySegment.NULL;
            MemorySegment br = MemorySegment.NULL;
            if (c.bidir()) {
                // one region per sequence in its middle; the second sequence also gets one ending at kv_len
                int[] biArr = new int[c.kvLens().length + 1];
                int[] regions = new int[0];
                for (int b = 0; b < c.kvLens().length; b++) {
                    int len = (int) c.kvLens()[b];
                    int[] add = b % 2 == 0 ? new int[] {len / 5, len / 5 + len / 3, len - len / 4, len}
                            : new int[] {1, len / 2 + 1};
                    regions = concat(regions, add);
                    biArr[b + 1] = regions.length / 2;
                }
                bi = f.ints(biArr);
                br = f.ints(regions);
            }
            run(f, c.cache(), f.table(), qo, bi, br, c.numQo(), c.headDim(), c.softCap());
        }
    }

    /** Prefill with q_len = 1 equals decode of the same query. */
    @Test
    void qLenOneEqualsDecode() {
        long[] lens = {1000, 1, 16, 33};
        try (AttentionFixture f = new AttentionFixture(DType.BF16, 16, 2, 128, lens, 5)) {
            int numQo = 8;
            long n = (long) lens.length * numQo * 128;
            MemorySegment q = f.randomTensor(DType.F32, n);
            PageTableCsr table = f.table();
            AttentionParams params = AttentionParams.of(numQo, 128);
            MemorySegment outD = f.sentinel(DType.F32, n);
            MemorySegment lseD = f.sentinel(DType.F32, (long) lens.length * numQo);
            MemorySegment outP = f.sentinel(DType.F32, n);
            MemorySegment lseP = f.sentinel(DType.F32, (long) lens.length * numQo);
            cpu.decode(q, DType.F32, outD, DType.F32, lseD, f.cache, table, params);
            cpu.appendPrefill(q, DType.F32, outP, DType.F32, lseP, f.ints(0, 1, 2, 3, 4), f.cache, table,
                    MemorySegment.NULL, MemorySegment.NULL, params);
            AttentionFixture.assertClose("out", AttentionFixture.toFloats(outD, DType.F32, n),
                    AttentionFixture.toFloats(outP, DType.F32, n), 1e-5);
            AttentionFixture.assertClose("lse", AttentionFixture.toFloats(lseD, DType.F32, lens.length * numQo),
                    AttentionFixture.toFloats(lseP, DType.F32, lens.length * numQo), 1e-5);
        }
    }

    /** A 300-token prompt prefilled in chunks of 64, 100, 1 and 135 tokens equals one-shot prefill. */
    @Test
    void chunkedPrefillEqualsOneShot() {
        int total = 300;
        int[] chunks = {64, 100, 1, 135};
        int numQo = 8;
        int hd = 64;
        try (AttentionFixture f = new AttentionFixture(DType.F16, 16, 2, hd, new long[] {total}, 9)) {
            long n = (long) total * numQo * hd;
            MemorySegment q = f.randomTensor(DType.F32, n);
            AttentionParams params = AttentionParams.of(numQo, hd);
            MemorySegment whole = f.sentinel(DType.F32, n);
            MemorySegment wholeLse = f.sentinel(DType.F32, (long) total * numQo);
            cpu.appendPrefill(q, DType.F32, whole, DType.F32, wholeLse, f.ints(0, total), f.cache, f.table(),
                    MemorySegment.NULL, MemorySegment.NULL, params);
            float[] expected = AttentionFixture.toFloats(whole, DType.F32, n);
            float[] expectedLse = AttentionFixture.toFloats(wholeLse, DType.F32, (long) total * numQo);
            float[] chunked = new float[(int) n];
            float[] chunkedLse = new float[total * numQo];
            int done = 0;
            for (int c : chunks) {
                long kvLen = done + c;
                PageTableCsr t = f.table(new int[][] {f.prefixPages(0, kvLen)}, new long[] {kvLen});
                long rowElems = (long) numQo * hd;
                MemorySegment qc = q.asSlice(done * rowElems * 4, c * rowElems * 4);
                MemorySegment out = f.sentinel(DType.F32, c * rowElems);
                MemorySegment lse = f.sentinel(DType.F32, (long) c * numQo);
                cpu.appendPrefill(qc, DType.F32, out, DType.F32, lse, f.ints(0, c), f.cache, t,
                        MemorySegment.NULL, MemorySegment.NULL, params);
                System.arraycopy(AttentionFixture.toFloats(out, DType.F32, c * rowElems), 0, chunked,
                        (int) (done * rowElems), (int) (c * rowElems));
                System.arraycopy(AttentionFixture.toFloats(lse, DType.F32, (long) c * numQo), 0, chunkedLse,
                        done * numQo, c * numQo);
                done += c;
            }
            AttentionFixture.assertClose("chunked out", expected, chunked, 1e-5);
            AttentionFixture.assertClose("chunked lse", expectedLse, chunkedLse, 1e-5);
        }
    }

    /**
     * A non-finite K/V at KV position j (an f16 cache stores Inf for |v| > 65504) must not reach queries that the causal mask hides j from, even when they
     * share a query tile and a KV block with queries that see j (0 * Inf = NaN).
     */
    @ParameterizedTest(name = "{0}")
    @org.junit.jupiter.params.provider.EnumSource(DType.class)
    void maskedNonFiniteKvDoesNotLeak(DType cacheDtype) {
        int len = 40;
        int j = 27; // inside the first 32-token block, after most queries of the tile
        int numQo = 4;
        int hd = 64;
        try (AttentionFixture f = new AttentionFixture(cacheDtype, 16, 2, hd, new long[] {len}, 21)) {
            PagedKvLayout l = f.layout;
            for (int h = 0; h < l.numKvHeads(); h++) {
                long base = ((long) f.pages[0][j / 16] * 16 + j % 16) * l.tokenElements() + (long) h * hd;
                for (int d = 0; d < hd; d += 5) {
                    putNonFinite(f.cache.vCache(), cacheDtype, base + d);
                    putNonFinite(f.cache.kCache(), cacheDtype, base + d + 1);
                }
            }
            long n = (long) len * numQo * hd;
            MemorySegment q = f.randomTensor(DType.F32, n);
            AttentionParams params = AttentionParams.of(numQo, hd);
            MemorySegment outN = f.sentinel(DType.F32, n);
            MemorySegment outJ = f.sentinel(DType.F32, n);
            MemorySegment qo = f.ints(0, len);
            cpu.appendPrefill(q, DType.F32, outN, DType.F32, MemorySegment.NULL, qo, f.cache, f.table(),
                    MemorySegment.NULL, MemorySegment.NULL, params);
            reference.appendPrefill(q, DType.F32, outJ, DType.F32, MemorySegment.NULL, qo, f.cache, f.table(),
                    MemorySegment.NULL, MemorySegment.NULL, params);
            long hidden = (long) j * numQo * hd; // rows of queries 0..j-1: j is masked for them
            AttentionFixture.assertClose("rows that do not see position " + j,
                    AttentionFixture.toFloats(outJ, DType.F32, hidden), AttentionFixture.toFloats(outN, DType.F32, hidden),
                    AttentionFixture.tolerance(cacheDtype, DType.F32));
        }
    }

    /** The largest-magnitude non-finite value of the dtype: Inf where it has one, else NaN (e4m3). */
    private static void putNonFinite(MemorySegment pool, DType dtype, long i) {
        switch (dtype) {
            case F32 -> pool.setAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, i, Float.POSITIVE_INFINITY);
            case F16 -> pool.setAtIndex(java.lang.foreign.ValueLayout.JAVA_SHORT, i, (short) 0x7C00);
            case BF16 -> pool.setAtIndex(java.lang.foreign.ValueLayout.JAVA_SHORT, i, (short) 0x7F80);
            case FP8_E5M2 -> pool.set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) 0x7C);
            case FP8_E4M3 -> pool.set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) 0x7F);
        }
    }

    private void run(AttentionFixture f, DType cacheDtype, PageTableCsr table, int[] qo, MemorySegment bi,
                     MemorySegment br, int numQo, int hd, float softCap) {
        int totalQ = qo[qo.length - 1];
        long n = (long) totalQ * numQo * hd;
        MemorySegment q = f.randomTensor(DType.F32, n);
        AttentionParams params = new AttentionParams(numQo, (float) (1 / Math.sqrt(hd)), softCap);
        MemorySegment qoSeg = f.ints(qo);
        MemorySegment outN = f.sentinel(DType.F32, n);
        MemorySegment lseN = f.sentinel(DType.F32, (long) totalQ * numQo);
        MemorySegment outJ = f.sentinel(DType.F32, n);
        MemorySegment lseJ = f.sentinel(DType.F32, (long) totalQ * numQo);
        cpu.appendPrefill(q, DType.F32, outN, DType.F32, lseN, qoSeg, f.cache, table, bi, br, params);
        reference.appendPrefill(q, DType.F32, outJ, DType.F32, lseJ, qoSeg, f.cache, table, bi, br, params);
        AttentionFixture.assertClose("out", AttentionFixture.toFloats(outJ, DType.F32, n),
                AttentionFixture.toFloats(outN, DType.F32, n), AttentionFixture.tolerance(cacheDtype, DType.F32));
        AttentionFixture.assertClose("lse", AttentionFixture.toFloats(lseJ, DType.F32, (long) totalQ * numQo),
                AttentionFixture.toFloats(lseN, DType.F32, (long) totalQ * numQo), 1e-4);
    }

    static int[] indptr(int[] lens) {
        int[] p = new int[lens.length + 1];
        for (int i = 0; i < lens.length; i++) {
            p[i + 1] = p[i] + lens[i];
        }
        return p;
    }

    private static int[] concat(int[] a, int[] b) {
        int[] r = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, r, a.length, b.length);
        return r;
    }
}
