package io.radixkv.kernels;

import java.lang.foreign.MemorySegment;

/**
 * One step's sampling arguments, one entry per logits row (radixkv.h's {@code rkv_sample_params}).
 * The optional arrays may be null: neutral for every row (top-k and min-p off, penalties 1 / 0 /
 * 0, no counts, no bias, no masked ids), so a step of temperature / top-p rows passes only those.
 * The lists are CSR: row r's bias entries are {@code biasIds[biasIndptr[r] .. biasIndptr[r + 1])},
 * its masked ids likewise; {@code counts[r]} holds {@code countsLen[r]} {@code rkv_token_count}
 * pairs in native memory (or is null with a length of 0).
 */
public record SamplingRows(float[] temperature, float[] topP, double[] uniform, int[] topK, float[] minP,
                           float[] repetitionPenalty, float[] presencePenalty, float[] frequencyPenalty,
                           MemorySegment[] counts, int[] countsLen, int[] biasIndptr, int[] biasIds,
                           float[] biasValues, int[] maskIndptr, int[] maskIds) {
    /** Temperature and top-p rows only. */
    public static SamplingRows of(float[] temperature, float[] topP, double[] uniform) {
        return new SamplingRows(temperature, topP, uniform, null, null, null, null, null, null, null, null, null, null,
                null, null);
    }

    public int rows() {
        return temperature.length;
    }
}
