package io.radixkv.kernels;

import io.radixkv.kernels.cpu.CpuDenseKernels;
import io.radixkv.kernels.reference.JavaDenseKernels;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/** Native dense kernels against the plain-Java reference, on random inputs and odd shapes; bad inputs. */
class DenseKernelsTest {
    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT;
    private final Arena arena = Arena.ofConfined();
    private final Random rnd = new Random(42);
    private final DenseKernels cpu = new CpuDenseKernels();
    private final DenseKernels ref = new JavaDenseKernels();

    @AfterEach
    void close() {
        arena.close();
    }

    private MemorySegment randn(long n, double scale) {
        MemorySegment s = arena.allocate(4 * Math.max(n, 1), 64);
        for (long i = 0; i < n; i++) {
            s.setAtIndex(F, i, (float) (rnd.nextGaussian() * scale));
        }
        return s;
    }

    private MemorySegment toBf16(MemorySegment f32, long n) {
        MemorySegment s = arena.allocate(2 * Math.max(n, 1), 64);
        for (long i = 0; i < n; i++) {
            s.setAtIndex(ValueLayout.JAVA_SHORT, i, Bf16.fromFloat(f32.getAtIndex(F, i)));
        }
        return s;
    }

    private MemorySegment toF16(MemorySegment f32, long n) {
        MemorySegment s = arena.allocate(2 * Math.max(n, 1), 64);
        for (long i = 0; i < n; i++) {
            s.setAtIndex(ValueLayout.JAVA_SHORT, i, Float.floatToFloat16(f32.getAtIndex(F, i)));
        }
        return s;
    }

    private MemorySegment asWeights(MemorySegment f32, long n, DType dtype) {
        return switch (dtype) {
            case BF16 -> toBf16(f32, n);
            case F16 -> toF16(f32, n);
            default -> f32;
        };
    }

    private MemorySegment copy(MemorySegment s) {
        MemorySegment c = arena.allocate(s.byteSize(), 64);
        c.copyFrom(s);
        return c;
    }

    /** The first element where |e - a| > tol * (1 + |e|) (NaN counts), or -1. */
    private static long firstMismatch(MemorySegment expected, MemorySegment actual, long n, double tol) {
        for (long i = 0; i < n; i++) {
            float e = expected.getAtIndex(F, i);
            float a = actual.getAtIndex(F, i);
            if (!(Math.abs(e - a) <= tol * (1 + Math.abs(e)))) {
                return i;
            }
        }
        return -1;
    }

    private static void assertClose(MemorySegment expected, MemorySegment actual, long n, double tol, String what) {
        long i = firstMismatch(expected, actual, n, tol);
        if (i >= 0) {
            throw new AssertionError(what + ": element " + i + " expected " + expected.getAtIndex(F, i)
                    + " but was " + actual.getAtIndex(F, i));
        }
    }

    static Stream<Arguments> linearShapes() {
        long[][] shapes = {{1, 1, 1}, {1, 37, 19}, {2, 5, 130}, {4, 64, 64}, {7, 33, 100}, {8, 40, 72},
                           {16, 96, 80}, {33, 70, 65}, {128, 64, 256}, {40, 600, 96}, {0, 5, 5}, {3, 0, 4}, {3, 4, 0}};
        return Stream.of(DType.F32, DType.BF16, DType.F16).flatMap(d -> Stream.of(false, true)
                .flatMap(acc -> Stream.of(shapes).map(s -> Arguments.of(d, acc, s[0], s[1], s[2]))));
    }

    /** Decode batches (the small-m kernel): every m up to 16 (and 17, past it), odd n and k. */
    static Stream<Arguments> decodeShapes() {
        return Stream.of(DType.F32, DType.BF16, DType.F16).flatMap(d -> java.util.stream.LongStream.rangeClosed(1, 17)
                .mapToObj(m -> Arguments.of(d, m % 2 == 1, m, 203L, 517L)));
    }

    @ParameterizedTest(name = "{0} acc={1} m={2} n={3} k={4}")
    @MethodSource("decodeShapes")
    void decodeLinearMatchesReference(DType dtype, boolean accumulate, long m, long n, long k) {
        linearMatchesReference(dtype, accumulate, m, n, k);
    }

