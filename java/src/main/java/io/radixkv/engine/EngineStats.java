package io.radixkv.engine;

/**
 * Engine-wide counters, a consistent snapshot taken on the engine thread after a step.
 *
 * @param steps engine steps run (forward passes)
 * @param submitted requests submitted
 * @param finished requests completed (any reason)
 * @param cacheHitRate prefill positions served from the prefix cache / all prefill positions
 *     (reused + computed, over every admission)
 * @param reusedTokens prefill positions mapped from the cache instead of computed
 * @param prefillTokens prefill positions computed (including recompute after preemption)
 * @param decodeTokens tokens decoded
 * @param preemptions requests preempted for lack of pages
 * @param evictedPages cached pages evicted
 * @param deferredChunks prefill chunks held back while another request computed the shared prefix
 * @param duplicatePagesDropped private pages replaced by the cache's copy of the same tokens
 * @param numPages pool size in pages
 * @param freePages pages free now
 * @param cachedPages pages owned by the prefix cache now
 * @param peakPagesUsed most pages pinned by running requests at once (allocated, not evictable)
 * @param peakPagesAllocated most pages allocated at once (private + cached)
 * @param running requests admitted now
 * @param waiting requests queued now
 * @param forwardNanos time spent in the model's forward passes (the rest of {@code stepNanos}
 *     is scheduling, sampling and streaming)
 * @param stepNanos time spent in engine steps
 */
public record EngineStats(long steps, long submitted, long finished, double cacheHitRate, long reusedTokens,
                          long prefillTokens, long decodeTokens, long preemptions, long evictedPages,
                          long deferredChunks, long duplicatePagesDropped, int numPages, int freePages,
                          int cachedPages, int peakPagesUsed, int peakPagesAllocated, int running, int waiting,
                          long forwardNanos, long stepNanos) {}
