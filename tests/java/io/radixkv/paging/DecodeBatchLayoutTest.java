package io.radixkv.paging;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import org.junit.jupiter.api.Test;

class DecodeBatchLayoutTest {

    /** Places where the next page of a sequence is not the one after its previous page. */
    private static int jumps(int[] ids, int from, int to) {
        int j = 0;
        for (int i = from + 1; i < to; i++) {
            if (ids[i] != ids[i - 1] + 1) j++;
        }
        return j;
    }

    @Test
    void aBatchDecodingTogetherKeepsEachSequenceInRunsWithPlacementAndInterleavesWithout() {
        long[] lens = {1000, 1000, 700, 1000}; // 63, 63, 44, 63 pages of 16
        int[] starts = {0, 63, 126, 170, 233};
        int[] placed = DecodeBatchLayout.pageIds(new BlockAllocator(300), 16, lens, 100);
        int[] lifo = DecodeBatchLayout.pageIds(new BlockAllocator(300, 1), 16, lens, 100);
        assertEquals(233, placed.length);
        assertEquals(233, Arrays.stream(placed).distinct().count(), "distinct pages");
        for (int b = 0; b < 4; b++) {
            int pages = starts[b + 1] - starts[b];
            assertTrue(jumps(placed, starts[b], starts[b + 1]) <= pages / 16 + 1,
                    "sequence " + b + ": " + Arrays.toString(Arrays.copyOfRange(placed, starts[b], starts[b + 1])));
            // the prompt's 7 pages are consecutive either way; decode growth interleaves without runs
            assertTrue(jumps(lifo, starts[b], starts[b + 1]) >= pages - 8, "lifo sequence " + b);
        }
    }

    @Test
    void promptsLongerThanTheSequenceAndEmptySequences() {
        int[] ids = DecodeBatchLayout.pageIds(new BlockAllocator(8), 4, new long[] {0, 5, 3}, 512);
        assertArrayEquals(new int[] {0, 1, 2}, ids, "prompts reserved in turn from a fresh pool");
    }

    @Test
    void aBatchThatDoesNotFitIsAClearError() {
        var e = assertThrows(IllegalStateException.class,
                () -> DecodeBatchLayout.pageIds(new BlockAllocator(10), 16, new long[] {100, 100}, 16));
        assertTrue(e.getMessage().contains("does not fit"), e.getMessage());
        assertThrows(IllegalArgumentException.class,
                () -> DecodeBatchLayout.pageIds(new BlockAllocator(10), 16, new long[] {-1}, 16));
    }
}
