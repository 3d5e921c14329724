package io.radixkv.kernels;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** Argument validation shared by every {@link DenseKernels} implementation (runs before any work). */
public final class DenseChecks {
    private DenseChecks() {}

    public static void linear(MemorySegment x, MemorySegment w, DType wDtype, MemorySegment y, long m, long n, long k) {
        Checks.requireNonNegative("m", m);
        Checks.requireNonNegative("n", n);
        Checks.requireNonNegative("k", k);
        Checks.requireDtype("wDtype", wDtype, DType.F32, DType.BF16, DType.F16);
        long mk = Math.multiplyExact(m, k);
        long nk = Math.multiplyExact(n, k);
        long mn = Math.multiplyExact(m, n);
        Checks.requireElements("x", x, mk, DType.F32);
        Checks.requireElements("w", w, nk, wDtype);
        Checks.requireElements("y", y, mn, DType.F32);
        noOverlap("y", y, 4 * mn, "x", x, 4 * mk);
        noOverlap("y", y, 4 * mn, "w", w, nk * wDtype.bytes());
    }

    public static void rmsnorm(MemorySegment x, MemorySegment w, MemorySegment y, long rows, int dim, float eps,
                        float weightOffset) {
        if (!Float.isFinite(weightOffset)) {
            throw new IllegalArgumentException("weightOffset must be finite, got " + weightOffset);
        }
        Checks.requireNonNegative("rows", rows);
        Checks.requirePositive("dim", dim);
        if (!Float.isFinite(eps) || eps < 0f) {
            throw new IllegalArgumentException("eps must be >= 0 and finite, got " + eps);
        }
        long elems = Math.multiplyExact(rows, (long) dim);
        Checks.requireElements("x", x, elems, DType.F32);
        Checks.requireElements("w", w, dim, DType.F32);
        Checks.requireElements("y", y, elems, DType.F32);
        if (elems > 0) {
            MemorySegment xs = x.asSlice(0, 4 * elems);
            MemorySegment ys = y.asSlice(0, 4 * elems);
            // In place (y is exactly x) is fine; a partial overlap would read rows already written.
            var common = xs.asOverlappingSlice(ys);
            // Equal sizes: the ranges are identical exactly when the overlap is all of x.
            if (common.isPresent() && common.get().byteSize() != xs.byteSize()) {
                throw new IllegalArgumentException("y must be x itself or not overlap it");
            }
        }
    }

