package io.radixkv.kvtier;

import io.radixkv.cache.Namespace;
import java.util.HashMap;
import java.util.Map;

/**
 * The chained hash of every page the cache holds, kept from the cache's own events: a new page's
 * hash covers its parent page's hash (looked up here), so a cached page never needs its whole
 * prefix rehashed. Engine thread only (called from {@link io.radixkv.cache.CacheListener}).
 */
final class PageHashes {
    private final BlockHasher hasher;
    private final int pageSize;
    private final Map<Integer, byte[]> byPage = new HashMap<>();

    PageHashes(BlockHasher hasher, int pageSize) {
        this.hasher = hasher;
        this.pageSize = pageSize;
    }

    int pageSize() {
        return pageSize;
    }

    BlockHasher hasher() {
        return hasher;
    }

    /**
     * Records and returns the hashes of newly cached pages, or null when the parent's hash is
     * unknown (a page cached before this tracker existed: its subtree is not reported).
     */
    byte[][] cached(Namespace ns, int parentPage, int[] pages, int[] kvKeys) {
        byte[] parent = null;
        if (parentPage >= 0) {
            parent = byPage.get(parentPage);
            if (parent == null) {
                return null;
            }
        }
        byte[][] out = new byte[pages.length][];
        for (int i = 0; i < pages.length; i++) {
            parent = out[i] = hasher.hash(parent, kvKeys, i * pageSize, pageSize, ns, parentPage < 0 && i == 0);
            byPage.put(pages[i], parent);
        }
        return out;
    }

    /** Forgets evicted pages; returns their hashes (null entries for unknown pages). */
    byte[][] evicted(int[] pages) {
        byte[][] out = new byte[pages.length][];
        for (int i = 0; i < pages.length; i++) {
            out[i] = byPage.remove(pages[i]);
        }
        return out;
    }

    /** The hash of a cached page, or null. */
    byte[] of(int page) {
        return byPage.get(page);
    }

    int size() {
        return byPage.size();
    }
}
