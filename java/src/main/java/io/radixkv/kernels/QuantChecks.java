package io.radixkv.kernels;

import io.radixkv.quant.BlockFormat;
import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * Argument validation of the quantized dense kernels ({@link DenseKernels#linearQuantized},
 * {@link DenseKernels#embeddingQuantized}): shapes, strides, segment sizes and overlaps, checked
 * before any native call.
 */
public final class QuantChecks {
    private QuantChecks() {}

    public static void linear(MemorySegment x, long ldx, MemorySegment w, BlockFormat format, MemorySegment y, long ldy,
                              long m, long n, long k) {
        Objects.requireNonNull(format, "format");
        Checks.requireNonNegative("m", m);
        Checks.requireNonNegative("n", n);
        Checks.requireNonNegative("k", k);
        long rowBytes = format.rowBytes(k);
        if (ldx < k || ldy < n) {
            throw new IllegalArgumentException("ldx " + ldx + " must be at least k " + k + " and ldy " + ldy
                    + " at least n " + n);
        }
        if (m == 0 || n == 0) {
            return;
        }
        long xFloats = Math.addExact(Math.multiplyExact(m - 1, ldx), k);
        long yFloats = Math.addExact(Math.multiplyExact(m - 1, ldy), n);
        long wBytes = Math.multiplyExact(n, rowBytes);
        Checks.requireElements("x", x, xFloats, DType.F32);
        Checks.requireBytes("w", w, wBytes);
        Checks.requireElements("y", y, yFloats, DType.F32);
        DenseChecks.noOverlap("y", y, 4 * yFloats, "x", x, 4 * xFloats);
        DenseChecks.noOverlap("y", y, 4 * yFloats, "w", w, wBytes);
    }

    public static void embedding(MemorySegment ids, long n, MemorySegment table, BlockFormat format, int vocab, int dim,
                                 MemorySegment out) {
        Objects.requireNonNull(format, "format");
        Checks.requireNonNegative("n", n);
        Checks.requirePositive("vocab", vocab);
        Checks.requirePositive("dim", dim);
        long rowBytes = format.rowBytes(dim);
        Checks.requireBytes("table", table, Math.multiplyExact(rowBytes, (long) vocab));
        Checks.requireElements("out", out, Math.multiplyExact(n, (long) dim), DType.F32);
        DenseChecks.requireIds(ids, n, vocab);
    }
}
