package io.radixkv.paging;

import java.util.Arrays;

/**
 * The free pages of a {@link BlockAllocator}, indexed for placement: which free page an
 * allocation takes next. All operations are O(1) except {@link #checkInvariants()}.
 *
 * <p><b>Placement.</b> A CPU decode step reads each sequence's K/V page after page, and the
 * hardware prefetchers only follow consecutive addresses: a sequence whose pages are
 * consecutive in the pool decodes up to 1.5x faster than one whose pages are scattered (see
 * the README). So {@link #takeAfter} keeps a sequence's pages together where it can: an
 * allocation may name the page it should follow (the sequence's last page) and takes the
 * page after it while that is free; otherwise it starts at the first page of a wholly free
 * <em>run</em> of {@code runPages} aligned pages (so the rest of the run stays free for that
 * sequence to grow into), and only when no run is wholly free does it take the most recently
 * freed page (LIFO). A multi-page allocation passes each page it took as the next one's
 * hint, so it extends through the pages that follow while they are free.
 *
 * <p>Free pages live in an int stack with a position map, each run counts its allocated pages
 * (0: wholly free, whatever the run's length), and the wholly free runs live in a second
 * stack with a position map, so every step is O(1) and nothing is allocated. Pages are
 * tracked here only by id: their states and owners are the allocator's. Not thread-safe,
 * like the allocator.
 */
final class FreePageIndex {
    private final int numPages;
    private final int runPages;
    /** log2(runPages): a page's run is page >>> runShift. */
    private final int runShift;
    /** The free pages; the most recently freed one on top. */
    private final int[] freeStack;
    /** Index of each free page in {@link #freeStack}; -1 for allocated pages. */
    private final int[] stackPos;
    private int freeTop;
    /** Allocated (not free) pages in each run of {@link #runPages}: 0 for a wholly free run. */
    private final int[] runAllocated;
    /** Runs all of whose pages are free, as a stack with a position map (-1: not listed). */
    private final int[] freeRuns;
    private final int[] freeRunPos;
    private int freeRunTop;
    /** Scratch bitmap for {@link #checkInvariants()} (allocated once). */
    private final long[] seen;

    /**
     * All of {@code [0, numPages)} free, page 0 on top (a fresh allocator hands out 0, 1, 2,
     * ...); {@code runPages} is a power of two (checked by the allocator).
     */
    FreePageIndex(int numPages, int runPages) {
        this.numPages = numPages;
        this.runPages = runPages;
        this.runShift = Integer.numberOfTrailingZeros(runPages);
        this.freeStack = new int[numPages];
        this.stackPos = new int[numPages];
        this.seen = new long[(numPages + 63) >>> 6];
        for (int i = 0; i < numPages; i++) {
            freeStack[i] = numPages - 1 - i;
            stackPos[numPages - 1 - i] = i;
        }
        freeTop = numPages;
        int runs = (int) (((long) numPages + runPages - 1) / runPages);
        this.runAllocated = new int[runs];
        this.freeRuns = new int[runs];
        this.freeRunPos = new int[runs];
        for (int r = 0; r < runs; r++) {
            freeRuns[r] = runs - 1 - r; // run 0 on top
            freeRunPos[runs - 1 - r] = r;
        }
        freeRunTop = runs;
    }

    /** Pages per run. */
    int runPages() {
        return runPages;
    }

    /** Number of free pages. */
    int count() {
        return freeTop;
    }

    /** Whether {@code page} (in range) is free. */
    boolean contains(int page) {
        return stackPos[page] >= 0;
    }

    /**
     * Removes and returns the free page to hand out after page {@code prev} (a hint: any
     * value; &lt; 0 for none), as the class comment describes. At least one page is free.
     */
    int takeAfter(int prev) {
        int page;
        if (prev >= 0 && prev < numPages - 1 && stackPos[prev + 1] >= 0) {
            page = prev + 1;
        } else if (freeRunTop > 0) {
            page = freeRuns[freeRunTop - 1] << runShift;
        } else {
            page = freeStack[freeTop - 1];
        }
        take(page);
        return page;
    }

    /** Removes a free page from the free stack and counts it allocated in its run. */
    private void take(int page) {
        int i = stackPos[page];
        int last = freeStack[--freeTop];
        freeStack[i] = last;
        stackPos[last] = i;
        stackPos[page] = -1;
        int r = page >>> runShift;
        if (runAllocated[r]++ == 0) {
            int j = freeRunPos[r];
            int lastRun = freeRuns[--freeRunTop];
            freeRuns[j] = lastRun;
            freeRunPos[lastRun] = j;
            freeRunPos[r] = -1;
        }
    }

    /** Puts an allocated page (in range, not free) on top of the free stack. */
    void add(int page) {
        stackPos[page] = freeTop;
        freeStack[freeTop++] = page;
        int r = page >>> runShift;
        if (--runAllocated[r] == 0) {
            freeRunPos[r] = freeRunTop;
            freeRuns[freeRunTop++] = r;
        }
    }

    /**
     * Checks that the free stack lists distinct pages, each where its position map says, that
     * every other page's position is -1, that each run's count matches its allocated pages and
     * that the wholly free runs are listed exactly. O(numPages), no allocation. Throws
     * IllegalStateException describing the first violation.
     */
    void checkInvariants() {
        Arrays.fill(seen, 0L);
        for (int i = 0; i < freeTop; i++) {
            int p = freeStack[i];
            if (p < 0 || p >= numPages) {
                throw new IllegalStateException("free stack entry " + i + " = " + p + " is out of range");
            }
            long bit = 1L << p;
            if ((seen[p >>> 6] & bit) != 0) {
                throw new IllegalStateException("page " + p + " is on the free stack twice");
            }
            seen[p >>> 6] |= bit;
        }
        for (int i = 0; i < freeTop; i++) {
            if (stackPos[freeStack[i]] != i) {
                throw new IllegalStateException("page " + freeStack[i] + " is on the free stack at index " + i
                        + " but its position map says " + stackPos[freeStack[i]]);
            }
        }
        int wholly = 0;
        for (int r = 0; r < runAllocated.length; r++) {
            int size = runSize(r);
            int inRun = 0;
            for (int p = r * runPages, end = p + size; p < end; p++) {
                if ((seen[p >>> 6] & (1L << p)) != 0) {
                    inRun++;
                } else if (stackPos[p] != -1) {
                    throw new IllegalStateException("page " + p + " is not on the free stack but has stack position "
                            + stackPos[p]);
                }
            }
            if (runAllocated[r] != size - inRun) {
                throw new IllegalStateException("run " + r + " counts " + runAllocated[r] + " allocated pages, has "
                        + (size - inRun));
            }
            boolean listed = freeRunPos[r] >= 0;
            if (listed != (inRun == size) || listed && (freeRunPos[r] >= freeRunTop || freeRuns[freeRunPos[r]] != r)) {
                throw new IllegalStateException("run " + r + " (" + inRun + " of " + size
                        + " pages free) is " + (listed ? "" : "not ") + "listed as wholly free at " + freeRunPos[r]);
            }
            if (listed) {
                wholly++;
            }
        }
        if (wholly != freeRunTop) {
            throw new IllegalStateException(freeRunTop + " runs listed as wholly free, " + wholly + " are");
        }
    }

    /** Pages in run {@code run}: {@link #runPages}, but the last run may be shorter. */
    private int runSize(int run) {
        return Math.min(runPages, numPages - run * runPages);
    }
}
