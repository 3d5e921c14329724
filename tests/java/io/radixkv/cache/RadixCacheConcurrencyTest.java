package io.radixkv.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Queue;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Stress: threads run the engine protocol (matchAndLock, private pages, insertAndLock, lock
 * transfer, duplicate pages freed, release) on shared namespaces while others evict. Every page
 * carries a content stamp = hash of (namespace, the exact KV prefix it ends); a thread verifies the
 * stamps of every page it maps, so a page evicted while locked, handed out twice, or mapped for the
 * wrong prefix is detected. At the end no page is lost: free + cached == total, and evicting all
 * returns every page.
 */
class RadixCacheConcurrencyTest {

    static final long FREE = -1;
    static final long TAIL = -2;

    record Req(Namespace ns, RadixCacheModelTest.Gen gen, long[] stamps) {
    }

    @ParameterizedTest(name = "pageSize={0}")
    @CsvSource({"1, 1500, 4", "16, 300, 4"})
    void concurrentRequestsLoseNoPagesAndSeeOnlyTheirKv(int pageSize, int totalPages, int threads) throws Exception {
        long durationMs = Long.getLong("radixkv.stressMs", 1500);
        TestPool pool = new TestPool(totalPages);
        AtomicLongArray stamp = new AtomicLongArray(totalPages);
        for (int i = 0; i < totalPages; i++) {
            stamp.set(i, FREE);
        }
        RadixCache cache = new RadixCache(pageSize, EvictionPolicy.LRU, (p, off, len) -> {
            for (int i = off; i < off + len; i++) {
                stamp.set(p[i], FREE);
            }
            pool.free(p, off, len);
        });
        pool.cache = cache;
        List<Req> bank = buildBank(pageSize);
        Queue<Throwable> errors = new ConcurrentLinkedQueue<>();
        AtomicLong requests = new AtomicLong(), hits = new AtomicLong();
        long deadline = System.nanoTime() + durationMs * 1_000_000;
        List<Thread> ts = new ArrayList<>();
        for (int th = 0; th < threads; th++) {
            int seed = th;
            Thread t = new Thread(() -> {
                Random rnd = new Random(seed);
                ArrayDeque<Active> active = new ArrayDeque<>();
                try {
                    while (System.nanoTime() < deadline) {
                        Req r = bank.get(rnd.nextInt(bank.size()));
                        Active a = start(cache, pool, stamp, r, pageSize);
                        requests.incrementAndGet();
                        if (a == null) {
                            if (!active.isEmpty()) {
                                release(cache, pool, stamp, active.poll());
                            }
                            continue;
                        }
                        if (a.reused > 0) {
                            hits.incrementAndGet();
                        }
                        active.add(a);
                        if (active.size() > 3) {
                            release(cache, pool, stamp, active.poll());
                        }
                        if (rnd.nextInt(20) == 0) {
                            cache.evict(rnd.nextInt(4 * pageSize));
                        }
                    }
                    while (!active.isEmpty()) {
                        release(cache, pool, stamp, active.poll());
                    }
                } catch (Throwable e) {
                    errors.add(e);
                }
            });
            ts.add(t);
            t.start();
        }
        for (Thread t : ts) {
            t.join(60_000);
        }
        if (!errors.isEmpty()) {
            AssertionError e = new AssertionError(errors.size() + " thread(s) failed");
            errors.forEach(e::addSuppressed);
            throw e;
        }
        System.out.printf("pageSize=%d: %d requests, %d hits, %s%n", pageSize, requests.get(), hits.get(), cache.metrics());
        assertTrue(hits.get() > 0);
        assertEquals(0, cache.protectedPages());
        assertEquals(totalPages, pool.freeCount() + cache.cachedPages());
        for (int p = 0; p < totalPages; p++) {
            assertTrue(pool.isFree(p) != cache.containsPage(p), "page " + p + " free and cached, or neither");
        }
        cache.evict(Integer.MAX_VALUE);
        assertEquals(totalPages, pool.freeCount());
        assertEquals(0, cache.nodeCount());
        assertEquals(0, cache.namespaceCount());
    }

    static final class Active {
        Req req;
        int[] pageTable;
        NodeRef lock;
        int cacheOwned;
        int reused;
    }

