package io.radixkv.cache;

/**
 * Snapshot of cache counters ({@link RadixCache#metrics()}).
 *
 * @param hits             matches that reused at least one page
 * @param misses           matches that reused nothing
 * @param matchedTokens    tokens covered by matches (whole tokens)
 * @param queriedTokens    tokens presented to match
 * @param matchedKv        KV positions covered by matches
 * @param queriedKv        KV positions presented to match
 * @param insertedPages    pages the cache took ownership of through inserts
 * @param evictions        nodes evicted (including by namespace drops)
 * @param evictedPages     pages returned to the allocator
 * @param nodeCount        live nodes, namespace roots included
 * @param namespaces       live namespace trees
 * @param cachedPages      pages owned by the cache
 * @param evictablePages   cached pages in unlocked nodes (reclaimable on demand)
 * @param protectedPages   cached pages in locked nodes
 * @param treeBytes        approximate heap bytes of the tree (nodes, keys, page ids, child tables,
 *                         heap entries)
 * @param keyBytes         part of {@code treeBytes} spent on token keys
 */
public record CacheMetrics(long hits, long misses, long matchedTokens, long queriedTokens, long matchedKv,
                           long queriedKv, long insertedPages, long evictions, long evictedPages, long nodeCount,
                           long namespaces, long cachedPages, long evictablePages, long protectedPages,
                           long treeBytes, long keyBytes) {

    /** Token hit rate: matched / queried tokens (0 when nothing was queried). */
    public double hitRate() {
        return queriedTokens == 0 ? 0.0 : (double) matchedTokens / queriedTokens;
    }

    /** KV hit rate: matched / queried KV positions. */
    public double kvHitRate() {
        return queriedKv == 0 ? 0.0 : (double) matchedKv / queriedKv;
    }

    /** Approximate tree bytes per cached KV position, given the page size. */
    public double bytesPerCachedKv(int pageSize) {
        return cachedPages == 0 ? 0.0 : (double) treeBytes / (cachedPages * (double) pageSize);
    }
}
