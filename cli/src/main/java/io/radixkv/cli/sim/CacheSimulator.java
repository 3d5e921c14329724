package io.radixkv.cli.sim;

import io.radixkv.cache.EvictionPolicy;
import io.radixkv.cache.InsertResult;
import io.radixkv.cache.MatchResult;
import io.radixkv.cache.Namespace;
import io.radixkv.cache.NodeRef;
import io.radixkv.cache.RadixCache;
import io.radixkv.cache.TokenSequence;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntConsumer;

/**
 * Cache-only replay of a trace through {@link RadixCache} and a pool of N pages, for sizing a
 * prefix cache without running a model.
 *
 * <p>Requests run one at a time in trace order:
 * <ol>
 *   <li>match the prompt; reuse per the full-match rule ({@link RadixCache#reusableKvLength}:
 *       a prompt matched to its end reuses all but its last page, whose tokens are computed);
 *   <li>lock the matched path and take pages for the rest of the sequence (prompt + output:
 *       the request holds KV for everything it computes) from the free list, evicting
 *       unlocked cache pages when the free list is short; a request that cannot fit even
 *       with every unlocked page evicted is {@code rejected} (it hits nothing, changes nothing);
 *   <li>insert the prompt (plus the output with {@code cacheOutput}): the cache keeps the full
 *       pages it did not already hold; release the lock and free every page the cache did not
 *       take (duplicates of cached pages, the partial last page, uncached output pages).
 * </ol>
 * Access times come from a logical clock (one tick per cache operation), so results are
 * deterministic. {@code hit_tokens} counts prompt tokens whose KV is reused.
 */
public final class CacheSimulator {

    /**
     * @param pageSize tokens per page
     * @param pages pages in the pool (cache + running request)
     * @param policy eviction policy
     * @param cacheOutput whether generated tokens are inserted too (multi-turn reuse)
     */
    public record Config(int pageSize, int pages, EvictionPolicy policy, boolean cacheOutput) {
        public Config {
            if (pageSize < 1) {
                throw new IllegalArgumentException("pageSize must be >= 1, got " + pageSize);
            }
            if (pages < 1) {
                throw new IllegalArgumentException("pages must be >= 1, got " + pages);
            }
            if (policy == null) {
                throw new IllegalArgumentException("policy must not be null");
            }
        }
    }

    /**
     * @param requests requests in the trace
     * @param promptTokens prompt tokens of all requests
     * @param hitTokens prompt tokens whose KV was reused (admitted requests)
     * @param evictedPages pages the cache evicted to make room
     * @param rejected requests that could not fit in the pool
     * @param cachedPages pages the cache holds at the end
     */
    public record Result(Config config, int requests, long promptTokens, long hitTokens, long evictedPages,
                         int rejected, long cachedPages) {
        public double hitRate() {
            return promptTokens == 0 ? 0 : (double) hitTokens / promptTokens;
        }
    }

    private final Config config;
    private final PagePool pool;
    private final RadixCache cache;
    private final Map<String, Namespace> namespaces = new HashMap<>();
    private long tick;
    private long evicted;

    public CacheSimulator(Config config) {
        this.config = config;
        this.pool = new PagePool(config.pages());
        this.cache = new RadixCache(config.pageSize(), config.policy(), (pages, off, len) -> {
            for (int i = 0; i < len; i++) {
                pool.free(pages[off + i]);
            }
            evicted += len;
        }, () -> ++tick);
    }

    /** Replays {@code trace} from an empty cache; {@code progress} receives each request index. */
    public static Result run(Config config, List<TraceRequest> trace, IntConsumer progress) {
        CacheSimulator sim = new CacheSimulator(config);
        long prompt = 0;
        long hits = 0;
        int rejected = 0;
        for (int i = 0; i < trace.size(); i++) {
            TraceRequest r = trace.get(i);
            prompt += r.promptLength();
            long reused = sim.process(r);
            if (reused < 0) {
                rejected++;
            } else {
                hits += reused;
            }
            progress.accept(i);
        }
        return new Result(config, trace.size(), prompt, hits, sim.evicted, rejected,
                config.pages() - sim.pool.free());
    }

    /** Processes one request; returns reused prompt tokens, or -1 when rejected. */
    long process(TraceRequest r) {
        int p = config.pageSize();
        int[] prompt = r.tokens();
        Namespace ns = namespace(r.namespace());
        MatchResult m = cache.match(ns, TokenSequence.ofText(prompt));
        int reusable = RadixCache.reusableKvLength(m.matchedKvLen(), prompt.length, p);
        int reusedPages = reusable / p;
        int seqLen = prompt.length + r.outputLength();
        int needed = ceilDiv(seqLen, p) - reusedPages;
        int[] matchedPages = m.pages();
        // Everything but the locked matched path is evictable (requests run one at a time).
        if (needed > config.pages() - matchedPages.length) {
            return -1;
        }
        NodeRef node = m.node();
        cache.lock(node);
        try {
            if (pool.free() < needed) {
                cache.evict(needed - pool.free());
            }
            if (pool.free() < needed) {
                throw new IllegalStateException("cache freed too few pages: need " + needed + ", free " + pool.free());
            }
            int[] pages = new int[reusedPages + needed];
            System.arraycopy(matchedPages, 0, pages, 0, reusedPages);
            for (int i = reusedPages; i < pages.length; i++) {
                pages[i] = pool.allocate();
            }
            int[] cached = config.cacheOutput() ? concat(prompt, r.output()) : prompt;
            InsertResult ins = cache.insert(ns, TokenSequence.ofText(cached), cached.length, pages, r.priority());
            // Free every page of ours that the cache did not keep.
            boolean[] kept = new boolean[pages.length];
            for (int i = 0; i < reusedPages; i++) {
                kept[i] = true; // already cache-owned
            }
            for (int i = ins.firstNewPageIdx(); i < ins.firstNewPageIdx() + ins.insertedPages(); i++) {
                kept[i] = true;
            }
            for (int i = reusedPages; i < pages.length; i++) {
                if (!kept[i]) {
                    pool.free(pages[i]);
                }
            }
        } finally {
            cache.unlock(node);
        }
        return reusable;
    }

    private Namespace namespace(String name) {
        if (name == null) {
            return Namespace.DEFAULT;
        }
        return namespaces.computeIfAbsent(name, Namespace::ofSalt);
    }

    private static int ceilDiv(int a, int b) {
        return Math.ceilDiv(a, b); // (a + b - 1) / b overflows for page sizes near Integer.MAX_VALUE
    }

    private static int[] concat(int[] a, int[] b) {
        int[] r = new int[a.length + b.length];
        System.arraycopy(a, 0, r, 0, a.length);
        System.arraycopy(b, 0, r, a.length, b.length);
        return r;
    }
}