    static Active start(RadixCache cache, TestPool pool, AtomicLongArray stamp, Req r, int p) {
        TokenSequence seq = r.gen.ts;
        MatchResult m = cache.matchAndLock(r.ns, seq);
        verify(stamp, r, m.pages(), m.pages().length);
        int kv = seq.kvLength();
        int reuse = RadixCache.reusableKvLength(m.matchedKvLen(), kv, p);
        int reusedPages = reuse / p;
        int total = (kv + p - 1) / p;
        int[] priv;
        try {
            priv = pool.allocate(total - reusedPages);
        } catch (IllegalStateException full) {
            cache.unlock(m.node());
            return null;
        }
        Active a = new Active();
        a.req = r;
        a.reused = reuse;
        a.pageTable = new int[total];
        System.arraycopy(m.pages(), 0, a.pageTable, 0, reusedPages);
        System.arraycopy(priv, 0, a.pageTable, reusedPages, priv.length);
        for (int i = reusedPages; i < total; i++) { // "prefill" the private pages
            stamp.set(a.pageTable[i], i < r.stamps.length ? r.stamps[i] : TAIL);
        }
        InsertResult ins = cache.insertAndLock(r.ns, seq, seq.size(), a.pageTable);
        cache.unlock(m.node());
        a.lock = ins.node();
        for (int i = 0; i < ins.pageCount(); i++) {
            if (a.pageTable[i] != ins.cachedPages()[i]) {
                if (i < reusedPages || i >= ins.firstNewPageIdx()) {
                    throw new AssertionError("unexpected tree page at index " + i);
                }
                stamp.set(a.pageTable[i], FREE);
                pool.release(a.pageTable[i]); // our duplicate: someone inserted it first
                a.pageTable[i] = ins.cachedPages()[i];
            }
        }
        a.cacheOwned = ins.pageCount();
        verify(stamp, r, a.pageTable, a.cacheOwned);
        return a;
    }

    static void release(RadixCache cache, TestPool pool, AtomicLongArray stamp, Active a) {
        verify(stamp, a.req, a.pageTable, a.cacheOwned);
        for (int i = a.cacheOwned; i < a.pageTable.length; i++) {
            long expect = i < a.req.stamps.length ? a.req.stamps[i] : TAIL;
            if (stamp.get(a.pageTable[i]) != expect) {
                throw new AssertionError("private page " + a.pageTable[i] + " was overwritten");
            }
        }
        cache.unlock(a.lock);
        int[] priv = Arrays.copyOfRange(a.pageTable, a.cacheOwned, a.pageTable.length);
        for (int pg : priv) {
            stamp.set(pg, FREE);
        }
        pool.release(priv);
    }

    static void verify(AtomicLongArray stamp, Req r, int[] pages, int n) {
        for (int i = 0; i < n; i++) {
            long s = stamp.get(pages[i]);
            if (s != r.stamps[i]) {
                throw new AssertionError("page " + pages[i] + " (index " + i + ") holds " + s + ", expected "
                        + r.stamps[i] + (s == FREE ? " (it was freed while in use)" : " (foreign KV)"));
            }
        }
    }

    static List<Req> buildBank(int pageSize) {
        Random rnd = new Random(7);
        Namespace[] nss = {Namespace.DEFAULT, Namespace.ofLora("l")};
        List<Req> bank = new ArrayList<>();
        int maxTok = pageSize == 1 ? 40 : 6 * pageSize;
        List<List<RadixCacheModelTest.Tok>> stems = new ArrayList<>();
        for (int s = 0; s < 4; s++) {
            List<RadixCacheModelTest.Tok> st = new ArrayList<>();
            for (int i = 0; i < maxTok; i++) {
                st.add(rnd.nextInt(30) == 0 ? new RadixCacheModelTest.Tok(3, 0, 0, 5, rnd.nextInt(2), pageSize + 2)
                        : new RadixCacheModelTest.Tok(0, rnd.nextInt(3), 0, 0, 0, 1));
            }
            stems.add(st);
        }
        for (int i = 0; i < 200; i++) {
            List<RadixCacheModelTest.Tok> st = stems.get(rnd.nextInt(stems.size()));
            List<RadixCacheModelTest.Tok> t = new ArrayList<>(st.subList(0, 1 + rnd.nextInt(st.size())));
            int tail = rnd.nextInt(maxTok / 2);
            for (int j = 0; j < tail; j++) {
                t.add(new RadixCacheModelTest.Tok(0, rnd.nextInt(3), 0, 0, 0, 1));
            }
            RadixCacheModelTest.Gen g = new RadixCacheModelTest.Gen(t, pageSize);
            Namespace ns = nss[rnd.nextInt(nss.length)];
            long[] stamps = new long[g.pages.length];
            long h = ns.hashCode() * 0x9E3779B97F4A7C15L;
            for (int pg = 0; pg < stamps.length; pg++) {
                for (long x : g.pages[pg].d) {
                    h = (h ^ x) * 0xBF58476D1CE4E5B9L;
                    h ^= h >>> 31;
                }
                stamps[pg] = h & Long.MAX_VALUE; // never FREE or TAIL
            }
            bank.add(new Req(ns, g, stamps));
        }
        return bank;
    }
}