    public static void rope(MemorySegment q, MemorySegment k, MemorySegment positions, long numTokens, int numQHeads,
                     int numKvHeads, int headDim, float theta) {
        if (!Float.isFinite(theta) || theta <= 0f) {
            throw new IllegalArgumentException("rope theta must be positive and finite, got " + theta);
        }
        ropeShapes(q, k, positions, numTokens, numQHeads, numKvHeads, headDim);
        for (long t = 0; t < numTokens; t++) {
            int p = positions.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, t);
            if (p < 0) {
                throw new IllegalArgumentException("position " + p + " (positions[" + t + "]) is negative");
            }
        }
    }

    /** RoPE's shape and size checks, without reading positions (they may be device memory). */
    public static void ropeShapes(MemorySegment q, MemorySegment k, MemorySegment positions, long numTokens, int numQHeads,
                           int numKvHeads, int headDim) {
        Checks.requireNonNegative("numTokens", numTokens);
        Checks.requireNonNegative("numQHeads", numQHeads);
        Checks.requireNonNegative("numKvHeads", numKvHeads);
        Checks.requirePositive("headDim", headDim);
        if (headDim % 2 != 0) {
            throw new IllegalArgumentException("headDim must be even for rotate-half RoPE, got " + headDim);
        }
        long qElems = Math.multiplyExact(numTokens, (long) numQHeads * headDim);
        long kElems = Math.multiplyExact(numTokens, (long) numKvHeads * headDim);
        if (qElems > 0) {
            Checks.requireElements("q", q, qElems, DType.F32);
        }
        if (kElems > 0) {
            Checks.requireElements("k", k, kElems, DType.F32);
        }
        if (qElems > 0 && kElems > 0) {
            noOverlap("q", q, 4 * qElems, "k", k, 4 * kElems);
        }
        Checks.requireBytes("positions", positions, 4 * numTokens);
    }

    public static void ropeTable(MemorySegment q, MemorySegment k, MemorySegment positions, long numTokens, int numQHeads,
                          int numKvHeads, int headDim, MemorySegment invFreq) {
        // theta 1 passes the theta check; the table replaces it.
        rope(q, k, positions, numTokens, numQHeads, numKvHeads, headDim, 1f);
        Checks.requireBytes("invFreq", invFreq, 8L * (headDim / 2));
        for (int i = 0; i < headDim / 2; i++) {
            double f = invFreq.getAtIndex(ValueLayout.JAVA_DOUBLE_UNALIGNED, i);
            if (!Double.isFinite(f) || f < 0) {
                throw new IllegalArgumentException("invFreq[" + i + "] = " + f + " is not finite and >= 0");
            }
        }
    }

    public static void addBias(MemorySegment y, MemorySegment bias, long rows, int n) {
        Checks.requireNonNegative("rows", rows);
        Checks.requirePositive("n", n);
        long elems = Math.multiplyExact(rows, (long) n);
        Checks.requireElements("y", y, elems, DType.F32);
        Checks.requireElements("bias", bias, n, DType.F32);
        noOverlap("y", y, 4 * elems, "bias", bias, 4L * n);
    }

    public static void softCap(MemorySegment x, long n, float cap) {
        Checks.requireNonNegative("n", n);
        if (!Float.isFinite(cap) || cap <= 0f) {
            throw new IllegalArgumentException("soft cap must be positive and finite, got " + cap);
        }
        Checks.requireElements("x", x, n, DType.F32);
    }

    public static void scale(MemorySegment x, long n, float s) {
        Checks.requireNonNegative("n", n);
        if (!Float.isFinite(s)) {
            throw new IllegalArgumentException("scale must be finite, got " + s);
        }
        Checks.requireElements("x", x, n, DType.F32);
    }

    public static void siluMul(MemorySegment gateUp, MemorySegment out, long rows, int inter) {
        Checks.requireNonNegative("rows", rows);
        Checks.requirePositive("inter", inter);
        long outElems = Math.multiplyExact(rows, (long) inter);
        Checks.requireElements("gateUp", gateUp, 2 * outElems, DType.F32);
        Checks.requireElements("out", out, outElems, DType.F32);
        noOverlap("out", out, 4 * outElems, "gateUp", gateUp, 8 * outElems);
    }

    public static void embedding(MemorySegment ids, long n, MemorySegment table, DType dtype, int vocab, int dim,
                          MemorySegment out) {
        Checks.requireNonNegative("n", n);
        Checks.requirePositive("vocab", vocab);
        Checks.requirePositive("dim", dim);
        Checks.requireDtype("table dtype", dtype, DType.F32, DType.BF16, DType.F16);
        Checks.requireBytes("ids", ids, Math.multiplyExact(4L, n));
        Checks.requireElements("table", table, (long) vocab * dim, dtype);
        Checks.requireElements("out", out, Math.multiplyExact(n, (long) dim), DType.F32);
        requireIds(ids, n, vocab);
    }

    /** Every one of the n int32 ids lies in [0, vocab). */
    public static void requireIds(MemorySegment ids, long n, int vocab) {
        Checks.requireBytes("ids", ids, Math.multiplyExact(4L, n));
        for (long i = 0; i < n; i++) {
            int id = ids.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i);
            if (id < 0 || id >= vocab) {
                throw new IllegalArgumentException("token id " + id + " (ids[" + i + "]) is outside the vocabulary [0, "
                        + vocab + ")");
            }
        }
    }

    public static void addInplace(MemorySegment y, MemorySegment x, long n) {
        Checks.requireNonNegative("n", n);
        Checks.requireElements("y", y, n, DType.F32);
        Checks.requireElements("x", x, n, DType.F32);
    }

    public static void argmax(MemorySegment logits, long rows, int vocab, MemorySegment out) {
        Checks.requireNonNegative("rows", rows);
        Checks.requirePositive("vocab", vocab);
        Checks.requireElements("logits", logits, Math.multiplyExact(rows, (long) vocab), DType.F32);
        Checks.requireBytes("out", out, Math.multiplyExact(4L, rows));
    }

    /** Native segments: address ranges must be disjoint. Heap segments: distinct arrays or disjoint. */
    public static void noOverlap(String an, MemorySegment a, long abytes, String bn, MemorySegment b, long bbytes) {
        if (abytes <= 0 || bbytes <= 0) {
            return;
        }
        if (a.asSlice(0, abytes).asOverlappingSlice(b.asSlice(0, bbytes)).isPresent()) {
            throw new IllegalArgumentException(an + " must not overlap " + bn);
        }
    }

    /** The native kernels take raw addresses: Java heap segments cannot be passed. */
    public static void requireNative(String name, MemorySegment s) {
        if (!s.isNative()) {
            throw new IllegalArgumentException(name + " must be a native (off-heap) segment");
        }
    }
}
