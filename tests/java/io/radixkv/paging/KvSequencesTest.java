package io.radixkv.paging;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

/** Sequence lifecycle over the paged pool, and page ownership between sequences and the cache. */
class KvSequencesTest {

    private static KvSequences seqs(int numPages, int pageSize, int maxSeqs, int maxPagesPerSeq) {
        return new KvSequences(new BlockAllocator(numPages), pageSize, maxSeqs, maxPagesPerSeq);
    }

    @Test
    void reserveRoundsUpToPages() {
        try (KvSequences s = seqs(100, 16, 8, 16)) {
            int seq = s.open(1);
            assertEquals(0, s.pageCount(seq));
            assertEquals(0, s.length(seq));
            assertTrue(s.reserve(seq, 50));
            assertEquals(4, s.pageCount(seq), "ceil(50/16)");
            assertEquals(64, s.capacity(seq));
            assertEquals(0, s.length(seq), "reserve adds capacity, not length");
            assertEquals(96, s.allocator().freePages());
            // already enough capacity: no-op
            assertTrue(s.reserve(seq, 64));
            assertEquals(4, s.pageCount(seq));
            assertTrue(s.reserve(seq, 65));
            assertEquals(5, s.pageCount(seq));
            for (int i = 0; i < 5; i++) {
                assertEquals(PageState.PRIVATE, s.allocator().stateOf(s.pageAt(seq, i)));
                assertEquals(1, s.allocator().ownerOf(s.pageAt(seq, i)));
            }
            s.checkInvariants();
        }
    }

    @Test
    void zeroInitialTokens() {
        try (KvSequences s = seqs(10, 16, 4, 4)) {
            int seq = s.open(1);
            assertTrue(s.reserve(seq, 0));
            assertEquals(0, s.pageCount(seq));
            assertEquals(10, s.allocator().freePages());
            assertEquals(1, s.pagesNeeded(seq, 1));
            assertEquals(0, s.pagesNeeded(seq, 0));
            s.release(seq);
            s.checkInvariants();
        }
    }

    @Test
    void releaseReturnsPagesAndSlot() {
        try (KvSequences s = seqs(20, 4, 2, 8)) {
            int a = s.open(1);
            assertTrue(s.reserve(a, 10));
            s.setLength(a, 10);
            assertEquals(17, s.allocator().freePages());
            s.release(a);
            assertEquals(20, s.allocator().freePages());
            assertFalse(s.isOpen(a));
            assertThrows(IllegalStateException.class, () -> s.length(a));
            assertThrows(IllegalStateException.class, () -> s.release(a), "double release");
            assertThrows(IllegalArgumentException.class, () -> s.release(999));
            s.checkInvariants();
        }
    }

    @Test
    void multipleSequencesReleaseMiddle() {
        try (KvSequences s = seqs(100, 16, 8, 16)) {
            int a = s.open(1);
            int b = s.open(2);
            int c = s.open(3);
            assertTrue(s.reserve(a, 10));
            assertTrue(s.reserve(b, 40));
            assertTrue(s.reserve(c, 33));
            assertEquals(1, s.pageCount(a));
            assertEquals(3, s.pageCount(b));
            assertEquals(3, s.pageCount(c));
            int[] aPages = s.pages(a);
            int[] cPages = s.pages(c);
            s.release(b);
            assertEquals(100 - 4, s.allocator().freePages());
            assertArrayEquals(aPages, s.pages(a));
            assertArrayEquals(cPages, s.pages(c));
            s.checkInvariants();
        }
    }

    @Test
    void freeTokenCapacity() {
        try (KvSequences s = seqs(100, 16, 8, 16)) {
            int a = s.open(1);
            int b = s.open(2);
            assertTrue(s.reserve(a, 16 * 14));
            assertTrue(s.reserve(b, 16 * 16));
            assertTrue(s.reserve(s.open(3), 0));
            assertEquals(70, s.allocator().freePages());
            assertEquals(70 * 16, s.freeTokenCapacity());
            // the cache's evictable pages count as capacity
            s.setEvictablePages(() -> 5);
            assertEquals(75, s.availablePages());
            assertEquals(75 * 16, s.freeTokenCapacity());
        }
    }

