package io.radixkv.paging;

/**
 * Copies one KV page to another in every layer's K and V pool (the copy-on-write of a partial
 * page that forked sequences would otherwise share). {@link KvPool#copier} makes one over a
 * backend's kernels. Engine thread only.
 */
@FunctionalInterface
public interface PageCopier {
    /** Copies page {@code from} to page {@code to} (distinct pages) in every layer, K and V. */
    void copy(int from, int to);
}
