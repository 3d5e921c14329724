package io.radixkv.paging;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * Private pages shared by the sequences of one owner (the samples of one request): each
 * sequence holds a reference, a page returns to the pool with its last one, and the checks
 * count the rows that map it.
 */
class SharedPagesTest {
    @Test
    void aSharedPageIsFreedWithItsLastReference() {
        BlockAllocator a = new BlockAllocator(8);
        int p = a.allocateOne(3);
        a.share(p);
        a.share(p);
        assertEquals(3, a.references(p));
        a.free(p);
        a.free(new int[] {p}, 0, 1);
        assertEquals(PageState.PRIVATE, a.stateOf(p), "one reference is left");
        assertEquals(1, a.privatePages());
        a.free(p);
        assertEquals(PageState.FREE, a.stateOf(p));
        assertEquals(0, a.references(p));
        assertEquals(8, a.freePages());
        a.checkInvariants();
        assertThrows(IllegalStateException.class, () -> a.share(p), "a free page cannot be shared");
    }

    @Test
    void aSharedPageCannotGoToTheCache() {
        BlockAllocator a = new BlockAllocator(4);
        int p = a.allocateOne(1);
        a.share(p);
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> a.transferToCache(p));
        assertTrue(e.getMessage().contains("2 sequences share it"), e.getMessage());
        assertEquals(PageState.PRIVATE, a.stateOf(p));
        a.free(p);
        a.transferToCache(p);
        assertEquals(PageState.CACHED, a.stateOf(p));
        a.checkInvariants();
    }

    @Test
    void sequencesOfOneOwnerShareTheirFirstPages() {
        BlockAllocator a = new BlockAllocator(16);
        try (KvSequences s = new KvSequences(a, 4, 4, 8)) {
            int parent = s.open(9);
            assertTrue(s.reserve(parent, 10)); // 3 pages
            s.setLength(parent, 10);
            int child = s.open(9);
            s.share(parent, child, 2);
            assertArrayEquals(new int[] {s.pageAt(parent, 0), s.pageAt(parent, 1)}, s.pages(child));
            assertEquals(8, s.length(child));
            assertEquals(2, a.references(s.pageAt(parent, 0)));
            assertEquals(1, a.references(s.pageAt(parent, 2)));
            s.checkInvariants();
            int other = s.open(5);
            assertThrows(IllegalStateException.class, () -> s.share(parent, other, 2), "another owner's sequence");
            assertThrows(IllegalStateException.class, () -> s.markCached(child, 0, 1), "a shared page stays private");
            s.release(parent);
            assertEquals(2, a.privatePages(), "the child's references keep the shared pages");
            s.checkInvariants();
            s.release(child);
            s.release(other);
            assertEquals(0, a.privatePages());
            assertEquals(16, a.freePages());
            s.checkInvariants();
        }
    }
}