    @ParameterizedTest(name = "{0} acc={1} m={2} n={3} k={4}")
    @MethodSource("linearShapes")
    void linearMatchesReference(DType dtype, boolean accumulate, long m, long n, long k) {
        MemorySegment x = randn(m * k, 1.0);
        MemorySegment wf = randn(n * k, 0.1);
        MemorySegment w = asWeights(wf, n * k, dtype);
        MemorySegment y0 = randn(m * n, 1.0);
        MemorySegment yc = copy(y0);
        MemorySegment yr = copy(y0);
        cpu.linear(x, w, dtype, yc, m, n, k, accumulate);
        ref.linear(x, w, dtype, yr, m, n, k, accumulate);
        // f32 arithmetic on widened weights (f32 rounding of the sums only); n = 600 spans
        // several widened weight panels (256 rows each) on CPUs without native bf16. On CPUs with
        // native bf16 dot products (AVX512-BF16, AMX), bf16 weights from 8 rows of x on multiply the activations
        // rounded to bf16 (RNE), as bf16 inference does: then the whole call must agree, just as
        // tightly, with the reference on the rounded activations. Either model, never a mix.
        if (dtype == DType.BF16 && firstMismatch(yr, yc, m * n, 1e-5) >= 0) {
            MemorySegment xb = arena.allocate(4 * Math.max(m * k, 1), 64);
            for (long i = 0; i < m * k; i++) {
                float v = x.getAtIndex(F, i);
                xb.setAtIndex(F, i, Float.intBitsToFloat(Bf16.fromFloat(v) << 16));
            }
            MemorySegment yb = copy(y0);
            ref.linear(xb, w, dtype, yb, m, n, k, accumulate);
            assertClose(yb, yc, m * n, 1e-5, "linear (neither the f32 nor the bf16-rounded activations model)");
            return;
        }
        assertClose(yr, yc, m * n, 1e-5, "linear");
    }

    @Test
    void rmsnormMatchesReferenceInPlaceToo() {
        long rows = 9;
        int dim = 133;
        MemorySegment x = randn(rows * dim, 3.0);
        MemorySegment w = randn(dim, 1.0);
        MemorySegment yc = arena.allocate(4 * rows * dim);
        MemorySegment yr = arena.allocate(4 * rows * dim);
        cpu.rmsnorm(x, w, yc, rows, dim, 1e-6f);
        ref.rmsnorm(x, w, yr, rows, dim, 1e-6f);
        assertClose(yr, yc, rows * dim, 1e-5, "rmsnorm");
        MemorySegment inPlace = copy(x);
        cpu.rmsnorm(inPlace, w, inPlace, rows, dim, 1e-6f);
        assertClose(yr, inPlace, rows * dim, 1e-5, "rmsnorm in place");
        assertThrows(IllegalArgumentException.class, () -> cpu.rmsnorm(x, w, x.asSlice(4), rows - 1, dim, 1e-6f));
    }

    @ParameterizedTest
    @ValueSource(floats = {10000f, 500000f, 1e6f})
    void ropeMatchesReference(float theta) {
        long n = 11;
        int hq = 4;
        int hk = 2;
        int d = 18;
        MemorySegment q = randn(n * hq * d, 1.0);
        MemorySegment k = randn(n * hk * d, 1.0);
        MemorySegment pos = arena.allocate(4 * n);
        for (int t = 0; t < n; t++) {
            pos.setAtIndex(ValueLayout.JAVA_INT, t, t == 3 ? 0 : t * 1013 + 7);
        }
        MemorySegment qc = copy(q);
        MemorySegment kc = copy(k);
        cpu.rope(qc, kc, pos, n, hq, hk, d, theta);
        ref.rope(q, k, pos, n, hq, hk, d, theta);
        assertClose(q, qc, n * hq * d, 1e-5, "rope q");
        assertClose(k, kc, n * hk * d, 1e-5, "rope k");
    }

