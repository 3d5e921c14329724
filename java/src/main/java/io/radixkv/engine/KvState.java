package io.radixkv.engine;

import io.radixkv.cache.RadixCache;
import io.radixkv.kernels.BackendMemory;
import io.radixkv.kernels.PagedKvLayout;
import io.radixkv.model.ModelConfig;
import io.radixkv.paging.BlockAllocator;
import io.radixkv.paging.KvPool;
import io.radixkv.paging.KvSequences;
import io.radixkv.sched.KvManager;
import io.radixkv.sched.PrefixStore;
import io.radixkv.sched.RadixPrefixStore;
import io.radixkv.sched.Scheduler;
import io.radixkv.sched.TieredPrefixStore;

/**
 * The engine's KV memory: the pool, the page allocator, the per-sequence page tables, the
 * prefix cache (when on) and the {@link KvManager} over them. Owns the pool and the page
 * tables (closed together). Engine thread only, except construction and {@link #close}.
 */
final class KvState implements AutoCloseable {
    private final KvPool pool;
    private final BlockAllocator allocator;
    private final KvSequences seqs;
    private final RadixCache cache;
    private final KvManager kv;
    private long evictedPages;

    KvState(EngineConfig config, ModelConfig model, KvSizing sizing, BackendMemory memory) {
        this(config, model, sizing, memory, null);
    }

    /** With an optional {@link KvExtension} (null: none), attached when the prefix cache is on. */
    KvState(EngineConfig config, ModelConfig model, KvSizing sizing, BackendMemory memory, KvExtension extension) {
        int ps = config.pageSize();
        PagedKvLayout layout = new PagedKvLayout(config.kvDtype(), sizing.numPages(), ps, model.kvHeads(),
                model.headDim());
        this.pool = new KvPool(memory, model.layers(), layout, config.kvScale(), config.kvScale());
        this.allocator = new BlockAllocator(sizing.numPages());
        this.seqs = new KvSequences(allocator, ps, config.maxRunning(), sizing.maxPagesPerSeq());
        PrefixStore store;
        if (config.prefixCache()) {
            this.cache = new RadixCache(ps, config.evictionPolicy(), (pages, off, len) -> {
                allocator.freeCached(pages, off, len);
                evictedPages += len;
            });
            RadixPrefixStore radix = new RadixPrefixStore(cache, ps);
            KvExtension.Hooks hooks = extension == null ? null : extension.attach(config, model, pool);
            if (hooks != null && hooks.listener() != null) {
                cache.setListener(hooks.listener());
            }
            store = hooks != null && hooks.tier() != null
                    ? new TieredPrefixStore(radix, hooks.tier(), allocator, pool) : radix;
        } else {
            this.cache = null;
            store = PrefixStore.disabled();
        }
        this.kv = new KvManager(seqs, store);
    }

    KvPool pool() {
        return pool;
    }

    BlockAllocator allocator() {
        return allocator;
    }

    KvSequences sequences() {
        return seqs;
    }

    KvManager manager() {
        return kv;
    }

    /** Cached pages evicted so far. */
    long evictedPages() {
        return evictedPages;
    }

    /** Evicts every unlocked cached page of namespace {@code ns} (an unloaded adapter's); returns the pages freed. */
    int evictNamespace(io.radixkv.cache.Namespace ns) {
        return cache == null ? 0 : cache.evictNamespace(ns);
    }

    /** Evicts every unlocked cached page; returns the pages freed. */
    int evictAll() {
        return cache == null ? 0 : (int) cache.evict(allocator.numPages());
    }

    /**
     * Checks page conservation: the allocator's and page tables' invariants, the cache's
     * ownership matching the allocator's CACHED pages, and, when {@code expectIdle}, that no
     * request holds a page (every allocated page is the cache's).
     *
     * @throws IllegalStateException describing a violation
     */
    void checkInvariants(Scheduler scheduler, boolean expectIdle) {
        kv.checkInvariants();
        int cachedByCache = cache == null ? 0 : (int) cache.metrics().cachedPages();
        if (cachedByCache != allocator.cachedPages()) {
            throw new IllegalStateException("the cache owns " + cachedByCache + " pages but the allocator has "
                    + allocator.cachedPages() + " CACHED pages");
        }
        if (!expectIdle) {
            return;
        }
        if (scheduler.runningCount() != 0 || scheduler.waitingCount() != 0) {
            throw new IllegalStateException("engine not idle: " + scheduler.runningCount() + " running, "
                    + scheduler.waitingCount() + " waiting");
        }
        if (allocator.privatePages() != 0 || seqs.openCount() != 0) {
            throw new IllegalStateException("leak: " + allocator.privatePages() + " private pages and "
                    + seqs.openCount() + " open sequences with no request running");
        }
        if (cache != null && cache.metrics().protectedPages() != 0) {
            throw new IllegalStateException("leak: " + cache.metrics().protectedPages()
                    + " cached pages still locked with no request running");
        }
        if (allocator.freePages() + allocator.cachedPages() != allocator.numPages()) {
            throw new IllegalStateException("free " + allocator.freePages() + " + cached "
                    + allocator.cachedPages() + " != " + allocator.numPages());
        }
    }

    @Override
    public void close() {
        seqs.close();
        pool.close();
    }
}
