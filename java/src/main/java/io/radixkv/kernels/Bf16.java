package io.radixkv.kernels;

/**
 * bfloat16 (the upper half of an IEEE f32) to and from float: the one conversion the
 * checkpoint loader, the model configuration and the Java reference kernels all use, so that
 * they round alike. f16 needs no helper: {@link Float#float16ToFloat} and
 * {@link Float#floatToFloat16} round to nearest even already.
 */
public final class Bf16 {
    private Bf16() {}

    /** bf16 bits to float: exact. */
    public static float toFloat(short bits) {
        return Float.intBitsToFloat((bits & 0xFFFF) << 16);
    }

    /**
     * float to bf16 bits, round to nearest even (carrying into the exponent, up to infinity, as
     * IEEE rounding does); a NaN stays a quiet NaN with its sign and top payload bits.
     */
    public static short fromFloat(float f) {
        int u = Float.floatToRawIntBits(f);
        if (Float.isNaN(f)) {
            return (short) ((u >>> 16) | 0x40);
        }
        return (short) ((u + 0x7FFF + ((u >>> 16) & 1)) >>> 16);
    }

    /** {@code f} rounded to the nearest bf16 value, as a float. */
    public static float round(float f) {
        return toFloat(fromFloat(f));
    }
}
