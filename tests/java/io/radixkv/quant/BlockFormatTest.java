package io.radixkv.quant;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.radixkv.checkpoint.gguf.GgmlType;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.Function;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.api.Test;

/**
 * The block codecs against {@link GgmlQuantReference} (a separate implementation of ggml's
 * reference quantizers from the format description): the same bytes for random rows, rows with
 * zeros, and rows of huge and tiny values; the same dequantized floats; dequantize(quantize(x))
 * within each format's error bound; NaN and infinity refused.
 */
class BlockFormatTest {
    private static final int ROW = 1024; // four k-quant super-blocks, 32 legacy blocks

    private static byte[] reference(BlockFormat f, float[] x) {
        return switch (f) {
            case Q8_0 -> GgmlQuantReference.q8_0(x);
            case Q4_0 -> GgmlQuantReference.q4_0(x);
            case Q5_0 -> GgmlQuantReference.q5_0(x);
            case Q4_K -> GgmlQuantReference.q4_K(x);
            case Q6_K -> GgmlQuantReference.q6_K(x);
        };
    }

    private static float[] referenceDequant(BlockFormat f, byte[] y) {
        Function<byte[], float[]> d = switch (f) {
            case Q8_0 -> GgmlQuantReference::deq8_0;
            case Q4_0 -> GgmlQuantReference::deq4_0;
            case Q5_0 -> GgmlQuantReference::deq5_0;
            case Q4_K -> GgmlQuantReference::deq4_K;
            case Q6_K -> GgmlQuantReference::deq6_K;
        };
        return d.apply(y);
    }

    /** Named rows: gaussian at several scales, zeros, huge, tiny, outliers, constant, mixed signs. */
    static List<Object[]> rows() {
        SplittableRandom r = new SplittableRandom(42);
        List<Object[]> out = new ArrayList<>();
        for (double scale : new double[] {1, 0.02, 300}) {
            float[] x = new float[ROW];
            for (int i = 0; i < ROW; i++) {
                x[i] = (float) (gaussian(r) * scale);
            }
            out.add(new Object[] {"gaussian x" + scale, x});
        }
        out.add(new Object[] {"zeros", new float[ROW]});
        float[] someZero = new float[ROW];
        for (int i = 0; i < ROW; i++) {
            someZero[i] = (i / 32) % 3 == 0 || i % 5 == 0 ? 0f : (float) gaussian(r);
        }
        out.add(new Object[] {"zero blocks and zeros", someZero});
        float[] huge = new float[ROW];
        float[] tiny = new float[ROW];
        float[] subnormalScale = new float[ROW];
        for (int i = 0; i < ROW; i++) {
            huge[i] = (float) (gaussian(r) * 2e4); // block scales still within f16's range
            tiny[i] = (float) (gaussian(r) * 1e-6);
            subnormalScale[i] = (float) (gaussian(r) * 1e-30);
        }
        out.add(new Object[] {"huge", huge});
        out.add(new Object[] {"tiny", tiny});
        out.add(new Object[] {"below f16 scales", subnormalScale});
        float[] outliers = new float[ROW];
        for (int i = 0; i < ROW; i++) {
            outliers[i] = (float) gaussian(r) * (i % 97 == 0 ? 50f : 0.1f);
        }
        out.add(new Object[] {"outliers", outliers});
        float[] positive = new float[ROW];
        float[] constant = new float[ROW];
        for (int i = 0; i < ROW; i++) {
            positive[i] = (float) (1 + r.nextDouble());
            constant[i] = -0.75f;
        }
        out.add(new Object[] {"positive", positive});
        out.add(new Object[] {"constant", constant});
        return out;
    }

    private static double gaussian(SplittableRandom r) {
        return Math.sqrt(-2 * Math.log(1 - r.nextDouble())) * Math.cos(2 * Math.PI * r.nextDouble());
    }

    private static byte[] quantize(BlockFormat f, float[] x) {
        byte[] y = new byte[(int) f.rowBytes(x.length)];
        f.quantize(x, 0, x.length, y, 0);
        return y;
    }

    @ParameterizedTest
    @EnumSource(BlockFormat.class)
    void quantizedBytesAndDequantizedValuesEqualTheReference(BlockFormat f) {
        for (Object[] row : rows()) {
            float[] x = (float[]) row[1];
            byte[] y = quantize(f, x);
            assertArrayEquals(reference(f, x), y, f + " " + row[0] + ": bytes differ from ggml's reference");
            float[] back = new float[x.length];
            f.dequantize(y, 0, back, 0, x.length);
            assertArrayEquals(referenceDequant(f, y), back, f + " " + row[0] + ": dequantized values differ");
        }
    }

