package io.radixkv.model;

import io.radixkv.kernels.SamplingKernels;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;

/**
 * Picks the next token from a row of logits, in vLLM's order: the logit bias, the min-tokens
 * mask and the penalties edit the logits; greedy is the argmax of the result (first maximum,
 * NaN never wins); otherwise softmax(logits / temperature), cut by min-p, top-k and the top-p
 * nucleus, sampled with a uniform number that depends only on {@code (seed, step)}: a request's tokens are
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
        return sample(logits, row, vocab, params, step, null);
    }

    /**
     * {@link #sample(MemorySegment, long, int, SamplingParams, long)} with the sequence's token
     * counts (needed where {@code params} penalizes).
     */
    public static int sample(MemorySegment logits, long row, int vocab, SamplingParams params, long step,
                             TokenCounts counts) {
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
        return sample(l, params, step, counts);
    }

    /**
     * Every row of f32 logits {@code [params.length, vocab]} at once, row r with {@code params[r]}
     * at {@code steps[r]}, in Java: the same tokens as {@link #sample(MemorySegment, long, int,
     * SamplingParams, long)} row by row.
     */
    public static int[] sampleRows(MemorySegment logits, int vocab, SamplingParams[] params, long[] steps) {
        return sampleRows(null, logits, vocab, params, steps, null);
    }

    /**
     * {@link #sampleRows(SamplingKernels, MemorySegment, int, SamplingParams[], long[], TokenCounts[])}
     * for rows without penalties.
     */
    public static int[] sampleRows(SamplingKernels kernels, MemorySegment logits, int vocab, SamplingParams[] params,
                                   long[] steps) {
        return sampleRows(kernels, logits, vocab, params, steps, null);
    }

    /**
     * Every row at once through {@code kernels} when the logits are in native memory (call it
     * from the thread that runs the backend's kernels: libradixkv's sampler runs on their
     * threads), in Java otherwise or when {@code kernels} is null. {@code counts[r]} is row r's
     * sequence's token counts, needed where {@code params[r]} penalizes (else may be null, as
     * may the array).
     */
    public static int[] sampleRows(SamplingKernels kernels, MemorySegment logits, int vocab, SamplingParams[] params,
                                   long[] steps, TokenCounts[] counts) {
        int rows = params.length;
        if (steps.length != rows || (counts != null && counts.length != rows)) {
            throw new IllegalArgumentException(rows + " rows of parameters but " + steps.length + " steps"
                    + (counts == null ? "" : " and " + counts.length + " token counts"));
        }
        for (int r = 0; r < rows; r++) {
            requireCounts(params[r], counts == null ? null : counts[r]);
        }
        if (kernels != null && logits.isNative()) {
            return kernels.sampleRows(logits, vocab, SamplingArguments.of(params, steps, counts));
        }
        int[] out = new int[rows];
        float[] l = new float[vocab];
        for (int r = 0; r < rows; r++) {
            MemorySegment.copy(logits, F, (long) r * vocab * 4L, l, 0, vocab);
            out[r] = sample(l, params[r], steps[r], counts == null ? null : counts[r]);
        }
        return out;
    }

    private static void requireCounts(SamplingParams p, TokenCounts counts) {
        if (p.needsTokenCounts() && counts == null) {
            throw new IllegalArgumentException("a row with penalties or bad words needs its sequence's token counts");
        }
    }

    /** Same as {@link #sample(MemorySegment, long, int, SamplingParams, long)} on a Java array. */
    public static int sample(float[] logits, SamplingParams params, long step) {
        return sample(logits, params, step, null);
    }

    /**
     * The token at output position {@code step} from one row of logits, in double precision, in
     * vLLM's order: logit bias, the min-tokens and bad-words masks, the penalties over
     * {@code counts} (needed where {@code params} penalizes or has bad words), then the argmax
     * (temperature 0) or softmax(x / temperature) cut by min-p, top-k and top-p, drawn with the
     * (seed, step) uniform number.
     */
    public static int sample(float[] logits, SamplingParams params, long step, TokenCounts counts) {
        requireCounts(params, counts);
        double[] x = edited(logits, params, step, counts);
        if (params.isGreedy()) {
            return argmax(x);
        }
        int vocab = x.length;
        double max = Double.NEGATIVE_INFINITY;
        for (double v : x) {
            if (v > max) {
                max = v;
            }
        }
        if (max == Double.NEGATIVE_INFINITY || max == Double.POSITIVE_INFINITY) {
            return argmax(x); // all -inf or NaN: nothing to sample from; +inf: its first
        }
        double invT = 1.0 / params.temperature();
        double[] p = new double[vocab];
        for (int i = 0; i < vocab; i++) {
            p[i] = Double.isNaN(x[i]) ? 0 : Math.exp((x[i] - max) * invT);
        }
        // min-p, then top-k, on the probabilities (the largest is exp(0) = 1)
        double floor = params.minP();
        if (params.topK() > 0 && params.topK() < vocab) {
            double[] sorted = p.clone();
            Arrays.sort(sorted);
            floor = Math.max(floor, sorted[vocab - params.topK()]);
        }
        double sum = 0;
        for (int i = 0; i < vocab; i++) {
            if (p[i] < floor) {
                p[i] = 0;
            }
            sum += p[i];
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
     * The row in double with vLLM's edits of the raw logits: logit bias, then the stop tokens at
     * -inf before {@code minTokens} and the bad words' banned tokens at -inf, then the repetition
     * penalty (a positive logit divided, any other multiplied), then frequency and presence
     * (OpenAI's: minus freq * count + presence).
     */
    static double[] edited(float[] logits, SamplingParams params, long step, TokenCounts counts) {
        int vocab = logits.length;
        double[] x = new double[vocab];
        for (int i = 0; i < vocab; i++) {
            x[i] = logits[i];
        }
        for (var e : params.logitBias().entrySet()) {
            x[checkedId(e.getKey(), vocab, "logit bias")] += e.getValue();
        }
        if (params.masksStopsAt(step)) {
            for (int id : params.stopTokenIds()) {
                x[checkedId(id, vocab, "stop token")] = Double.NEGATIVE_INFINITY;
            }
        }
        params.forEachBanned(counts, id -> x[checkedId(id, vocab, "bad word token")] = Double.NEGATIVE_INFINITY);
        if (params.penalizes()) {
            double rep = params.repetitionPenalty();
            for (int j = 0; j < counts.size(); j++) {
                int id = checkedId(counts.token(j), vocab, "counted token");
                int c = counts.outputCount(j);
                double v = x[id] > 0 ? x[id] / rep : x[id] * rep;
                x[id] = v - params.frequencyPenalty() * (double) c - (c > 0 ? params.presencePenalty() : 0.0);
            }
        }
        return x;
    }

    private static int checkedId(int id, int vocab, String what) {
        if (id < 0 || id >= vocab) {
            throw new IllegalArgumentException(what + " id " + id + " is outside the vocabulary [0, " + vocab + ")");
        }
        return id;
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
    static int argmax(double[] x) {
        int best = 0;
        double bv = x[0];
        for (int i = 1; i < x.length; i++) {
            double v = x[i];
            if (v > bv || (Double.isNaN(bv) && !Double.isNaN(v))) {
                bv = v;
                best = i;
            }
        }
        return best;
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
