package io.radixkv.paging;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The block allocator under the three-state (free/private/cached) page model. */
class BlockAllocatorTest {

    private static int[] alloc(BlockAllocator a, int n, int owner) {
        int[] out = new int[n];
        assertTrue(a.allocate(n, owner, out, 0), "allocate(" + n + ")");
        return out;
    }

    @Test
    void basicAllocationAndExhaustion() {
        BlockAllocator a = new BlockAllocator(10);
        int[] first = alloc(a, 5, 1);
        assertEquals(5, a.freePages());
        assertEquals(5, a.privatePages());
        int[] second = alloc(a, 5, 1);
        assertEquals(0, a.freePages());
        Set<Integer> all = new HashSet<>();
        for (int p : first) all.add(p);
        for (int p : second) all.add(p);
        assertEquals(10, all.size(), "ten distinct ids");
        for (int p : all) assertTrue(p >= 0 && p < 10);

        int[] out = {-7, -7};
        assertFalse(a.allocate(1, 1, out, 0));
        assertArrayEquals(new int[] {-7, -7}, out, "failed allocation leaves out untouched");
        assertEquals(-1, a.allocateOne(1));
        assertEquals(0, a.freePages());
        a.checkInvariants();
    }

    @Test
    void allOrNothingWhenShort() {
        BlockAllocator a = new BlockAllocator(4);
        alloc(a, 3, 1);
        int[] out = new int[2];
        assertFalse(a.allocate(2, 2, out, 0));
        assertEquals(1, a.freePages());
        assertEquals(3, a.privatePages());
        assertTrue(a.findLeaked(1).isEmpty(), "owner 2 got nothing");
        a.checkInvariants();
    }

    @Test
    void deallocationAndReuse() {
        BlockAllocator a = new BlockAllocator(10);
        int[] got = alloc(a, 3, 7);
        a.free(got, 0, 3);
        assertEquals(10, a.freePages());
        assertEquals(0, a.privatePages());
        int[] again = alloc(a, 3, 8);
        Set<Integer> freed = new HashSet<>();
        for (int p : got) freed.add(p);
        for (int p : again) assertTrue(freed.contains(p), "LIFO reuse returns just-freed page " + p);
        a.checkInvariants();
    }

    @Test
    void doubleFreeAndNeverAllocatedAreRejectedNamingTheId() {
        BlockAllocator a = new BlockAllocator(10);
        int[] got = alloc(a, 3, 1);
        a.free(got, 0, 3);
        var e = assertThrows(IllegalStateException.class, () -> a.free(got[1]));
        assertTrue(e.getMessage().contains("page " + got[1]), e.getMessage());
        assertTrue(e.getMessage().contains("double free"), e.getMessage());

        int p = a.allocateOne(1);
        int never = p == 9 ? 8 : 9;
        var e2 = assertThrows(IllegalStateException.class, () -> a.free(never));
        assertTrue(e2.getMessage().contains("page " + never), e2.getMessage());

        var e3 = assertThrows(IllegalArgumentException.class, () -> a.free(10));
        assertTrue(e3.getMessage().contains("page 10"), e3.getMessage());
        assertThrows(IllegalArgumentException.class, () -> a.free(-1));
        a.checkInvariants();
    }

    @Test
    void bulkFreeIsAllOrNothing() {
        BlockAllocator a = new BlockAllocator(8);
        int[] got = alloc(a, 4, 1);
        // a duplicate inside the list is a double free: nothing may be freed
        int[] dup = {got[0], got[1], got[0]};
        var e = assertThrows(IllegalStateException.class, () -> a.free(dup, 0, 3));
        assertTrue(e.getMessage().contains("page " + got[0]), e.getMessage());
        assertEquals(4, a.freePages());
        assertEquals(4, a.privatePages());
        for (int p : got) assertEquals(PageState.PRIVATE, a.stateOf(p));
        // one bad id at the end: the earlier ones stay allocated
        int[] bad = {got[0], got[1], 99};
        assertThrows(IllegalArgumentException.class, () -> a.free(bad, 0, 3));
        assertEquals(4, a.privatePages());
        a.checkInvariants();
        a.free(got, 0, 4);
        assertEquals(8, a.freePages());
        a.checkInvariants();
    }

