package io.radixkv.cache;

import java.util.ArrayDeque;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * The cache's live counters (page gauges kept incrementally, event totals as adders) and the
 * {@link CacheMetrics} snapshot with its estimate of the trees' heap bytes. Thread-safe; the gauges
 * are updated under the tree lock of the namespace that changed.
 */
final class CacheCounters {

    private final AtomicLong cachedPages = new AtomicLong();
    private final AtomicLong evictablePages = new AtomicLong();
    private final AtomicLong protectedPages = new AtomicLong();
    private final AtomicLong nodeCount = new AtomicLong();

    private final LongAdder hits = new LongAdder();
    private final LongAdder misses = new LongAdder();
    private final LongAdder matchedTokens = new LongAdder();
    private final LongAdder queriedTokens = new LongAdder();
    private final LongAdder matchedKv = new LongAdder();
    private final LongAdder queriedKv = new LongAdder();
    private final LongAdder insertedPages = new LongAdder();
    private final LongAdder evictions = new LongAdder();
    private final LongAdder evictedPages = new LongAdder();

    /** A match was asked for {@code tokens} tokens spanning {@code kv} KV positions. */
    void queried(int tokens, int kv) {
        queriedTokens.add(tokens);
        queriedKv.add(kv);
    }

    /** A match covered {@code kv} positions, {@code tokens} whole tokens (a miss when 0). */
    void matched(int kv, int tokens) {
        if (kv > 0) {
            hits.increment();
            matchedKv.add(kv);
            matchedTokens.add(tokens);
        } else {
            misses.increment();
        }
    }

    /** A split added a node (no pages change hands). */
    void nodeSplit() {
        nodeCount.incrementAndGet();
    }

    /** An insert added an unlocked node of {@code pages} pages the cache now owns. */
    void nodeInserted(int pages) {
        cachedPages.addAndGet(pages);
        evictablePages.addAndGet(pages);
        insertedPages.add(pages);
        nodeCount.incrementAndGet();
    }

    /** An unlocked node of {@code pages} pages left the tree. */
    void nodeEvicted(int pages) {
        cachedPages.addAndGet(-pages);
        evictablePages.addAndGet(-pages);
        nodeCount.decrementAndGet();
        evictions.increment();
        evictedPages.add(pages);
    }

    /** A node of {@code pages} pages got its first lock. */
    void protect(int pages) {
        evictablePages.addAndGet(-pages);
        protectedPages.addAndGet(pages);
    }

    /** A node of {@code pages} pages lost its last lock. */
    void release(int pages) {
        evictablePages.addAndGet(pages);
        protectedPages.addAndGet(-pages);
    }

    long cachedPages() {
        return cachedPages.get();
    }

    long evictablePages() {
        return evictablePages.get();
    }

    long protectedPages() {
        return protectedPages.get();
    }

    long nodeCount() {
        return nodeCount.get();
    }

    /**
     * Snapshot of the counters. Tree bytes are computed by walking every live tree (each under its
     * own lock): O(nodes), meant for reporting, not for hot paths.
     */
    CacheMetrics snapshot(Iterable<Tree> trees, int namespaces, long heapBytes) {
        long bytes = heapBytes, keyBytes = 0;
        for (Tree t : trees) {
            t.lock.lock();
            try {
                if (t.dead) {
                    continue;
                }
                bytes += 64 + 48; // tree + lock objects
                ArrayDeque<Node> stack = new ArrayDeque<>();
                stack.push(t.root);
                while (!stack.isEmpty()) {
                    Node n = stack.pop();
                    n.forEachChild(stack::push);
                    bytes += 96 + arrayBytes(4, n.pages.length) + (n.kids == null ? 0 : arrayBytes(4, n.kids.length));
                    if (n.label != null) {
                        long kb = labelBytes(n.label);
                        keyBytes += kb;
                        bytes += 40 + kb;
                    }
                }
            } finally {
                t.lock.unlock();
            }
        }
        return new CacheMetrics(hits.sum(), misses.sum(), matchedTokens.sum(), queriedTokens.sum(), matchedKv.sum(),
                queriedKv.sum(), insertedPages.sum(), evictions.sum(), evictedPages.sum(), nodeCount.get(),
                namespaces, cachedPages.get(), evictablePages.get(), protectedPages.get(), bytes, keyBytes);
    }

    private static long labelBytes(TokenSequence l) {
        long kb = arrayBytes(4, l.keys.length);
        if (l.imgTok.length > 0) {
            kb += 3 * arrayBytes(4, l.imgTok.length) + arrayBytes(8, l.imgHash.length);
        }
        return kb;
    }

    private static long arrayBytes(int elem, int n) {
        return (16 + (long) elem * n + 7) & ~7L;
    }
}
