package io.radixkv.kernels.reference;

import io.radixkv.kernels.LogprobKernels;
import io.radixkv.kernels.LogprobRows;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;

/**
 * {@link LogprobKernels} in plain Java and double precision (the reference backend's): the same
 * rule as libradixkv's {@code rkv_logprobs} (NaN as -inf; a row without a finite maximum gives
 * -inf everywhere, or {@code -log c} to each of its c tokens at +inf).
 */
public final class JavaLogprobs implements LogprobKernels {
    @Override
    public LogprobRows compute(MemorySegment logits, int numRows, int vocab, int[] rowIndex, int[] targets, int topK) {
        LogprobKernels.check(logits, numRows, vocab, rowIndex, targets, topK);
        int rows = rowIndex.length;
        double[] target = new double[rows];
        int[] ids = new int[rows * topK];
        double[] lps = new double[rows * topK];
        float[] l = new float[vocab];
        double[] lp = new double[vocab];
        for (int r = 0; r < rows; r++) {
            MemorySegment.copy(logits, ValueLayout.JAVA_FLOAT, (long) rowIndex[r] * vocab * 4L, l, 0, vocab);
            logSoftmax(l, lp);
            target[r] = lp[targets[r]];
            Integer[] order = new Integer[vocab];
            Arrays.setAll(order, i -> i);
            boolean finite = Double.isFinite(max(l));
            // by logit (by log-probability where the maximum is not finite), ties by lower id
            Arrays.sort(order, (a, b) -> finite ? Double.compare(value(l[b]), value(l[a])) : Double.compare(lp[b], lp[a]));
            for (int j = 0; j < topK; j++) {
                ids[r * topK + j] = order[j];
                lps[r * topK + j] = lp[order[j]];
            }
        }
        return new LogprobRows(topK, target, ids, lps);
    }

    private static double value(float x) {
        return Float.isNaN(x) ? Double.NEGATIVE_INFINITY : x;
    }

    private static double max(float[] l) {
        double m = Double.NEGATIVE_INFINITY;
        for (float x : l) {
            m = Math.max(m, value(x));
        }
        return m;
    }

    private static void logSoftmax(float[] l, double[] out) {
        double m = max(l);
        if (Double.isFinite(m)) {
            double sum = 0;
            for (float x : l) {
                sum += Math.exp(value(x) - m);
            }
            double lse = m + Math.log(sum);
            for (int i = 0; i < l.length; i++) {
                out[i] = value(l[i]) - lse;
            }
            return;
        }
        int atInf = 0;
        for (float x : l) {
            atInf += x == Float.POSITIVE_INFINITY ? 1 : 0;
        }
        for (int i = 0; i < l.length; i++) {
            out[i] = atInf > 0 && l[i] == Float.POSITIVE_INFINITY ? -Math.log(atInf) : Double.NEGATIVE_INFINITY;
        }
    }
}
