package io.radixkv.kernels;

import java.lang.foreign.MemorySegment;

/**
 * Token sampling over rows of f32 logits in host memory: row r's logits edited by its logit
 * bias, masked ids and penalties, then (temperature 0) their argmax, or softmax(logits / t[r])
 * cut by min-p, top-k and the top-p nucleus and drawn with the caller's uniform number u[r]
 * (see {@code rkv_sample} in radixkv.h). The caller chooses u, so a token depends only on the
 * request's seed and step, not on the backend's threads or the other rows.
 */
public interface SamplingKernels {
    /**
     * @param logits f32 {@code [rows, vocab]} in native host memory, rows = {@code rows.rows()};
     *     never written
     * @return one token id per row
     */
    int[] sampleRows(MemorySegment logits, int vocab, SamplingRows rows);
}
