package io.radixkv.checkpoint;

import io.radixkv.kernels.DType;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * Element conversions between the checkpoint dtypes (f32, bf16, f16), little-endian as
 * safetensors stores them. Round to nearest even; NaN stays a (quiet) NaN; bf16 to f32 is exact.
 */
public final class ElementConversion {
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private ElementConversion() {}

    /** bf16 bits (the upper half of an f32) to float: exact. */
    public static float bf16ToFloat(short bits) {
        return Float.intBitsToFloat((bits & 0xFFFF) << 16);
    }

    /** float to bf16 bits, round to nearest even (carrying into the exponent up to infinity); NaN stays NaN. */
    public static short floatToBf16(float f) {
        int u = Float.floatToRawIntBits(f);
        if (Float.isNaN(f)) {
            return (short) ((u >>> 16) | 0x40); // quiet, keeping the sign and top payload bits
        }
        int upper = u >>> 16;
        int lower = u & 0xFFFF;
        if (lower > 0x8000 || (lower == 0x8000 && (upper & 1) != 0)) {
            upper++;
        }
        return (short) upper;
    }

    /** Element {@code i} of {@code seg} (of {@code type}) as a float. */
    public static float load(MemorySegment seg, long i, DType type) {
        return switch (type) {
            case F32 -> Float.intBitsToFloat(seg.getAtIndex(I32, i));
            case BF16 -> bf16ToFloat(seg.getAtIndex(I16, i));
            case F16 -> Float.float16ToFloat(seg.getAtIndex(I16, i));
            default -> throw new IllegalArgumentException("unsupported dtype " + type);
        };
    }

    /** Stores {@code v} rounded to {@code type} as element {@code i} of {@code seg}. */
    public static void store(MemorySegment seg, long i, DType type, float v) {
        switch (type) {
            case F32 -> seg.setAtIndex(I32, i, Float.floatToRawIntBits(v));
            case BF16 -> seg.setAtIndex(I16, i, floatToBf16(v));
            case F16 -> seg.setAtIndex(I16, i, Float.floatToFloat16(v));
            default -> throw new IllegalArgumentException("unsupported dtype " + type);
        }
    }

    /**
     * Copies {@code n} elements of {@code src} (type {@code srcType}) into {@code dst} (type
     * {@code dstType}) starting at element {@code dstOffset}: a plain copy when the types match,
     * else converted element by element.
     */
    public static void convert(MemorySegment src, DType srcType, MemorySegment dst, DType dstType, long dstOffset,
                               long n) {
        if (srcType == dstType) {
            MemorySegment.copy(src, 0, dst, dstOffset * dstType.bytes(), n * dstType.bytes());
            return;
        }
        if (srcType == DType.BF16 && dstType == DType.F32) {
            for (long i = 0; i < n; i++) { // exact widening: the bits shift up
                dst.setAtIndex(I32, dstOffset + i, (src.getAtIndex(I16, i) & 0xFFFF) << 16);
            }
            return;
        }
        if (srcType == DType.F32 && dstType == DType.BF16) {
            for (long i = 0; i < n; i++) {
                dst.setAtIndex(I16, dstOffset + i, floatToBf16(Float.intBitsToFloat(src.getAtIndex(I32, i))));
            }
            return;
        }
        if (srcType == DType.F16 && dstType == DType.F32) {
            for (long i = 0; i < n; i++) { // exact widening
                dst.setAtIndex(I32, dstOffset + i, Float.floatToRawIntBits(Float.float16ToFloat(src.getAtIndex(I16, i))));
            }
            return;
        }
        for (long i = 0; i < n; i++) {
            store(dst, dstOffset + i, dstType, load(src, i, srcType));
        }
    }
}
