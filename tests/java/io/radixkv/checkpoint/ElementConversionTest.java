package io.radixkv.checkpoint;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.radixkv.kernels.JavaDenseKernels;
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

    @Test
    void floatToBf16RoundsToNearestEven() {
        SplittableRandom r = new SplittableRandom(3);
        for (int i = 0; i < 200_000; i++) {
            float f = Float.intBitsToFloat(r.nextInt());
            if (Float.isNaN(f) || Float.isInfinite(f) || Math.abs(f) > 3.38e38f) {
                continue;
            }
            float got = ElementConversion.bf16ToFloat(ElementConversion.floatToBf16(f));
            assertEquals(nearestBf16(f), got, "bits " + Integer.toHexString(Float.floatToRawIntBits(f)));
            assertEquals(JavaDenseKernels.floatToBf16(f), ElementConversion.floatToBf16(f));
        }
        assertEquals(Float.POSITIVE_INFINITY, ElementConversion.bf16ToFloat(ElementConversion.floatToBf16(Float.MAX_VALUE)));
        assertEquals(Float.NEGATIVE_INFINITY, ElementConversion.bf16ToFloat(ElementConversion.floatToBf16(
                Float.NEGATIVE_INFINITY)));
        assertTrue(Float.isNaN(ElementConversion.bf16ToFloat(ElementConversion.floatToBf16(
                Float.intBitsToFloat(0x7F800001)))), "a NaN with a low payload stays NaN");
        assertEquals(-0f, ElementConversion.bf16ToFloat(ElementConversion.floatToBf16(-0f)));
    }
}
