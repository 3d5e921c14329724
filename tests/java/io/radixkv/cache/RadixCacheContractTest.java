package io.radixkv.cache;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * The prefix cache's contract: tree structure, prefix matching, insertion of decoded tokens,
 * lock counts against eviction, LRU and recursive eviction, hit metrics, multi-turn reuse,
 * namespaces and their locks, and concurrent matching and insertion.
 */
class RadixCacheContractTest {

    static final Namespace NS = Namespace.DEFAULT;
    final AtomicLong clock = new AtomicLong();
    final TestPool pool = new TestPool(1000);
    final RadixCache cache = new RadixCache(1, EvictionPolicy.LRU, pool, clock::incrementAndGet);
    final SimEngine eng = new SimEngine(cache, pool);

    static TokenSequence text(int... ids) {
        return TokenSequence.ofText(ids);
    }

    static int[] range(int from, int to) {
        return IntStream.range(from, to).toArray();
    }

    @Test
    void radixTreeStructure() {
        assertEquals(0, cache.namespaceCount());
        assertEquals(0, cache.nodeCount());
        InsertResult r = cache.insert(NS, text(1, 2, 3), 3, new int[] {7, 8, 9});
        assertEquals(1, cache.namespaceCount()); // root created by the first insert
        Node n = (Node) r.node();
        assertEquals(3, n.label.size()); // token subsequence
        assertArrayEquals(new int[] {7, 8, 9}, n.pages); // page references
        assertTrue(n.parent.isRoot());
        assertEquals(1, n.parent.kidCount); // child pointers
        assertArrayEquals(new int[] {7, 8, 9}, cache.match(NS, text(1, 2, 3)).pages());
    }

    @Test
    void prefixMatching() {
        cache.insert(NS, text(1, 2, 3, 4), 4, new int[] {10, 11, 12, 13});
        MatchResult exact = cache.match(NS, text(1, 2, 3, 4));
        assertArrayEquals(new int[] {10, 11, 12, 13}, exact.pages());
        MatchResult partial = cache.match(NS, text(1, 2, 9, 9, 9));
        assertEquals(2, partial.matchedTokens());
        assertEquals(2, partial.pages().length);
        MatchResult none = cache.match(NS, text(5, 6));
        assertEquals(0, none.matchedTokens());
        assertTrue(none.node().isRoot());
        // partial: reuse the matched part, allocate and insert the rest
        SimEngine.Seq s = eng.start(NS, text(1, 2, 9, 9, 9));
        assertEquals(2, s.reused);
        assertEquals(3, s.computed);
        eng.release(s);
    }

    @Test
    void incrementalInsertionOfDecodedTokensAndBranching() {
        SimEngine.Seq s = eng.start(NS, text(1, 2, 3));
        long before = cache.cachedPages();
        eng.decodeAndCache(s, new int[] {40, 41});
        assertEquals(before + 2, cache.cachedPages()); // only the new tokens were added
        assertEquals(5, cache.peekMatchLength(NS, text(1, 2, 3, 40, 41)));
        eng.release(s);
        // branch: diverge after [1,2]
        SimEngine.Seq b = eng.start(NS, text(1, 2, 7, 7));
        eng.release(b);
        MatchResult m = cache.match(NS, text(1, 2));
        assertEquals(2, ((Node) m.node()).kidCount);
    }

    @Test
    void referenceCountingPreventsEviction() {
        SimEngine.Seq a = eng.start(NS, text(1, 2, 3));
        SimEngine.Seq b = eng.start(NS, text(1, 2, 3, 4));
        Node shared = (Node) a.lockNode;
        assertEquals(2, shared.lockRef()); // reused by b too (b's node is below a's)
        eng.release(a);
        assertEquals(1, shared.lockRef());
        cache.evict(1000);
        assertEquals(4, cache.peekMatchLength(NS, text(1, 2, 3, 4)));
        eng.release(b);
        assertEquals(0, shared.lockRef());
        assertEquals(4, cache.evict(1000));
    }

