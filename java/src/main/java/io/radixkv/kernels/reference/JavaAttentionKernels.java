package io.radixkv.kernels.reference;

import io.radixkv.kernels.AttentionChecks;
import io.radixkv.kernels.AttentionKernels;
import io.radixkv.kernels.AttentionParams;
import io.radixkv.kernels.Bf16;
import io.radixkv.kernels.Checks;
import io.radixkv.kernels.DType;
import io.radixkv.kernels.KvCacheView;
import io.radixkv.kernels.PageTableCsr;
import io.radixkv.kernels.PagedKvLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Plain-Java paged attention: the independent reference the native kernels are tested
 * against. For every (sequence, KV head) it gathers the sequence's pages into contiguous
 * double arrays (decoding the cache dtype with its own bit manipulation), then runs textbook
 * softmax attention in double precision: all logits, their maximum, the exponentials, the
 * normalized weighted sum. No online softmax, no native code; only the argument validation
 * ({@link AttentionChecks}) is shared with the native backends.
 */
public final class JavaAttentionKernels implements AttentionKernels {
    private static final ValueLayout.OfShort SHORT = ValueLayout.JAVA_SHORT_UNALIGNED;
    private static final ValueLayout.OfFloat FLOAT = ValueLayout.JAVA_FLOAT_UNALIGNED;

    @Override
    public void decode(MemorySegment q, DType qDtype, MemorySegment out, DType outDtype, MemorySegment lse,
                       KvCacheView cache, PageTableCsr table, AttentionParams params) {
        AttentionChecks.Shape shape = AttentionChecks.decode(q, qDtype, out, outDtype, lse, cache, table, params);
        run(shape, q, qDtype, out, outDtype, lse, cache, table, params);
    }

    @Override
    public void appendPrefill(MemorySegment q, DType qDtype, MemorySegment out, DType outDtype, MemorySegment lse,
                              MemorySegment qoIndptr, KvCacheView cache, PageTableCsr table,
                              MemorySegment bidirIndptr, MemorySegment bidirRegions, AttentionParams params) {
        AttentionChecks.Shape shape = AttentionChecks.prefill(q, qDtype, out, outDtype, lse, qoIndptr, cache, table,
                bidirIndptr, bidirRegions, params);
        run(shape, q, qDtype, out, outDtype, lse, cache, table, params);
    }

    @Override
    public void mergeState(MemorySegment va, MemorySegment sa, MemorySegment vb, MemorySegment sb,
                           MemorySegment vOut, MemorySegment sOut, long numTokens, int numHeads, int headDim) {
        AttentionChecks.merge(va, sa, vb, sb, vOut, sOut, numTokens, numHeads, headDim);
        long rows = numTokens * numHeads;
        for (long r = 0; r < rows; r++) {
            double a = sa.getAtIndex(FLOAT, r);
            double b = sb.getAtIndex(FLOAT, r);
            double mx = Math.max(a, b);
            double wa = 0;
            double wb = 0;
            double s = Double.NEGATIVE_INFINITY;
            if (mx != Double.NEGATIVE_INFINITY) {
                double ea = Math.exp(a - mx);
                double eb = Math.exp(b - mx);
                wa = ea / (ea + eb);
                wb = eb / (ea + eb);
                s = mx + Math.log(ea + eb);
            }
            for (int d = 0; d < headDim; d++) {
                long i = r * headDim + d;
                double v = s == Double.NEGATIVE_INFINITY ? 0.0
                        : wa * va.getAtIndex(FLOAT, i) + wb * vb.getAtIndex(FLOAT, i);
                vOut.setAtIndex(FLOAT, i, (float) v);
            }
            sOut.setAtIndex(FLOAT, r, (float) s);
        }
    }

    private static void run(AttentionChecks.Shape shape, MemorySegment q, DType qDtype, MemorySegment out,
                            DType outDtype, MemorySegment lse, KvCacheView cache, PageTableCsr table,
                            AttentionParams params) {
        PagedKvLayout layout = cache.layout();
        int hd = layout.headDim();
        int numQo = params.numQoHeads();
        int group = shape.group();
        double kScale = layout.cacheDtype().isFp8() ? cache.kScale() : 1.0;
        double vScale = layout.cacheDtype().isFp8() ? cache.vScale() : 1.0;
        boolean hasLse = !AttentionChecks.isNull(lse);
        for (int b = 0; b < shape.batch(); b++) {
            int len = (int) shape.kvLens()[b];
            int q0 = shape.qoIndptr()[b];
            int qLen = shape.qoIndptr()[b + 1] - q0;
            for (int h = 0; h < layout.numKvHeads(); h++) {
                double[][] k = gather(cache.kCache(), layout, table, b, h, len, kScale);
                double[][] v = gather(cache.vCache(), layout, table, b, h, len, vScale);
                for (int i = 0; i < qLen; i++) {
                    int pos = len - qLen + i;
                    int first = (int) params.windowBegin(pos);
                    int visible = lastVisible(shape, b, pos) + 1;
                    for (int g = 0; g < group; g++) {
                        long row = (long) (q0 + i) * numQo + (long) h * group + g;
                        double[] qv = new double[hd];
                        for (int d = 0; d < hd; d++) {
                            qv[d] = load(q, qDtype, row * hd + d);
                        }
                        double[] o = new double[hd];
                        double rowLse = attend(qv, k, v, first, visible, params, o);
                        for (int d = 0; d < hd; d++) {
                            store(out, outDtype, row * hd + d, o[d]);
                        }
                        if (hasLse) {
                            lse.setAtIndex(FLOAT, row, (float) rowLse);
                        }
                    }
                }
            }
        }
    }