    @Test
    void ropeRejectsNegativePositionsAndOddHeadDim() {
        MemorySegment q = randn(2 * 4, 1.0);
        MemorySegment k = randn(2 * 4, 1.0);
        MemorySegment before = copy(q);
        MemorySegment pos = arena.allocate(8);
        pos.setAtIndex(ValueLayout.JAVA_INT, 1, -5);
        for (DenseKernels dk : List.of(cpu, ref)) {
            var e = assertThrows(IllegalArgumentException.class, () -> dk.rope(q, k, pos, 2, 1, 1, 4, 10000f));
            assertTrue(e.getMessage().contains("-5"), e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> dk.rope(q, k, pos, 1, 1, 1, 3, 10000f));
            assertThrows(IllegalArgumentException.class, () -> dk.rope(q, k, pos, 1, 1, 1, 4, 0f));
        }
        assertEquals(-1, before.mismatch(q));
    }

    @Test
    void siluMulMatchesReference() {
        long rows = 7;
        int inter = 45;
        MemorySegment gu = randn(rows * 2 * inter, 3.0);
        MemorySegment oc = arena.allocate(4 * rows * inter);
        MemorySegment or = arena.allocate(4 * rows * inter);
        cpu.siluMul(gu, oc, rows, inter);
        ref.siluMul(gu, or, rows, inter);
        assertClose(or, oc, rows * inter, 1e-5, "siluMul");
        assertThrows(IllegalArgumentException.class, () -> cpu.siluMul(gu, gu.asSlice(8), rows, inter));
    }

    @ParameterizedTest
    @ValueSource(strings = {"f32", "bf16", "f16"})
    void embeddingMatchesReferenceAndRejectsBadIds(String dt) {
        DType dtype = DType.parse(dt);
        int vocab = 50;
        int dim = 13;
        MemorySegment tf = randn((long) vocab * dim, 1.0);
        MemorySegment table = asWeights(tf, (long) vocab * dim, dtype);
        int[] idArr = {0, 49, 7, 7, 23};
        MemorySegment ids = arena.allocateFrom(ValueLayout.JAVA_INT, idArr);
        MemorySegment oc = arena.allocate(4L * idArr.length * dim);
        MemorySegment or = arena.allocate(4L * idArr.length * dim);
        cpu.embedding(ids, idArr.length, table, dtype, vocab, dim, oc);
        ref.embedding(ids, idArr.length, table, dtype, vocab, dim, or);
        assertEquals(-1, oc.mismatch(or));
        for (int bad : new int[] {vocab, -1, Integer.MAX_VALUE}) {
            MemorySegment badIds = arena.allocateFrom(ValueLayout.JAVA_INT, 1, 2, bad);
            MemorySegment out = arena.allocate(4L * 3 * dim);
            for (DenseKernels dk : List.of(cpu, ref)) {
                var e = assertThrows(IllegalArgumentException.class,
                        () -> dk.embedding(badIds, 3, table, dtype, vocab, dim, out));
                assertTrue(e.getMessage().contains("token id " + bad), e.getMessage());
            }
            assertTrue(isZero(out), "a rejected embedding wrote its output");
        }
    }

    private static boolean isZero(MemorySegment s) {
        for (long i = 0; i < s.byteSize(); i++) {
            if (s.get(ValueLayout.JAVA_BYTE, i) != 0) {
                return false;
            }
        }
        return true;
    }

    @Test
    void addInplaceAndArgmax() {
        MemorySegment y = randn(1001, 1.0);
        MemorySegment x = randn(1001, 1.0);
        MemorySegment yr = copy(y);
        cpu.addInplace(y, x, 1001);
        ref.addInplace(yr, x, 1001);
        assertEquals(-1, y.mismatch(yr));

        float nan = Float.NaN;
        float[] logits = {1, 5, 5, 2, /* row 1 */ nan, -1, -3, -1, /* row 2 */ nan, nan, nan, nan,
                          /* row 3 */ -7, -7, -7, -6};
        MemorySegment l = arena.allocateFrom(F, logits);
        MemorySegment oc = arena.allocate(16);
        MemorySegment or = arena.allocate(16);
        cpu.argmax(l, 4, 4, oc);
        ref.argmax(l, 4, 4, or);
        int[] expected = {1, 1, 0, 3};
        assertArrayEquals(expected, oc.toArray(ValueLayout.JAVA_INT));
        assertArrayEquals(expected, or.toArray(ValueLayout.JAVA_INT));

        MemorySegment big = randn(3L * 32000, 5.0);
        MemorySegment bc = arena.allocate(12);
        MemorySegment br = arena.allocate(12);
        cpu.argmax(big, 3, 32000, bc);
        ref.argmax(big, 3, 32000, br);
        assertEquals(-1, bc.mismatch(br));
    }

