package io.radixkv.model;

import io.radixkv.kernels.Bf16;
import io.radixkv.kernels.DType;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.function.DoubleUnaryOperator;

/**
 * Straightforward Llama forward in double precision over whole sequences, no paging, no
 * batching: the independent reference for {@link LlamaModel}. {@code kvRound} models the
 * cache dtype (identity for f32, bf16 rounding for a bf16 cache), applied to K after RoPE and to V.
 */
final class ReferenceLlama {
    private final ModelConfig c;
    private final ModelWeights w;
    private final DoubleUnaryOperator kvRound;

    ReferenceLlama(ModelWeights w, DoubleUnaryOperator kvRound) {
        this.c = w.config();
        this.w = w;
        this.kvRound = kvRound;
    }

    static double bf16Round(double v) {
        return Bf16.round(((float) v));
    }

    private double wt(MemorySegment m, long i) {
        return switch (w.dtype()) {
            case BF16 -> Bf16.toFloat(m.getAtIndex(ValueLayout.JAVA_SHORT, i));
            case F16 -> Float.float16ToFloat(m.getAtIndex(ValueLayout.JAVA_SHORT, i));
            default -> m.getAtIndex(ValueLayout.JAVA_FLOAT, i);
        };
    }

    private static double f(MemorySegment m, long i) {
        return m.getAtIndex(ValueLayout.JAVA_FLOAT, i);
    }

    /** y = W[rowOffset .. rowOffset+n) · x, W row-major with x.length columns. */
    private double[] matvec(MemorySegment m, long rowOffset, int n, double[] x) {
        double[] y = new double[n];
        for (int r = 0; r < n; r++) {
            double s = 0;
            long base = (rowOffset + r) * x.length;
            for (int i = 0; i < x.length; i++) {
                s += wt(m, base + i) * x[i];
            }
            y[r] = s;
        }
        return y;
    }

    private double[] rmsnorm(double[] x, MemorySegment g) {
        double ss = 0;
        for (double v : x) {
            ss += v * v;
        }
        double inv = 1.0 / Math.sqrt(ss / x.length + c.rmsEps());
        double[] y = new double[x.length];
        for (int i = 0; i < x.length; i++) {
            y[i] = x[i] * inv * f(g, i);
        }
        return y;
    }

    private void rope(double[] v, int heads, int pos) {
        int d = c.headDim();
        int half = d / 2;
        for (int h = 0; h < heads; h++) {
            for (int i = 0; i < half; i++) {
                double a = pos * Math.pow(c.layerAttention().get(0).rope().theta(), -2.0 * i / d);
                double x1 = v[h * d + i];
                double x2 = v[h * d + i + half];
                v[h * d + i] = x1 * Math.cos(a) - x2 * Math.sin(a);
                v[h * d + i + half] = x2 * Math.cos(a) + x1 * Math.sin(a);
            }
        }
    }

    /** Next-token logits after each position of {@code tokens}: {@code [tokens.length][vocab]}, for the positions asked. */
    double[][] logits(int[] tokens, int... positions) {
        int n = tokens.length;
        int h = c.hidden();
        int d = c.headDim();
        int qd = c.qDim();
        int kvd = c.kvDim();
        int inter = c.intermediate();
        double[][] x = new double[n][h];
        for (int t = 0; t < n; t++) {
            for (int i = 0; i < h; i++) {
                x[t][i] = wt(w.embed(), (long) tokens[t] * h + i);
            }
        }
        for (int l = 0; l < c.layers(); l++) {
            ModelWeights.Layer L = w.layer(l);
            double[][] q = new double[n][];
            double[][] k = new double[n][];
            double[][] v = new double[n][];
            for (int t = 0; t < n; t++) {
                double[] nx = rmsnorm(x[t], L.inputNorm());
                q[t] = matvec(L.qkv(), 0, qd, nx);
                k[t] = matvec(L.qkv(), qd, kvd, nx);
                v[t] = matvec(L.qkv(), qd + kvd, kvd, nx);
                rope(q[t], c.heads(), t);
                rope(k[t], c.kvHeads(), t);
                for (int i = 0; i < kvd; i++) {
                    k[t][i] = kvRound.applyAsDouble(k[t][i]);
                    v[t][i] = kvRound.applyAsDouble(v[t][i]);
                }
            }
            int group = c.heads() / c.kvHeads();
            double scale = 1.0 / Math.sqrt(d);
            for (int t = 0; t < n; t++) {
                double[] attn = new double[qd];
                for (int hh = 0; hh < c.heads(); hh++) {
                    int g = hh / group;
                    double[] s = new double[t + 1];
                    double max = Double.NEGATIVE_INFINITY;
                    for (int p = 0; p <= t; p++) {
                        double dot = 0;
                        for (int e = 0; e < d; e++) {
                            dot += q[t][hh * d + e] * k[p][g * d + e];
                        }
                        s[p] = dot * scale;
                        max = Math.max(max, s[p]);
                    }
                    double sum = 0;
                    for (int p = 0; p <= t; p++) {
                        s[p] = Math.exp(s[p] - max);
                        sum += s[p];
                    }
                    for (int e = 0; e < d; e++) {
                        double o = 0;
                        for (int p = 0; p <= t; p++) {
                            o += s[p] * v[p][g * d + e];
                        }
                        attn[hh * d + e] = o / sum;
                    }
                }
                double[] o = matvec(L.o(), 0, h, attn);
                for (int i = 0; i < h; i++) {
                    x[t][i] += o[i];
                }
                double[] nx = rmsnorm(x[t], L.postNorm());
                double[] gu = matvec(L.gateUp(), 0, 2 * inter, nx);
                double[] a = new double[inter];
                for (int i = 0; i < inter; i++) {
                    double gg = gu[i];
                    a[i] = gg / (1 + Math.exp(-gg)) * gu[inter + i];
                }
                double[] dn = matvec(L.down(), 0, h, a);
                for (int i = 0; i < h; i++) {
                    x[t][i] += dn[i];
                }
            }
        }
        double[][] out = new double[positions.length][];
        for (int i = 0; i < positions.length; i++) {
            double[] nx = rmsnorm(x[positions[i]], w.finalNorm());
            out[i] = matvec(w.lmHead(), 0, c.vocab(), nx);
        }
        return out;
    }
}
