package io.radixkv.quant;

/**
 * Q6_K super-blocks (ggml's {@code block_q6_K}): 256 values in 16 sub-blocks of 16, each with
 * an 8-bit signed scale, and one f16 {@code d} at the end. Value i is
 * {@code d·scales[i/16]·(q − 32)} with the 6-bit q split into a low nibble in {@code ql} and two
 * high bits in {@code qh}: within each half of 128 values (ql 64 bytes, qh 32 bytes), for
 * l &lt; 32, values l, l+32, l+64, l+96 take the low nibbles of ql[l], ql[l+32] and the high
 * nibbles of ql[l], ql[l+32], and bits 0-1, 2-3, 4-5, 6-7 of qh[l].
 */
final class Q6KBlocks {
    static final int QK = 256;
    private static final int QL = 0;
    private static final int QH = 128;
    private static final int SCALES = 192;
    private static final int D = 208;

    private Q6KBlocks() {}

    /**
     * ggml's quantize_row_q6_K_ref for one block: a symmetric fit per sub-block
     * ({@link KQuantSearch#fitSymmetric}, nmax 32), the scales quantized to int8 against the
     * one of largest magnitude (d = −max/128 as f16), then every value re-quantized against its
     * sub-block's rounded scale. A block whose scales are all below 1e-15 is all zero.
     */
    static void quantize(float[] x, int xs, byte[] y, int ys) {
        byte[] levels = new byte[QK];
        float[] scales = new float[16];
        float maxScale = 0;
        float maxAbsScale = 0;
        for (int ib = 0; ib < 16; ib++) {
            float s = KQuantSearch.fitSymmetric(16, 32, x, xs + 16 * ib, levels, 16 * ib);
            scales[ib] = s;
            if (Math.abs(s) > maxAbsScale) {
                maxAbsScale = Math.abs(s);
                maxScale = s;
            }
        }
        if (maxAbsScale < KQuantSearch.GROUP_MAX_EPS) {
            java.util.Arrays.fill(y, ys, ys + 210, (byte) 0);
            return;
        }
        float iscale = -128f / maxScale;
        BlockFormat.putHalf(y, ys + D, 1 / iscale);
        for (int ib = 0; ib < 16; ib++) {
            y[ys + SCALES + ib] = (byte) Math.min(127, KQuantSearch.nearestInt(iscale * scales[ib]));
        }
        float d = BlockFormat.getHalf(y, ys + D);
        for (int j = 0; j < 16; j++) {
            float dj = d * y[ys + SCALES + j];
            if (dj == 0f) {
                continue; // the fit's levels stay
            }
            for (int i = 0; i < 16; i++) {
                int l = KQuantSearch.nearestInt(x[xs + 16 * j + i] / dj);
                levels[16 * j + i] = (byte) (KQuantSearch.clamp(l, -32, 31) + 32);
            }
        }
        for (int half = 0; half < 2; half++) {
            int l0 = 128 * half;
            int ql = ys + QL + 64 * half;
            int qh = ys + QH + 32 * half;
            for (int l = 0; l < 32; l++) {
                int a = levels[l0 + l];
                int b = levels[l0 + l + 32];
                int c = levels[l0 + l + 64];
                int e = levels[l0 + l + 96];
                y[ql + l] = (byte) ((a & 0x0F) | (c & 0x0F) << 4);
                y[ql + l + 32] = (byte) ((b & 0x0F) | (e & 0x0F) << 4);
                y[qh + l] = (byte) ((a >> 4) | (b >> 4) << 2 | (c >> 4) << 4 | (e >> 4) << 6);
            }
        }
    }

    static void dequantize(byte[] y, int ys, float[] x, int xs) {
        float d = BlockFormat.getHalf(y, ys + D);
        for (int half = 0; half < 2; half++) {
            int ql = ys + QL + 64 * half;
            int qh = ys + QH + 32 * half;
            int sc = ys + SCALES + 8 * half;
            int out = xs + 128 * half;
            for (int l = 0; l < 32; l++) {
                int is = l / 16;
                int h = y[qh + l] & 0xFF;
                int q1 = ((y[ql + l] & 0x0F) | (h & 3) << 4) - 32;
                int q2 = ((y[ql + l + 32] & 0x0F) | ((h >> 2) & 3) << 4) - 32;
                int q3 = (((y[ql + l] & 0xFF) >> 4) | ((h >> 4) & 3) << 4) - 32;
                int q4 = (((y[ql + l + 32] & 0xFF) >> 4) | ((h >> 6) & 3) << 4) - 32;
                x[out + l] = d * y[sc + is] * q1;
                x[out + l + 32] = d * y[sc + is + 2] * q2;
                x[out + l + 64] = d * y[sc + is + 4] * q3;
                x[out + l + 96] = d * y[sc + is + 6] * q4;
            }
        }
    }
}