    @Test
    void canAllocate() {
        BlockAllocator a = new BlockAllocator(10);
        alloc(a, 8, 1);
        assertTrue(a.canAllocate(2));
        assertFalse(a.canAllocate(3));
        assertTrue(a.canAllocate(0));
    }

    @Test
    void zeroAllocation() {
        BlockAllocator a = new BlockAllocator(10);
        int[] out = new int[0];
        assertTrue(a.allocate(0, 1, out, 0));
        assertEquals(10, a.freePages());
        assertEquals(0, a.privatePages());
        a.free(out, 0, 0);
        assertEquals(10, a.freePages());
        assertThrows(IllegalArgumentException.class, () -> a.allocate(-1, 1, out, 0));
    }

    @Test
    void emptyPool() {
        BlockAllocator a = new BlockAllocator(0);
        assertFalse(a.allocate(1, 1, new int[1], 0));
        assertEquals(-1, a.allocateOne(1));
        assertEquals(0, a.freePages());
        assertTrue(a.canAllocate(0));
        assertTrue(a.allocate(0, 1, new int[0], 0));
        a.checkInvariants();
        assertThrows(IllegalArgumentException.class, () -> new BlockAllocator(-1));
    }

    @Test
    void ownerTracking() {
        BlockAllocator a = new BlockAllocator(10);
        int[] p42 = alloc(a, 3, 42);
        for (int p : p42) assertEquals(42, a.ownerOf(p));
        a.free(p42, 0, 2);
        assertEquals(BlockAllocator.NO_OWNER, a.ownerOf(p42[0]));
        assertEquals(BlockAllocator.NO_OWNER, a.ownerOf(p42[1]));
        assertEquals(42, a.ownerOf(p42[2]));
        int[] p99 = alloc(a, 2, 99);
        int owned42 = 0;
        int owned99 = 0;
        for (int p = 0; p < 10; p++) {
            if (a.ownerOf(p) == 42) owned42++;
            if (a.ownerOf(p) == 99) owned99++;
        }
        assertEquals(1, owned42);
        assertEquals(2, owned99);
        for (int p : p99) assertEquals(99, a.ownerOf(p));
        // a page the cache takes over has no owner
        a.transferToCache(p99[0]);
        assertEquals(BlockAllocator.NO_OWNER, a.ownerOf(p99[0]));
        a.checkInvariants();
    }

    @Test
    void leakDetection() {
        BlockAllocator a = new BlockAllocator(10);
        int[] one = alloc(a, 5, 1);
        int[] two = alloc(a, 3, 2);
        Arrays.sort(one);
        Arrays.sort(two);
        Map<Integer, int[]> leaked = a.findLeaked(1);
        assertEquals(Set.of(2), leaked.keySet());
        assertArrayEquals(two, leaked.get(2));
        assertTrue(a.findLeaked(1, 2).isEmpty());
        Map<Integer, int[]> both = a.findLeaked();
        assertEquals(Set.of(1, 2), both.keySet());
        assertArrayEquals(one, both.get(1));
        assertArrayEquals(two, both.get(2));
        // cached pages are the cache's, never reported as a sequence's leak
        a.transferToCache(two[0]);
        assertEquals(2, a.findLeaked(1).get(2).length);
        // untracked allocations are not reported
        a.allocateOne(BlockAllocator.NO_OWNER);
        assertEquals(Set.of(1, 2), a.findLeaked().keySet());
    }

    @Test
    void unreferencedAudit() {
        BlockAllocator a = new BlockAllocator(12);
        int[] got = alloc(a, 10, 1);
        Set<Integer> seven = new HashSet<>();
        for (int i = 0; i < 7; i++) seven.add(got[i]);
        int[] rest = {got[7], got[8], got[9]};
        Arrays.sort(rest);
        assertArrayEquals(rest, a.audit(seven::contains));
        assertArrayEquals(new int[0], a.audit(p -> true));
        int[] sorted = got.clone();
        Arrays.sort(sorted);
        assertArrayEquals(sorted, a.audit(p -> false));
        // cached pages count as allocated for the audit
        a.transferToCache(got[0]);
        assertEquals(10, a.audit(p -> false).length);
    }