    @Test
    void accessTimeTrackedAlongPathAndLruBranchEvicted() {
        int[] p = pool.allocate(3);
        cache.insert(NS, text(1, 2, 3), 3, p);
        cache.insert(NS, text(1, 2, 4), 3, new int[] {p[0], p[1], pool.allocate(1)[0]});
        cache.insert(NS, text(8, 9), 2, pool.allocate(2));
        MatchResult m = cache.match(NS, text(1, 2, 3));
        long t = ((Node) m.node()).lastAccess;
        Node parent = ((Node) m.node()).parent;
        assertEquals(t, parent.lastAccess); // ancestors refreshed too
        cache.evict(1); // oldest: [4] (inserted before [8,9], never matched since)
        assertEquals(0, cache.peekMatchLength(NS, text(1, 2, 4)) - 2);
        cache.evict(1); // then [8,9]
        assertEquals(0, cache.peekMatchLength(NS, text(8, 9)));
        assertEquals(3, cache.peekMatchLength(NS, text(1, 2, 3)));
    }

    @Test
    void recursiveEvictionOfASubtree() {
        cache.insert(NS, text(1, 2, 3), 3, pool.allocate(3));
        cache.insert(NS, text(1, 2, 4, 5), 4, new int[] {0, 0, pool.allocate(1)[0], pool.allocate(1)[0]});
        MatchResult m = cache.match(NS, text(1, 2)); // node [1,2] with children [3] and [4,5]
        MatchResult locked = cache.matchAndLock(NS, text(1, 2, 3));
        assertThrows(IllegalStateException.class, () -> cache.evictSubtree(m.node()));
        assertEquals(5, cache.cachedPages());
        cache.unlock(locked.node());
        int free = pool.freeCount();
        assertEquals(5, cache.evictSubtree(m.node()));
        assertEquals(free + 5, pool.freeCount());
        assertEquals(0, cache.namespaceCount());
        assertTrue(m.node().isEvicted());
        assertThrows(IllegalStateException.class, () -> cache.lock(m.node()));
    }

    @Test
    void hitMetricsGlobalAndPerRequest() {
        SimEngine.Seq s1 = eng.start(NS, text(1, 2, 3, 4)); // miss
        eng.release(s1);
        SimEngine.Seq s2 = eng.start(NS, text(1, 2, 7, 8)); // hit: 2 tokens
        eng.release(s2);
        CacheMetrics m = cache.metrics();
        assertEquals(1, m.hits());
        assertEquals(1, m.misses());
        assertEquals(2, m.matchedTokens());
        assertEquals(8, m.queriedTokens());
        assertEquals(0.25, m.hitRate(), 1e-12);
        assertEquals(2, s2.reused); // per request: cached vs computed
        assertEquals(2, s2.computed);
        assertEquals(6, m.nodeCount() + m.cachedPages() - 3); // 3 nodes ([1,2],[3,4],[7,8]), 6 pages
        assertTrue(m.treeBytes() > 0);
        assertEquals(6, m.evictablePages());
        assertEquals(6, m.insertedPages());
        cache.evict(100);
        m = cache.metrics();
        assertEquals(3, m.evictions());
        assertEquals(6, m.evictedPages());
    }

    @Test
    void multiTurnConversation() {
        int[] system = range(100, 140);
        TokenSequence turn1 = TokenSequence.builder().text(system).text(1, 2, 3).build();
        SimEngine.Seq s = eng.start(NS, turn1);
        eng.decodeAndCache(s, new int[] {50, 51, 52}); // assistant answer cached at the end
        TokenSequence history = s.tokens;
        eng.release(s);
        TokenSequence turn2 = TokenSequence.builder().append(history).text(4, 5).build();
        SimEngine.Seq s2 = eng.start(NS, turn2);
        assertEquals(history.kvLength(), s2.reused); // the entire history
        eng.release(s2);
        // a different user reply branches after the history, sharing it
        TokenSequence turn2b = TokenSequence.builder().append(history).text(6).build();
        SimEngine.Seq s3 = eng.start(NS, turn2b);
        assertEquals(history.kvLength(), s3.reused);
        eng.release(s3);
        MatchResult h = cache.match(NS, history);
        assertEquals(2, ((Node) h.node()).kidCount);
    }

