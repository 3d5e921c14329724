package io.radixkv.checkpoint;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.radixkv.kernels.Bf16;
import io.radixkv.kernels.DType;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class ElementConversionTest {
    /** Rounds through exact arithmetic: the nearest bf16 value, ties to the even mantissa. */
    private static float nearestBf16(float f) {
        int u = Float.floatToRawIntBits(f);
        float down = Float.intBitsToFloat(u & 0xFFFF0000);
        float up = Float.intBitsToFloat((u & 0xFFFF0000) + 0x10000);
        double dDown = Math.abs((double) f - down);
        double dUp = Math.abs((double) up - f);
        if (dDown != dUp) {
            return dDown < dUp ? down : up;
        }
        return ((Float.floatToRawIntBits(down) >>> 16) & 1) == 0 ? down : up;
    }

    /** Bulk conversion between every pair equals element-wise rounding, across block boundaries and at an offset. */
    @Test
    void bulkConversionMatchesElementwise() {
        int n = (1 << 14) * 2 + 5;
        SplittableRandom r = new SplittableRandom(4);
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = (float) (r.nextGaussian() * Math.pow(10, r.nextInt(-6, 6)));
        }
        v[0] = Float.NaN;
        v[1] = Float.NEGATIVE_INFINITY;
        v[2] = 1e6f; // f16 overflow
        v[3] = -0f;
        DType[] types = {DType.F32, DType.BF16, DType.F16};
        try (Arena a = Arena.ofConfined()) {
            for (DType from : types) {
                MemorySegment src = a.allocate((long) n * from.bytes());
                for (int i = 0; i < n; i++) {
                    ElementConversion.store(src, i, from, v[i]);
                }
                for (DType to : types) {
                    MemorySegment dst = a.allocate((long) (n + 3) * to.bytes());
                    ElementConversion.convert(src, from, dst, to, 3, n);
                    for (int i = 0; i < n; i++) {
                        float want = ElementConversion.load(src, i, from);
                        MemorySegment one = a.allocate(to.bytes());
                        ElementConversion.store(one, 0, to, want);
                        float expected = ElementConversion.load(one, 0, to);
                        float got = ElementConversion.load(dst, 3 + i, to);
                        if (Float.floatToIntBits(expected) != Float.floatToIntBits(got)) {
                            throw new AssertionError(from + "->" + to + " [" + i + "] " + v[i] + ": " + got + " != "
                                    + expected);
                        }
                    }
                }
            }
        }
    }

    @Test
    void floatToBf16RoundsToNearestEven() {
        SplittableRandom r = new SplittableRandom(3);
        for (int i = 0; i < 200_000; i++) {
            float f = Float.intBitsToFloat(r.nextInt());
            if (Float.isNaN(f) || Float.isInfinite(f) || Math.abs(f) > 3.38e38f) {
                continue;
            }
            float got = Bf16.round((f));
            assertEquals(nearestBf16(f), got, "bits " + Integer.toHexString(Float.floatToRawIntBits(f)));
            assertEquals(Bf16.fromFloat(f), Bf16.fromFloat(f));
        }
        assertEquals(Float.POSITIVE_INFINITY, Bf16.round((Float.MAX_VALUE)));
        assertEquals(Float.NEGATIVE_INFINITY, Bf16.round((
                Float.NEGATIVE_INFINITY)));
        assertTrue(Float.isNaN(Bf16.round((
                Float.intBitsToFloat(0x7F800001)))), "a NaN with a low payload stays NaN");
        assertEquals(-0f, Bf16.round((-0f)));
    }
}
