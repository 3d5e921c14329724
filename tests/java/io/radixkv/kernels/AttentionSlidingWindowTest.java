package io.radixkv.kernels;

import io.radixkv.kernels.cpu.CpuAttentionKernels;
import io.radixkv.kernels.reference.JavaAttentionKernels;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Sliding-window attention (FlashInfer's {@code window_left}: a query at KV position q sees
 * keys {@code q - windowLeft <= k <= q}) of the native CPU kernels against the Java
 * double-precision reference: windows smaller than, equal to and larger than the context,
 * windows ending on and straddling page boundaries, GQA, every KV dtype, split-KV decode,
 * prefill with prefix hits and bidirectional regions, and decode equal to prefill with q_len 1.
 */
class AttentionSlidingWindowTest {
    private static final int PAGE = 16;

    private final AttentionKernels cpu = new CpuAttentionKernels();
    private final AttentionKernels reference = new JavaAttentionKernels();

    /** Windows (window_left) against contexts up to 1000 tokens, page size 16. */
    private static final int[] WINDOWS = {
        0, // the query alone
        15, // 16 keys: ends on a page boundary when q+1 is a multiple of 16
        16, // 17 keys: straddles a page boundary
        37, // straddles
        99, // equal to the 100-token context
        700, // split-KV decode with a window (1000-token context, 2+ threads)
        5000, // larger than every context
    };

    static Stream<Arguments> dtypesAndWindows() {
        List<Arguments> args = new ArrayList<>();
        for (DType d : DType.values()) {
            for (int w : WINDOWS) {
                args.add(Arguments.of(d, w));
            }
        }
        return args.stream();
    }

    @ParameterizedTest(name = "{0} windowLeft={1}")
    @MethodSource("dtypesAndWindows")
    void decodeMatchesReference(DType cacheDtype, int windowLeft) {
        long[] lens = {1, 15, 16, 17, 100, 1000, 0, 48};
        int numQo = 8;
        int hd = 64;
        try (AttentionFixture f = new AttentionFixture(cacheDtype, PAGE, 2, hd, lens, 31 + windowLeft)) {
            AttentionParams params = AttentionParams.of(numQo, hd).withWindowLeft(windowLeft);
            long n = (long) lens.length * numQo * hd;
            MemorySegment q = f.randomTensor(DType.F32, n);
            Result nat = decode(cpu, f, q, n, lens.length * numQo, params);
            Result ref = decode(reference, f, q, n, lens.length * numQo, params);
            ref.assertClose("decode " + cacheDtype + " window " + windowLeft, nat, cacheDtype);
        }
    }

    @ParameterizedTest(name = "{0} windowLeft={1}")
    @MethodSource("dtypesAndWindows")
    void prefillMatchesReference(DType cacheDtype, int windowLeft) {
        long[] kvLens = {100, 40, 300, 17};
        int[] qLens = {100, 13, 70, 1}; // full prefill and prefix hits
        int numQo = 12;
        int hd = 64;
        try (AttentionFixture f = new AttentionFixture(cacheDtype, PAGE, 4, hd, kvLens, 57 + windowLeft)) {
            AttentionParams params = AttentionParams.of(numQo, hd).withWindowLeft(windowLeft);
            comparePrefill(f, kvLens, qLens, MemorySegment.NULL, MemorySegment.NULL, params, cacheDtype);
        }
    }

    /** Bidirectional regions keep their semantics; the window bounds each query from below on top. */
    @Test
    void prefillWithBidirectionalRegions() {
        long[] kvLens = {120, 60};
        int[] qLens = {120, 25};
        for (int windowLeft : new int[] {0, 10, 33, 200}) {
            try (AttentionFixture f = new AttentionFixture(DType.BF16, PAGE, 2, 64, kvLens, 3)) {
                MemorySegment bi = f.ints(0, 2, 3);
                MemorySegment br = f.ints(20, 60, 90, 120, 38, 55);
                AttentionParams params = AttentionParams.of(8, 64).withWindowLeft(windowLeft);
                comparePrefill(f, kvLens, qLens, bi, br, params, DType.BF16);
            }
        }
    }

    /** Prefill with q_len 1 equals decode, with a window, for every dtype. */
    @ParameterizedTest(name = "{0}")
    @org.junit.jupiter.params.provider.EnumSource(DType.class)
    void decodeEqualsPrefillWithQLenOne(DType cacheDtype) {
        long[] lens = {1000, 1, 16, 33, 64};
        int numQo = 8;
        int hd = 128;
        try (AttentionFixture f = new AttentionFixture(cacheDtype, PAGE, 2, hd, lens, 5)) {
            for (int windowLeft : new int[] {0, 15, 31, 500}) {
                AttentionParams params = AttentionParams.of(numQo, hd).withWindowLeft(windowLeft);
                long n = (long) lens.length * numQo * hd;
                MemorySegment q = f.randomTensor(DType.F32, n);
                Result d = decode(cpu, f, q, n, lens.length * numQo, params);
                Result p = prefill(cpu, f, q, n, lens.length * numQo, f.ints(0, 1, 2, 3, 4, 5), f.table(),
                        MemorySegment.NULL, MemorySegment.NULL, params);
                AttentionFixture.assertClose("out", d.out, p.out, 1e-5);
                AttentionFixture.assertClose("lse", d.lse, p.lse, 1e-5);
            }
        }
    }