    @Test
    void forceFree() {
        BlockAllocator a = new BlockAllocator(10);
        int[] got = alloc(a, 5, 3);
        a.transferToCache(got[4]);
        assertEquals(5, a.reclaim(got));
        assertEquals(10, a.freePages());
        assertEquals(0, a.privatePages());
        assertEquals(0, a.cachedPages());
        for (int p : got) assertEquals(BlockAllocator.NO_OWNER, a.ownerOf(p));
        // no double-free check: already free pages and repeats are ignored
        assertEquals(0, a.reclaim(got));
        assertEquals(0, a.reclaim(got[0], got[0]));
        assertEquals(10, a.freePages());
        a.checkInvariants();
        // but an out-of-range id is still an error, reported before anything changes
        int p = a.allocateOne(1);
        assertThrows(IllegalArgumentException.class, () -> a.reclaim(p, 10));
        assertEquals(PageState.PRIVATE, a.stateOf(p));
    }

    @Test
    void allocatedPageIdsIsACopy() {
        BlockAllocator a = new BlockAllocator(10);
        int[] got = alloc(a, 5, 1);
        int[] ids = a.allocatedPageIds();
        int[] sorted = got.clone();
        Arrays.sort(sorted);
        assertArrayEquals(sorted, ids);
        a.free(got, 0, 2);
        assertEquals(3, a.allocatedPageIds().length);
        ids[0] = 1234;
        assertEquals(3, a.allocatedPages());
        a.checkInvariants();
    }

    @Test
    void cacheTransitions() {
        BlockAllocator a = new BlockAllocator(4);
        int p = a.allocateOne(5);
        a.transferToCache(p);
        assertEquals(PageState.CACHED, a.stateOf(p));
        assertEquals(1, a.cachedPages());
        assertEquals(0, a.privatePages());
        var e = assertThrows(IllegalStateException.class, () -> a.free(p));
        assertTrue(e.getMessage().contains("page " + p) && e.getMessage().contains("cache-owned"), e.getMessage());
        assertThrows(IllegalStateException.class, () -> a.transferToCache(p));
        a.freeCached(p);
        assertEquals(PageState.FREE, a.stateOf(p));
        var e2 = assertThrows(IllegalStateException.class, () -> a.freeCached(p));
        assertTrue(e2.getMessage().contains("page " + p), e2.getMessage());
        int q = a.allocateOne(5);
        assertThrows(IllegalStateException.class, () -> a.freeCached(q), "private pages are not the cache's");
        a.checkInvariants();
    }

    @Test
    void bulkFreeCachedIsAllOrNothing() {
        BlockAllocator a = new BlockAllocator(6);
        int[] got = alloc(a, 3, 1);
        for (int p : got) a.transferToCache(p);
        int priv = a.allocateOne(1);
        assertThrows(IllegalStateException.class, () -> a.freeCached(new int[] {got[0], got[1], priv}, 0, 3));
        assertThrows(IllegalStateException.class, () -> a.freeCached(new int[] {got[0], got[0]}, 0, 2));
        assertThrows(IllegalArgumentException.class, () -> a.freeCached(new int[] {got[0], got[1], 6}, 0, 3));
        for (int p : got) assertEquals(PageState.CACHED, a.stateOf(p));
        assertEquals(3, a.cachedPages());
        a.checkInvariants();
        a.freeCached(got, 0, 3);
        assertEquals(0, a.cachedPages());
        assertEquals(5, a.freePages());
        a.checkInvariants();
    }