    @Test
    void badLinearArgumentsAreRejectedBeforeTheCall() {
        MemorySegment x = randn(4 * 8, 1.0);
        MemorySegment w = randn(6 * 8, 1.0);
        MemorySegment y = arena.allocate(4 * 4 * 6);
        for (DenseKernels dk : List.of(cpu, ref)) {
            assertThrows(IllegalArgumentException.class, () -> dk.linear(x, w, DType.FP8_E4M3, y, 4, 6, 8, false));
            var e = assertThrows(IllegalArgumentException.class, () -> dk.linear(x, w, DType.F32, y, 4, 7, 8, false));
            assertTrue(e.getMessage().startsWith("w holds"), e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> dk.linear(x, w, DType.F32, y, -1, 6, 8, false));
            assertThrows(IllegalArgumentException.class, () -> dk.linear(x, w, DType.F32, x, 2, 2, 8, false));
            assertThrows(IllegalArgumentException.class,
                    () -> dk.linear(x, w, DType.F32, MemorySegment.NULL, 4, 6, 8, false));
        }
        assertTrue(isZero(y));
        MemorySegment heap = MemorySegment.ofArray(new float[24]);
        var e = assertThrows(IllegalArgumentException.class, () -> cpu.linear(x, w, DType.F32, heap, 4, 6, 8, false));
        assertTrue(e.getMessage().contains("native"), e.getMessage());
    }

    /** Gemma's x̂·(1+w): the offset variant equals the plain norm with w + 1, natively and in the reference. */
    @Test
    void rmsnormOnePlusWeight() {
        long rows = 6;
        int dim = 64;
        MemorySegment x = randn(rows * dim, 2.0);
        MemorySegment w = randn(dim, 0.3);
        MemorySegment w1 = arena.allocate(4L * dim);
        for (int i = 0; i < dim; i++) {
            w1.setAtIndex(F, i, w.getAtIndex(F, i) + 1f);
        }
        MemorySegment plus = arena.allocate(4 * rows * dim);
        MemorySegment yc = arena.allocate(4 * rows * dim);
        MemorySegment yr = arena.allocate(4 * rows * dim);
        ref.rmsnorm(x, w1, plus, rows, dim, 1e-6f);
        cpu.rmsnorm(x, w, yc, rows, dim, 1e-6f, 1f);
        ref.rmsnorm(x, w, yr, rows, dim, 1e-6f, 1f);
        assertClose(plus, yr, rows * dim, 1e-6, "reference x.(1+w)");
        assertClose(yr, yc, rows * dim, 1e-5, "native x.(1+w)");
        cpu.rmsnorm(x, w, yc, rows, dim, 1e-6f, 0f);
        assertTrue(Math.abs(yc.getAtIndex(F, 0) - yr.getAtIndex(F, 0)) > 1e-3, "offset ignored");
        assertThrows(IllegalArgumentException.class, () -> cpu.rmsnorm(x, w, yc, rows, dim, 1e-6f, Float.NaN));
    }

