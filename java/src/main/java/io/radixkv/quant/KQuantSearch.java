package io.radixkv.quant;

/**
 * The scale searches of ggml's k-quant reference quantizers, in f32 with ggml's order of
 * operations (no fused multiply-add), so that the chosen levels are the same bits.
 */
final class KQuantSearch {
    /** A sub-block group with every |x| below this quantizes to zero (ggml's GROUP_MAX_EPS). */
    static final float GROUP_MAX_EPS = 1e-15f;

    private KQuantSearch() {}

    /**
     * Round to nearest, ties to even, by adding 1.5·2^23 and reading the mantissa (ggml's
     * nearest_int); exact for |v| ≤ 2^22.
     */
    static int nearestInt(float v) {
        float shifted = v + 12582912f;
        return (Float.floatToRawIntBits(shifted) & 0x007FFFFF) - 0x00400000;
    }

    /**
     * An asymmetric fit x ≈ scale·L − theMin with L in [0, nmax], weighted by {@code w}:
     * starting from the min/max fit, tries {@code nstep + 1} scales
     * {@code (rmin + rdelta·is + nmax) / (max − min)}, solving the weighted least-squares scale and
     * offset for each set of levels, and keeps the one of least weighted squared error (ggml's
     * make_qkx2_quants with use_mad false).
     *
     * @param theMin receives −min (min ≤ 0) at index 0
     * @return the scale
     */
    static float fitAsymmetric(int n, int nmax, float[] x, int xs, float[] w, byte[] levels, int ls, float[] theMin,
                               float rmin, float rdelta, int nstep) {
        float min = x[xs];
        float max = x[xs];
        float sumW = w[0];
        float sumX = sumW * x[xs];
        for (int i = 1; i < n; i++) {
            float v = x[xs + i];
            if (v < min) {
                min = v;
            }
            if (v > max) {
                max = v;
            }
            sumW += w[i];
            sumX += w[i] * v;
        }
        if (min > 0) {
            min = 0;
        }
        if (max == min) {
            for (int i = 0; i < n; i++) {
                levels[ls + i] = 0;
            }
            theMin[0] = -min;
            return 0f;
        }
        float iscale = nmax / (max - min);
        float scale = 1 / iscale;
        float bestError = 0;
        for (int i = 0; i < n; i++) {
            int l = clamp(nearestInt(iscale * (x[xs + i] - min)), 0, nmax);
            levels[ls + i] = (byte) l;
            float diff = scale * l + min - x[xs + i];
            bestError += w[i] * (diff * diff);
        }
        byte[] aux = new byte[n];
        for (int is = 0; is <= nstep; is++) {
            iscale = (rmin + rdelta * is + nmax) / (max - min);
            float sumL = 0;
            float sumL2 = 0;
            float sumXL = 0;
            for (int i = 0; i < n; i++) {
                int l = clamp(nearestInt(iscale * (x[xs + i] - min)), 0, nmax);
                aux[i] = (byte) l;
                sumL += w[i] * l;
                sumL2 += w[i] * l * l;
                sumXL += w[i] * l * x[xs + i];
            }
            float det = sumW * sumL2 - sumL * sumL;
            if (det > 0) {
                float thisScale = (sumW * sumXL - sumX * sumL) / det;
                float thisMin = (sumL2 * sumX - sumL * sumXL) / det;
                if (thisMin > 0) {
                    thisMin = 0;
                    thisScale = sumXL / sumL2;
                }
                float error = 0;
                for (int i = 0; i < n; i++) {
                    float diff = thisScale * aux[i] + thisMin - x[xs + i];
                    error += w[i] * (diff * diff);
                }
                if (error < bestError) {
                    System.arraycopy(aux, 0, levels, ls, n);
                    bestError = error;
                    scale = thisScale;
                    min = thisMin;
                }
            }
        }
        theMin[0] = -min;
        return scale;
    }

    /**
     * A symmetric fit x ≈ scale·(L − nmax) with L − nmax in [−nmax, nmax − 1], weighted by x²:
     * the scale through the value of largest magnitude, then 18 nearby scales
     * {@code −(nmax + 0.1·is) / max}, keeping the levels with the best weighted least-squares
     * fit (ggml's make_qx_quants with rmse_type 1 and no importance weights).
     *
     * @return the scale (0 for an all-zero group)
     */
    static float fitSymmetric(int n, int nmax, float[] x, int xs, byte[] levels, int ls) {
        float max = 0;
        float amax = 0;
        for (int i = 0; i < n; i++) {
            float ax = Math.abs(x[xs + i]);
            if (ax > amax) {
                amax = ax;
                max = x[xs + i];
            }
        }
        if (amax < GROUP_MAX_EPS) {
            for (int i = 0; i < n; i++) {
                levels[ls + i] = 0;
            }
            return 0f;
        }
        float iscale = -nmax / max;
        float sumLX = 0;
        float sumL2 = 0;
        for (int i = 0; i < n; i++) {
            float v = x[xs + i];
            int l = clamp(nearestInt(iscale * v), -nmax, nmax - 1);
            levels[ls + i] = (byte) (l + nmax);
            float w = v * v;
            sumLX += w * v * l;
            sumL2 += w * l * l;
        }
        float scale = sumL2 != 0 ? sumLX / sumL2 : 0f;
        float best = scale * sumLX;
        for (int is = -9; is <= 9; is++) {
            if (is == 0) {
                continue;
            }
            iscale = -(nmax + 0.1f * is) / max;
            sumLX = 0;
            sumL2 = 0;
            for (int i = 0; i < n; i++) {
                float v = x[xs + i];
                int l = clamp(nearestInt(iscale * v), -nmax, nmax - 1);
                float w = v * v;
                sumLX += w * v * l;
                sumL2 += w * l * l;
            }
            if (sumL2 > 0 && sumLX * sumLX > best * sumL2) {
                for (int i = 0; i < n; i++) {
                    levels[ls + i] = (byte) (nmax + clamp(nearestInt(iscale * x[xs + i]), -nmax, nmax - 1));
                }
                scale = sumLX / sumL2;
                best = scale * sumLX;
            }
        }
        return scale;
    }

    static int clamp(int v, int lo, int hi) {
        return Math.max(lo, Math.min(hi, v));
    }
}
