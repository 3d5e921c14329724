package io.radixkv.cache;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Model-based randomized test: random match / matchAndLock / insert / insertAndLock / lock / unlock
 * / evict / evictNamespace / dropNamespace over several namespaces, against a naive reference trie
 * with one node per page (keys = the exact token fragments of every KV position in the page).
 * After every step: results equal the reference's, freed pages were unlocked cache-owned pages whose
 * descendants went too, and {@code free + cache-owned == total} (no private pages between steps).
 *
 * <p>Ops per configuration: {@code -Dradixkv.modelOps} (default 50 000; 4 configurations = 200 000).
 */
class RadixCacheModelTest {

    static final int OPS = Integer.getInteger("radixkv.modelOps", 50_000);
    static final Namespace[] NSS = {Namespace.DEFAULT, Namespace.ofLora("lora-1"), Namespace.ofSalt("tenant-2")};

    /** Token descriptor, independent of TokenSequence's encoding. */
    record Tok(int type, int a, int b, long hi, long lo, int kv) {
    }

    /** Exact page key: the fragments of all KV positions of one page. */
    static final class Key {
        final long[] d;
        final int h;

        Key(long[] d) {
            this.d = d;
            this.h = Arrays.hashCode(d);
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Key k && k.h == h && Arrays.equals(k.d, d);
        }

        @Override
        public int hashCode() {
            return h;
        }
    }

    /** A generated sequence with everything the reference needs. */
    static final class Gen {
        final TokenSequence ts;
        final List<Tok> toks;
        final int[] kvEnd; // kvEnd[i] = KV end of token i
        final Key[] pages; // whole pages of the full sequence

        Gen(List<Tok> toks, int pageSize) {
            this.toks = toks;
            TokenSequence.Builder b = TokenSequence.builder();
            kvEnd = new int[toks.size()];
            int kv = 0;
            List<long[]> pos = new ArrayList<>();
            for (int i = 0; i < toks.size(); i++) {
                Tok t = toks.get(i);
                switch (t.type) {
                    case 0 -> b.text(t.a);
                    case 1 -> b.coord(t.a);
                    case 2 -> b.size(t.a, t.b);
                    default -> b.image(t.hi, t.lo, t.kv);
                }
                for (int o = 0; o < t.kv; o++) {
                    pos.add(t.type == 3 ? new long[] {3, t.hi, t.lo, ((long) t.kv << 32) | o}
                            : new long[] {t.type, ((long) t.a << 20) | t.b});
                }
                kv += t.kv;
                kvEnd[i] = kv;
            }
            ts = b.build();
            pages = new Key[kv / pageSize];
            for (int p = 0; p < pages.length; p++) {
                int n = 0;
                for (int q = p * pageSize; q < (p + 1) * pageSize; q++) {
                    n += pos.get(q).length;
                }
                long[] d = new long[n];
                int w = 0;
                for (int q = p * pageSize; q < (p + 1) * pageSize; q++) {
                    long[] x = pos.get(q);
                    System.arraycopy(x, 0, d, w, x.length);
                    w += x.length;
                }
                pages[p] = new Key(d);
            }
        }

        /** Whole tokens inside [0, kv). */
        int tokensWithin(int kv) {
            int t = 0;
            while (t < kvEnd.length && kvEnd[t] <= kv) {
                t++;
            }
            return t;
        }
    }

    static final class RNode {
        final RNode parent;
        final Key key;
        final int page;
        final Map<Key, RNode> kids = new HashMap<>();
        int locks;
        boolean removed;

        RNode(RNode parent, Key key, int page) {
            this.parent = parent;
            this.key = key;
            this.page = page;
        }
    }

    record Held(NodeRef node, List<RNode> path) {
    }

    record Known(NodeRef node, Namespace ns, Gen gen) {
    }

    // ---- state ---------------------------------------------------------------------------------

    int pageSize;
    Random rnd;
    TestPool pool;
    RadixCache cache;
    final List<Integer> pending = new ArrayList<>();
    final Map<Namespace, RNode> roots = new HashMap<>();
    final Map<Integer, RNode> byPage = new HashMap<>();
    final List<Held> held = new ArrayList<>();
    final List<Known> known = new ArrayList<>();
    final List<Gen> bank = new ArrayList<>();

