package io.radixkv.quant;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * A second implementation of ggml's reference quantizers and dequantizers, written for the tests
 * from the format description: each block is first computed as plain values (scale bits, level
 * per value) and then packed value by value from the layout's addressing rule, rounding is done
 * by other means (BigDecimal half-away for roundf, {@link Math#rint} for nearest_int), and the
 * scale searches are written as loops over candidate scales. The float operations of the
 * searches follow ggml's order, since bit-equality depends on it.
 */
public final class GgmlQuantReference {
    private GgmlQuantReference() {}

    static int nearest(float v) {
        return (int) Math.rint(v);
    }

    static int clamp(int v, int lo, int hi) {
        return v < lo ? lo : v > hi ? hi : v;
    }

    static float fp16(float v) {
        return Float.float16ToFloat(Float.floatToFloat16(v));
    }

    private static ByteBuffer le(byte[] b) {
        return ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
    }

    // ---- Q8_0: {f16 d; i8 qs[32]}

    public static byte[] q8_0(float[] x) {
        byte[] out = new byte[x.length / 32 * 34];
        ByteBuffer b = le(out);
        for (int blk = 0; blk < x.length / 32; blk++) {
            float amax = 0;
            for (int i = 0; i < 32; i++) {
                amax = Math.max(amax, Math.abs(x[32 * blk + i]));
            }
            float d = amax / 127;
            float id = d == 0 ? 0 : 1 / d;
            b.putShort(Float.floatToFloat16(d));
            for (int i = 0; i < 32; i++) {
                float v = x[32 * blk + i] * id;
                int q = new BigDecimal(v).setScale(0, RoundingMode.HALF_UP).intValueExact();
                b.put((byte) q);
            }
        }
        return out;
    }

    public static float[] deq8_0(byte[] y) {
        float[] x = new float[y.length / 34 * 32];
        ByteBuffer b = le(y);
        for (int blk = 0; blk < x.length / 32; blk++) {
            float d = Float.float16ToFloat(b.getShort(34 * blk));
            for (int i = 0; i < 32; i++) {
                x[32 * blk + i] = y[34 * blk + 2 + i] * d;
            }
        }
        return x;
    }

    /** The first value of largest magnitude among the 32 from {@code off}. */
    private static float extreme(float[] x, int off) {
        float max = 0;
        for (int i = 0; i < 32; i++) {
            if (Math.abs(x[off + i]) > Math.abs(max)) {
                max = x[off + i];
            }
        }
        return max;
    }

    // ---- Q4_0: {f16 d; u8 qs[16]}, value i in byte i % 16, high nibble for i >= 16

    public static byte[] q4_0(float[] x) {
        byte[] out = new byte[x.length / 32 * 18];
        for (int blk = 0; blk < x.length / 32; blk++) {
            float d = extreme(x, 32 * blk) / -8;
            float id = d == 0 ? 0 : 1 / d;
            le(out).putShort(18 * blk, Float.floatToFloat16(d));
            for (int i = 0; i < 32; i++) {
                float t = x[32 * blk + i] * id + 8.5f;
                int q = Math.min(15, (int) t);
                out[18 * blk + 2 + i % 16] |= (byte) (i < 16 ? q : q << 4);
            }
        }
        return out;
    }

    public static float[] deq4_0(byte[] y) {
        float[] x = new float[y.length / 18 * 32];
        for (int blk = 0; blk < x.length / 32; blk++) {
            float d = Float.float16ToFloat(le(y).getShort(18 * blk));
            for (int i = 0; i < 32; i++) {
                int byt = y[18 * blk + 2 + i % 16] & 0xFF;
                int q = i < 16 ? byt & 15 : byt >> 4;
                x[32 * blk + i] = (q - 8) * d;
            }
        }
        return x;
    }

    // ---- Q5_0: {f16 d; u8 qh[4]; u8 qs[16]}, low 4 bits as Q4_0, bit 4 of value i = bit i of qh (u32 LE)

    public static byte[] q5_0(float[] x) {
        byte[] out = new byte[x.length / 32 * 22];
        for (int blk = 0; blk < x.length / 32; blk++) {
            float d = extreme(x, 32 * blk) / -16;
            float id = d == 0 ? 0 : 1 / d;
            le(out).putShort(22 * blk, Float.floatToFloat16(d));
            long qh = 0;
            for (int i = 0; i < 32; i++) {
                int q = Math.min(31, (int) (x[32 * blk + i] * id + 16.5f));
                out[22 * blk + 6 + i % 16] |= (byte) (i < 16 ? q & 15 : (q & 15) << 4);
                qh |= (long) (q >> 4) << i;
            }
            le(out).putInt(22 * blk + 2, (int) qh);
        }
        return out;
    }

    public static float[] deq5_0(byte[] y) {
        float[] x = new float[y.length / 22 * 32];
        for (int blk = 0; blk < x.length / 32; blk++) {
            float d = Float.float16ToFloat(le(y).getShort(22 * blk));
            long qh = le(y).getInt(22 * blk + 2) & 0xFFFFFFFFL;
            for (int i = 0; i < 32; i++) {
                int byt = y[22 * blk + 6 + i % 16] & 0xFF;
                int q = (i < 16 ? byt & 15 : byt >> 4) | (int) ((qh >> i) & 1) << 4;
                x[32 * blk + i] = (q - 16) * d;
            }
        }
        return x;
    }

    // ---- Q4_K: {f16 d, dmin; u8 scales[12]; u8 qs[128]}

    /** Sub-block fit result. */
    private record Fit(float scale, float negMin, int[] levels) {}

    /** make_qkx2_quants(32, 15, ..., rmin -1, rdelta 0.1, nstep 20, squared error). */
    private static Fit fitQ4K(float[] x, int off, float[] w) {
        int n = 32;
        float lo = x[off];
        float hi = x[off];
        float sumW = w[0];
        float sumX = sumW * x[off];
        for (int i = 1; i < n; i++) {
            lo = x[off + i] < lo ? x[off + i] : lo;
            hi = x[off + i] > hi ? x[off + i] : hi;
            sumW += w[i];
            sumX += w[i] * x[off + i];
        }
        float min = lo > 0 ? 0 : lo;
        int[] best = new int[n];
        if (hi == min) {
            return new Fit(0f, -min, best);
        }
        float iscale = 15 / (hi - min);
        float scale = 1 / iscale;
        float bestErr = 0;
        for (int i = 0; i < n; i++) {
            best[i] = clamp(nearest(iscale * (x[off + i] - min)), 0, 15);
            float diff = scale * best[i] + min - x[off + i];
            bestErr += w[i] * (diff * diff);
        }
        for (int step = 0; step <= 20; step++) {
            float is = (-1f + 0.1f * step + 15) / (hi - min);
            int[] lv = new int[n];
            float sl = 0;
            float sl2 = 0;
            float sxl = 0;
            for (int i = 0; i < n; i++) {
                lv[i] = clamp(nearest(is * (x[off + i] - min)), 0, 15);
                sl += w[i] * lv[i];
                sl2 += w[i] * lv[i] * lv[i];
                sxl += w[i] * lv[i] * x[off + i];
            }
            float det = sumW * sl2 - sl * sl;
            if (!(det > 0)) {
                continue;
            }
            float s = (sumW * sxl - sumX * sl) / det;
            float m = (sl2 * sumX - sl * sxl) / det;
            if (m > 0) {
                m = 0;
                s = sxl / sl2;
            }
            float err = 0;
            for (int i = 0; i < n; i++) {
                float diff = s * lv[i] + m - x[off + i];
                err += w[i] * (diff * diff);
            }
            if (err < bestErr) {
                best = lv;
                bestErr = err;
                scale = s;
                min = m;
            }
        }
        return new Fit(scale, -min, best);
    }

    public static byte[] q4_K(float[] x) {
        byte[] out = new byte[x.length / 256 * 144];
        for (int sb = 0; sb < x.length / 256; sb++) {
            int base = 256 * sb;
            Fit[] fits = new Fit[8];
            float maxScale = 0;
            float maxMin = 0;
            for (int j = 0; j < 8; j++) {
                float sumSq = 0;
                for (int i = 0; i < 32; i++) {
                    sumSq += x[base + 32 * j + i] * x[base + 32 * j + i];
                }
                float rms = (float) Math.sqrt(sumSq / 32);
                float[] w = new float[32];
                for (int i = 0; i < 32; i++) {
                    w[i] = rms + Math.abs(x[base + 32 * j + i]);
                }
                fits[j] = fitQ4K(x, base + 32 * j, w);
                maxScale = fits[j].scale() > maxScale ? fits[j].scale() : maxScale;
                maxMin = fits[j].negMin() > maxMin ? fits[j].negMin() : maxMin;
            }
            float invS = maxScale > 0 ? 63 / maxScale : 0;
            float invM = maxMin > 0 ? 63 / maxMin : 0;
            int[] sc = new int[8];
            int[] mn = new int[8];
            for (int j = 0; j < 8; j++) {
                sc[j] = Math.min(63, nearest(invS * fits[j].scale()) & 0xFF);
                mn[j] = Math.min(63, nearest(invM * fits[j].negMin()) & 0xFF);
            }
            int o = 144 * sb;
            le(out).putShort(o, Float.floatToFloat16(maxScale / 63));
            le(out).putShort(o + 2, Float.floatToFloat16(maxMin / 63));
            byte[] packed = packScales(sc, mn);
            System.arraycopy(packed, 0, out, o + 4, 12);
            float d = fp16(maxScale / 63);
            float dmin = fp16(maxMin / 63);
            for (int j = 0; j < 8; j++) {
                float dj = d * sc[j];
                if (dj == 0) {
                    continue;
                }
                float mj = dmin * mn[j];
                for (int i = 0; i < 32; i++) {
                    fits[j].levels()[i] = clamp(nearest((x[base + 32 * j + i] + mj) / dj), 0, 15);
                }
            }
            for (int v = 0; v < 256; v++) {
                int q = fits[v / 32].levels()[v % 32];
                int pair = v / 64;
                int within = v % 64;
                out[o + 16 + 32 * pair + within % 32] |= (byte) (within < 32 ? q : q << 4);
            }
        }
        return out;
    }

    /** The 12 scale bytes: 6-bit scale and min of each of 8 sub-blocks. */
    static byte[] packScales(int[] sc, int[] mn) {
        byte[] s = new byte[12];
        for (int j = 0; j < 8; j++) {
            if (j < 4) {
                s[j] |= (byte) sc[j];
                s[j + 4] |= (byte) mn[j];
            } else {
                s[j + 4] = (byte) ((sc[j] & 15) | (mn[j] & 15) << 4);
                s[j - 4] |= (byte) ((sc[j] >> 4) << 6);
                s[j] |= (byte) ((mn[j] >> 4) << 6);
            }
        }
        return s;
    }

    public static float[] deq4_K(byte[] y) {
        float[] x = new float[y.length / 144 * 256];
        for (int sb = 0; sb < x.length / 256; sb++) {
            int o = 144 * sb;
            float d = Float.float16ToFloat(le(y).getShort(o));
            float dmin = Float.float16ToFloat(le(y).getShort(o + 2));
            for (int v = 0; v < 256; v++) {
                int j = v / 32;
                int sc;
                int m;
                if (j < 4) {
                    sc = y[o + 4 + j] & 63;
                    m = y[o + 4 + j + 4] & 63;
                } else {
                    sc = (y[o + 4 + j + 4] & 15) | ((y[o + 4 + j - 4] & 0xFF) >> 6) << 4;
                    m = ((y[o + 4 + j + 4] & 0xFF) >> 4) | ((y[o + 4 + j] & 0xFF) >> 6) << 4;
                }
                int within = v % 64;
                int byt = y[o + 16 + 32 * (v / 64) + within % 32] & 0xFF;
                int q = within < 32 ? byt & 15 : byt >> 4;
                x[256 * sb + v] = d * sc * q - dmin * m;
            }
        }
        return x;
    }

    // ---- Q6_K: {u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d}

    /** make_qx_quants(16, 32, x, rmse_type 1): returns the scale, fills levels (0..63). */
    private static float fitQ6K(float[] x, int off, int[] levels) {
        float max = 0;
        for (int i = 0; i < 16; i++) {
            if (Math.abs(x[off + i]) > Math.abs(max)) {
                max = x[off + i];
            }
        }
        if (Math.abs(max) < 1e-15f) {
            java.util.Arrays.fill(levels, 0);
            return 0;
        }
        float bestScale = 0;
        float best = 0;
        for (int t = 0; t <= 18; t++) {
            int is = t == 0 ? 0 : t <= 9 ? t - 10 : t - 9; // 0 first, then -9..-1, 1..9
            float iscale = is == 0 ? -32 / max : -(32 + 0.1f * is) / max;
            float slx = 0;
            float sl2 = 0;
            int[] lv = new int[16];
            for (int i = 0; i < 16; i++) {
                float v = x[off + i];
                int l = clamp(nearest(iscale * v), -32, 31);
                lv[i] = l + 32;
                float w = v * v;
                slx += w * v * l;
                sl2 += w * l * l;
            }
            if (t == 0) {
                bestScale = sl2 != 0 ? slx / sl2 : 0;
                best = bestScale * slx;
                System.arraycopy(lv, 0, levels, 0, 16);
            } else if (sl2 > 0 && slx * slx > best * sl2) {
                bestScale = slx / sl2;
                best = bestScale * slx;
                System.arraycopy(lv, 0, levels, 0, 16);
            }
        }
        return bestScale;
    }

    public static byte[] q6_K(float[] x) {
        byte[] out = new byte[x.length / 256 * 210];
        for (int sb = 0; sb < x.length / 256; sb++) {
            int base = 256 * sb;
            int o = 210 * sb;
            int[][] levels = new int[16][16];
            float[] scales = new float[16];
            float maxScale = 0;
            for (int j = 0; j < 16; j++) {
                scales[j] = fitQ6K(x, base + 16 * j, levels[j]);
                if (Math.abs(scales[j]) > Math.abs(maxScale)) {
                    maxScale = scales[j];
                }
            }
            if (Math.abs(maxScale) < 1e-15f) {
                continue; // all zero
            }
            float iscale = -128f / maxScale;
            le(out).putShort(o + 208, Float.floatToFloat16(1 / iscale));
            float d = fp16(1 / iscale);
            for (int j = 0; j < 16; j++) {
                byte s = (byte) Math.min(127, nearest(iscale * scales[j]));
                out[o + 192 + j] = s;
                float dj = d * s;
                if (dj == 0) {
                    continue;
                }
                for (int i = 0; i < 16; i++) {
                    levels[j][i] = clamp(nearest(x[base + 16 * j + i] / dj), -32, 31) + 32;
                }
            }
            for (int v = 0; v < 256; v++) {
                int q = levels[v / 16][v % 16];
                int half = v / 128;
                int r = v % 128;
                int l = r % 32;
                int quarter = r / 32;
                int qlByte = o + 64 * half + l + (quarter % 2 == 1 ? 32 : 0);
                out[qlByte] |= (byte) (quarter < 2 ? q & 15 : (q & 15) << 4);
                out[o + 128 + 32 * half + l] |= (byte) ((q >> 4) << (2 * quarter));
            }
        }
        return out;
    }

    public static float[] deq6_K(byte[] y) {
        float[] x = new float[y.length / 210 * 256];
        for (int sb = 0; sb < x.length / 256; sb++) {
            int o = 210 * sb;
            float d = Float.float16ToFloat(le(y).getShort(o + 208));
            for (int v = 0; v < 256; v++) {
                int half = v / 128;
                int r = v % 128;
                int l = r % 32;
                int quarter = r / 32;
                int qlb = y[o + 64 * half + l + (quarter % 2 == 1 ? 32 : 0)] & 0xFF;
                int low = quarter < 2 ? qlb & 15 : qlb >> 4;
                int high = ((y[o + 128 + 32 * half + l] & 0xFF) >> (2 * quarter)) & 3;
                int scale = y[o + 192 + v / 16];
                x[256 * sb + v] = d * scale * ((low | high << 4) - 32);
            }
        }
        return x;
    }
}