    @Test
    void setLengthWithinCapacity() {
        try (KvSequences s = seqs(10, 4, 2, 4)) {
            int a = s.open(1);
            assertEquals(0, s.length(a));
            assertTrue(s.reserve(a, 6));
            s.setLength(a, 8);
            assertEquals(8, s.length(a));
            assertThrows(IllegalArgumentException.class, () -> s.setLength(a, 9));
            assertThrows(IllegalArgumentException.class, () -> s.setLength(a, -1));
            assertEquals(8, s.length(a));
        }
    }

    @Test
    void exhaustionOnReserveLeavesNothingHalfAllocated() {
        try (KvSequences s = seqs(10, 4, 8, 8)) {
            int a = s.open(1);
            assertTrue(s.reserve(a, 28)); // 7 pages
            int b = s.open(2);
            assertTrue(s.reserve(b, 4));
            assertFalse(s.reserve(b, 4 + 12)); // needs 3 more, 2 free
            assertEquals(1, s.pageCount(b));
            assertEquals(2, s.allocator().freePages());
            int c = s.open(3);
            assertFalse(s.reserve(c, 12));
            assertEquals(0, s.pageCount(c));
            s.checkInvariants();
            // the failed slot is still usable and a smaller reserve succeeds
            assertTrue(s.reserve(c, 8));
            assertEquals(2, s.pageCount(c));
            s.checkInvariants();
        }
    }

    @Test
    void slotsExhaust() {
        try (KvSequences s = seqs(10, 4, 2, 4)) {
            int a = s.open(1);
            int b = s.open(2);
            assertNotEquals(a, b);
            var e = assertThrows(IllegalStateException.class, () -> s.open(3));
            assertTrue(e.getMessage().contains("slot"), e.getMessage());
            s.release(a);
            assertEquals(a, s.open(4), "released slot is reused");
        }
    }

    @Test
    void reserveBeyondTableWidthIsAnArgumentError() {
        try (KvSequences s = seqs(100, 4, 2, 3)) {
            int a = s.open(1);
            var e = assertThrows(IllegalArgumentException.class, () -> s.reserve(a, 13));
            assertTrue(e.getMessage().contains("13"), e.getMessage());
            assertEquals(0, s.pageCount(a));
            assertTrue(s.reserve(a, 12));
            s.setLength(a, 12);
            assertThrows(IllegalStateException.class, () -> s.growForDecode(a));
            assertThrows(IllegalArgumentException.class, () -> s.reserve(a, -1));
        }
    }

    @Test
    void pageSizeOne() {
        try (KvSequences s = seqs(10, 1, 2, 12)) {
            int a = s.open(1);
            assertTrue(s.reserve(a, 5));
            assertEquals(5, s.pageCount(a));
            s.setLength(a, 5);
            for (int step = 0; step < 5; step++) {
                assertTrue(s.growForDecode(a));
                assertEquals(6 + step, s.pageCount(a), "one page per decoded token");
                s.setLength(a, s.length(a) + 1);
            }
            assertEquals(0, s.allocator().freePages());
            assertFalse(s.growForDecode(a), "pool exhausted");
            assertEquals(10, s.pageCount(a));
            s.checkInvariants();
        }
    }

    /** Decode at block boundaries: prefill n tokens, decode 1. */
    @ParameterizedTest
    @ValueSource(ints = {15, 16, 32, 1, 17})
    void decodeAtPageBoundaries(int prefill) {
        int ps = 16;
        try (KvSequences s = seqs(10, ps, 2, 10)) {
            int a = s.open(1);
            assertTrue(s.reserve(a, prefill));
            s.setLength(a, prefill);
            int pagesBefore = s.pageCount(a);
            assertEquals((prefill + ps - 1) / ps, pagesBefore);
            int expectNew = prefill % ps == 0 ? 1 : 0;
            assertEquals(expectNew, s.pagesNeeded(a, 1));
            assertTrue(s.growForDecode(a));
            assertEquals(pagesBefore + expectNew, s.pageCount(a));
            // the decoded token's page index and offset
            int pageIdx = prefill / ps;
            int offset = prefill % ps;
            assertTrue(pageIdx < s.pageCount(a));
            assertEquals(expectNew == 1 ? 0 : prefill - pageIdx * ps, offset);
            s.setLength(a, prefill + 1);
            // growing again inside the page allocates nothing
            if (offset < ps - 1) {
                int pc = s.pageCount(a);
                assertTrue(s.growForDecode(a));
                assertEquals(pc, s.pageCount(a));
            }
            s.checkInvariants();
        }
    }

