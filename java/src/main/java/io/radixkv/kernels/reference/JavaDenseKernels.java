package io.radixkv.kernels.reference;

import io.radixkv.kernels.Bf16;
import io.radixkv.kernels.DType;
import io.radixkv.kernels.DenseChecks;
import io.radixkv.kernels.DenseKernels;
import io.radixkv.kernels.LoraBatch;
import io.radixkv.kernels.LoraFactors;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Plain-Java dense kernels: the independent reference for {@code CpuDenseKernels} (double
 * accumulation, straightforward loops, exact bf16/f16 widening). Works on native and heap segments.
 */
public final class JavaDenseKernels implements DenseKernels {
    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ValueLayout.OfInt I = ValueLayout.JAVA_INT_UNALIGNED;
    private static final ValueLayout.OfShort S = ValueLayout.JAVA_SHORT_UNALIGNED;

    @Override
    public String name() {
        return "java";
    }

    private static float weight(MemorySegment w, DType dtype, long index) {
        return switch (dtype) {
            case BF16 -> Bf16.toFloat(w.getAtIndex(S, index));
            case F16 -> Float.float16ToFloat(w.getAtIndex(S, index));
            default -> w.getAtIndex(F, index);
        };
    }

    @Override
    public void linear(MemorySegment x, MemorySegment w, DType wDtype, MemorySegment y, long m, long n, long k,
                       boolean accumulate) {
        DenseChecks.linear(x, w, wDtype, y, m, n, k);
        float[] xr = new float[(int) k];
        for (long i = 0; i < m; i++) {
            MemorySegment.copy(x, F, i * k * 4, xr, 0, (int) k);
            for (long j = 0; j < n; j++) {
                double s = accumulate ? y.getAtIndex(F, i * n + j) : 0.0;
                long wo = j * k;
                for (int kk = 0; kk < k; kk++) {
                    s += (double) xr[kk] * weight(w, wDtype, wo + kk);
                }
                y.setAtIndex(F, i * n + j, (float) s);
            }
        }
    }

    /** LoRA deltas in double precision: {@code t = A x} and {@code B t} summed in doubles, added once. */
    @Override
    public void lora(LoraBatch b) {
        for (int row = 0; row < b.rows(); row++) {
            LoraFactors f = b.factorsOf(row);
            if (f == null) {
                continue;
            }
            double[] t = new double[f.rank()];
            for (int r = 0; r < f.rank(); r++) {
                double s = 0;
                for (int c = 0; c < b.k(); c++) {
                    s += (double) f.a().getAtIndex(F, (long) r * b.k() + c) * b.x().getAtIndex(F, (long) row * b.k() + c);
                }
                t[r] = s;
            }
            for (int j = 0; j < b.n(); j++) {
                double s = 0;
                for (int r = 0; r < f.rank(); r++) {
                    s += (double) f.b().getAtIndex(F, (long) j * f.rank() + r) * t[r];
                }
                long at = row * b.yPitch() + b.yOffset() + j;
                b.y().setAtIndex(F, at, (float) (b.y().getAtIndex(F, at) + f.scale() * s));
            }
        }
    }

    @Override
    public void rmsnorm(MemorySegment x, MemorySegment w, MemorySegment y, long rows, int dim, float eps,
                        float weightOffset) {
        DenseChecks.rmsnorm(x, w, y, rows, dim, eps, weightOffset);
        for (long r = 0; r < rows; r++) {
            long o = r * dim;
            double ss = 0;
            for (int i = 0; i < dim; i++) {
                double v = x.getAtIndex(F, o + i);
                ss += v * v;
            }
            double inv = 1.0 / Math.sqrt(ss / dim + eps);
            for (int i = 0; i < dim; i++) {
                y.setAtIndex(F, o + i, (float) (x.getAtIndex(F, o + i) * inv * (weightOffset + (double) w.getAtIndex(F, i))));
            }
        }
    }

    @Override
    public void rope(MemorySegment q, MemorySegment k, MemorySegment positions, long numTokens, int numQHeads,
                     int numKvHeads, int headDim, float theta) {
        DenseChecks.rope(q, k, positions, numTokens, numQHeads, numKvHeads, headDim, theta);
        int half = headDim / 2;
        for (long t = 0; t < numTokens; t++) {
            int pos = positions.getAtIndex(I, t);
            for (int i = 0; i < half; i++) {
                double angle = pos * Math.pow(theta, -2.0 * i / headDim);
                double c = Math.cos(angle);
                double s = Math.sin(angle);
                rotate(q, t, numQHeads, headDim, i, c, s);
                rotate(k, t, numKvHeads, headDim, i, c, s);
            }
        }
    }

