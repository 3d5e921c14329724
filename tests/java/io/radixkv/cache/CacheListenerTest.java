package io.radixkv.cache;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The cache reports every page it takes (with its parent page and keys) and every page it drops. */
class CacheListenerTest {

    private record Cached(Namespace ns, int parent, int[] pages, int[] keys) {}

    private static final class Recorder implements CacheListener {
        final List<Cached> cached = new ArrayList<>();
        final List<int[]> evicted = new ArrayList<>();
        final List<Integer> freedAtEvictionCall = new ArrayList<>();
        int freedSoFar;

        @Override
        public void pagesCached(Namespace ns, int parentPage, int[] pages, int[] kvKeys) {
            cached.add(new Cached(ns, parentPage, pages.clone(), kvKeys.clone()));
        }

        @Override
        public void pagesEvicted(Namespace ns, int[] pages) {
            evicted.add(pages.clone());
            freedAtEvictionCall.add(freedSoFar);
        }
    }

    private static int[] seq(int from, int n) {
        int[] a = new int[n];
        Arrays.setAll(a, i -> from + i);
        return a;
    }

    @Test
    void reportsNewPagesWithParentAndKeysAndEvictionsBeforeTheFree() {
        Recorder rec = new Recorder();
        RadixCache cache = new RadixCache(4, (pages, off, len) -> rec.freedSoFar += len);
        cache.setListener(rec);
        Namespace ns = Namespace.ofSalt("t");
        int[] a = seq(1, 12); // 3 pages
        cache.insert(ns, TokenSequence.ofText(a), 12, new int[] {10, 11, 12});
        int[] b = a.clone();
        b[9] = 99; // shares 2 pages, then differs in the third
        cache.insert(ns, TokenSequence.ofText(b), 12, new int[] {10, 11, 20}); // only page 20 is new
        cache.insert(ns, TokenSequence.ofText(a), 12, new int[] {10, 11, 12}); // nothing new: no event

        assertEquals(2, rec.cached.size());
        Cached first = rec.cached.get(0);
        assertEquals(ns, first.ns());
        assertEquals(-1, first.parent());
        assertArrayEquals(new int[] {10, 11, 12}, first.pages());
        assertArrayEquals(a, first.keys());
        Cached second = rec.cached.get(1);
        assertEquals(11, second.parent(), "the page before the new one on the path");
        assertArrayEquals(new int[] {20}, second.pages());
        assertArrayEquals(Arrays.copyOfRange(b, 8, 12), second.keys());

        assertEquals(4, cache.evict(100));
        int evictedPages = rec.evicted.stream().mapToInt(p -> p.length).sum();
        assertEquals(4, evictedPages);
        assertEquals(0, rec.freedAtEvictionCall.get(0), "a page is reported evicted before it is freed");
        assertEquals(4, rec.freedSoFar);
    }
}
