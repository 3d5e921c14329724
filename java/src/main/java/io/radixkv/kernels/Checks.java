package io.radixkv.kernels;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** Argument checks run before every downcall; they throw IllegalArgumentException with a precise message. */
public final class Checks {
    private Checks() {}

    /** The segment is non-null, not {@link MemorySegment#NULL}, and holds at least {@code bytes} bytes. */
    public static MemorySegment requireBytes(String name, MemorySegment seg, long bytes) {
        if (seg == null || seg.equals(MemorySegment.NULL)) {
            throw new IllegalArgumentException(name + " must not be null");
        }
        if (bytes < 0) {
            throw new IllegalArgumentException(name + ": negative size " + bytes);
        }
        if (seg.byteSize() < bytes) {
            throw new IllegalArgumentException(name + " holds " + seg.byteSize() + " bytes but " + bytes + " are needed");
        }
        return seg;
    }

    /** Like {@link #requireBytes} for {@code count} elements of {@code dtype}. */
    public static MemorySegment requireElements(String name, MemorySegment seg, long count, DType dtype) {
        return requireBytes(name, seg, Math.multiplyExact(count, (long) dtype.bytes()));
    }

    /** Optional segment: null or NULL is allowed; otherwise it must hold {@code bytes}. */
    public static MemorySegment optionalBytes(String name, MemorySegment seg, long bytes) {
        if (seg == null || seg.equals(MemorySegment.NULL)) {
            return MemorySegment.NULL;
        }
        return requireBytes(name, seg, bytes);
    }

    public static int requirePositive(String name, int value) {
        if (value <= 0) {
            throw new IllegalArgumentException(name + " must be positive, got " + value);
        }
        return value;
    }

    public static long requirePositive(String name, long value) {
        if (value <= 0) {
            throw new IllegalArgumentException(name + " must be positive, got " + value);
        }
        return value;
    }

    public static long requireNonNegative(String name, long value) {
        if (value < 0) {
            throw new IllegalArgumentException(name + " must not be negative, got " + value);
        }
        return value;
    }

    public static float requireScale(String name, float scale) {
        if (!(scale > 0f) || Float.isInfinite(scale)) {
            throw new IllegalArgumentException(name + " must be positive and finite, got " + scale);
        }
        return scale;
    }

    public static DType requireDtype(String name, DType d, DType... allowed) {
        if (d == null) {
            throw new IllegalArgumentException(name + " must not be null");
        }
        if (allowed.length == 0) {
            return d;
        }
        for (DType a : allowed) {
            if (a == d) {
                return d;
            }
        }
        throw new IllegalArgumentException(name + " " + d + " is not supported here (allowed: "
                + java.util.Arrays.toString(allowed) + ")");
    }

    /** Reads int32 element i (native byte order). */
    public static int intAt(MemorySegment seg, long i) {
        return seg.getAtIndex(ValueLayout.JAVA_INT, i);
    }
}
