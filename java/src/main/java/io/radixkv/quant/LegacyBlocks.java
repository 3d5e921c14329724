package io.radixkv.quant;

/**
 * Q8_0, Q4_0 and Q5_0: blocks of 32 values with one f16 scale (ggml's {@code block_q8_0},
 * {@code block_q4_0}, {@code block_q5_0}).
 */
final class LegacyBlocks {
    static final int QK = 32;

    private LegacyBlocks() {}

    /** d = max|x| / 127, q = round(x / d) (half away from zero, as C's roundf). */
    static void quantizeQ8_0(float[] x, int xs, byte[] y, int ys) {
        float amax = 0f;
        for (int j = 0; j < QK; j++) {
            amax = Math.max(amax, Math.abs(x[xs + j]));
        }
        float d = amax / 127f;
        float id = d != 0f ? 1f / d : 0f;
        BlockFormat.putHalf(y, ys, d);
        for (int j = 0; j < QK; j++) {
            y[ys + 2 + j] = (byte) roundAwayClamped(x[xs + j] * id, 127);
        }
    }

    static void dequantizeQ8_0(byte[] y, int ys, float[] x, int xs) {
        float d = BlockFormat.getHalf(y, ys);
        for (int j = 0; j < QK; j++) {
            x[xs + j] = y[ys + 2 + j] * d;
        }
    }

    /**
     * d = m / −8 where m is the value of largest magnitude (the first such), q = min(15,
     * trunc(x / d + 8.5)); value j goes to the low nibble of byte j, value j + 16 to its high nibble.
     */
    static void quantizeQ4_0(float[] x, int xs, byte[] y, int ys) {
        float d = largestMagnitude(x, xs) / -8f;
        float id = d != 0f ? 1f / d : 0f;
        BlockFormat.putHalf(y, ys, d);
        for (int j = 0; j < QK / 2; j++) {
            int lo = Math.min(15, (int) (x[xs + j] * id + 8.5f));
            int hi = Math.min(15, (int) (x[xs + QK / 2 + j] * id + 8.5f));
            y[ys + 2 + j] = (byte) (lo | hi << 4);
        }
    }

    static void dequantizeQ4_0(byte[] y, int ys, float[] x, int xs) {
        float d = BlockFormat.getHalf(y, ys);
        for (int j = 0; j < QK / 2; j++) {
            int b = y[ys + 2 + j] & 0xFF;
            x[xs + j] = ((b & 0x0F) - 8) * d;
            x[xs + QK / 2 + j] = ((b >> 4) - 8) * d;
        }
    }

    /**
     * As Q4_0 with 5 bits: d = m / −16, q = min(31, trunc(x / d + 16.5)); the low 4 bits packed as
     * Q4_0's nibbles (after the 4 {@code qh} bytes), bit 4 of value j in bit j of {@code qh}.
     */
    static void quantizeQ5_0(float[] x, int xs, byte[] y, int ys) {
        float d = largestMagnitude(x, xs) / -16f;
        float id = d != 0f ? 1f / d : 0f;
        BlockFormat.putHalf(y, ys, d);
        int qh = 0;
        for (int j = 0; j < QK / 2; j++) {
            int lo = Math.min(31, (int) (x[xs + j] * id + 16.5f));
            int hi = Math.min(31, (int) (x[xs + QK / 2 + j] * id + 16.5f));
            y[ys + 6 + j] = (byte) ((lo & 0x0F) | (hi & 0x0F) << 4);
            qh |= ((lo & 0x10) >> 4) << j;
            qh |= ((hi & 0x10) >> 4) << (j + QK / 2);
        }
        for (int b = 0; b < 4; b++) {
            y[ys + 2 + b] = (byte) (qh >>> (8 * b));
        }
    }

    static void dequantizeQ5_0(byte[] y, int ys, float[] x, int xs) {
        float d = BlockFormat.getHalf(y, ys);
        int qh = (y[ys + 2] & 0xFF) | (y[ys + 3] & 0xFF) << 8 | (y[ys + 4] & 0xFF) << 16 | (y[ys + 5] & 0xFF) << 24;
        for (int j = 0; j < QK / 2; j++) {
            int b = y[ys + 6 + j] & 0xFF;
            int lo = (b & 0x0F) | ((qh >>> j) & 1) << 4;
            int hi = (b >> 4) | ((qh >>> (j + QK / 2)) & 1) << 4;
            x[xs + j] = (lo - 16) * d;
            x[xs + QK / 2 + j] = (hi - 16) * d;
        }
    }

    /** The block's value of largest magnitude, the first of equals (0 for an all-zero block). */
    private static float largestMagnitude(float[] x, int xs) {
        float amax = 0f;
        float max = 0f;
        for (int j = 0; j < QK; j++) {
            float v = x[xs + j];
            if (amax < Math.abs(v)) {
                amax = Math.abs(v);
                max = v;
            }
        }
        return max;
    }

    /**
     * C's roundf (half away from zero), clamped to ±{@code limit}: the clamp only matters when
     * the block's scale underflows so far that 1/d overflows, where ggml's conversion is undefined.
     */
    static int roundAwayClamped(float v, int limit) {
        double r = Math.copySign(Math.floor(Math.abs((double) v) + 0.5), v);
        return (int) Math.max(-limit, Math.min(limit, r));
    }
}