    @Test
    void namespacesIsolateAndDropRefusesWhileLocked() {
        Namespace lora = Namespace.ofLora("adapter-a");
        Namespace tenant = Namespace.ofSalt("tenant-b");
        TokenSequence t = text(1, 2, 3);
        cache.insert(lora, t, 3, pool.allocate(3));
        assertEquals(0, cache.peekMatchLength(NS, t));
        assertEquals(0, cache.peekMatchLength(tenant, t));
        assertEquals(3, cache.peekMatchLength(lora, t));
        MatchResult held = cache.matchAndLock(lora, text(1, 2));
        assertThrows(IllegalStateException.class, () -> cache.dropNamespace(lora));
        assertEquals(3, cache.cachedPages());
        assertEquals(1, cache.evictNamespace(lora)); // unlocked tail only
        assertEquals(2, cache.peekMatchLength(lora, t));
        cache.unlock(held.node());
        assertEquals(2, cache.dropNamespace(lora));
        assertFalse(cache.hasNamespace(lora));
        assertEquals(0, cache.cachedPages());
        assertEquals(1000, pool.freeCount());
        assertEquals(0, cache.dropNamespace(lora));
    }

    /** A match in one namespace proceeds while another namespace's tree lock is held. */
    @Test
    void lockGranularityIsPerNamespace() throws Exception {
        CountDownLatch inside = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        ThreadLocal<Boolean> block = ThreadLocal.withInitial(() -> false);
        AtomicLong ticks = new AtomicLong();
        RadixCache c = new RadixCache(1, EvictionPolicy.LRU, (p, o, l) -> { }, () -> {
            if (block.get()) { // called while holding the tree lock of the matching namespace
                inside.countDown();
                try {
                    release.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            return ticks.incrementAndGet();
        });
        Namespace a = Namespace.ofLora("a"), b = Namespace.ofLora("b");
        c.insert(a, text(1, 2), 2, new int[] {1, 2});
        c.insert(b, text(1, 2), 2, new int[] {3, 4});
        ExecutorService ex = Executors.newFixedThreadPool(3);
        try {
            Future<?> blocker = ex.submit(() -> {
                block.set(true);
                c.match(a, text(1, 2));
            });
            assertTrue(inside.await(5, TimeUnit.SECONDS));
            Future<MatchResult> other = ex.submit(() -> c.match(b, text(1, 2)));
            assertArrayEquals(new int[] {3, 4}, other.get(5, TimeUnit.SECONDS).pages()); // no contention
            Future<MatchResult> same = ex.submit(() -> c.match(a, text(1, 2)));
            assertThrows(TimeoutException.class, () -> same.get(200, TimeUnit.MILLISECONDS)); // same tree waits
            release.countDown();
            blocker.get(5, TimeUnit.SECONDS);
            assertArrayEquals(new int[] {1, 2}, same.get(5, TimeUnit.SECONDS).pages());
        } finally {
            release.countDown();
            ex.shutdownNow();
        }
    }

    @Test
    void concurrentMatchingAndInsertion() throws Exception {
        List<Future<?>> fs = new ArrayList<>();
        ExecutorService ex = Executors.newFixedThreadPool(4);
        try {
            for (int th = 0; th < 4; th++) {
                int seed = th;
                fs.add(ex.submit(() -> {
                    for (int i = 0; i < 300; i++) {
                        int[] ids = {1, 2, (seed + i) % 7, i % 5};
                        SimEngine.Seq s = eng.start(NS, text(ids));
                        assertNotNull(s.lockNode);
                        eng.release(s);
                    }
                    return null;
                }));
            }
            for (Future<?> f : fs) {
                f.get(30, TimeUnit.SECONDS);
            }
        } finally {
            ex.shutdownNow();
        }
        assertEquals(1000, eng.conservation(0));
        assertEquals(0, cache.protectedPages());
        assertSame(null, null);
    }
}
