package io.radixkv.model;

import io.radixkv.kernels.SamplingKernels;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;

/**
 * Picks the next token from a row of logits. Greedy is argmax (first maximum, NaN never
 * wins). Otherwise softmax(logits / temperature), optionally cut to the top-p nucleus, sampled
 * with a uniform number that depends only on {@code (seed, step)}: a request's tokens are
 * reproducible from its seed regardless of batching, and re-running step i after a
 * preemption draws the same number.
 *
 * <p>Batches of rows in native memory are sampled by the backend's {@link SamplingKernels}
 * where it has them (libradixkv's, the exponentials vectorized); everything else here in double
 * precision. The two draw by the same rule; their probabilities differ in the last bits, so a
 * uniform number within about 1e-6 of a boundary between two tokens may pick the other one.
 */
public final class Sampler {
    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT;

    private Sampler() {}

    /**
     * @param logits f32 {@code [rows, vocab]}
     * @param row the row to sample from
     * @param step index of the token being generated within its request (0 for the first)
     */
    public static int sample(MemorySegment logits, long row, int vocab, SamplingParams params, long step) {
        if (vocab <= 0) {
            throw new IllegalArgumentException("vocab must be positive, got " + vocab);
        }
        if (row < 0 || step < 0) {
            throw new IllegalArgumentException("row and step must not be negative (" + row + ", " + step + ")");
        }
        if (logits.byteSize() < (row + 1) * vocab * 4L) {
            throw new IllegalArgumentException("logits hold " + logits.byteSize() / 4 + " floats, row " + row
                    + " of vocab " + vocab + " needs " + (row + 1) * vocab);
        }
        float[] l = new float[vocab];
        MemorySegment.copy(logits, F, row * vocab * 4L, l, 0, vocab);
        return sample(l, params, step);
    }

    /**
     * Every row of f32 logits {@code [params.length, vocab]} at once, row r with {@code params[r]}
     * at {@code steps[r]}, in Java: the same tokens as {@link #sample(MemorySegment, long, int,
     * SamplingParams, long)} row by row.
     */
    public static int[] sampleRows(MemorySegment logits, int vocab, SamplingParams[] params, long[] steps) {
        return sampleRows(null, logits, vocab, params, steps);
    }

    /**
     * {@link #sampleRows(MemorySegment, int, SamplingParams[], long[])} through {@code kernels}
     * when the logits are in native memory (call it from the thread that runs the backend's
     * kernels: libradixkv's sampler runs on their threads), in Java otherwise or when
     * {@code kernels} is null.
     */
    public static int[] sampleRows(SamplingKernels kernels, MemorySegment logits, int vocab, SamplingParams[] params,
                                   long[] steps) {
        int rows = params.length;
        if (steps.length != rows) {
            throw new IllegalArgumentException(rows + " rows of parameters but " + steps.length + " steps");
        }
        if (kernels != null && logits.isNative()) {
            float[] t = new float[rows];
            float[] p = new float[rows];
            double[] u = new double[rows];
            for (int r = 0; r < rows; r++) {
                t[r] = params[r].isGreedy() ? 0f : params[r].temperature();
                p[r] = params[r].topP();
                u[r] = uniform(params[r].seed(), steps[r]);
            }
            return kernels.sampleRows(logits, vocab, t, p, u);
        }
        int[] out = new int[rows];
        float[] l = new float[vocab];
        for (int r = 0; r < rows; r++) {
            MemorySegment.copy(logits, F, (long) r * vocab * 4L, l, 0, vocab);
            out[r] = sample(l, params[r], steps[r]);
        }
        return out;
    }

