package io.radixkv.cache;

import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * Concurrent bit set of page ids owned by the cache (1 bit per page id, chunks allocated lazily).
 * Lets insert refuse a page the cache already owns (a caller bug that would otherwise lead to a
 * double free) and answers {@link RadixCache#containsPage}.
 */
final class PageOwnership {
    private static final int CHUNK_BITS = 18; // 262144 pages (32 KiB) per chunk, 512 chunk slots
    private static final int CHUNK_WORDS = (1 << CHUNK_BITS) / 64;
    private final AtomicReferenceArray<AtomicLongArray> chunks = new AtomicReferenceArray<>(1 << (31 - CHUNK_BITS));

    private AtomicLongArray chunk(int page, boolean create) {
        int c = page >>> CHUNK_BITS;
        AtomicLongArray a = chunks.get(c);
        if (a == null && create) {
            chunks.compareAndSet(c, null, new AtomicLongArray(CHUNK_WORDS));
            a = chunks.get(c);
        }
        return a;
    }

    boolean contains(int page) {
        if (page < 0) {
            return false;
        }
        AtomicLongArray a = chunk(page, false);
        return a != null && (a.get((page & ((1 << CHUNK_BITS) - 1)) >>> 6) & (1L << page)) != 0;
    }

    /** Sets the bit; false if it was already set. */
    boolean claim(int page) {
        AtomicLongArray a = chunk(page, true);
        int w = (page & ((1 << CHUNK_BITS) - 1)) >>> 6;
        long bit = 1L << page;
        while (true) {
            long old = a.get(w);
            if ((old & bit) != 0) {
                return false;
            }
            if (a.compareAndSet(w, old, old | bit)) {
                return true;
            }
        }
    }

    void release(int page) {
        AtomicLongArray a = chunk(page, false);
        int w = (page & ((1 << CHUNK_BITS) - 1)) >>> 6;
        long bit = 1L << page;
        while (true) {
            long old = a.get(w);
            if (a.compareAndSet(w, old, old & ~bit)) {
                return;
            }
        }
    }
}