    /**
     * Error bounds by block (m = largest |x| of the block, R = max − min of the super-block):
     * Q8_0 half a step of m/127; Q4_0 one step of m/8 (the side opposite the extreme saturates at
     * 7 steps); Q4_K one step of R/15; Q6_K one step of m/32; each plus the f16 rounding of the
     * scale, relative (m·1e-3) and absolute where the scale is an f16 subnormal (half of 2^-24 times
     * the largest level times the largest sub-scale).
     */
    @ParameterizedTest
    @EnumSource(BlockFormat.class)
    void roundTripsStayWithinTheFormatsBound(BlockFormat f) {
        for (Object[] row : rows()) {
            float[] x = (float[]) row[1];
            if (row[0].equals("below f16 scales")) {
                continue; // the scale rounds to zero in f16: every value decodes as 0
            }
            byte[] y = quantize(f, x);
            float[] back = new float[x.length];
            f.dequantize(y, 0, back, 0, x.length);
            int n = f.blockElements();
            for (int b = 0; b < x.length / n; b++) {
                double amax = 0;
                double lo = 0;
                double hi = 0;
                for (int i = b * n; i < (b + 1) * n; i++) {
                    amax = Math.max(amax, Math.abs(x[i]));
                    lo = Math.min(lo, x[i]);
                    hi = Math.max(hi, x[i]);
                }
                double bound = switch (f) {
                    case Q8_0 -> amax / 127 * 0.5 * 1.01;
                    case Q4_0 -> amax / 8 * 1.01;
                    case Q5_0 -> amax / 16 * 1.01;
                    case Q4_K -> (hi - lo) / 15 * 1.05;
                    case Q6_K -> amax / 32 * 1.05;
                } + amax * 1e-3 + switch (f) {
                    case Q8_0 -> 127;
                    case Q4_0 -> 8;
                    case Q5_0 -> 16;
                    case Q4_K -> 16 * 63;
                    case Q6_K -> 32 * 128;
                } * 0x1p-25;
                for (int i = b * n; i < (b + 1) * n; i++) {
                    double err = Math.abs(back[i] - x[i]);
                    assertTrue(err <= bound, f + " " + row[0] + " value " + i + ": " + x[i] + " -> " + back[i]
                            + " (error " + err + " > bound " + bound + ")");
                }
            }
        }
    }

    @ParameterizedTest
    @EnumSource(BlockFormat.class)
    void nanAndInfinityAreRefusedNamingTheValue(BlockFormat f) {
        for (float bad : new float[] {Float.NaN, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY}) {
            float[] x = new float[ROW];
            x[300] = bad;
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> quantize(f, x));
            assertTrue(e.getMessage().startsWith("value 300 is " + bad), e.getMessage());
        }
    }

    @ParameterizedTest
    @EnumSource(BlockFormat.class)
    void rowsMustBeWholeBlocksAndGeometryMatchesGgml(BlockFormat f) {
        assertThrows(IllegalArgumentException.class, () -> f.rowBytes(f.blockElements() + 1));
        GgmlType t = GgmlType.valueOf(f.name());
        assertEquals(t.blockElements(), f.blockElements());
        assertEquals(t.blockBytes(), f.blockBytes());
    }

    /** One Q8_0 and one Q4_0 block worked out by hand from the formulas. */
    @Test
    void handWorkedBlocks() {
        float[] x = new float[32];
        for (int i = 0; i < 32; i++) {
            x[i] = i - 16; // amax 16 at i = 0 (value -16)
        }
        byte[] q8 = quantize(BlockFormat.Q8_0, x);
        assertEquals(Float.floatToFloat16(16f / 127), (short) ((q8[0] & 0xFF) | q8[1] << 8));
        assertEquals(-127, q8[2]); // -16 / (16/127)
        assertEquals(8, q8[2 + 17]); // 1 * 127/16 = 7.94 -> 8
        byte[] q4 = quantize(BlockFormat.Q4_0, x);
        assertEquals(Float.floatToFloat16(2f), (short) ((q4[0] & 0xFF) | q4[1] << 8)); // d = -16 / -8
        // value 0 (-16): -8 + 8.5 -> 0; value 16 (0): 8; high nibble of byte 0 holds value 16
        assertEquals(0x80, q4[2] & 0xFF);
        // value 31 (15): 7.5 + 8.5 = 16 -> 15 (saturated); value 15 (-1): 8 in the low nibble of byte 15
        assertEquals(0xF8, q4[2 + 15] & 0xFF);
        float[] back = new float[32];
        BlockFormat.Q4_0.dequantize(q4, 0, back, 0, 32);
        assertEquals(14f, back[31]);
        assertEquals(-16f, back[0]);
        for (int i = 0; i < 31; i += 2) {
            assertEquals(x[i], back[i], "even values are multiples of d = 2: exact"); // odd ones truncate up
        }
    }
}