    @Test
    void growForDecodeFailsCleanlyWhenExhausted() {
        try (KvSequences s = seqs(2, 4, 2, 4)) {
            int a = s.open(1);
            assertTrue(s.reserve(a, 8));
            s.setLength(a, 8);
            assertFalse(s.growForDecode(a));
            assertEquals(2, s.pageCount(a));
            assertEquals(8, s.length(a));
            s.checkInvariants();
        }
    }

    @Test
    void pagesNeeded() {
        try (KvSequences s = seqs(20, 4, 2, 8)) {
            int a = s.open(1);
            assertEquals(0, s.pagesNeeded(a, 0));
            assertEquals(1, s.pagesNeeded(a, 1));
            assertEquals(1, s.pagesNeeded(a, 4));
            assertEquals(2, s.pagesNeeded(a, 5));
            assertTrue(s.reserve(a, 6));
            s.setLength(a, 6);
            assertEquals(0, s.pagesNeeded(a, 2));
            assertEquals(1, s.pagesNeeded(a, 3));
            assertEquals(3, s.pagesNeeded(a, 11));
        }
    }

    /** Cache miss: prompt pages handed to the cache, nothing freed at release. */
    @Test
    void cacheMissOwnership() {
        try (KvSequences s = seqs(20, 1, 4, 20)) {
            BlockAllocator al = s.allocator();
            int a = s.open(1);
            assertTrue(s.reserve(a, 10));
            s.setLength(a, 10);
            s.markCached(a, 0, 10);
            assertEquals(10, al.cachedPages());
            assertEquals(0, al.privatePages());
            s.checkInvariants();
            s.release(a);
            assertEquals(10, al.cachedPages(), "cache-owned pages survive release");
            assertEquals(10, al.freePages());
            s.checkInvariants();
        }
    }

    /** Partial hit: 5 shared pages, 5 private suffix pages; release frees the suffix. */
    @Test
    void partialHitOwnership() {
        try (KvSequences s = seqs(20, 1, 4, 20)) {
            BlockAllocator al = s.allocator();
            int a = s.open(1);
            assertTrue(s.reserve(a, 5));
            s.setLength(a, 5);
            s.markCached(a, 0, 5);
            int[] prefix = s.pages(a);
            s.release(a);

            int b = s.open(2);
            s.mapShared(b, prefix, 0, 5);
            assertEquals(5, s.length(b), "shared pages are full");
            assertTrue(s.reserve(b, 10));
            assertEquals(10, s.pageCount(b));
            assertArrayEquals(prefix, java.util.Arrays.copyOf(s.pages(b), 5));
            assertEquals(5, al.privatePages());
            s.setLength(b, 10);
            s.checkInvariants();
            s.release(b);
            assertEquals(0, al.privatePages());
            assertEquals(5, al.cachedPages());
            assertEquals(15, al.freePages());
            s.checkInvariants();
        }
    }

    @Test
    void sharedPagesAcrossManySequences() {
        try (KvSequences s = seqs(32, 4, 4, 8)) {
            BlockAllocator al = s.allocator();
            int a = s.open(1);
            assertTrue(s.reserve(a, 12));
            s.setLength(a, 12);
            s.markCached(a, 0, 2);
            int[] shared = {s.pageAt(a, 0), s.pageAt(a, 1)};
            int b = s.open(2);
            int c = s.open(3);
            s.mapShared(b, shared, 0, 2);
            s.mapShared(c, shared, 0, 1);
            assertEquals(8, s.length(b));
            assertEquals(4, s.length(c));
            assertTrue(s.reserve(b, 9));
            assertTrue(s.reserve(c, 9));
            s.checkInvariants();
            s.release(a);
            s.release(b);
            s.checkInvariants();
            assertEquals(2, al.cachedPages());
            assertEquals(2, al.privatePages(), "c's two private pages");
            s.release(c);
            assertEquals(0, al.privatePages());
            s.checkInvariants();
        }
    }

