package io.radixkv.cache;

/**
 * Returns cache-owned pages to the page allocator (wired by the engine to the allocator's
 * {@code freeCached}). The cache calls it from {@link RadixCache#evict}, {@link
 * RadixCache#evictNamespace}, {@link RadixCache#dropNamespace} and {@link RadixCache#evictSubtree}
 * on the calling thread, <b>with no cache lock held</b>, after the pages have left the tree. The
 * array must not be retained or modified.
 */
@FunctionalInterface
public interface PageFreer {
    void free(int[] pages, int off, int len);
}