    @Test
    void reclaimerIsAskedOnceForTheShortfall() {
        BlockAllocator a = new BlockAllocator(8);
        int[] cached = alloc(a, 6, 1);
        for (int p : cached) a.transferToCache(p);
        int[] calls = {0};
        int[] lastShortfall = {0};
        int[] next = {0};
        a.setReclaimer(shortfall -> {
            calls[0]++;
            lastShortfall[0] = shortfall;
            int freed = 0;
            while (freed < shortfall && next[0] < cached.length) {
                a.freeCached(cached[next[0]++]);
                freed++;
            }
            return freed;
        });
        int[] out = new int[5];
        assertTrue(a.allocate(5, 2, out, 0));
        assertEquals(1, calls[0]);
        assertEquals(3, lastShortfall[0], "5 wanted, 2 free");
        assertEquals(0, a.freePages());
        // allocateOne also asks
        assertTrue(a.allocateOne(2) >= 0);
        assertEquals(2, calls[0]);
        assertEquals(1, lastShortfall[0]);
        // the reclaimer cannot free enough: one call, false, nothing allocated
        int privBefore = a.privatePages();
        assertFalse(a.allocate(4, 3, new int[4], 0));
        assertEquals(3, calls[0]);
        assertEquals(privBefore, a.privatePages());
        assertEquals(2, a.freePages(), "what the reclaimer freed stays free");
        // no call when enough pages are free
        assertTrue(a.allocate(2, 3, new int[2], 0));
        assertEquals(3, calls[0]);
        a.checkInvariants();
    }

    @Test
    void reclaimerIsNotReentered() {
        BlockAllocator a = new BlockAllocator(1);
        a.allocateOne(1);
        int[] calls = {0};
        a.setReclaimer(shortfall -> {
            calls[0]++;
            assertEquals(-1, a.allocateOne(9)); // would recurse without the guard
            return 0;
        });
        assertEquals(-1, a.allocateOne(2));
        assertEquals(1, calls[0]);
    }

    @Test
    void checkInvariantsDetectsCorruption() throws ReflectiveOperationException {
        BlockAllocator a = new BlockAllocator(4);
        int p = a.allocateOne(1);
        a.checkInvariants();
        // a page marked FREE without being pushed on the free stack
        byte[] state = field(a, "state");
        int[] owner = field(a, "owner");
        state[p] = 0;
        owner[p] = BlockAllocator.NO_OWNER;
        var e = assertThrows(IllegalStateException.class, a::checkInvariants);
        assertTrue(e.getMessage().contains("disagree"), e.getMessage());
        state[p] = 1;
        owner[p] = 1;
        a.checkInvariants();
        // the same id twice on the free stack
        int[] stack = field(field(a, "freePages"), "freeStack");
        int saved = stack[0];
        stack[0] = stack[1];
        state[p] = 0;
        state[saved] = 1; // keep the counts consistent so only the duplicate is wrong
        owner[p] = BlockAllocator.NO_OWNER;
        owner[saved] = 1;
        var e2 = assertThrows(IllegalStateException.class, a::checkInvariants);
        assertTrue(e2.getMessage().contains("twice") || e2.getMessage().contains("on the free stack"), e2.getMessage());
        // a free page with an owner
        BlockAllocator b = new BlockAllocator(2);
        int[] owner2 = field(b, "owner");
        owner2[1] = 5;
        var e3 = assertThrows(IllegalStateException.class, b::checkInvariants);
        assertTrue(e3.getMessage().contains("page 1"), e3.getMessage());
        // stateOf out of range names the id
        var e4 = assertThrows(IllegalArgumentException.class, () -> a.stateOf(4));
        assertTrue(e4.getMessage().contains("page 4"));
    }

    @SuppressWarnings("unchecked")
    private static <T> T field(Object o, String name) throws ReflectiveOperationException {
        var f = o.getClass().getDeclaredField(name);
        f.setAccessible(true);
        return (T) f.get(o);
    }

    @Test
    void freshAllocatorHandsOutAscendingIds() {
        BlockAllocator a = new BlockAllocator(5);
        assertArrayEquals(new int[] {0, 1, 2, 3, 4}, alloc(a, 5, 1));
    }

