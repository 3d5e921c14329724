package io.radixkv.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

/** Each policy's eviction order on the same history (SGLang's set). */
class EvictionPolicyTest {

    /**
     * Three single-page leaves 1, 2, 3 inserted in that order with priorities 5, 9, 1; then leaf 3
     * is matched twice and leaf 1 once. Last access: 2 &lt; 3 &lt; 1; hits: 2=0, 1=1, 3=2; creation
     * 1 &lt; 2 &lt; 3.
     */
    @ParameterizedTest
    @CsvSource({"LRU, 2 3 1", "MRU, 1 3 2", "FIFO, 1 2 3", "FILO, 3 2 1", "LFU, 2 1 3", "PRIORITY, 3 1 2"})
    void evictionOrder(EvictionPolicy policy, String expected) {
        List<Integer> order = new ArrayList<>();
        AtomicLong clock = new AtomicLong();
        RadixCache cache = new RadixCache(1, policy, (p, off, len) -> {
            for (int i = off; i < off + len; i++) {
                order.add(p[i]);
            }
        }, clock::incrementAndGet);
        int[] prio = {0, 5, 9, 1};
        for (int leaf = 1; leaf <= 3; leaf++) {
            cache.insert(Namespace.DEFAULT, TokenSequence.ofText(new int[] {leaf}), 1, new int[] {leaf}, prio[leaf]);
        }
        cache.match(Namespace.DEFAULT, TokenSequence.ofText(new int[] {3}));
        cache.match(Namespace.DEFAULT, TokenSequence.ofText(new int[] {3}));
        cache.match(Namespace.DEFAULT, TokenSequence.ofText(new int[] {1}));
        for (int i = 0; i < 3; i++) {
            assertEquals(1, cache.evict(1));
        }
        assertEquals(0, cache.evict(1));
        assertEquals(expected, String.join(" ", order.stream().map(String::valueOf).toList()));
    }

    /** Leaves first, then parents that became leaves, still in policy order. */
    @ParameterizedTest
    @CsvSource({"LRU", "MRU", "FIFO", "FILO", "LFU", "PRIORITY"})
    void leavesBeforeParentsUnderEveryPolicy(EvictionPolicy policy) {
        List<Integer> order = new ArrayList<>();
        AtomicLong clock = new AtomicLong();
        RadixCache cache = new RadixCache(1, policy, (p, off, len) -> {
            for (int i = off; i < off + len; i++) {
                order.add(p[i]);
            }
        }, clock::incrementAndGet);
        // [10] -> {[11], [12]}
        cache.insert(Namespace.DEFAULT, TokenSequence.ofText(new int[] {10, 11}), 2, new int[] {10, 11});
        cache.insert(Namespace.DEFAULT, TokenSequence.ofText(new int[] {10, 12}), 2, new int[] {10, 12});
        assertEquals(3, cache.evict(3));
        assertEquals(10, order.getLast());
    }

    @Test
    void lruRekeysNodesAccessedAfterTheyWereQueued() {
        List<Integer> order = new ArrayList<>();
        AtomicLong clock = new AtomicLong();
        RadixCache cache = new RadixCache(1, EvictionPolicy.LRU, (p, off, len) -> order.add(p[off]), clock::incrementAndGet);
        for (int leaf = 1; leaf <= 50; leaf++) {
            cache.insert(Namespace.DEFAULT, TokenSequence.ofText(new int[] {leaf}), 1, new int[] {leaf});
        }
        for (int leaf = 1; leaf <= 50; leaf += 2) { // odd leaves become recent
            cache.match(Namespace.DEFAULT, TokenSequence.ofText(new int[] {leaf}));
        }
        cache.evict(25);
        assertEquals(25, order.size());
        for (int i = 0; i < 25; i++) {
            assertEquals(2 * (i + 1), order.get(i));
        }
    }

    /**
     * [1,2,3] regains leaf status after its extension [4,5] is evicted; it was used more recently than [7,8], so MRU must free it next (SGLang recomputes keys at evict time).
     */
    @Test
    void mruRekeysANodeThatRegainsLeafStatus() {
        List<Integer> order = new ArrayList<>();
        AtomicLong clock = new AtomicLong();
        RadixCache cache = new RadixCache(1, EvictionPolicy.MRU, (p, off, len) -> {
            for (int i = off; i < off + len; i++) {
                order.add(p[i]);
            }
        }, clock::incrementAndGet);
        cache.insert(Namespace.DEFAULT, TokenSequence.ofText(new int[] {1, 2, 3}), 3, new int[] {1, 2, 3});
        cache.insert(Namespace.DEFAULT, TokenSequence.ofText(new int[] {7, 8}), 2, new int[] {7, 8});
        cache.insert(Namespace.DEFAULT, TokenSequence.ofText(new int[] {1, 2, 3, 4, 5}), 5, new int[] {1, 2, 3, 4, 5});
        assertEquals(2, cache.evict(2));
        assertEquals(List.of(4, 5), order);
        assertEquals(3, cache.evict(1));
        assertEquals(List.of(4, 5, 1, 2, 3), order);
    }

    /** The same for a leaf matched while locked: unlocking makes it evictable with its new key. */
    @Test
    void mruRekeysALeafAccessedWhileLocked() {
        List<Integer> order = new ArrayList<>();
        AtomicLong clock = new AtomicLong();
        RadixCache cache = new RadixCache(1, EvictionPolicy.MRU, (p, off, len) -> order.add(p[off]),
                clock::incrementAndGet);
        cache.insert(Namespace.DEFAULT, TokenSequence.ofText(new int[] {1}), 1, new int[] {1});
        cache.insert(Namespace.DEFAULT, TokenSequence.ofText(new int[] {2}), 1, new int[] {2});
        MatchResult m = cache.matchAndLock(Namespace.DEFAULT, TokenSequence.ofText(new int[] {1}));
        cache.insert(Namespace.DEFAULT, TokenSequence.ofText(new int[] {3}), 1, new int[] {3});
        cache.match(Namespace.DEFAULT, TokenSequence.ofText(new int[] {1})); // while locked
        cache.unlock(m.node());
        assertEquals(1, cache.evict(1));
        assertEquals(List.of(1), order); // [1] was used last
    }

    @Test
    void priorityPropagatesUpThePath() {
        List<Integer> order = new ArrayList<>();
        AtomicLong clock = new AtomicLong();
        RadixCache cache = new RadixCache(1, EvictionPolicy.PRIORITY, (p, off, len) -> order.add(p[off]), clock::incrementAndGet);
        cache.insert(Namespace.DEFAULT, TokenSequence.ofText(new int[] {1, 2}), 2, new int[] {1, 2}, 0);
        cache.insert(Namespace.DEFAULT, TokenSequence.ofText(new int[] {1, 2, 3}), 3, new int[] {1, 2, 3}, 7);
        cache.insert(Namespace.DEFAULT, TokenSequence.ofText(new int[] {5}), 1, new int[] {5}, 3);
        cache.evict(1);
        assertEquals(List.of(5), order); // [1,2] was raised to 7 by its high-priority extension
    }
}
