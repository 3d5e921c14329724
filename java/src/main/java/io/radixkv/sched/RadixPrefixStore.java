package io.radixkv.sched;

import io.radixkv.cache.InsertResult;
import io.radixkv.cache.MatchResult;
import io.radixkv.cache.Namespace;
import io.radixkv.cache.NodeRef;
import io.radixkv.cache.RadixCache;
import io.radixkv.cache.TokenSequence;
import java.util.Objects;

/** The radix cache seen through the scheduler's {@link PrefixStore}. */
public final class RadixPrefixStore implements PrefixStore {
    /** A namespace and its token sequence. */
    private record Key(Namespace ns, TokenSequence seq) {}

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
    public Object key(Object namespace, int[] tokens) {
        return new Key((Namespace) namespace, TokenSequence.ofText(tokens));
    }

    @Override
    public int peekReusable(Object key, int tokenCount) {
        Key k = (Key) key;
        int matched = cache.peekMatchLength(k.ns(), k.seq());
        return RadixCache.reusableKvLength(Math.min(matched, tokenCount), tokenCount, pageSize);
    }

    @Override
    public Match matchAndLock(Object key, int tokenCount) {
        Key k = (Key) key;
        MatchResult m = cache.matchAndLock(k.ns(), k.seq());
        int reuse = RadixCache.reusableKvLength(Math.min(m.matchedKvLen(), tokenCount), tokenCount, pageSize);
        return new Match(m.pages(), reuse, m.node());
    }

    @Override
    public Insert insertAndLock(Object key, int tokenCount, int[] pages) {
        Key k = (Key) key;
        InsertResult r = cache.insertAndLock(k.ns(), k.seq(), tokenCount, pages);
        return new Insert(r.node(), r.firstNewPageIdx(), r.insertedPages(), r.cachedPages());
    }

    @Override
    public void lock(Object node) {
        if (node != null) {
            cache.lock((NodeRef) node);
        }
    }

    @Override
    public void unlock(Object node) {
        if (node != null) {
            cache.unlock((NodeRef) node);
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