    /** Pages {@code pages[i + 1] != pages[i] + 1}: where a reader of the sequence jumps. */
    private static int jumps(int[] pages, int n) {
        int j = 0;
        for (int i = 1; i < n; i++) {
            if (pages[i] != pages[i - 1] + 1) j++;
        }
        return j;
    }

    /**
     * Four sequences prefilled one after another, then growing a page each in turn (a decode
     * batch): each keeps its pages consecutive for a run at a time, where the plain LIFO
     * placement ({@code runPages} 1) interleaves them page by page.
     */
    @Test
    void interleavedGrowthKeepsEachSequenceConsecutive() {
        for (int runPages : new int[] {16, 1}) {
            BlockAllocator a = new BlockAllocator(1000, runPages);
            int[][] pages = new int[4][200];
            for (int s = 0; s < 4; s++) {
                assertTrue(a.allocate(3, s, pages[s], 0, -1));
            }
            for (int i = 3; i < 200; i++) {
                for (int s = 0; s < 4; s++) {
                    pages[s][i] = a.allocateOne(s, pages[s][i - 1]);
                    assertTrue(pages[s][i] >= 0);
                }
            }
            a.checkInvariants();
            for (int s = 0; s < 4; s++) {
                int j = jumps(pages[s], 200);
                if (runPages == 16) {
                    // a jump only where the sequence reaches the end of a run another one holds
                    assertTrue(j <= 200 / 16, "sequence " + s + " jumps " + j + " times: " + Arrays.toString(pages[s]));
                } else {
                    assertTrue(j >= 190, "plain LIFO interleaves: " + j);
                }
            }
        }
    }

    @Test
    void allocationFollowsTheHintWhereFreeAndElsewhereWhenNot() {
        BlockAllocator a = new BlockAllocator(64, 8);
        int[] first = alloc(a, 3, 1);
        assertArrayEquals(new int[] {0, 1, 2}, first);
        assertEquals(3, a.allocateOne(1, 2), "the page after the hint");
        // a new sequence (no hint) starts a wholly free run, leaving 4..7 free for the first
        assertEquals(8, a.allocateOne(2, -1));
        assertEquals(4, a.allocateOne(1, 3));
        // the hint's next page is taken: a fresh run; the hint is only a hint (any id)
        assertEquals(9, a.allocateOne(2, 8));
        assertEquals(16, a.allocateOne(3, 8));
        assertEquals(24, a.allocateOne(4, 63));
        assertEquals(32, a.allocateOne(5, 1_000_000));
        assertEquals(33, a.allocateOne(5, 32));
        assertEquals(40, a.allocateOne(6, Integer.MAX_VALUE), "a hint past the pool is ignored (no overflow)");
        a.free(33);
        a.free(40);
        int[] out = new int[4];
        assertTrue(a.allocate(4, 1, out, 0, 4));
        assertArrayEquals(new int[] {5, 6, 7, 40}, out, "consecutive through the free pages, then a fresh run");
        a.checkInvariants();
    }

    @Test
    void withNoWhollyFreeRunEveryFreePageIsStillHandedOut() {
        BlockAllocator a = new BlockAllocator(64, 8);
        int[] all = alloc(a, 64, 1);
        for (int i = 0; i < 64; i += 2) a.free(all[i]); // one page in two: no run wholly free
        a.checkInvariants();
        int[] got = alloc(a, 32, 2);
        Set<Integer> distinct = new HashSet<>();
        for (int p : got) {
            assertTrue(p % 2 == 0 && distinct.add(p), "page " + p);
        }
        assertEquals(0, a.freePages());
        assertEquals(-1, a.allocateOne(3, 5));
        a.checkInvariants();
        // freeing a whole run makes it the next placement again
        for (int p = 8; p < 16; p++) a.free(p);
        a.checkInvariants();
        assertEquals(8, a.allocateOne(4, -1));
        assertThrows(IllegalArgumentException.class, () -> new BlockAllocator(8, 0));
        assertThrows(IllegalArgumentException.class, () -> new BlockAllocator(8, 12));
    }
}
