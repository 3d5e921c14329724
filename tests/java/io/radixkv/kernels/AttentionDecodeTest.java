package io.radixkv.kernels;

import io.radixkv.kernels.cpu.CpuAttentionKernels;
import io.radixkv.kernels.reference.JavaAttentionKernels;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Native decode attention against the Java double-precision reference. The cases sample the
 * issue's grid with fixed seeds so that every listed value appears at least once: lengths
 * {0, 1, 15, 16, 17, 100, 1000, 4096}, batch sizes 1..16, page sizes 1/16/32, head_dim
 * 64/128/256, GQA ratios 1/4/8 and MQA, every cache dtype, f32/f16/bf16 queries and outputs,
 * soft-cap, randomized non-contiguous page tables, last page full and partial.
 */
class AttentionDecodeTest {
    static final long[] LENGTHS = {0, 1, 15, 16, 17, 100, 1000, 4096};

    private final AttentionKernels cpu = new CpuAttentionKernels();
    private final AttentionKernels reference = new JavaAttentionKernels();

    record Case(DType cache, int pageSize, int headDim, int numQo, int numKv, long[] lens, DType q, DType out,
                float softCap) {
        @Override
        public String toString() {
            return cache + " ps=" + pageSize + " hd=" + headDim + " heads=" + numQo + "/" + numKv + " lens="
                    + Arrays.toString(lens) + " q=" + q + " out=" + out + " cap=" + softCap;
        }
    }

    static long[] randomLengths(long seed, int batch, boolean allowLong) {
        SplittableRandom r = new SplittableRandom(seed);
        long[] lens = new long[batch];
        for (int i = 0; i < batch; i++) {
            lens[i] = LENGTHS[r.nextInt(allowLong ? LENGTHS.length : LENGTHS.length - 1)];
        }
        return lens;
    }

    static Stream<Arguments> cases() {
        return Stream.of(
                new Case(DType.F32, 16, 128, 8, 8, LENGTHS, DType.F32, DType.F32, 0f),
                new Case(DType.BF16, 1, 64, 16, 4, randomLengths(1, 16, false), DType.BF16, DType.BF16, 0f),
                new Case(DType.F16, 32, 256, 8, 1, new long[] {4096, 17, 0}, DType.F16, DType.F16, 0f),
                new Case(DType.FP8_E4M3, 16, 128, 32, 4, new long[] {1000, 16, 1, 100, 15}, DType.F32, DType.F32, 0f),
                new Case(DType.FP8_E5M2, 32, 64, 4, 4, randomLengths(2, 11, true), DType.F32, DType.BF16, 0f),
                new Case(DType.F32, 1, 256, 16, 2, new long[] {100, 1000}, DType.F32, DType.F32, 30f),
                new Case(DType.BF16, 16, 64, 32, 1, new long[] {4096}, DType.BF16, DType.F32, 0f),
                new Case(DType.F16, 16, 128, 16, 4, new long[] {17, 16, 32, 1}, DType.F16, DType.F32, 10f),
                new Case(DType.FP8_E4M3, 1, 64, 8, 1, new long[] {0, 1, 15, 16, 17, 100}, DType.BF16, DType.F16, 0f),
                new Case(DType.FP8_E5M2, 16, 256, 8, 2, new long[] {4096, 15}, DType.F32, DType.F32, 5f),
                new Case(DType.F32, 32, 64, 12, 3, randomLengths(3, 9, true), DType.F16, DType.F16, 0f),
                new Case(DType.BF16, 32, 128, 8, 8, randomLengths(4, 12, false), DType.F16, DType.F32, 0f)
        ).map(Arguments::of);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void matchesReference(Case c) {
        check(c, 42);
    }

    /** Every batch size 1..16 on a small shape (random lengths from the list, page size 16). */
    @Test
    void batchSizes1To16() {
        DType[] dtypes = DType.values();
        for (int batch = 1; batch <= 16; batch++) {
            DType d = dtypes[batch % dtypes.length];
            check(new Case(d, 16, 64, 4, 2, randomLengths(100 + batch, batch, batch % 4 == 0), DType.F32, DType.F32,
                    0f), batch);
        }
    }

    /** Same pages, lengths ending exactly on a page boundary and one short of it. */
    @Test
    void lastPageFullAndPartial() {
        for (int ps : new int[] {16, 32}) {
            check(new Case(DType.F32, ps, 64, 8, 2, new long[] {3L * ps, 3L * ps - 3, ps, 1}, DType.F32, DType.F32, 0f),
                    ps);
        }
    }

    @Test
    void emptySequenceGivesZerosAndNegativeInfinityLse() {
        try (AttentionFixture f = new AttentionFixture(DType.F16, 16, 2, 64, new long[] {0, 5, 0}, 7)) {
            PageTableCsr table = f.table();
            int numQo = 4;
            long n = 3L * numQo * 64;
            MemorySegment q = f.randomTensor(DType.F32, n);
            MemorySegment out = f.sentinel(DType.F32, n);
            MemorySegment lse = f.sentinel(DType.F32, 3L * numQo);
            cpu.decode(q, DType.F32, out, DType.F32, lse, f.cache, table, AttentionParams.of(numQo, 64));
            float[] o = AttentionFixture.toFloats(out, DType.F32, n);
            float[] l = AttentionFixture.toFloats(lse, DType.F32, 3L * numQo);
            for (int b : new int[] {0, 2}) {
                for (int h = 0; h < numQo; h++) {
                    assertEquals(Float.NEGATIVE_INFINITY, l[b * numQo + h]);
                    for (int d = 0; d < 64; d++) {
                        assertEquals(0f, o[(b * numQo + h) * 64 + d]);
                    }
                }
            }
        }
    }

    private void check(Case c, long seed) {
        try (AttentionFixture f = new AttentionFixture(c.cache(), c.pageSize(), c.numKv(), c.headDim(), c.lens(), seed)) {
            int batch = c.lens().length;
            long n = (long) batch * c.numQo() * c.headDim();
            MemorySegment q = f.randomTensor(c.q(), n);
            PageTableCsr table = f.table();
            AttentionParams params = new AttentionParams(c.numQo(), (float) (1 / Math.sqrt(c.headDim())), c.softCap());
            MemorySegment outN = f.sentinel(c.out(), n);
            MemorySegment lseN = f.sentinel(DType.F32, (long) batch * c.numQo());
            MemorySegment outJ = f.sentinel(c.out(), n);
            MemorySegment lseJ = f.sentinel(DType.F32, (long) batch * c.numQo());
            cpu.decode(q, c.q(), outN, c.out(), lseN, f.cache, table, params);
            reference.decode(q, c.q(), outJ, c.out(), lseJ, f.cache, table, params);
            double tol = AttentionFixture.tolerance(c.cache(), c.out());
            AttentionFixture.assertClose(c + " out", AttentionFixture.toFloats(outJ, c.out(), n),
                    AttentionFixture.toFloats(outN, c.out(), n), tol);
            AttentionFixture.assertClose(c + " lse", AttentionFixture.toFloats(lseJ, DType.F32, (long) batch * c.numQo()),
                    AttentionFixture.toFloats(lseN, DType.F32, (long) batch * c.numQo()), 1e-4);
        }
    }
}
