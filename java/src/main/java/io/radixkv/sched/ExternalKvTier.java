package io.radixkv.sched;

import io.radixkv.cache.Namespace;
import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * A KV store outside the process (e.g. a shared Redis) that may hold pages this cache does not:
 * on a local miss {@link TieredPrefixStore} asks it for the pages following the local match and
 * inserts what it finds into the radix tree instead of prefilling them. Engine thread only.
 */
public interface ExternalKvTier {

    /**
     * Page images ({@link io.radixkv.paging.KvPool#readPage} layout) of the full pages
     * {@code fromPage, fromPage + 1, ...} of {@code tokens} in {@code ns}: the longest consecutive run
     * found, at most {@code maxPages}, possibly empty. Any failure of the store (unreachable, corrupt
     * or foreign entry) is a shorter run, never an exception. May block up to the tier's timeout.
     */
    List<MemorySegment> fetch(Namespace ns, int[] tokens, int fromPage, int maxPages);
}