    /** Same as {@link #sample(MemorySegment, long, int, SamplingParams, long)} on a Java array. */
    public static int sample(float[] logits, SamplingParams params, long step) {
        if (params.isGreedy()) {
            return argmax(logits);
        }
        int vocab = logits.length;
        double max = Double.NEGATIVE_INFINITY;
        for (float v : logits) {
            if (v > max) {
                max = v;
            }
        }
        if (max == Double.NEGATIVE_INFINITY) {
            return argmax(logits); // all -inf or NaN: nothing to sample from
        }
        double invT = 1.0 / params.temperature();
        double[] p = new double[vocab];
        double sum = 0;
        for (int i = 0; i < vocab; i++) {
            float v = logits[i];
            double e = Float.isNaN(v) ? 0 : Math.exp((v - max) * invT);
            p[i] = e;
            sum += e;
        }
        double u = uniform(params.seed(), step);
        if (params.topP() >= 1f) {
            double target = u * sum;
            double acc = 0;
            int lastNonZero = 0;
            for (int i = 0; i < vocab; i++) {
                if (p[i] > 0) {
                    acc += p[i];
                    lastNonZero = i;
                    if (acc > target) {
                        return i;
                    }
                }
            }
            return lastNonZero;
        }
        // Nucleus: tokens by decreasing probability (ties by id), smallest prefix reaching topP.
        double keep = params.topP() * sum;
        Integer[] order = nucleusCandidates(p, keep);
        double acc;
        int cut;
        for (;;) {
            acc = 0;
            cut = 0;
            while (cut < order.length) {
                acc += p[order[cut]];
                cut++;
                if (acc >= keep) {
                    break;
                }
            }
            if (acc >= keep || order.length == vocab) {
                break;
            }
            // the candidates' mass, summed in order, fell short of keep by rounding: every token
            order = sortedByProbability(p, allTokens(vocab));
        }
        double target = u * acc;
        double run = 0;
        for (int i = 0; i < cut; i++) {
            run += p[order[i]];
            if (run > target) {
                return order[i];
            }
        }
        return order[cut - 1];
    }

    /**
     * The tokens that can be in the nucleus, sorted by decreasing probability (ties by id): those
     * with p at or above 2^e, for the largest binary exponent e whose tokens' mass reaches keep
     * (with a margin for rounding). They are a prefix of every token in that order, so the nucleus
     * loop over them takes the same steps as over all tokens, and sorts a few hundred tokens of a
     * peaked distribution instead of the whole vocabulary (a boxed sort of 32000 ids per sampled
     * row made a 64-sequence decode step of the small model 85% sampling).
     */
    private static Integer[] nucleusCandidates(double[] p, double keep) {
        // p is in (0, 1] (the maximum gives exp(0)) or 0; bucket b holds 2^-(b+1) < p <= 2^-b roughly:
        // by Math.getExponent, -1023 for subnormals
        double[] mass = new double[1025];
        for (double v : p) {
            if (v > 0) {
                mass[-Math.getExponent(v)] += v;
            }
        }
        double cum = 0;
        int last = mass.length - 1;
        for (int b = 0; b < mass.length; b++) {
            cum += mass[b];
            if (cum >= keep * (1 + 1e-9)) {
                last = b;
                break;
            }
        }
        int minExponent = -last;
        int n = 0;
        for (double v : p) {
            if (v > 0 && Math.getExponent(v) >= minExponent) {
                n++;
            }
        }
        Integer[] ids = new Integer[n];
        n = 0;
        for (int i = 0; i < p.length; i++) {
            if (p[i] > 0 && Math.getExponent(p[i]) >= minExponent) {
                ids[n++] = i;
            }
        }
        return sortedByProbability(p, ids);
    }

    private static Integer[] allTokens(int vocab) {
        Integer[] ids = new Integer[vocab];
        for (int i = 0; i < vocab; i++) {
            ids[i] = i;
        }
        return ids;
    }

    private static Integer[] sortedByProbability(double[] p, Integer[] ids) {
        Arrays.sort(ids, (a, b) -> p[a] != p[b] ? Double.compare(p[b], p[a]) : Integer.compare(a, b));
        return ids;
    }

    /** First maximum; NaNs never win unless every value is NaN (then 0). */
    public static int argmax(float[] logits) {
        int best = 0;
        float bv = logits[0];
        for (int i = 1; i < logits.length; i++) {
            float v = logits[i];
            if (v > bv || (Float.isNaN(bv) && !Float.isNaN(v))) {
                bv = v;
                best = i;
            }
        }
        return best;
    }

    /** A uniform double in [0, 1) from (seed, step): SplitMix64 finalizer over both. */
    static double uniform(long seed, long step) {
        long z = seed * 0x9E3779B97F4A7C15L + (step + 1) * 0xD1B54A32D192ED03L;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        z ^= z >>> 31;
        return (z >>> 11) * 0x1.0p-53;
    }
}
