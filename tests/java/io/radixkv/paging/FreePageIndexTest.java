package io.radixkv.paging;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Field;
import org.junit.jupiter.api.Test;

/** The allocator's free-page index on its own: placement order, counts, corruption checks. */
class FreePageIndexTest {

    @Test
    void placementFollowsTheHintThenAWhollyFreeRunThenTheLastFreedPage() {
        FreePageIndex free = new FreePageIndex(10, 4); // runs 0..3, 4..7, 8..9
        assertEquals(10, free.count());
        assertEquals(0, free.takeAfter(-1), "fresh: page 0 first");
        assertEquals(1, free.takeAfter(0));
        assertEquals(4, free.takeAfter(-1), "no hint: the next wholly free run");
        assertEquals(8, free.takeAfter(9), "a hint at the last page is ignored: the short last run");
        assertEquals(2, free.takeAfter(1));
        assertEquals(3, free.takeAfter(2));
        assertEquals(5, free.takeAfter(4));
        assertEquals(9, free.takeAfter(8));
        free.checkInvariants();
        // no run wholly free: the most recently freed page (LIFO), then the hint again
        free.add(2);
        free.add(0);
        assertEquals(0, free.takeAfter(-1));
        assertEquals(2, free.takeAfter(-1));
        assertEquals(6, free.takeAfter(Integer.MAX_VALUE), "a hint past the pool is ignored");
        assertEquals(7, free.takeAfter(6));
        assertEquals(0, free.count());
        assertFalse(free.contains(7));
        // freeing a whole run makes it the placement again
        for (int p = 0; p < 4; p++) free.add(p);
        free.add(9);
        assertTrue(free.contains(9));
        assertEquals(0, free.takeAfter(-1));
        free.checkInvariants();
    }

    @Test
    void checkInvariantsDetectsAWrongRunCount() throws ReflectiveOperationException {
        FreePageIndex free = new FreePageIndex(8, 4);
        free.takeAfter(-1);
        free.checkInvariants();
        Field f = FreePageIndex.class.getDeclaredField("runAllocated");
        f.setAccessible(true);
        int[] runAllocated = (int[]) f.get(free);
        runAllocated[1] = 1;
        var e = assertThrows(IllegalStateException.class, free::checkInvariants);
        assertTrue(e.getMessage().contains("run 1"), e.getMessage());
    }
}