    @ParameterizedTest(name = "pageSize={0} policy={1} pool={2}")
    @CsvSource({"1, LRU, 700", "16, LRU, 160", "4, FILO, 400", "16, LFU, 120"})
    void randomOperationsAgreeWithReference(int pageSize, EvictionPolicy policy, int poolPages) {
        this.pageSize = pageSize;
        rnd = new Random(0xC0FFEE + pageSize * 31L + policy.ordinal());
        pool = new TestPool(poolPages);
        AtomicLong clock = new AtomicLong();
        cache = new RadixCache(pageSize, policy, (p, off, len) -> {
            pool.free(p, off, len);
            for (int i = off; i < off + len; i++) {
                pending.add(p[i]);
            }
        }, clock::incrementAndGet);
        pool.cache = cache;
        buildBank();
        for (int step = 0; step < OPS; step++) {
            int op = rnd.nextInt(100);
            try {
                if (op < 30) {
                    opMatch();
                } else if (op < 60) {
                    opInsert();
                } else if (op < 64) {
                    opLockKnown();
                } else if (op < 80) {
                    opUnlock();
                } else if (op < 82) {
                    opUnderflow();
                } else if (op < 98) {
                    opEvict();
                } else if (op < 99) {
                    opEvictNamespace();
                } else {
                    opDrop();
                }
                check();
            } catch (AssertionError | RuntimeException e) {
                throw new AssertionError("step " + step + " (op " + op + "): " + e.getMessage(), e);
            }
        }
        CacheMetrics mx = cache.metrics();
        System.out.printf("pageSize=%d policy=%s: %s%n", pageSize, policy, mx);
        assertTrue(mx.hits() > OPS / 40 && mx.misses() > 0 && mx.evictions() > OPS / 50, "workload too easy: " + mx);
        // drain: release all locks, evict everything, the pool is whole again
        for (Held h : held) {
            cache.unlock(h.node);
        }
        held.clear();
        cache.evict(Integer.MAX_VALUE);
        pending.clear();
        assertEquals(poolPages, pool.freeCount());
        assertEquals(0, cache.cachedPages());
        assertEquals(0, cache.nodeCount());
        assertEquals(0, cache.namespaceCount());
    }

    // ---- generation ----------------------------------------------------------------------------

    void buildBank() {
        int maxKv = pageSize == 1 ? 60 : pageSize * 8;
        List<List<Tok>> stems = new ArrayList<>();
        for (int s = 0; s < 6; s++) {
            stems.add(randomToks(maxKv));
        }
        for (int i = 0; i < 300; i++) {
            List<Tok> stem = stems.get(rnd.nextInt(stems.size()));
            int cut = rnd.nextInt(stem.size() + 1);
            List<Tok> t = new ArrayList<>(stem.subList(0, cut));
            t.addAll(randomToks(maxKv / 3));
            if (t.isEmpty()) {
                t.add(new Tok(0, 1, 0, 0, 0, 1));
            }
            bank.add(new Gen(t, pageSize));
        }
    }

    List<Tok> randomToks(int maxKv) {
        List<Tok> t = new ArrayList<>();
        int target = rnd.nextInt(maxKv + 1);
        int kv = 0;
        while (kv < target) {
            int r = rnd.nextInt(100);
            Tok tok;
            if (r < 85) {
                tok = new Tok(0, rnd.nextInt(4), 0, 0, 0, 1);
            } else if (r < 90) {
                tok = new Tok(1, rnd.nextInt(2), 0, 0, 0, 1);
            } else if (r < 94) {
                tok = new Tok(2, rnd.nextInt(2), rnd.nextInt(2), 0, 0, 1);
            } else {
                int[] kvs = {2, 5, pageSize + 3, 2 * pageSize + 1};
                tok = new Tok(3, 0, 0, 77, rnd.nextInt(2), kvs[rnd.nextInt(kvs.length)]);
            }
            t.add(tok);
            kv += tok.kv;
        }
        return t;
    }

    Gen pickGen() {
        return bank.get(rnd.nextInt(bank.size()));
    }

    Namespace pickNs() {
        return NSS[rnd.nextInt(NSS.length)];
    }

    // ---- reference -----------------------------------------------------------------------------

