package io.radixkv.engine;

import io.radixkv.model.ModelConfig;
import io.radixkv.paging.KvPool;

/**
 * The KV pool's dimensions for one engine, derived from its settings and the model, with
 * errors naming the setting at fault.
 *
 * @param maxSeqLen longest sequence in tokens (prompt + output)
 * @param numPages pool size in pages
 * @param maxPagesPerSeq page-table width of one sequence
 */
record KvSizing(int maxSeqLen, int numPages, int maxPagesPerSeq) {
    /**
     * @throws IllegalArgumentException when the sequence limit exceeds the model's positions
     *     or the pool (given in pages or as a byte budget) holds fewer than 2 pages
     */
    static KvSizing of(EngineConfig config, ModelConfig model) {
        int ps = config.pageSize();
        int maxSeqLen = config.maxSeqLen() == 0 ? model.maxPositions() : config.maxSeqLen();
        if (maxSeqLen > model.maxPositions()) {
            throw new IllegalArgumentException("maxSeqLen " + maxSeqLen + " exceeds the model's maximum of "
                    + model.maxPositions() + " positions");
        }
        long bytesPerPage = KvPool.bytesPerPage(model.layers(), config.kvDtype(), ps, model.kvHeads(), model.headDim());
        int numPages = config.numPages() > 0 ? config.numPages()
                : KvPool.pagesForBudget(config.kvCacheBytes(), model.layers(), config.kvDtype(), ps, model.kvHeads(),
                        model.headDim());
        if (numPages == 0) {
            throw new IllegalArgumentException("kvCacheBytes " + config.kvCacheBytes() + " holds no KV page: one page of "
                    + ps + " tokens takes " + bytesPerPage + " bytes for this model (" + model.layers()
                    + " layers, " + model.kvHeads() + " KV heads of " + model.headDim() + ", "
                    + config.kvDtype() + ")");
        }
        if (numPages < 2) {
            throw new IllegalArgumentException("the KV pool must hold at least 2 pages, got " + numPages);
        }
        int maxPagesPerSeq = (int) Math.min((maxSeqLen + (long) ps - 1) / ps, numPages);
        return new KvSizing(maxSeqLen, numPages, maxPagesPerSeq);
    }
}