    /** Last KV position query position p sees: p itself, or the end of a bidirectional region holding p. */
    private static int lastVisible(AttentionChecks.Shape shape, int b, int p) {
        int last = p;
        if (shape.bidirIndptr() != null) {
            int[] regions = shape.bidirRegions();
            for (int r = shape.bidirIndptr()[b]; r < shape.bidirIndptr()[b + 1]; r++) {
                if (regions[2 * r] <= p && p < regions[2 * r + 1]) {
                    last = Math.max(last, regions[2 * r + 1] - 1);
                }
            }
        }
        return last;
    }

    /** Softmax attention of one query over positions first..visible-1; returns the natural-log LSE. */
    private static double attend(double[] q, double[][] k, double[][] v, int first, int visible,
                                 AttentionParams params, double[] o) {
        if (visible <= first) {
            return Double.NEGATIVE_INFINITY;
        }
        double cap = params.logitsSoftCap();
        double[] logits = new double[visible];
        double max = Double.NEGATIVE_INFINITY;
        for (int t = first; t < visible; t++) {
            double dot = 0;
            for (int d = 0; d < q.length; d++) {
                dot += q[d] * k[t][d];
            }
            double x = dot * params.smScale();
            if (cap > 0) {
                x = cap * Math.tanh(x / cap);
            }
            logits[t] = x;
            max = Math.max(max, x);
        }
        double sum = 0;
        for (int t = first; t < visible; t++) {
            double p = Math.exp(logits[t] - max);
            sum += p;
            for (int d = 0; d < o.length; d++) {
                o[d] += p * v[t][d];
            }
        }
        for (int d = 0; d < o.length; d++) {
            o[d] /= sum;
        }
        return max + Math.log(sum);
    }

    /** Tokens 0..len-1 of sequence b, KV head h, as [len][headDim] real values (dequantized). */
    private static double[][] gather(MemorySegment pool, PagedKvLayout layout, PageTableCsr table, int b, int h,
                                     int len, double scale) {
        int ps = layout.pageSize();
        int hd = layout.headDim();
        int first = Checks.intAt(table.kvIndptr(), b);
        double[][] rows = new double[len][hd];
        for (int t = 0; t < len; t++) {
            long page = Checks.intAt(table.kvIndices(), first + t / ps);
            long base = ((page * ps + t % ps) * layout.numKvHeads() + h) * hd;
            for (int d = 0; d < hd; d++) {
                rows[t][d] = load(pool, layout.cacheDtype(), base + d) * scale;
            }
        }
        return rows;
    }

    // ---- dtype decoding / encoding, independent of the native converters ----

    public static double load(MemorySegment s, DType dtype, long i) {
        return switch (dtype) {
            case F32 -> s.getAtIndex(FLOAT, i);
            case F16 -> Float.float16ToFloat(s.getAtIndex(SHORT, i));
            case BF16 -> Float.intBitsToFloat((s.getAtIndex(SHORT, i) & 0xFFFF) << 16);
            case FP8_E4M3 -> e4m3ToDouble(s.get(ValueLayout.JAVA_BYTE, i) & 0xFF);
            case FP8_E5M2 -> e5m2ToDouble(s.get(ValueLayout.JAVA_BYTE, i) & 0xFF);
        };
    }

    public static void store(MemorySegment s, DType dtype, long i, double value) {
        float f = (float) value;
        switch (dtype) {
            case F32 -> s.setAtIndex(FLOAT, i, f);
            case F16 -> s.setAtIndex(SHORT, i, Float.floatToFloat16(f));
            case BF16 -> s.setAtIndex(SHORT, i, Bf16.fromFloat(f));
            default -> throw new IllegalArgumentException("output dtype " + dtype + " is not supported");
        }
    }

    /** E4M3 (bias 7, 3 mantissa bits, no infinities, S.1111.111 = NaN). */
    static double e4m3ToDouble(int code) {
        int sign = (code & 0x80) != 0 ? -1 : 1;
        int exp = (code >> 3) & 0xF;
        int man = code & 0x7;
        if (exp == 0xF && man == 0x7) {
            return Double.NaN;
        }
        double mag = exp == 0 ? man * Math.scalb(1.0, -9) : (1 + man / 8.0) * Math.scalb(1.0, exp - 7);
        return sign * mag;
    }

    /** E5M2 (bias 15, 2 mantissa bits, IEEE-style infinities and NaNs). */
    static double e5m2ToDouble(int code) {
        int sign = (code & 0x80) != 0 ? -1 : 1;
        int exp = (code >> 2) & 0x1F;
        int man = code & 0x3;
        if (exp == 0x1F) {
            return man == 0 ? sign * Double.POSITIVE_INFINITY : Double.NaN;
        }
        double mag = exp == 0 ? man * Math.scalb(1.0, -16) : (1 + man / 4.0) * Math.scalb(1.0, exp - 15);
        return sign * mag;
    }

}