    List<RNode> walk(Namespace ns, Gen g, int maxPages) {
        List<RNode> path = new ArrayList<>();
        RNode n = roots.get(ns);
        for (int p = 0; n != null && p < maxPages; p++) {
            n = n.kids.get(g.pages[p]);
            if (n != null) {
                path.add(n);
            }
        }
        return path;
    }

    int[] pagesOf(List<RNode> path) {
        return path.stream().mapToInt(r -> r.page).toArray();
    }

    long refEvictable() {
        return byPage.values().stream().filter(r -> r.locks == 0).count();
    }

    /** Applies the pages freed by the cache to the reference, checking they were legal to free. */
    int processPending() {
        int n = pending.size();
        List<RNode> removed = new ArrayList<>();
        for (int page : pending) {
            RNode r = byPage.remove(page);
            assertNotNull(r, "freed page " + page + " was not cache-owned");
            assertEquals(0, r.locks, "freed page " + page + " was locked");
            r.removed = true;
            removed.add(r);
        }
        pending.clear();
        for (RNode r : removed) {
            for (RNode k : r.kids.values()) {
                assertTrue(k.removed, "page " + r.page + " freed while its child " + k.page + " stays cached");
            }
        }
        for (RNode r : removed) {
            r.parent.kids.remove(r.key);
        }
        roots.values().removeIf(root -> root.kids.isEmpty());
        return n;
    }

    void check() {
        assertEquals(0, pending.size());
        assertEquals(pool.total, pool.freeCount() + cache.cachedPages(), "free + cache-owned != total");
        assertEquals(byPage.size(), cache.cachedPages());
        long ev = refEvictable();
        assertEquals(ev, cache.evictablePages());
        assertEquals(byPage.size() - ev, cache.protectedPages());
        for (Namespace ns : NSS) {
            assertEquals(roots.containsKey(ns), cache.hasNamespace(ns), "namespace " + ns);
        }
    }

    // ---- operations ----------------------------------------------------------------------------

    void opMatch() {
        Gen g = pickGen();
        Namespace ns = pickNs();
        List<RNode> path = walk(ns, g, g.pages.length);
        int kv = path.size() * pageSize;
        assertEquals(kv, cache.peekMatchLength(ns, g.ts), "peek");
        boolean lock = rnd.nextInt(10) < 3 && held.size() < 8;
        MatchResult m = lock ? cache.matchAndLock(ns, g.ts) : cache.match(ns, g.ts);
        assertEquals(kv, m.matchedKvLen(), "matched KV");
        assertArrayEquals(pagesOf(path), m.pages(), "matched pages");
        assertEquals(g.tokensWithin(kv), m.matchedTokens(), "matched tokens");
        assertEquals(kv, m.node().kvEnd(), "node end");
        if (lock) {
            held.add(new Held(m.node(), path));
            path.forEach(r -> r.locks++);
        }
        remember(m.node(), ns, g);
    }

    void opInsert() {
        Gen g = pickGen();
        Namespace ns = pickNs();
        int tokenCount = rnd.nextInt(4) == 0 ? rnd.nextInt(g.toks.size() + 1) : g.toks.size();
        int kvLim = (tokenCount == 0 ? 0 : g.kvEnd[tokenCount - 1]) / pageSize * pageSize;
        int np = kvLim / pageSize;
        long evictableBefore = refEvictable();
        int[] fresh;
        try {
            fresh = pool.allocate(np);
        } catch (IllegalStateException e) {
            processPending();
            assertTrue(pool.freeCount() + evictableBefore < np, "allocation failed although pages were reclaimable");
            return;
        }
        processPending();
        List<RNode> path = walk(ns, g, np);
        int[] caller = new int[np];
        for (int i = 0; i < np; i++) {
            caller[i] = i < path.size() && rnd.nextInt(10) < 8 ? path.get(i).page : fresh[i];
        }
        boolean lock = rnd.nextBoolean() && held.size() < 8;
        InsertResult r = lock ? cache.insertAndLock(ns, g.ts, tokenCount, caller)
                : cache.insert(ns, g.ts, tokenCount, caller);
        int firstNew = path.size();
        assertEquals(firstNew, r.firstNewPageIdx(), "firstNewPageIdx");
        assertEquals(np - firstNew, r.insertedPages(), "insertedPages");
        int[] expected = new int[np];
        for (int i = 0; i < np; i++) {
            expected[i] = i < firstNew ? path.get(i).page : caller[i];
        }
        assertArrayEquals(expected, r.cachedPages(), "cachedPages");
        assertEquals(kvLim, r.node().kvEnd(), "terminal node end");
        // reference: new pages become cache-owned; duplicates / unused fresh pages go back
        RNode parent = firstNew == 0 ? roots.computeIfAbsent(ns, k -> new RNode(null, null, -1)) : path.getLast();
        List<RNode> full = new ArrayList<>(path);
        for (int i = firstNew; i < np; i++) {
            RNode n = new RNode(parent, g.pages[i], caller[i]);
            parent.kids.put(g.pages[i], n);
            byPage.put(caller[i], n);
            full.add(n);
            parent = n;
        }
        if (np == 0 && roots.containsKey(ns) && roots.get(ns).kids.isEmpty()) {
            roots.remove(ns);
        }
        pool.release(Arrays.copyOfRange(fresh, 0, firstNew));
        if (lock) {
            held.add(new Held(r.node(), full));
            full.forEach(x -> x.locks++);
        }
        remember(r.node(), ns, g);
    }

