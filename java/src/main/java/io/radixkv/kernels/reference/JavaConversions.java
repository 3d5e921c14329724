package io.radixkv.kernels.reference;

import io.radixkv.kernels.Bf16;
import io.radixkv.kernels.DType;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Plain-Java element conversions: the independent reference the native kernels are tested
 * against. Deliberately written differently from the native bit tricks: f16 goes through the
 * JDK's {@link Float#floatToFloat16}, FP8 encoding searches the table of representable values
 * and picks the nearest in exact double arithmetic, FP8 decoding uses {@link Math#scalb}.
 *
 * <p>Semantics (radixkv.h): round to nearest even; FP8 saturates to the largest finite value
 * (infinities too) and maps every NaN to the canonical code 0x7F; f16/bf16 keep NaN as a
 * quiet NaN with the top payload bits. Same-dtype conversion copies the bits.
 */
public final class JavaConversions {
    private JavaConversions() {}

    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED;
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED;
    private static final ValueLayout.OfByte I8 = ValueLayout.JAVA_BYTE;

    /** Positive finite values of each FP8 format, indexed by code (0 .. max code). */
    private static final double[] E4M3_VALUES = positiveValues(DType.FP8_E4M3);
    private static final double[] E5M2_VALUES = positiveValues(DType.FP8_E5M2);

    private static double[] positiveValues(DType d) {
        int maxCode = d == DType.FP8_E4M3 ? 0x7E : 0x7B;
        double[] v = new double[maxCode + 1];
        for (int c = 0; c <= maxCode; c++) {
            v[c] = fp8ToFloat(c, d);
        }
        return v;
    }

    // ---- f16 ----

    static float f16ToFloat(short h) {
        int bits = h & 0xFFFF;
        if ((bits & 0x7C00) == 0x7C00 && (bits & 0x3FF) != 0) {
            // NaN: keep the payload and its signalling bit as they are (no quieting)
            return Float.intBitsToFloat(((bits & 0x8000) << 16) | 0x7F800000 | ((bits & 0x3FF) << 13));
        }
        return Float.float16ToFloat(h);
    }

    static short floatToF16(float f) {
        int u = Float.floatToRawIntBits(f);
        if (Float.isNaN(f)) {
            return (short) (((u >>> 16) & 0x8000) | 0x7E00 | ((u >>> 13) & 0x3FF));
        }
        return Float.floatToFloat16(f);
    }

    // ---- bf16 ----

    // ---- fp8 ----

    /** Exact value of an FP8 code (e4m3: no infinities, S.1111.111 is NaN). */
    public static float fp8ToFloat(int code, DType d) {
        int c = code & 0xFF;
        boolean neg = (c & 0x80) != 0;
        int mbits = d == DType.FP8_E4M3 ? 3 : 2;
        int bias = d == DType.FP8_E4M3 ? 7 : 15;
        int exp = (c & 0x7F) >>> mbits;
        int man = c & ((1 << mbits) - 1);
        int sign = neg ? 0x80000000 : 0;
        if (d == DType.FP8_E4M3 && exp == 15 && man == 7) {
            return Float.intBitsToFloat(sign | 0x7FC00000);
        }
        if (d == DType.FP8_E5M2 && exp == 31) {
            return Float.intBitsToFloat(sign | 0x7F800000 | (man << 21)); // inf, or NaN keeping the payload
        }
        double mag = exp == 0
                ? Math.scalb((double) man, 1 - bias - mbits)
                : Math.scalb(1.0 + man / (double) (1 << mbits), exp - bias);
        return (float) (neg ? -mag : mag);
    }

    /** Nearest FP8 code, ties to the even code, saturating; NaN -> 0x7F. */
    public static byte floatToFp8(float f, DType d) {
        if (Float.isNaN(f)) {
            return 0x7F;
        }
        double[] values = d == DType.FP8_E4M3 ? E4M3_VALUES : E5M2_VALUES;
        int sign = (Float.floatToRawIntBits(f) < 0) ? 0x80 : 0;
        double a = Math.abs((double) f);
        int max = values.length - 1;
        if (a >= values[max]) {
            return (byte) (sign | max); // SATFINITE: overflow and infinity clamp to the largest finite value
        }
        // largest code with value <= a (values are increasing with the code)
        int lo = 0;
        int hi = max;
        while (lo < hi) {
            int mid = (lo + hi + 1) >>> 1;
            if (values[mid] <= a) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        int code = lo;
        if (values[lo] != a) {
            double below = a - values[lo]; // exact: both are doubles with few significant bits
            double above = values[lo + 1] - a;
            if (above < below || (above == below && (lo & 1) == 1)) {
                code = lo + 1;
            }
        }
        return (byte) (sign | code);
    }

    // ---- element access ----

    public static float load(MemorySegment seg, long i, DType d) {
        return switch (d) {
            case F32 -> Float.intBitsToFloat(seg.getAtIndex(I32, i));
            case F16 -> f16ToFloat(seg.getAtIndex(I16, i));
            case BF16 -> Bf16.toFloat(seg.getAtIndex(I16, i));
            case FP8_E4M3, FP8_E5M2 -> fp8ToFloat(seg.get(I8, i), d);
        };
    }

    public static void store(MemorySegment seg, long i, DType d, float v) {
        switch (d) {
            case F32 -> seg.setAtIndex(I32, i, Float.floatToRawIntBits(v));
            case F16 -> seg.setAtIndex(I16, i, floatToF16(v));
            case BF16 -> seg.setAtIndex(I16, i, Bf16.fromFloat(v));
            case FP8_E4M3, FP8_E5M2 -> seg.set(I8, i, floatToFp8(v, d));
        }
    }

    /**
     * dst[j] = src[i] converted, with the FP8 scale rule of radixkv.h: divided by scale when
     * only dst is FP8, multiplied when only src is FP8; same dtype copies the bits.
     */
    public static void convertElement(MemorySegment src, DType sd, long i, MemorySegment dst, DType dd, long j, float scale) {
        if (sd == dd) {
            long b = sd.bytes();
            MemorySegment.copy(src, i * b, dst, j * b, b);
            return;
        }
        float x = load(src, i, sd);
        if (sd.isFp8() && !dd.isFp8()) {
            x = x * scale;
        } else if (dd.isFp8() && !sd.isFp8()) {
            x = x / scale;
        }
        store(dst, j, dd, x);
    }
}
