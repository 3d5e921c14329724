package io.radixkv.sched;

import io.radixkv.cache.NodeRef;
import io.radixkv.paging.BlockAllocator;
import io.radixkv.paging.KvPool;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * The radix cache backed by an {@link ExternalKvTier}: a match that stops short of the prompt asks
 * the tier for the following full pages; the pages it returns are copied into freshly allocated
 * pool pages and inserted into the tree, so the request maps them like any cached prefix and
 * prefills only the rest. When the tier has nothing, or no page can be allocated, the result is
 * exactly the local match. Engine thread only.
 */
public final class TieredPrefixStore implements PrefixStore {
    private final RadixPrefixStore local;
    private final ExternalKvTier tier;
    private final BlockAllocator allocator;
    private final KvPool pool;
    private final int pageSize;
    private long fetchedPages;

    public TieredPrefixStore(RadixPrefixStore local, ExternalKvTier tier, BlockAllocator allocator, KvPool pool) {
        this.local = Objects.requireNonNull(local, "local");
        this.tier = Objects.requireNonNull(tier, "tier");
        this.allocator = Objects.requireNonNull(allocator, "allocator");
        this.pool = Objects.requireNonNull(pool, "pool");
        this.pageSize = pool.pageSize();
    }

    /** Pages loaded from the tier so far. */
    public long fetchedPages() {
        return fetchedPages;
    }

    @Override
    public boolean enabled() {
        return true;
    }

    @Override
    public int peekReusable(Key key, int tokenCount) {
        return local.peekReusable(key, tokenCount); // admission cost stays conservative: no remote I/O here
    }

    @Override
    public Match matchAndLock(Key key, int tokenCount) {
        Match m = local.matchAndLock(key, tokenCount);
        int have = m.pages().length;
        int limit = (tokenCount - 1) / pageSize; // at least one token is always computed
        if (have >= limit || key.tokens().size() < tokenCount) {
            return m;
        }
        int[] tokens = key.tokens().kvKeys(0, limit * pageSize);
        for (int t : tokens) {
            if (t < 0) {
                return m; // typed (image) tokens: the tier keys text pages only
            }
        }
        List<MemorySegment> found = tier.fetch(key.namespace(), tokens, have, limit - have);
        int k = Math.min(found.size(), limit - have);
        if (k == 0) {
            return m;
        }
        int[] pages = Arrays.copyOf(m.pages(), have + k);
        if (!allocator.allocate(k, BlockAllocator.NO_OWNER, pages, have, have == 0 ? -1 : pages[have - 1])) {
            return m;
        }
        for (int i = 0; i < k; i++) {
            pool.writePage(pages[have + i], found.get(i));
        }
        Insert ins;
        try {
            ins = local.insertAndLock(key, (have + k) * pageSize, pages);
        } catch (RuntimeException e) {
            allocator.free(pages, have, k);
            throw e;
        }
        int from = ins.firstNewPageIdx();
        for (int i = have; i < have + k; i++) {
            if (i >= from && i < from + ins.insertedPages()) {
                allocator.transferToCache(pages[i]);
            } else {
                allocator.free(pages[i]); // the tree already held these tokens: ours is a duplicate
            }
        }
        local.unlock(m.node());
        fetchedPages += ins.insertedPages();
        int reuse = Math.min(ins.firstNewPageIdx() + ins.insertedPages(), limit) * pageSize;
        return new Match(ins.cachedPages(), reuse, ins.node());
    }

    @Override
    public Insert insertAndLock(Key key, int tokenCount, int[] pages) {
        return local.insertAndLock(key, tokenCount, pages);
    }

    @Override
    public void lock(NodeRef node) {
        local.lock(node);
    }

    @Override
    public void unlock(NodeRef node) {
        local.unlock(node);
    }

    @Override
    public int evictablePages() {
        return local.evictablePages();
    }

    @Override
    public int evict(int pages) {
        return local.evict(pages);
    }
}