    @Test
    void mapSharedRules() {
        try (KvSequences s = seqs(16, 4, 4, 4)) {
            int a = s.open(1);
            assertTrue(s.reserve(a, 8));
            int priv = s.pageAt(a, 1);
            s.markCached(a, 0, 1);
            int cached = s.pageAt(a, 0);
            int b = s.open(2);
            var e = assertThrows(IllegalStateException.class, () -> s.mapShared(b, new int[] {cached, priv}, 0, 2));
            assertTrue(e.getMessage().contains("page " + priv), e.getMessage());
            assertEquals(0, s.pageCount(b), "nothing mapped");
            assertThrows(IllegalStateException.class, () -> s.mapShared(b, new int[] {15}, 0, 1), "free page");
            assertThrows(IllegalArgumentException.class, () -> s.mapShared(b, new int[] {99}, 0, 1));
            var dup = assertThrows(IllegalArgumentException.class, () -> s.mapShared(b, new int[] {cached, cached}, 0, 2));
            assertTrue(dup.getMessage().contains("page " + cached), dup.getMessage());
            assertEquals(0, s.pageCount(b));
            s.mapShared(b, new int[] {cached}, 0, 1);
            assertThrows(IllegalStateException.class, () -> s.mapShared(b, new int[] {cached}, 0, 1), "not empty");
            assertThrows(IllegalArgumentException.class,
                    () -> s.mapShared(s.open(3), new int[] {cached, cached, cached, cached, cached}, 0, 5));
            s.checkInvariants();
        }
    }

    @Test
    void markCachedRules() {
        try (KvSequences s = seqs(16, 4, 4, 4)) {
            int a = s.open(1);
            assertTrue(s.reserve(a, 12));
            s.markCached(a, 0, 1);
            // range including an already cached page: rejected, nothing changes
            var e = assertThrows(IllegalStateException.class, () -> s.markCached(a, 0, 2));
            assertTrue(e.getMessage().contains("page " + s.pageAt(a, 0)), e.getMessage());
            assertEquals(PageState.PRIVATE, s.allocator().stateOf(s.pageAt(a, 1)));
            assertThrows(IndexOutOfBoundsException.class, () -> s.markCached(a, 2, 2));
            s.markCached(a, 1, 2);
            assertEquals(3, s.allocator().cachedPages());
            s.markCached(a, 3, 0);
            s.checkInvariants();
        }
    }

    /** A duplicate prefix (two sequences computed the same pages): the duplicate private page must be freed, not leaked. */
    @Test
    void replaceWithCachedFreesTheDuplicate() {
        try (KvSequences s = seqs(16, 4, 4, 4)) {
            BlockAllocator al = s.allocator();
            int a = s.open(1);
            int b = s.open(2);
            assertTrue(s.reserve(a, 8));
            assertTrue(s.reserve(b, 8));
            s.setLength(a, 8);
            s.setLength(b, 8);
            // a inserts its first page into the cache first; b computed the same prefix privately
            s.markCached(a, 0, 1);
            int cached = s.pageAt(a, 0);
            int dup = s.pageAt(b, 0);
            s.replaceWithCached(b, 0, cached);
            assertEquals(cached, s.pageAt(b, 0));
            assertEquals(PageState.FREE, al.stateOf(dup));
            s.checkInvariants();
            // replacing a cached entry or with a non-cached page is rejected
            assertThrows(IllegalStateException.class, () -> s.replaceWithCached(b, 0, cached));
            assertThrows(IllegalStateException.class, () -> s.replaceWithCached(b, 1, s.pageAt(a, 1)));
            // mapping the same cached page twice in one sequence is rejected
            var twice = assertThrows(IllegalStateException.class, () -> s.replaceWithCached(b, 1, cached));
            assertTrue(twice.getMessage().contains("already maps"), twice.getMessage());
            assertEquals(PageState.PRIVATE, al.stateOf(s.pageAt(b, 1)));
            s.release(a);
            s.release(b);
            assertEquals(1, al.cachedPages());
            assertEquals(0, al.privatePages());
            assertEquals(15, al.freePages());
            s.checkInvariants();
        }
    }

