package io.radixkv.model;

import io.radixkv.kernels.KvCacheView;
import io.radixkv.kernels.PageTableCsr;
import io.radixkv.kernels.PagedKvLayout;
import java.lang.foreign.ValueLayout;
import java.util.List;

/**
 * Everything {@link LlamaModel#forward} relies on, checked on the host copies before anything
 * runs: token ids in the vocabulary, one cache per layer of the model's shape and one layout,
 * the page table's structure, positions and slots agreeing with it, rows and logit rows in range,
 * output buffers large enough. A rejected batch changes neither the caches nor the logits.
 */
final class StepChecks {
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT;
    private static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG;

    private StepChecks() {}

    /** Checks everything forward relies on; returns true when the step is pure decode (one token per sequence). */
    static boolean validate(ModelConfig config, int maxTokens, ForwardBatch b, List<KvCacheView> caches,
                            StepOutput out) {
        if (b == null || caches == null) {
            throw new IllegalArgumentException("batch and layer caches must not be null");
        }
        int n = b.numTokens();
        if (n > maxTokens) {
            throw new IllegalArgumentException("batch has " + n + " tokens but the model was built for at most "
                    + maxTokens + " per step");
        }
        int vocab = config.vocab();
        for (int i = 0; i < n; i++) {
            int id = b.tokenIds().getAtIndex(I32, i);
            if (id < 0 || id >= vocab) {
                throw new IllegalArgumentException("token id " + id + " (row " + i + ") is outside the vocabulary [0, "
                        + vocab + ")");
            }
        }
        if (caches.size() != config.layers()) {
            throw new IllegalArgumentException("got " + caches.size() + " layer caches for a " + config.layers()
                    + "-layer model");
        }
        PagedKvLayout layout = null;
        for (int l = 0; l < caches.size(); l++) {
            KvCacheView c = caches.get(l);
            if (c == null) {
                throw new IllegalArgumentException("layer cache " + l + " is null");
            }
            PagedKvLayout lay = c.layout();
            if (lay.numKvHeads() != config.kvHeads() || lay.headDim() != config.headDim()) {
                throw new IllegalArgumentException("layer " + l + " cache has " + lay.numKvHeads() + " KV heads of "
                        + lay.headDim() + " but the model needs " + config.kvHeads() + " of " + config.headDim());
            }
            if (layout == null) {
                layout = lay;
            } else if (!layout.equals(lay)) {
                throw new IllegalArgumentException("layer " + l + " cache layout " + lay + " differs from layer 0's "
                        + layout);
            }
            if (!c.kCache().isNative() || !c.vCache().isNative()) {
                throw new IllegalArgumentException("layer " + l + " cache must be native (host) memory");
            }
        }
        PageTableCsr kv = b.kv();
        kv.validate(layout);
        int batch = kv.batchSize();
        if (batch == 0) {
            throw new IllegalArgumentException("the page table has no sequences but the batch has " + n + " tokens");
        }
        int pageSize = layout.pageSize();
        int first = b.qoIndptr().getAtIndex(I32, 0);
        if (first != 0) {
            throw new IllegalArgumentException("qo_indptr[0] must be 0, got " + first);
        }
        boolean decode = true;
        for (int s = 0; s < batch; s++) {
            int lo = b.qoIndptr().getAtIndex(I32, s);
            int hi = b.qoIndptr().getAtIndex(I32, s + 1);
            if (hi < lo || hi > n) {
                throw new IllegalArgumentException("qo_indptr[" + (s + 1) + "] = " + hi + " is outside " + lo + ".." + n);
            }
            int qLen = hi - lo;
            decode &= qLen == 1;
            long kvLen = kv.sequenceLength(s, pageSize);
            if (qLen > kvLen) {
                throw new IllegalArgumentException("sequence " + s + " has " + qLen + " new tokens but only " + kvLen
                        + " tokens in its pages (the page table must include the new tokens)");
            }
            int pageBase = kv.kvIndptr().getAtIndex(I32, s);
            for (int j = 0; j < qLen; j++) {
                int row = lo + j;
                long expectPos = kvLen - qLen + j;
                int pos = b.positions().getAtIndex(I32, row);
                if (pos != expectPos) {
                    throw new IllegalArgumentException("position " + pos + " at row " + row + " (sequence " + s
                            + ") should be " + expectPos + " by the page table");
                }
                if (pos >= config.maxPositions()) {
                    throw new IllegalArgumentException("position " + pos + " at row " + row + " exceeds the model's "
                            + config.maxPositions() + " positions");
                }
                long page = kv.kvIndices().getAtIndex(I32, pageBase + pos / pageSize);
                long expectSlot = page * pageSize + pos % pageSize;
                long slot = b.slotMapping().getAtIndex(I64, row);
                if (slot != expectSlot) {
                    throw new IllegalArgumentException("slot " + slot + " at row " + row + " (sequence " + s
                            + ", position " + pos + ") should be " + expectSlot + " by the page table");
                }
            }
        }
        int last = b.qoIndptr().getAtIndex(I32, batch);
        if (last != n) {
            throw new IllegalArgumentException("qo_indptr[" + batch + "] = " + last + " but the batch has " + n
                    + " tokens");
        }
        int r = b.numLogitRows();
        if (r > maxTokens) {
            throw new IllegalArgumentException(r + " logit rows exceed the model's " + maxTokens + " rows per step");
        }
        for (int i = 0; i < r; i++) {
            int row = b.logitRows().getAtIndex(I32, i);
            if (row < 0 || row >= n) {
                throw new IllegalArgumentException("logit row " + row + " (logitRows[" + i + "]) is outside [0, " + n
                        + ")");
            }
        }
        if (out == null) {
            throw new IllegalArgumentException("step output must not be null");
        }
        if (r > 0) {
            out.check(r, vocab);
        }
        return decode && batch == n;
    }
}