    /** A table of plain frequencies gives rope(theta); a scaled table matches the reference. */
    @Test
    void ropeTableMatchesReference() {
        long n = 9;
        int hq = 4;
        int hk = 1;
        int d = 32;
        MemorySegment q = randn(n * hq * d, 1.0);
        MemorySegment k = randn(n * hk * d, 1.0);
        MemorySegment pos = arena.allocate(4 * n);
        for (int t = 0; t < n; t++) {
            pos.setAtIndex(ValueLayout.JAVA_INT, t, t * 977 + 1);
        }
        MemorySegment plain = arena.allocate(8L * d / 2);
        MemorySegment scaled = arena.allocate(8L * d / 2);
        for (int i = 0; i < d / 2; i++) {
            double f = Math.pow(10000, -2.0 * i / d);
            plain.setAtIndex(ValueLayout.JAVA_DOUBLE, i, f);
            scaled.setAtIndex(ValueLayout.JAVA_DOUBLE, i, i > d / 4 ? f / 8 : f);
        }
        MemorySegment qa = copy(q);
        MemorySegment ka = copy(k);
        MemorySegment qb = copy(q);
        MemorySegment kb = copy(k);
        cpu.ropeTable(qa, ka, pos, n, hq, hk, d, plain);
        ref.rope(qb, kb, pos, n, hq, hk, d, 10000f);
        assertClose(qb, qa, n * hq * d, 1e-5, "table = theta q");
        assertClose(kb, ka, n * hk * d, 1e-5, "table = theta k");
        MemorySegment qc = copy(q);
        MemorySegment kc = copy(k);
        cpu.ropeTable(q, k, pos, n, hq, hk, d, scaled);
        ref.ropeTable(qc, kc, pos, n, hq, hk, d, scaled);
        assertClose(qc, q, n * hq * d, 1e-5, "scaled q");
        assertClose(kc, k, n * hk * d, 1e-5, "scaled k");
        scaled.setAtIndex(ValueLayout.JAVA_DOUBLE, 3, Double.POSITIVE_INFINITY);
        MemorySegment before = copy(q);
        for (DenseKernels dk : List.of(cpu, ref)) {
            var e = assertThrows(IllegalArgumentException.class, () -> dk.ropeTable(q, k, pos, n, hq, hk, d, scaled));
            assertTrue(e.getMessage().contains("invFreq[3]"), e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> dk.ropeTable(q, k, pos, n, hq, hk, d, plain.asSlice(0, 16)));
        }
        assertEquals(-1, before.mismatch(q));
    }

    @Test
    void geluTanhMulMatchesReference() {
        long rows = 5;
        int inter = 77;
        MemorySegment gu = randn(rows * 2 * inter, 3.0);
        MemorySegment oc = arena.allocate(4 * rows * inter);
        MemorySegment or = arena.allocate(4 * rows * inter);
        cpu.geluTanhMul(gu, oc, rows, inter);
        ref.geluTanhMul(gu, or, rows, inter);
        assertClose(or, oc, rows * inter, 1e-5, "geluTanhMul");
        // gelu_tanh(1) = 0.841192 (exact erf GELU would be 0.841345).
        MemorySegment one = arena.allocateFrom(F, 1f, 2f);
        MemorySegment o = arena.allocate(4);
        ref.geluTanhMul(one, o, 1, 1);
        assertEquals(0.841192f * 2, o.getAtIndex(F, 0), 2e-6f);
        assertThrows(IllegalArgumentException.class, () -> cpu.geluTanhMul(gu, gu.asSlice(8), rows, inter));
    }

    @Test
    void biasSoftCapScale() {
        long rows = 4;
        int n = 37;
        MemorySegment y = randn(rows * n, 1.0);
        MemorySegment b = randn(n, 1.0);
        MemorySegment y0 = copy(y);
        MemorySegment yr = copy(y);
        cpu.addBias(y, b, rows, n);
        ref.addBias(yr, b, rows, n);
        assertEquals(-1, y.mismatch(yr));
        assertEquals(y0.getAtIndex(F, n + 2) + b.getAtIndex(F, 2), y.getAtIndex(F, n + 2), 0f);
        assertThrows(IllegalArgumentException.class, () -> cpu.addBias(y, y.asSlice(4), rows - 1, n));
        assertThrows(IllegalArgumentException.class, () -> cpu.addBias(y, b.asSlice(0, 8), rows, n));

        MemorySegment l = randn(3000, 40.0);
        MemorySegment lr = copy(l);
        cpu.softCap(l, 3000, 30f);
        ref.softCap(lr, 3000, 30f);
        assertClose(lr, l, 3000, 1e-5, "softCap");
        for (long i = 0; i < 3000; i++) {
            assertTrue(Math.abs(l.getAtIndex(F, i)) <= 30f);
        }
        assertThrows(IllegalArgumentException.class, () -> cpu.softCap(l, 3000, 0f));
        MemorySegment s = randn(100, 1.0);
        MemorySegment sr = copy(s);
        cpu.scale(s, 100, 34f);
        ref.scale(sr, 100, 34f);
        assertEquals(-1, s.mismatch(sr));
        assertThrows(IllegalArgumentException.class, () -> cpu.scale(s, 100, Float.NaN));
        assertThrows(IllegalArgumentException.class, () -> cpu.scale(s, 101, 2f));
    }
}
