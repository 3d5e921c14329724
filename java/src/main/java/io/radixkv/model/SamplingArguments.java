package io.radixkv.model;

import io.radixkv.kernels.SamplingRows;
import java.lang.foreign.MemorySegment;
import java.util.Map;

/**
 * A step's {@link SamplingParams} as the native sampler's per-row arrays. Each optional array
 * is built only when some row uses it, so a step of temperature / top-p rows passes three
 * arrays as before; bias and masked ids (min-tokens' stop ids, the bad words' banned tokens) are
 * short lists (CSR), and the penalties' token counts
 * are each sequence's own native table ({@link TokenCounts}), passed by pointer.
 */
final class SamplingArguments {
    private SamplingArguments() {}

    static SamplingRows of(SamplingParams[] params, long[] steps, TokenCounts[] counts) {
        int rows = params.length;
        float[] t = new float[rows];
        float[] p = new float[rows];
        double[] u = new double[rows];
        boolean cuts = false;
        boolean penalties = false;
        int biases = 0;
        int masked = 0;
        for (int r = 0; r < rows; r++) {
            SamplingParams s = params[r];
            t[r] = s.isGreedy() ? 0f : s.temperature();
            p[r] = s.topP();
            u[r] = Sampler.uniform(s.seed(), steps[r]);
            cuts |= s.topK() > 0 || s.minP() > 0f;
            penalties |= s.penalizes();
            biases += s.logitBias().size();
            masked += (s.masksStopsAt(steps[r]) ? s.stopTokenIds().size() : 0) + s.badWords().size();
        }
        if (!cuts && !penalties && biases == 0 && masked == 0) {
            return SamplingRows.of(t, p, u);
        }
        int[] topK = null;
        float[] minP = null;
        if (cuts) {
            topK = new int[rows];
            minP = new float[rows];
            for (int r = 0; r < rows; r++) {
                topK[r] = Math.max(0, params[r].topK());
                minP[r] = params[r].minP();
            }
        }
        float[] rep = null;
        float[] pres = null;
        float[] freq = null;
        MemorySegment[] tables = null;
        int[] lengths = null;
        if (penalties) {
            rep = new float[rows];
            pres = new float[rows];
            freq = new float[rows];
            tables = new MemorySegment[rows];
            lengths = new int[rows];
            for (int r = 0; r < rows; r++) {
                SamplingParams s = params[r];
                rep[r] = s.repetitionPenalty();
                pres[r] = s.presencePenalty();
                freq[r] = s.frequencyPenalty();
                if (s.penalizes()) {
                    tables[r] = counts[r].entries();
                    lengths[r] = counts[r].size();
                }
            }
        }
        int[] biasIndptr = null;
        int[] biasIds = null;
        float[] biasValues = null;
        if (biases > 0) {
            biasIndptr = new int[rows + 1];
            biasIds = new int[biases];
            biasValues = new float[biases];
            int n = 0;
            for (int r = 0; r < rows; r++) {
                for (Map.Entry<Integer, Float> e : params[r].logitBias().entrySet()) {
                    biasIds[n] = e.getKey();
                    biasValues[n++] = e.getValue();
                }
                biasIndptr[r + 1] = n;
            }
        }
        int[] maskIndptr = null;
        int[] maskIds = null;
        if (masked > 0) {
            maskIndptr = new int[rows + 1];
            int[][] ids = {new int[masked]}; // grown by the bad words' banned ids
            int[] n = {0};
            for (int r = 0; r < rows; r++) {
                SamplingParams s = params[r];
                java.util.function.IntConsumer add = id -> {
                    if (n[0] == ids[0].length) {
                        ids[0] = java.util.Arrays.copyOf(ids[0], 2 * n[0]);
                    }
                    ids[0][n[0]++] = id;
                };
                if (s.masksStopsAt(steps[r])) {
                    s.stopTokenIds().forEach(add::accept);
                }
                if (!s.badWords().isEmpty()) {
                    s.forEachBanned(counts[r], add);
                }
                maskIndptr[r + 1] = n[0];
            }
            maskIds = ids[0];
        }
        return new SamplingRows(t, p, u, topK, minP, rep, pres, freq, tables, lengths, biasIndptr, biasIds, biasValues,
                maskIndptr, maskIds);
    }
}