    /**
     * The window is applied: with a window smaller than the context the output differs from
     * attention over the whole context (so the comparisons above would fail if it were ignored),
     * and with windowLeft >= context - 1 it is identical.
     */
    @Test
    void windowChangesTheResultOnlyWhenSmallerThanTheContext() {
        long[] lens = {100};
        try (AttentionFixture f = new AttentionFixture(DType.F32, PAGE, 1, 64, lens, 8)) {
            long n = 4L * 64;
            MemorySegment q = f.randomTensor(DType.F32, n);
            Result full = decode(cpu, f, q, n, 4, AttentionParams.of(4, 64));
            Result same = decode(cpu, f, q, n, 4, AttentionParams.of(4, 64).withWindowLeft(99));
            Result windowed = decode(cpu, f, q, n, 4, AttentionParams.of(4, 64).withWindowLeft(98));
            assertTrue(Arrays.equals(full.out, same.out), "window of the whole context changes nothing");
            assertTrue(maxAbsDiff(full.out, windowed.out) > 1e-4, "dropping one key must change the output");
            Result alone = decode(cpu, f, q, n, 4, AttentionParams.of(4, 64).withWindowLeft(0));
            // windowLeft 0: each query sees only its own position, so the output is that V row
            float[] v = AttentionFixture.toFloats(f.cache.vCache().asSlice(
                    ((long) f.pages[0][99 / PAGE] * PAGE + 99 % PAGE) * 64 * 4, 64 * 4), DType.F32, 64);
            for (int h = 0; h < 4; h++) {
                AttentionFixture.assertClose("head " + h, v, Arrays.copyOfRange(alone.out, h * 64, h * 64 + 64), 1e-6);
            }
        }
    }

    @Test
    void windowLeftBelowMinusOneIsRejected() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new AttentionParams(4, 0.125f, 0f, -2));
        assertTrue(e.getMessage().contains("-2"), e.getMessage());
        assertEquals(-1, new AttentionParams(4, 0.125f, 0f).windowLeft());
        assertEquals(-1, AttentionParams.of(4, 64).windowLeft());
        assertEquals(7, AttentionParams.of(4, 64).withWindowLeft(7).windowLeft());
    }

    // ---- helpers ----

    private record Result(float[] out, float[] lse) {
        void assertClose(String what, Result actual, DType cacheDtype) {
            AttentionFixture.assertClose(what + " out", out, actual.out,
                    AttentionFixture.tolerance(cacheDtype, DType.F32));
            AttentionFixture.assertClose(what + " lse", lse, actual.lse, 1e-4);
        }
    }

    private static Result decode(AttentionKernels k, AttentionFixture f, MemorySegment q, long n, int rows,
                                 AttentionParams params) {
        MemorySegment out = f.sentinel(DType.F32, n);
        MemorySegment lse = f.sentinel(DType.F32, rows);
        k.decode(q, DType.F32, out, DType.F32, lse, f.cache, f.table(), params);
        return new Result(AttentionFixture.toFloats(out, DType.F32, n), AttentionFixture.toFloats(lse, DType.F32, rows));
    }

    private static Result prefill(AttentionKernels k, AttentionFixture f, MemorySegment q, long n, int rows,
                                  MemorySegment qo, PageTableCsr table, MemorySegment bi, MemorySegment br,
                                  AttentionParams params) {
        MemorySegment out = f.sentinel(DType.F32, n);
        MemorySegment lse = f.sentinel(DType.F32, rows);
        k.appendPrefill(q, DType.F32, out, DType.F32, lse, qo, f.cache, table, bi, br, params);
        return new Result(AttentionFixture.toFloats(out, DType.F32, n), AttentionFixture.toFloats(lse, DType.F32, rows));
    }

    private void comparePrefill(AttentionFixture f, long[] kvLens, int[] qLens, MemorySegment bi, MemorySegment br,
                                AttentionParams params, DType cacheDtype) {
        int[] qo = AttentionPrefillTest.indptr(qLens);
        int totalQ = qo[qo.length - 1];
        long n = (long) totalQ * params.numQoHeads() * f.layout.headDim();
        MemorySegment q = f.randomTensor(DType.F32, n);
        int rows = totalQ * params.numQoHeads();
        Result nat = prefill(cpu, f, q, n, rows, f.ints(qo), f.table(), bi, br, params);
        Result ref = prefill(reference, f, q, n, rows, f.ints(qo), f.table(), bi, br, params);
        ref.assertClose("prefill " + cacheDtype + " window " + params.windowLeft() + " kv=" + Arrays.toString(kvLens),
                nat, cacheDtype);
    }

    private static double maxAbsDiff(float[] a, float[] b) {
        double m = 0;
        for (int i = 0; i < a.length; i++) {
            m = Math.max(m, Math.abs(a[i] - b[i]));
        }
        return m;
    }
}
