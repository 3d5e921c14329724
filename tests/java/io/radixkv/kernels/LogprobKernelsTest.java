package io.radixkv.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.radixkv.kernels.cpu.CpuLogprobs;
import io.radixkv.kernels.reference.JavaLogprobs;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * libradixkv's {@code rkv_logprobs} (through {@link CpuLogprobs}) and the Java {@link JavaLogprobs}
 * against a double-precision log-softmax written here: target and top-k values within 1e-5, the
 * top-k ids in order (ties by lower id), NaN as -inf; bad indices refused in Java before the
 * downcall.
 */
class LogprobKernelsTest {
    private static final double TOL = 1e-5;

    private static double[] logSoftmax(float[] row) {
        double max = Double.NEGATIVE_INFINITY;
        for (float x : row) {
            if (!Float.isNaN(x)) {
                max = Math.max(max, x);
            }
        }
        double sum = 0;
        for (float x : row) {
            sum += Float.isNaN(x) ? 0 : Math.exp(x - max);
        }
        double lse = max + Math.log(sum);
        double[] out = new double[row.length];
        for (int i = 0; i < row.length; i++) {
            out[i] = Float.isNaN(row[i]) ? Double.NEGATIVE_INFINITY : row[i] - lse;
        }
        return out;
    }

    private static void check(LogprobKernels k, MemorySegment seg, float[][] rows, int[] index, int[] targets,
                              int topK, String what) {
        LogprobRows got = k.compute(seg, rows.length, rows[0].length, index, targets, topK);
        for (int r = 0; r < index.length; r++) {
            double[] ref = logSoftmax(rows[index[r]]);
            assertEquals(ref[targets[r]], got.targetLogprob()[r], TOL, what + ": row " + r + " target");
            Integer[] order = new Integer[ref.length];
            Arrays.setAll(order, i -> i);
            Arrays.sort(order, (a, b) -> Double.compare(ref[b], ref[a])); // stable: ties keep the lower id first
            for (int j = 0; j < topK; j++) {
                assertEquals(order[j], got.topId(r, j), what + ": row " + r + " top " + j);
                assertEquals(ref[order[j]], got.topLogprob(r, j), TOL, what + ": row " + r + " top " + j + " value");
            }
        }
    }

    @Test
    void nativeAndJavaAgreeWithADoublePrecisionLogSoftmax() {
        Random rnd = new Random(3);
        for (int vocab : new int[] {5, 97, 32000}) {
            float[][] rows = new float[6][vocab];
            for (int r = 0; r < rows.length; r++) {
                for (int i = 0; i < vocab; i++) {
                    // row 0 with many ties, row 1 with NaN and -inf, the rest spread
                    rows[r][i] = r == 0 ? rnd.nextInt(5) : (float) rnd.nextGaussian() * (r + 1);
                }
            }
            rows[1][vocab / 2] = Float.NaN;
            rows[1][vocab - 1] = Float.NEGATIVE_INFINITY;
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment seg = arena.allocate(4L * rows.length * vocab);
                for (int r = 0; r < rows.length; r++) {
                    MemorySegment.copy(rows[r], 0, seg, ValueLayout.JAVA_FLOAT, 4L * r * vocab, vocab);
                }
                int[] index = {5, 0, 1, 3, 0};
                int[] targets = new int[index.length];
                Arrays.setAll(targets, i -> rnd.nextInt(vocab));
                targets[2] = vocab / 2; // the NaN logit: -inf
                for (int topK : new int[] {0, 1, Math.min(5, vocab), Math.min(20, vocab)}) {
                    for (LogprobKernels k : List.of(CpuLogprobs.instance(), new JavaLogprobs())) {
                        check(k, seg, rows, index, targets, topK, k.getClass().getSimpleName() + " vocab " + vocab
                                + " k " + topK);
                    }
                }
                LogprobRows nan = CpuLogprobs.instance().compute(seg, rows.length, vocab, new int[] {1},
                        new int[] {vocab / 2}, 0);
                assertEquals(Double.NEGATIVE_INFINITY, nan.targetLogprob()[0], "a NaN logit is -inf");
            }
        }
    }

    @Test
    void badIndicesAreRefusedBeforeTheDowncall() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(4L * 2 * 10);
            LogprobKernels k = CpuLogprobs.instance();
            var e = assertThrows(IllegalArgumentException.class,
                    () -> k.compute(seg, 2, 10, new int[] {2}, new int[] {0}, 1));
            assertTrue(e.getMessage().contains("row index 2"), e.getMessage());
            e = assertThrows(IllegalArgumentException.class, () -> k.compute(seg, 2, 10, new int[] {0}, new int[] {10}, 1));
            assertTrue(e.getMessage().contains("target 10"), e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> k.compute(seg, 2, 10, new int[] {0}, new int[] {1}, 21));
            assertThrows(IllegalArgumentException.class, () -> k.compute(seg, 2, 10, new int[] {0}, new int[] {1}, 11));
            assertThrows(IllegalArgumentException.class, () -> k.compute(seg, 3, 10, new int[] {0}, new int[] {1}, 1));
        }
    }
}