    @Override
    public void ropeTable(MemorySegment q, MemorySegment k, MemorySegment positions, long numTokens, int numQHeads,
                          int numKvHeads, int headDim, MemorySegment invFreq) {
        DenseChecks.ropeTable(q, k, positions, numTokens, numQHeads, numKvHeads, headDim, invFreq);
        for (long t = 0; t < numTokens; t++) {
            int pos = positions.getAtIndex(I, t);
            for (int i = 0; i < headDim / 2; i++) {
                double angle = pos * invFreq.getAtIndex(ValueLayout.JAVA_DOUBLE_UNALIGNED, i);
                double c = Math.cos(angle);
                double s = Math.sin(angle);
                rotate(q, t, numQHeads, headDim, i, c, s);
                rotate(k, t, numKvHeads, headDim, i, c, s);
            }
        }
    }

    @Override
    public void geluTanhMul(MemorySegment gateUp, MemorySegment out, long rows, int inter) {
        DenseChecks.siluMul(gateUp, out, rows, inter);
        double c = Math.sqrt(2 / Math.PI);
        for (long r = 0; r < rows; r++) {
            for (int i = 0; i < inter; i++) {
                double g = gateUp.getAtIndex(F, r * 2 * inter + i);
                double u = gateUp.getAtIndex(F, r * 2 * inter + inter + i);
                out.setAtIndex(F, r * inter + i, (float) (0.5 * g * (1 + Math.tanh(c * (g + 0.044715 * g * g * g))) * u));
            }
        }
    }

    @Override
    public void addBias(MemorySegment y, MemorySegment bias, long rows, int n) {
        DenseChecks.addBias(y, bias, rows, n);
        for (long r = 0; r < rows; r++) {
            for (int i = 0; i < n; i++) {
                y.setAtIndex(F, r * n + i, y.getAtIndex(F, r * n + i) + bias.getAtIndex(F, i));
            }
        }
    }

    @Override
    public void softCap(MemorySegment x, long n, float cap) {
        DenseChecks.softCap(x, n, cap);
        for (long i = 0; i < n; i++) {
            x.setAtIndex(F, i, (float) (cap * Math.tanh(x.getAtIndex(F, i) / (double) cap)));
        }
    }

    @Override
    public void scale(MemorySegment x, long n, float s) {
        DenseChecks.scale(x, n, s);
        for (long i = 0; i < n; i++) {
            x.setAtIndex(F, i, x.getAtIndex(F, i) * s);
        }
    }

    private static void rotate(MemorySegment v, long t, int heads, int headDim, int i, double c, double s) {
        int half = headDim / 2;
        for (int h = 0; h < heads; h++) {
            long base = (t * heads + h) * headDim;
            double x1 = v.getAtIndex(F, base + i);
            double x2 = v.getAtIndex(F, base + i + half);
            v.setAtIndex(F, base + i, (float) (x1 * c - x2 * s));
            v.setAtIndex(F, base + i + half, (float) (x2 * c + x1 * s));
        }
    }

    @Override
    public void siluMul(MemorySegment gateUp, MemorySegment out, long rows, int inter) {
        DenseChecks.siluMul(gateUp, out, rows, inter);
        for (long r = 0; r < rows; r++) {
            for (int i = 0; i < inter; i++) {
                double g = gateUp.getAtIndex(F, r * 2 * inter + i);
                double u = gateUp.getAtIndex(F, r * 2 * inter + inter + i);
                out.setAtIndex(F, r * inter + i, (float) (g / (1.0 + Math.exp(-g)) * u));
            }
        }
    }

    @Override
    public void embedding(MemorySegment ids, long n, MemorySegment table, DType dtype, int vocab, int dim,
                          MemorySegment out) {
        DenseChecks.embedding(ids, n, table, dtype, vocab, dim, out);
        for (long i = 0; i < n; i++) {
            long row = (long) ids.getAtIndex(I, i) * dim;
            for (int j = 0; j < dim; j++) {
                out.setAtIndex(F, i * dim + j, weight(table, dtype, row + j));
            }
        }
    }

    @Override
    public void addInplace(MemorySegment y, MemorySegment x, long n) {
        DenseChecks.addInplace(y, x, n);
        for (long i = 0; i < n; i++) {
            y.setAtIndex(F, i, y.getAtIndex(F, i) + x.getAtIndex(F, i));
        }
    }

    @Override
    public void argmax(MemorySegment logits, long rows, int vocab, MemorySegment out) {
        DenseChecks.argmax(logits, rows, vocab, out);
        for (long r = 0; r < rows; r++) {
            int best = 0;
            float bv = logits.getAtIndex(F, r * vocab);
            for (int i = 1; i < vocab; i++) {
                float v = logits.getAtIndex(F, r * vocab + i);
                if (v > bv || (Float.isNaN(bv) && !Float.isNaN(v))) {
                    bv = v;
                    best = i;
                }
            }
            out.setAtIndex(I, r, best);
        }
    }
}
