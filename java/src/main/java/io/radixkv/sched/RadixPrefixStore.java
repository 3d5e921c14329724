package io.radixkv.sched;

import io.radixkv.cache.InsertResult;
import io.radixkv.cache.MatchResult;
import io.radixkv.cache.NodeRef;
import io.radixkv.cache.RadixCache;
import java.util.Objects;

/** The radix cache seen through the scheduler's {@link PrefixStore}. */
public final class RadixPrefixStore implements PrefixStore {
    private final RadixCache cache;
    private final int pageSize;

    public RadixPrefixStore(RadixCache cache, int pageSize) {
        this.cache = Objects.requireNonNull(cache, "cache");
        this.pageSize = pageSize;
    }

    public RadixCache cache() {
        return cache;
    }

    @Override
    public boolean enabled() {
        return true;
    }

    @Override
    public int peekReusable(Key key, int tokenCount) {
        int matched = cache.peekMatchLength(key.namespace(), key.tokens());
        return RadixCache.reusableKvLength(Math.min(matched, tokenCount), tokenCount, pageSize);
    }

    @Override
    public Match matchAndLock(Key key, int tokenCount) {
        MatchResult m = cache.matchAndLock(key.namespace(), key.tokens());
        int reuse = RadixCache.reusableKvLength(Math.min(m.matchedKvLen(), tokenCount), tokenCount, pageSize);
        return new Match(m.pages(), reuse, m.node());
    }

    @Override
    public Insert insertAndLock(Key key, int tokenCount, int[] pages) {
        InsertResult r = cache.insertAndLock(key.namespace(), key.tokens(), tokenCount, pages);
        return new Insert(r.node(), r.firstNewPageIdx(), r.insertedPages(), r.cachedPages());
    }

    @Override
    public void lock(NodeRef node) {
        if (node != null) {
            cache.lock(node);
        }
    }

    @Override
    public void unlock(NodeRef node) {
        if (node != null) {
            cache.unlock(node);
        }
    }

    @Override
    public int evictablePages() {
        return (int) cache.evictablePages();
    }

    @Override
    public int evict(int pages) {
        return (int) cache.evict(pages);
    }
}