    void remember(NodeRef node, Namespace ns, Gen g) {
        known.add(new Known(node, ns, g));
        if (known.size() > 64) {
            known.remove(rnd.nextInt(known.size()));
        }
    }

    void opLockKnown() {
        if (known.isEmpty() || held.size() >= 8) {
            return;
        }
        Known k = known.get(rnd.nextInt(known.size()));
        if (k.node.isEvicted()) {
            assertThrows(IllegalStateException.class, () -> cache.lock(k.node));
            return;
        }
        int pages = k.node.kvEnd() / pageSize;
        List<RNode> path = walk(k.ns, k.gen, pages);
        assertEquals(pages, path.size(), "live node's pages are in the reference");
        cache.lock(k.node);
        held.add(new Held(k.node, path));
        path.forEach(r -> r.locks++);
    }

    void opUnlock() {
        if (held.isEmpty()) {
            return;
        }
        Held h = held.remove(rnd.nextInt(held.size()));
        cache.unlock(h.node);
        h.path.forEach(r -> r.locks--);
        if (!h.path.isEmpty()) {
            assertEquals(h.path.getLast().locks, h.node.lockRef(), "node lock_ref");
        }
    }

    void opUnderflow() {
        if (known.isEmpty()) {
            return;
        }
        Known k = known.get(rnd.nextInt(known.size()));
        if (k.node.isEvicted() || k.node.isRoot()) {
            return;
        }
        List<RNode> path = walk(k.ns, k.gen, k.node.kvEnd() / pageSize);
        if (path.getLast().locks == 0) {
            assertThrows(IllegalStateException.class, () -> cache.unlock(k.node));
        }
    }

    void opEvict() {
        int n = rnd.nextInt(50) == 0 ? rnd.nextInt(pool.total + 1) : rnd.nextInt(pageSize == 1 ? 27 : 6);
        long before = refEvictable();
        int freed = cache.evict(n);
        assertEquals(freed, processPending(), "evict's return value");
        assertTrue(freed >= Math.min(n, before), "freed " + freed + " < min(" + n + ", " + before + ")");
        if (freed < n) {
            assertEquals(0, refEvictable(), "stopped early with evictable pages left");
        }
    }

    void opEvictNamespace() {
        Namespace ns = pickNs();
        int freed = cache.evictNamespace(ns);
        assertEquals(freed, processPending());
        RNode root = roots.get(ns);
        if (root != null) {
            for (RNode k : root.kids.values()) {
                assertTrue(k.locks > 0, "unlocked node survived evictNamespace");
            }
        }
    }

    void opDrop() {
        Namespace ns = pickNs();
        RNode root = roots.get(ns);
        boolean locked = root != null && root.kids.values().stream().anyMatch(k -> k.locks > 0);
        if (locked) {
            long cached = cache.cachedPages();
            assertThrows(IllegalStateException.class, () -> cache.dropNamespace(ns));
            assertEquals(cached, cache.cachedPages());
            assertEquals(0, pending.size());
            return;
        }
        int freed = cache.dropNamespace(ns);
        assertEquals(freed, processPending());
        assertFalse(roots.containsKey(ns));
        if (root == null && freed != 0) {
            fail("dropped pages of an empty namespace");
        }
    }
}
