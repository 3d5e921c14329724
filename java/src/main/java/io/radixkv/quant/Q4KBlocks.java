package io.radixkv.quant;

/**
 * Q4_K super-blocks (ggml's {@code block_q4_K}): 256 values in 8 sub-blocks of 32, each with a
 * 6-bit scale and a 6-bit min, packed into 12 bytes: for sub-block j &lt; 4, scale =
 * {@code scales[j] & 63} and min = {@code scales[j+4] & 63}; for j ≥ 4, scale =
 * {@code (scales[j+4] & 15) | (scales[j-4] >> 6) << 4} and min =
 * {@code (scales[j+4] >> 4) | (scales[j] >> 6) << 4}. Value i of sub-block j is
 * {@code d·scale·q − dmin·min}; the 4-bit q of sub-blocks 2k and 2k+1 share the 32 bytes
 * {@code qs[32k, 32k+32)}, low nibble for 2k.
 */
final class Q4KBlocks {
    static final int QK = 256;
    private static final int D = 0;
    private static final int DMIN = 2;
    private static final int SCALES = 4;
    private static final int QS = 16;

    private Q4KBlocks() {}

    /** Sub-block {@code j}'s 6-bit scale and min from the 12 packed bytes at {@code ys + SCALES}. */
    static int scale(byte[] y, int ys, int j) {
        int s = ys + SCALES;
        return j < 4 ? y[s + j] & 63 : (y[s + j + 4] & 0x0F) | ((y[s + j - 4] & 0xFF) >> 6) << 4;
    }

    static int min(byte[] y, int ys, int j) {
        int s = ys + SCALES;
        return j < 4 ? y[s + j + 4] & 63 : ((y[s + j + 4] & 0xFF) >> 4) | ((y[s + j] & 0xFF) >> 6) << 4;
    }

    /**
     * ggml's quantize_row_q4_K_ref for one block: per sub-block an asymmetric fit (weights
     * {@code rms(sub-block) + |x|}, 21 scale trials from (nmax − 1)/(max − min)), the scales and
     * mins quantized to 6 bits against the largest of each (d = max scale / 63, dmin = max min /
     * 63 as f16), then every value re-quantized against its sub-block's rounded scale and min.
     */
    static void quantize(float[] x, int xs, byte[] y, int ys) {
        byte[] levels = new byte[QK];
        float[] w = new float[32];
        float[] scales = new float[8];
        float[] mins = new float[8];
        float[] theMin = new float[1];
        float maxScale = 0;
        float maxMin = 0;
        for (int j = 0; j < 8; j++) {
            int s = xs + 32 * j;
            float sumX2 = 0;
            for (int l = 0; l < 32; l++) {
                sumX2 += x[s + l] * x[s + l];
            }
            float avX = (float) Math.sqrt(sumX2 / 32);
            for (int l = 0; l < 32; l++) {
                w[l] = avX + Math.abs(x[s + l]);
            }
            scales[j] = KQuantSearch.fitAsymmetric(32, 15, x, s, w, levels, 32 * j, theMin, -1f, 0.1f, 20);
            mins[j] = theMin[0];
            if (scales[j] > maxScale) {
                maxScale = scales[j];
            }
            if (mins[j] > maxMin) {
                maxMin = mins[j];
            }
        }
        float invScale = maxScale > 0 ? 63f / maxScale : 0f;
        float invMin = maxMin > 0 ? 63f / maxMin : 0f;
        int sc = ys + SCALES;
        for (int j = 0; j < 8; j++) {
            int ls = Math.min(63, KQuantSearch.nearestInt(invScale * scales[j]) & 0xFF);
            int lm = Math.min(63, KQuantSearch.nearestInt(invMin * mins[j]) & 0xFF);
            if (j < 4) {
                y[sc + j] = (byte) ls;
                y[sc + j + 4] = (byte) lm;
            } else {
                y[sc + j + 4] = (byte) ((ls & 0x0F) | (lm & 0x0F) << 4);
                y[sc + j - 4] |= (byte) ((ls >> 4) << 6);
                y[sc + j] |= (byte) ((lm >> 4) << 6);
            }
        }
        BlockFormat.putHalf(y, ys + D, maxScale / 63f);
        BlockFormat.putHalf(y, ys + DMIN, maxMin / 63f);
        float d = BlockFormat.getHalf(y, ys + D);
        float dmin = BlockFormat.getHalf(y, ys + DMIN);
        for (int j = 0; j < 8; j++) {
            float dj = d * scale(y, ys, j);
            if (dj == 0f) {
                continue; // the fit's levels stay
            }
            float mj = dmin * min(y, ys, j);
            for (int i = 0; i < 32; i++) {
                int l = KQuantSearch.nearestInt((x[xs + 32 * j + i] + mj) / dj);
                levels[32 * j + i] = (byte) KQuantSearch.clamp(l, 0, 15);
            }
        }
        for (int k = 0; k < 4; k++) {
            for (int l = 0; l < 32; l++) {
                y[ys + QS + 32 * k + l] = (byte) (levels[64 * k + l] | levels[64 * k + 32 + l] << 4);
            }
        }
    }

    static void dequantize(byte[] y, int ys, float[] x, int xs) {
        float d = BlockFormat.getHalf(y, ys + D);
        float dmin = BlockFormat.getHalf(y, ys + DMIN);
        for (int k = 0; k < 4; k++) {
            float d1 = d * scale(y, ys, 2 * k);
            float m1 = dmin * min(y, ys, 2 * k);
            float d2 = d * scale(y, ys, 2 * k + 1);
            float m2 = dmin * min(y, ys, 2 * k + 1);
            for (int l = 0; l < 32; l++) {
                int q = y[ys + QS + 32 * k + l] & 0xFF;
                x[xs + 64 * k + l] = d1 * (q & 0x0F) - m1;
                x[xs + 64 * k + 32 + l] = d2 * (q >> 4) - m2;
            }
        }
    }
}
