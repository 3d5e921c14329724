package io.radixkv.paging;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

class PageTableTest {

    @Test
    void rowsLiveInTheSegmentAtFixedOffsets() {
        try (PageTable t = new PageTable(3, 4)) {
            assertEquals(3 * 4 * 4, t.segment().byteSize());
            int a = t.allocateSlot();
            int b = t.allocateSlot();
            assertEquals(0, a);
            assertEquals(1, b);
            t.append(a, new int[] {7, 8, 9}, 0, 3);
            t.append(b, new int[] {1, 5}, 1, 1);
            t.append(a, new int[] {10}, 0, 1);
            assertEquals(4, t.pageCount(a));
            assertEquals(1, t.pageCount(b));
            for (int i = 0; i < 4; i++) {
                assertEquals(7 + i, t.segment().getAtIndex(ValueLayout.JAVA_INT, t.rowOffset(a) + i));
                assertEquals(7 + i, t.pageAt(a, i));
            }
            assertEquals(5, t.segment().getAtIndex(ValueLayout.JAVA_INT, t.rowOffset(b)));
            t.setPage(a, 2, 42);
            int[] row = new int[4];
            t.copyRow(a, 4, row, 0);
            assertArrayEquals(new int[] {7, 8, 42, 10}, row);
            var e = assertThrows(IllegalArgumentException.class, () -> t.append(a, new int[] {1}, 0, 1));
            assertTrue(e.getMessage().contains("maxPagesPerSeq"), e.getMessage());
            assertThrows(IndexOutOfBoundsException.class, () -> t.pageAt(b, 1));
            assertThrows(IndexOutOfBoundsException.class, () -> t.setPage(b, 1, 3));
            assertThrows(IndexOutOfBoundsException.class, () -> t.copyRow(b, 2, row, 0));
        }
    }

    @Test
    void slotsAreAllocatedAndReleasedById() {
        try (PageTable t = new PageTable(2, 2)) {
            int a = t.allocateSlot();
            int b = t.allocateSlot();
            assertEquals(-1, t.allocateSlot());
            assertEquals(0, t.freeSlots());
            t.append(a, new int[] {3}, 0, 1);
            t.setLength(a, 2);
            t.releaseSlot(a);
            assertFalse(t.isActive(a));
            assertTrue(t.isActive(b));
            assertThrows(IllegalStateException.class, () -> t.pageCount(a));
            assertThrows(IllegalStateException.class, () -> t.releaseSlot(a));
            assertThrows(IllegalArgumentException.class, () -> t.pageCount(2));
            int c = t.allocateSlot();
            assertEquals(a, c);
            assertEquals(0, t.pageCount(c), "a reused slot starts empty");
            assertEquals(0, t.length(c));
            assertThrows(IllegalArgumentException.class, () -> t.setLength(c, -1));
        }
        assertThrows(IllegalArgumentException.class, () -> new PageTable(0, 1));
        assertThrows(IllegalArgumentException.class, () -> new PageTable(1, 0));
    }
}