    @Test
    void reserveEvictsThroughTheReclaimer() {
        try (KvSequences s = seqs(8, 4, 4, 8)) {
            BlockAllocator al = s.allocator();
            int a = s.open(1);
            assertTrue(s.reserve(a, 24));
            s.markCached(a, 0, 6);
            int[] cached = s.pages(a);
            s.release(a);
            int[] next = {0};
            al.setReclaimer(shortfall -> {
                int freed = 0;
                for (; freed < shortfall && next[0] < cached.length; freed++) {
                    al.freeCached(cached[next[0]++]);
                }
                return freed;
            });
            int b = s.open(2);
            assertTrue(s.reserve(b, 20)); // 5 pages: 2 free + 3 evicted
            assertEquals(3, next[0]);
            assertEquals(3, al.cachedPages());
            s.checkInvariants();
        }
    }

    @Test
    void auditAndReclaimLeaked() {
        try (KvSequences s = seqs(20, 4, 4, 8)) {
            BlockAllocator al = s.allocator();
            for (int i = 0; i < 3; i++) {
                assertTrue(s.reserve(s.open(i), 10));
            }
            assertArrayEquals(new int[0], s.audit(), "normal lifecycle: no leaks");
            s.checkInvariants();
            // pages allocated behind the tables' back
            int[] leaked = new int[5];
            assertTrue(al.allocate(5, 999, leaked, 0));
            java.util.Arrays.sort(leaked);
            assertArrayEquals(leaked, s.audit());
            var e = assertThrows(IllegalStateException.class, s::checkInvariants);
            assertTrue(e.getMessage().contains("leaked"), e.getMessage());
            int free = al.freePages();
            assertEquals(5, s.reclaimLeaked());
            assertEquals(free + 5, al.freePages());
            assertArrayEquals(new int[0], s.audit());
            s.checkInvariants();
            // cached pages mapped by nobody are the cache's business, not a sequence leak
            int c = s.open(7);
            assertTrue(s.reserve(c, 4));
            s.markCached(c, 0, 1);
            s.release(c);
            assertArrayEquals(new int[0], s.audit());
            s.checkInvariants();
        }
    }

    @Test
    void invariantsCatchAPageFreedWhileMapped() {
        try (KvSequences s = seqs(8, 4, 2, 4)) {
            int a = s.open(1);
            assertTrue(s.reserve(a, 8));
            s.markCached(a, 0, 1);
            int cached = s.pageAt(a, 0);
            s.allocator().freeCached(cached); // a buggy eviction of a page still mapped
            var e = assertThrows(IllegalStateException.class, s::checkInvariants);
            assertTrue(e.getMessage().contains("page " + cached), e.getMessage());
            // release refuses too, and changes nothing
            int priv = s.pageAt(a, 1);
            assertThrows(IllegalStateException.class, () -> s.release(a));
            assertTrue(s.isOpen(a));
            assertEquals(PageState.PRIVATE, s.allocator().stateOf(priv));
        }
    }

    @Test
    void findLeakedByOwnerAfterLostSequence() {
        try (KvSequences s = seqs(20, 4, 4, 8)) {
            int a = s.open(41);
            int b = s.open(42);
            assertTrue(s.reserve(a, 8));
            assertTrue(s.reserve(b, 12));
            // the engine only knows request 41 is alive: 42's pages are reported
            var leaked = s.allocator().findLeaked(41);
            assertEquals(java.util.Set.of(42), leaked.keySet());
            assertEquals(3, leaked.get(42).length);
            assertEquals(42, s.ownerOf(b));
        }
    }

    /** Decode growth and later reserves place a sequence's pages after its last one. */
    @Test
    void growthFollowsTheSequencesLastPage() {
        try (KvSequences s = seqs(256, 16, 4, 64)) {
            int a = s.open(1);
            int b = s.open(2);
            assertTrue(s.reserve(a, 40));
            assertTrue(s.reserve(b, 40));
            s.setLength(a, 40);
            s.setLength(b, 40);
            for (int step = 0; step < 5 * 16; step++) {
                for (int seq : new int[] {a, b}) {
                    assertTrue(s.growForDecode(seq));
                    s.setLength(seq, s.length(seq) + 1);
                }
            }
            assertTrue(s.reserve(a, s.capacity(a) + 16));
            for (int seq : new int[] {a, b}) {
                for (int i = 1; i < s.pageCount(seq); i++) {
                    assertEquals(s.pageAt(seq, i - 1) + 1, s.pageAt(seq, i), "sequence " + seq + " page " + i);
                }
            }
            s.checkInvariants();
        }
    }
}
