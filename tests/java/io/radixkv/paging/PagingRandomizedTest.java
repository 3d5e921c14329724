package io.radixkv.paging;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * Random operations (open, share, reserve, decode growth, hand pages to the cache, replace a
 * duplicate with the cache's page, evict, release, and invalid calls) against a plain model,
 * with the full invariant check and a page-by-page comparison with the model after every
 * operation. The model includes a toy prefix cache wired in as the allocator's reclaimer:
 * it evicts cache-owned pages no open sequence maps, oldest first.
 */
class PagingRandomizedTest {

    @Test
    void hundredThousandRandomOperations() {
        new Run(20240611L, 40, 4, 8, 16).run(100_000);
    }

    @Test
    void pageSizeOneRandomOperations() {
        new Run(7L, 40, 1, 6, 24).run(20_000);
    }

    @EnabledIfSystemProperty(named = "radixkv.longTests", matches = "true")
    @Test
    void longRandomOperations() {
        for (long seed = 1; seed <= 8; seed++) {
            int maxSeqs = 4 + (int) seed;
            int maxPagesPerSeq = 8 + (int) seed * 2;
            new Run(seed, 16 + 4 * (int) seed, 1 + (int) (seed % 5) * 3, maxSeqs, maxPagesPerSeq)
                    .run(500_000);
        }
    }

    private static final class Run {
        final long seed;
        final Random rnd;
        final int numPages;
        final int ps;
        final int maxSeqs;
        final int maxPagesPerSeq;
        final BlockAllocator al;
        final KvSequences s;

        // ---- the model ----
        final PageState[] state;
        final int[] owner;
        /** Number of open sequences mapping each CACHED page. */
        final int[] mapRefs;
        /** Cache-owned pages, oldest first (eviction order). */
        final List<Integer> cacheLru = new ArrayList<>();
        final List<Integer> open = new ArrayList<>();
        final List<List<Integer>> pages = new ArrayList<>();
        final long[] length;
        final int[] seqOwner;
        int nextOwner = 100;
        /** Coverage counters: the workload must really reach these paths. */
        int reclaims, failedAllocs, marked, replaced, shared, released;
        int op;
        String opName = "";

        Run(long seed, int numPages, int ps, int maxSeqs, int maxPagesPerSeq) {
            this.seed = seed;
            this.rnd = new Random(seed);
            this.numPages = numPages;
            this.ps = ps;
            this.maxSeqs = maxSeqs;
            this.maxPagesPerSeq = maxPagesPerSeq;
            this.al = new BlockAllocator(numPages);
            this.s = new KvSequences(al, ps, maxSeqs, maxPagesPerSeq);
            this.state = new PageState[numPages];
            Arrays.fill(state, PageState.FREE);
            this.owner = new int[numPages];
            Arrays.fill(owner, BlockAllocator.NO_OWNER);
            this.mapRefs = new int[numPages];
            this.length = new long[maxSeqs];
            this.seqOwner = new int[maxSeqs];
            for (int i = 0; i < maxSeqs; i++) {
                pages.add(new ArrayList<>());
            }
            al.setReclaimer(this::evictForShortfall);
            s.setEvictablePages(this::evictable);
        }

        /** The toy cache's eviction: oldest unmapped cache-owned pages first, up to the shortfall. */
        int evictForShortfall(int shortfall) {
            reclaims++;
            int freed = 0;
            for (int i = 0; i < cacheLru.size() && freed < shortfall; ) {
                int p = cacheLru.get(i);
                if (mapRefs[p] == 0) {
                    evict(i);
                    freed++;
                } else {
                    i++;
                }
            }
            return freed;
        }

        void evict(int lruIndex) {
            int p = cacheLru.remove(lruIndex);
            al.freeCached(p);
            state[p] = PageState.FREE;
        }

        int evictable() {
            int n = 0;
            for (int p : cacheLru) {
                if (mapRefs[p] == 0) {
                    n++;
                }
            }
            return n;
        }

        int modelFree() {
            int n = 0;
            for (PageState st : state) {
                if (st == PageState.FREE) {
                    n++;
                }
            }
            return n;
        }

        void run(int ops) {
            try {
                for (op = 0; op < ops; op++) {
                    step();
                    s.checkInvariants();
                    compareAllocator();
                    if (op % 1000 == 0) {
                        for (int seq : open) {
                            compareSeq(seq);
                        }
                    }
                }
                // drain: release everything, evict everything, all pages free again
                for (int seq : new ArrayList<>(open)) {
                    release(seq);
                }
                while (!cacheLru.isEmpty()) {
                    evict(0);
                }
                s.checkInvariants();
                assertEquals(numPages, al.freePages());
                assertEquals(0, s.audit().length);
                if (ops >= 10_000) {
                    String cov = "reclaims " + reclaims + ", failed allocations " + failedAllocs + ", markCached "
                            + marked + ", replaced " + replaced + ", shared opens " + shared + ", releases " + released;
                    System.out.println("seed " + seed + ": " + cov);
                    int min = ops / 1000;
                    assertTrue(reclaims > min && failedAllocs > min / 10 && marked > min && replaced > min && shared > min
                            && released > min, "workload too weak: " + cov);
                }
            } catch (AssertionError | RuntimeException e) {
                throw new AssertionError("seed " + seed + ", op " + op + " (" + opName + "): " + e, e);
            } finally {
                s.close();
            }
        }

        int randomOpen() {
            return open.get(rnd.nextInt(open.size()));
        }

        void step() {
            int r = rnd.nextInt(100);
            if (open.isEmpty() || r < 10) {
                doOpen();
            } else if (r < 17) {
                doOpenShared();
            } else if (r < 37) {
                doReserve(randomOpen());
            } else if (r < 57) {
                doGrow(randomOpen());
            } else if (r < 61) {
                doSetLength(randomOpen());
            } else if (r < 71) {
                doMarkCached(randomOpen());
            } else if (r < 76) {
                doReplace(randomOpen());
            } else if (r < 89) {
                opName = "release";
                release(randomOpen());
            } else if (r < 95) {
                doEvict();
            } else {
                doInvalid();
            }
        }

        void doOpen() {
            opName = "open";
            int o = nextOwner++;
            if (open.size() == maxSeqs) {
                assertThrows(IllegalStateException.class, () -> s.open(o));
                return;
            }
            int seq = s.open(o);
            assertFalse(open.contains(seq), "slot " + seq + " handed out twice");
            open.add(seq);
            seqOwner[seq] = o;
            length[seq] = 0;
            pages.get(seq).clear();
        }

        void doOpenShared() {
            opName = "openShared";
            if (open.size() == maxSeqs || cacheLru.isEmpty()) {
                doOpen();
                return;
            }
            doOpen();
            int seq = open.get(open.size() - 1);
            List<Integer> pick = new ArrayList<>(cacheLru);
            java.util.Collections.shuffle(pick, rnd);
            int n = 1 + rnd.nextInt(Math.min(Math.min(4, pick.size()), maxPagesPerSeq));
            int[] shared = new int[n];
            for (int i = 0; i < n; i++) {
                shared[i] = pick.get(i);
            }
            s.mapShared(seq, shared, 0, n);
            this.shared++;
            for (int p : shared) {
                pages.get(seq).add(p);
                mapRefs[p]++;
            }
            length[seq] = (long) n * ps;
            compareSeq(seq);
        }

        void doReserve(int seq) {
            opName = "reserve";
            long total = length[seq] + rnd.nextInt(6 * ps + 1);
            if (rnd.nextInt(50) == 0) {
                total = (long) maxPagesPerSeq * ps + 1 + rnd.nextInt(5);
            }
            if (total > (long) maxPagesPerSeq * ps) {
                long t = total;
                int before = pages.get(seq).size();
                assertThrows(IllegalArgumentException.class, () -> s.reserve(seq, t));
                assertEquals(before, s.pageCount(seq));
                return;
            }
            int need = (int) Math.max(0, (total + ps - 1) / ps - pages.get(seq).size());
            boolean expect = need <= modelFree() + evictable();
            Set<Integer> freeBefore = freeSet();
            boolean ok = s.reserve(seq, total);
            assertEquals(expect, ok, "reserve(" + total + ") needing " + need + " pages");
            if (!ok) {
                failedAllocs++;
            }
            // eviction may have freed pages; anything the sequence got must have been free
            if (ok) {
                addAllocated(seq, pages.get(seq).size(), need, freeBefore);
                assertTrue(s.capacity(seq) >= total);
            }
            compareSeq(seq);
        }

        void doGrow(int seq) {
            opName = "grow";
            long cap = (long) pages.get(seq).size() * ps;
            if (length[seq] == (long) maxPagesPerSeq * ps) {
                assertThrows(IllegalStateException.class, () -> s.growForDecode(seq));
                return;
            }
            int need = length[seq] < cap ? 0 : 1;
            boolean expect = need <= modelFree() + evictable();
            Set<Integer> freeBefore = freeSet();
            boolean ok = s.growForDecode(seq);
            assertEquals(expect, ok);
            if (!ok) {
                failedAllocs++;
            }
            if (ok) {
                addAllocated(seq, pages.get(seq).size(), need, freeBefore);
                length[seq]++;
                s.setLength(seq, length[seq]);
            }
            compareSeq(seq);
        }

        void doSetLength(int seq) {
            opName = "setLength";
            long cap = (long) pages.get(seq).size() * ps;
            long len = cap == 0 ? 0 : rnd.nextLong(cap + 1);
            s.setLength(seq, len);
            length[seq] = len;
            long bad = cap + 1;
            assertThrows(IllegalArgumentException.class, () -> s.setLength(seq, bad));
            compareSeq(seq);
        }

        void doMarkCached(int seq) {
            opName = "markCached";
            List<Integer> ps0 = pages.get(seq);
            // a random run of consecutive PRIVATE pages
            List<Integer> privIdx = new ArrayList<>();
            for (int i = 0; i < ps0.size(); i++) {
                if (state[ps0.get(i)] == PageState.PRIVATE) {
                    privIdx.add(i);
                }
            }
            if (privIdx.isEmpty()) {
                return;
            }
            int from = privIdx.get(rnd.nextInt(privIdx.size()));
            int count = 0;
            while (from + count < ps0.size() && state[ps0.get(from + count)] == PageState.PRIVATE
                    && rnd.nextInt(4) != 0) {
                count++;
            }
            s.markCached(seq, from, count);
            marked += count;
            for (int i = from; i < from + count; i++) {
                int p = ps0.get(i);
                state[p] = PageState.CACHED;
                owner[p] = BlockAllocator.NO_OWNER;
                mapRefs[p] = 1;
                cacheLru.add(p);
            }
            compareSeq(seq);
        }

        void doReplace(int seq) {
            opName = "replaceWithCached";
            List<Integer> ps0 = pages.get(seq);
            List<Integer> privIdx = new ArrayList<>();
            for (int i = 0; i < ps0.size(); i++) {
                if (state[ps0.get(i)] == PageState.PRIVATE) {
                    privIdx.add(i);
                }
            }
            List<Integer> candidates = new ArrayList<>();
            for (int p : cacheLru) {
                if (!ps0.contains(p)) {
                    candidates.add(p);
                }
            }
            if (privIdx.isEmpty() || candidates.isEmpty()) {
                return;
            }
            int idx = privIdx.get(rnd.nextInt(privIdx.size()));
            int cached = candidates.get(rnd.nextInt(candidates.size()));
            int old = ps0.get(idx);
            s.replaceWithCached(seq, idx, cached);
            replaced++;
            state[old] = PageState.FREE;
            owner[old] = BlockAllocator.NO_OWNER;
            ps0.set(idx, cached);
            mapRefs[cached]++;
            compareSeq(seq);
        }

        void release(int seq) {
            s.release(seq);
            released++;
            for (int p : pages.get(seq)) {
                if (state[p] == PageState.PRIVATE) {
                    state[p] = PageState.FREE;
                    owner[p] = BlockAllocator.NO_OWNER;
                } else {
                    assertEquals(PageState.CACHED, state[p]);
                    mapRefs[p]--;
                }
            }
            pages.get(seq).clear();
            open.remove(Integer.valueOf(seq));
            assertFalse(s.isOpen(seq));
        }

        void doEvict() {
            opName = "evict";
            List<Integer> idx = new ArrayList<>();
            for (int i = 0; i < cacheLru.size(); i++) {
                if (mapRefs[cacheLru.get(i)] == 0) {
                    idx.add(i);
                }
            }
            if (!idx.isEmpty()) {
                evict(idx.get(rnd.nextInt(idx.size())));
            }
        }

        /** Calls that must be rejected without changing anything (checked by the comparison after). */
        void doInvalid() {
            opName = "invalid";
            int seq = randomOpen();
            List<Integer> ps0 = pages.get(seq);
            switch (rnd.nextInt(6)) {
                case 0 -> {
                    if (!cacheLru.isEmpty()) {
                        int p = cacheLru.get(rnd.nextInt(cacheLru.size()));
                        assertThrows(IllegalStateException.class, () -> al.free(p), "freeing a cached page");
                    }
                }
                case 1 -> {
                    for (int i = 0; i < ps0.size(); i++) {
                        if (state[ps0.get(i)] == PageState.CACHED) {
                            int from = i;
                            assertThrows(IllegalStateException.class,
                                    () -> s.markCached(seq, from, ps0.size() - from), "range with a cached page");
                            break;
                        }
                    }
                }
                case 2 -> {
                    int p = rnd.nextInt(numPages);
                    if (state[p] != PageState.CACHED && open.size() < maxSeqs) {
                        int fresh = s.open(nextOwner++);
                        assertThrows(IllegalStateException.class, () -> s.mapShared(fresh, new int[] {p}, 0, 1));
                        assertEquals(0, s.pageCount(fresh));
                        s.release(fresh);
                    }
                }
                case 3 -> {
                    int p = rnd.nextInt(numPages);
                    if (state[p] == PageState.FREE) {
                        assertThrows(IllegalStateException.class, () -> al.free(p), "double free");
                        assertThrows(IllegalStateException.class, () -> al.freeCached(p));
                    }
                }
                case 4 -> {
                    if (!ps0.isEmpty()) {
                        assertThrows(IllegalStateException.class, () -> s.mapShared(seq, new int[0], 0, 0),
                                "mapShared on a non-empty sequence");
                    }
                }
                default -> {
                    int p = numPages + rnd.nextInt(3);
                    assertThrows(IllegalArgumentException.class, () -> al.free(p));
                    assertThrows(IllegalArgumentException.class, () -> al.stateOf(p));
                }
            }
            // a fresh slot from case 2 must not disturb the model; open-count check happens via compare
            if (open.size() != s.openCount()) {
                fail("open count " + s.openCount() + " != model " + open.size());
            }
        }

        Set<Integer> freeSet() {
            Set<Integer> f = new HashSet<>();
            for (int p = 0; p < numPages; p++) {
                if (state[p] == PageState.FREE || (state[p] == PageState.CACHED && mapRefs[p] == 0)) {
                    f.add(p); // free now, or may be freed by eviction during the call
                }
            }
            return f;
        }

        /** The model learns which pages the sequence got (ids are the allocator's choice). */
        void addAllocated(int seq, int from, int n, Set<Integer> allowed) {
            // mirror evictions the reclaimer did during the call (already applied to state[])
            assertEquals(from + n, s.pageCount(seq));
            for (int i = from; i < from + n; i++) {
                int p = s.pageAt(seq, i);
                assertTrue(allowed.contains(p), "page " + p + " was not free or evictable");
                assertEquals(PageState.FREE, state[p], "page " + p + " handed out while " + state[p]);
                state[p] = PageState.PRIVATE;
                owner[p] = seqOwner[seq];
                pages.get(seq).add(p);
            }
        }

        void compareAllocator() {
            int free = 0;
            int priv = 0;
            int cached = 0;
            for (int p = 0; p < numPages; p++) {
                assertEquals(state[p], al.stateOf(p), "state of page " + p);
                assertEquals(owner[p], al.ownerOf(p), "owner of page " + p);
                switch (state[p]) {
                    case FREE -> free++;
                    case PRIVATE -> priv++;
                    case CACHED -> cached++;
                }
            }
            assertEquals(free, al.freePages());
            assertEquals(priv, al.privatePages());
            assertEquals(cached, al.cachedPages());
            assertEquals(open.size(), s.openCount());
            assertEquals((long) (free + evictable()) * ps, s.freeTokenCapacity());
        }

        void compareSeq(int seq) {
            List<Integer> m = pages.get(seq);
            assertEquals(m.size(), s.pageCount(seq), "page count of sequence " + seq);
            for (int i = 0; i < m.size(); i++) {
                assertEquals((int) m.get(i), s.pageAt(seq, i), "page " + i + " of sequence " + seq);
            }
            assertEquals(length[seq], s.length(seq), "length of sequence " + seq);
            assertEquals(seqOwner[seq], s.ownerOf(seq));
            long extra = rnd.nextInt(2 * ps + 1);
            long expectNeed = Math.max(0, (length[seq] + extra + ps - 1) / ps - m.size());
            assertEquals(expectNeed, s.pagesNeeded(seq, extra));
        }
    }
}
