package io.radixkv.cache;

/**
 * Observes pages joining and leaving the cache, for consumers outside the process (KV events for
 * cache-aware routers, an external KV tier that keeps evicted pages). Both calls run synchronously on
 * the thread that inserts or evicts (the engine thread in the engine) while it holds the namespace
 * tree's lock: an implementation must return quickly, never block, and never call back into the
 * cache. Ordering follows from that: a page's parent page is reported cached before it, and a page is
 * reported evicted before it is freed (so its KV bytes are still intact during the call, and a page id
 * reported evicted can be reported cached again only afterwards).
 */
public interface CacheListener {

    /**
     * Pages became cache-owned. {@code pages[i]} holds the next {@code pageSize} KV positions after
     * {@code parentPage} (and after {@code pages[i - 1]}).
     *
     * @param parentPage the page just before {@code pages[0]} on the path from the namespace's root,
     *                   or -1 when {@code pages[0]} is the first page of the sequence
     * @param kvKeys     one cache key per KV position of the pages ({@code pages.length * pageSize}
     *                   entries): the token id for a text token, the token's (negative) typed key
     *                   otherwise, repeated over every position of an image
     */
    void pagesCached(Namespace ns, int parentPage, int[] pages, int[] kvKeys);

    /** Pages left the cache (eviction of any kind); the array must not be retained or modified. */
    void pagesEvicted(Namespace ns, int[] pages);
}
