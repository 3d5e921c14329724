package io.radixkv.cache;

import java.util.BitSet;

/**
 * Test page allocator: pages {@code [0, total)}, double-free detection, on-demand eviction from the
 * attached cache when it runs out (like the real allocator's out-of-pages hook). Thread-safe.
 */
final class TestPool implements PageFreer {
    final int total;
    private final BitSet free = new BitSet();
    private int freeCount;
    RadixCache cache;

    TestPool(int total) {
        this.total = total;
        free.set(0, total);
        freeCount = total;
    }

    synchronized int freeCount() {
        return freeCount;
    }

    synchronized boolean isFree(int page) {
        return free.get(page);
    }

    /** Allocates n pages, evicting from the cache if needed; IllegalStateException if impossible. */
    synchronized int[] allocate(int n) {
        if (freeCount < n && cache != null) {
            cache.evict(n - freeCount);
        }
        if (freeCount < n) {
            throw new IllegalStateException("cannot allocate " + n + " pages: " + freeCount
                    + " available, all cached prefixes are locked");
        }
        int[] out = new int[n];
        int p = 0;
        for (int i = 0; i < n; i++) {
            p = free.nextSetBit(p);
            free.clear(p);
            out[i] = p;
        }
        freeCount -= n;
        return out;
    }

    /** Returns a private page (or several). */
    synchronized void release(int... pages) {
        free(pages, 0, pages.length);
    }

    @Override
    public synchronized void free(int[] pages, int off, int len) {
        for (int i = off; i < off + len; i++) {
            int p = pages[i];
            if (p < 0 || p >= total) {
                throw new AssertionError("freeing page " + p + " outside the pool");
            }
            if (free.get(p)) {
                throw new AssertionError("double free of page " + p);
            }
            free.set(p);
        }
        freeCount += len;
    }
}
