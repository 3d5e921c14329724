package io.radixkv.paging;

import java.util.Arrays;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.function.IntPredicate;
import java.util.function.IntUnaryOperator;

/**
 * Fixed pool of KV page ids {@code [0, numPages)} with O(1) allocate/free.
 *
 * <p>Every page is in exactly one {@link PageState}. Per-page state and owner live in primitive
 * arrays, so the hot path never boxes or allocates. The owner of a {@link PageState#PRIVATE}
 * page is the id its allocator call named (a request/sequence id, used for leak detection);
 * FREE and CACHED pages have owner {@link #NO_OWNER}.
 *
 * <p><b>Placement.</b> A CPU decode step reads each sequence's K/V page after page, and the
 * hardware prefetchers only follow consecutive addresses, so the allocator keeps a sequence's
 * pages together where it can: an allocation may name the page it should follow
 * ({@code after}, the sequence's last page) and takes the pages after it while they are free;
 * otherwise it starts at the first page of a wholly free <em>run</em> of
 * {@link #DEFAULT_RUN_PAGES} aligned pages, and only when no run is wholly free does it take
 * the most recently freed page (LIFO). The free pages and this policy live in a
 * {@code FreePageIndex} (its class comment has the details).
 *
 * <p><b>Shared private pages.</b> A PRIVATE page may be mapped by several sequences of one owner
 * (the samples forked from one prompt share its pages): {@link #share} adds a reference, and
 * {@link #free} drops one, returning the page to the pool only with its last reference. Such a
 * page cannot go to the prefix cache ({@link #transferToCache} refuses it).
 *
 * <p>When an allocation runs short, the allocator asks its {@linkplain #setReclaimer
 * reclaimer} (the engine wires radix-cache eviction here) once to free the shortfall, then
 * retries. Allocation is all-or-nothing: a failed call changes nothing.
 *
 * <p>Not thread-safe: the engine's scheduling thread owns it (as it owns the page tables).
 */
public final class BlockAllocator {
    /** Owner recorded for FREE and CACHED pages, and accepted for untracked allocations. */
    public static final int NO_OWNER = -1;

    private static final byte FREE = 0;
    private static final byte PRIVATE = 1;
    private static final byte CACHED = 2;
    /** Transient mark used inside {@link #free(int[], int, int)} to detect duplicates. */
    private static final byte MARKED = 3;

    /** Pages per run: 16 pages of 16 tokens hold 256 tokens of a sequence side by side. */
    public static final int DEFAULT_RUN_PAGES = 16;

    private static final PageState[] STATES = PageState.values();

    private final int numPages;
    /** The FREE pages, and which one an allocation takes next. */
    private final FreePageIndex freePages;
    private final byte[] state;
    private final int[] owner;
    /** References to a PRIVATE page beyond the first ({@link #share}); 0 for every other page. */
    private final int[] shares;
    private int privateCount;
    private int cachedCount;
    private IntUnaryOperator reclaimer;
    private boolean reclaiming;

    public BlockAllocator(int numPages) {
        this(numPages, DEFAULT_RUN_PAGES);
    }

    /**
     * An allocator whose free runs are {@code runPages} pages long, a power of two (1: no runs,
     * plain LIFO).
     */
    public BlockAllocator(int numPages, int runPages) {
        if (numPages < 0) {
            throw new IllegalArgumentException("numPages must not be negative, got " + numPages);
        }
        if (runPages < 1 || Integer.bitCount(runPages) != 1) {
            throw new IllegalArgumentException("runPages must be a power of two, got " + runPages);
        }
        this.numPages = numPages;
        this.freePages = new FreePageIndex(numPages, runPages);
        this.state = new byte[numPages];
        this.owner = new int[numPages];
        Arrays.fill(owner, NO_OWNER);
        this.shares = new int[numPages];
    }

    /** Pages per free run (see the class comment). */
    public int runPages() {
        return freePages.runPages();
    }

    public int numPages() {
        return numPages;
    }

    public int freePages() {
        return freePages.count();
    }

    public int privatePages() {
        return privateCount;
    }

    public int cachedPages() {
        return cachedCount;
    }

    /** PRIVATE + CACHED pages. */
    public int allocatedPages() {
        return numPages - freePages.count();
    }

    /** Whether {@code n} pages are free right now (without asking the reclaimer). */
    public boolean canAllocate(int n) {
        return n >= 0 && n <= freePages.count();
    }

    /**
     * Sets the callback asked to free pages when an allocation is short: it receives the
     * shortfall (pages still needed) and returns how many pages it freed (informational;
     * the allocator re-reads its own free count). Null removes it.
     */
    public void setReclaimer(IntUnaryOperator reclaimer) {
        this.reclaimer = reclaimer;
    }

    /**
     * Allocates {@code n} pages as PRIVATE to {@code owner}, writing their ids to
     * {@code out[off .. off+n)}. All-or-nothing: if fewer than {@code n} pages are free, asks
     * the reclaimer once and retries; returns false with nothing changed (and {@code out}
     * untouched) if still short. {@code n == 0} succeeds trivially.
     */
    public boolean allocate(int n, int owner, int[] out, int off) {
        return allocate(n, owner, out, off, -1);
    }

    /**
     * {@link #allocate(int, int, int[], int)} placing the pages after page {@code after} where
     * they are free (the caller's last page: its sequence then reads on in address order);
     * {@code after} &lt; 0, or any page id, is only a hint.
     */
    public boolean allocate(int n, int owner, int[] out, int off, int after) {
        Objects.requireNonNull(out, "out");
        if (n < 0) {
            throw new IllegalArgumentException("page count must not be negative, got " + n);
        }
        Objects.checkFromIndexSize(off, n, out.length);
        if (n > freePages.count() && !reclaimFor(n)) {
            return false;
        }
        int prev = after;
        for (int i = 0; i < n; i++) {
            int page = freePages.takeAfter(prev);
            state[page] = PRIVATE;
            this.owner[page] = owner;
            out[off + i] = page;
            prev = page;
        }
        privateCount += n;
        return true;
    }

    /** Allocates one PRIVATE page for {@code owner}; -1 if none is free even after reclaiming. */
    public int allocateOne(int owner) {
        return allocateOne(owner, -1);
    }

    /** {@link #allocateOne(int)} preferring the page after {@code after} (a hint, as in allocate). */
    public int allocateOne(int owner, int after) {
        if (freePages.count() == 0 && !reclaimFor(1)) {
            return -1;
        }
        int page = freePages.takeAfter(after);
        state[page] = PRIVATE;
        this.owner[page] = owner;
        privateCount++;
        return page;
    }

    /** Asks the reclaimer (once, never re-entrantly) to make {@code n} pages free. */
    private boolean reclaimFor(int n) {
        if (reclaimer != null && !reclaiming) {
            reclaiming = true;
            try {
                reclaimer.applyAsInt(n - freePages.count());
            } finally {
                reclaiming = false;
            }
        }
        return n <= freePages.count();
    }

    /**
     * Adds a reference to a PRIVATE page: another sequence of the same owner maps it, and it is
     * freed only when every reference is dropped ({@link #free}).
     *
     * @throws IllegalStateException for a page that is not PRIVATE
     */
    public void share(int page) {
        checkRange(page);
        byte s = state[page];
        if (s != PRIVATE) {
            throw notPrivate(page, s, "share");
        }
        shares[page]++;
    }

    /** Sequences mapping a PRIVATE page (1 unless {@link #share}d); 0 for FREE and CACHED pages. */
    public int references(int page) {
        checkRange(page);
        return state[page] == PRIVATE ? 1 + shares[page] : 0;
    }

    /**
     * Drops a reference to a PRIVATE page; the last one returns it to the free pool.
     *
     * @throws IllegalArgumentException for an id outside {@code [0, numPages)}
     * @throws IllegalStateException for a FREE page (double free / never allocated) or a
     *     CACHED page (only {@link #freeCached} frees those)
     */
    public void free(int page) {
        checkRange(page);
        byte s = state[page];
        if (s != PRIVATE) {
            throw notPrivate(page, s, "free");
        }
        if (shares[page] > 0) {
            shares[page]--;
            return;
        }
        release(page);
        privateCount--;
    }

    /**
     * {@link #free(int)} for {@code pages[off .. off+len)}, all PRIVATE. All-or-nothing: every id is
     * checked (range, state, duplicates within the list) before any is freed.
     */
    public void free(int[] pages, int off, int len) {
        privateCount -= releaseAll(pages, off, len, PRIVATE);
    }

    /** PRIVATE → CACHED: the prefix cache takes ownership; the owner is cleared. */
    public void transferToCache(int page) {
        checkRange(page);
        byte s = state[page];
        if (s != PRIVATE) {
            throw notPrivate(page, s, "transfer to the cache");
        }
        if (shares[page] > 0) {
            throw new IllegalStateException("cannot transfer page " + page + " to the cache: " + (1 + shares[page])
                    + " sequences share it");
        }
        state[page] = CACHED;
        owner[page] = NO_OWNER;
        privateCount--;
        cachedCount++;
    }

    /** CACHED → FREE; called by cache eviction. */
    public void freeCached(int page) {
        checkRange(page);
        byte s = state[page];
        if (s != CACHED) {
            throw new IllegalStateException("freeCached(page " + page + "): page is " + STATES[s]
                    + ", not CACHED");
        }
        release(page);
        cachedCount--;
    }

    /** {@link #freeCached(int)} for {@code pages[off .. off+len)}; all are checked first. */
    public void freeCached(int[] pages, int off, int len) {
        int released = releaseAll(pages, off, len, CACHED);
        cachedCount -= released;
    }

    /**
     * Frees {@code pages[off .. off+len)}, which must all be in state {@code expected}, and returns
     * how many went back to the pool (a shared PRIVATE page only loses a reference).
     * All-or-nothing: every id is checked (range, state, duplicates within the list, found by
     * marking) before any is freed; on a bad id the marks are undone and nothing changes.
     */
    private int releaseAll(int[] pages, int off, int len, byte expected) {
        Objects.requireNonNull(pages, "pages");
        Objects.checkFromIndexSize(off, len, pages.length);
        int end = off + len;
        for (int i = off; i < end; i++) {
            int page = pages[i];
            RuntimeException bad = null;
            if (page < 0 || page >= numPages) {
                bad = outOfRange(page);
            } else if (state[page] == MARKED) {
                bad = new IllegalStateException("page " + page + " appears twice in the list to free (double free)");
            } else if (state[page] != expected) {
                bad = expected == PRIVATE ? notPrivate(page, state[page], "free")
                        : new IllegalStateException("freeCached(page " + page + "): page is " + STATES[state[page]]
                                + ", not CACHED");
            }
            if (bad != null) {
                for (int j = off; j < i; j++) {
                    state[pages[j]] = expected; // undo the marks: nothing changed
                }
                throw bad;
            }
            state[page] = MARKED;
        }
        int released = 0;
        for (int i = off; i < end; i++) {
            int page = pages[i];
            if (shares[page] > 0) {
                shares[page]--;
                state[page] = expected;
            } else {
                release(page);
                released++;
            }
        }
        return released;
    }

    public PageState stateOf(int page) {
        checkRange(page);
        return STATES[state[page]];
    }

    public boolean isPrivate(int page) {
        return page >= 0 && page < numPages && state[page] == PRIVATE;
    }

    public boolean isCached(int page) {
        return page >= 0 && page < numPages && state[page] == CACHED;
    }

    /** Owner of a PRIVATE page; {@link #NO_OWNER} for FREE and CACHED pages. */
    public int ownerOf(int page) {
        checkRange(page);
        return owner[page];
    }

    // ---- diagnostics and recovery: leak audit, unreferenced audit, force free ----

    /**
     * PRIVATE pages whose owner is not active, grouped by owner (both ascending). Pages
     * allocated with {@link #NO_OWNER} are not tracked. Empty map: no leaks. O(numPages).
     */
    public Map<Integer, int[]> findLeaked(IntPredicate activeOwner) {
        Objects.requireNonNull(activeOwner, "activeOwner");
        // (owner, page) pairs packed into longs and sorted: grouped by owner, pages ascending
        long[] pairs = new long[privateCount];
        int n = 0;
        for (int p = 0; p < numPages; p++) {
            int o = owner[p];
            if (state[p] == PRIVATE && o != NO_OWNER && !activeOwner.test(o)) {
                pairs[n++] = ((long) o << 32) | p;
            }
        }
        Arrays.sort(pairs, 0, n);
        TreeMap<Integer, int[]> leaked = new TreeMap<>();
        for (int i = 0; i < n; ) {
            int o = (int) (pairs[i] >> 32);
            int j = i;
            while (j < n && (int) (pairs[j] >> 32) == o) {
                j++;
            }
            int[] pages = new int[j - i];
            for (int k = i; k < j; k++) {
                pages[k - i] = (int) pairs[k];
            }
            leaked.put(o, pages);
            i = j;
        }
        return leaked;
    }

    /** {@link #findLeaked(IntPredicate)} with the active owners listed. */
    public Map<Integer, int[]> findLeaked(int... activeOwners) {
        int[] sorted = activeOwners.clone();
        Arrays.sort(sorted);
        return findLeaked(o -> Arrays.binarySearch(sorted, o) >= 0);
    }

    /**
     * Allocated (PRIVATE or CACHED) pages that {@code referenced} does not claim, ascending:
     * pages reachable from no page table / cache node are leaked. O(numPages).
     */
    public int[] audit(IntPredicate referenced) {
        Objects.requireNonNull(referenced, "referenced");
        int[] out = new int[allocatedPages()];
        int n = 0;
        for (int p = 0; p < numPages; p++) {
            if (state[p] != FREE && !referenced.test(p)) {
                out[n++] = p;
            }
        }
        return Arrays.copyOf(out, n);
    }

    /**
     * Force-frees {@code pages[off .. off+len)} whatever their state, without the double-free
     * check (for leak recovery: pages known to be unreachable). Already-free ids and repeats
     * are ignored; out-of-range ids are rejected before anything changes.
     *
     * @return the number of pages that were allocated and are now free
     */
    public int reclaim(int[] pages, int off, int len) {
        Objects.requireNonNull(pages, "pages");
        Objects.checkFromIndexSize(off, len, pages.length);
        for (int i = off; i < off + len; i++) {
            checkRange(pages[i]);
        }
        int freed = 0;
        for (int i = off; i < off + len; i++) {
            int page = pages[i];
            byte s = state[page];
            if (s == PRIVATE) {
                privateCount--;
            } else if (s == CACHED) {
                cachedCount--;
            } else {
                continue;
            }
            release(page);
            freed++;
        }
        return freed;
    }

    /** {@link #reclaim(int[], int, int)} of the whole array. */
    public int reclaim(int... pages) {
        return reclaim(pages, 0, pages.length);
    }

    /** Ids of all allocated (PRIVATE or CACHED) pages, ascending; a fresh copy. */
    public int[] allocatedPageIds() {
        return audit(p -> false);
    }

    /**
     * Checks {@code free + private + cached == total}, that the free-page index holds exactly
     * the FREE pages and is consistent (see {@code FreePageIndex.checkInvariants}), and that
     * only PRIVATE pages have an owner. O(numPages), no allocation. Throws
     * IllegalStateException describing the first violation.
     */
    public void checkInvariants() {
        int free = 0;
        int priv = 0;
        int cached = 0;
        for (int p = 0; p < numPages; p++) {
            switch (state[p]) {
                case FREE -> free++;
                case PRIVATE -> priv++;
                case CACHED -> cached++;
                default -> throw new IllegalStateException("page " + p + " has invalid state " + state[p]);
            }
            if (state[p] != PRIVATE && shares[p] != 0) {
                throw new IllegalStateException("page " + p + " is " + STATES[state[p]] + " but has " + shares[p]
                        + " shared references");
            }
            if (state[p] != PRIVATE && owner[p] != NO_OWNER) {
                throw new IllegalStateException("page " + p + " is " + STATES[state[p]] + " but has owner " + owner[p]);
            }
        }
        if (free + priv + cached != numPages) {
            throw new IllegalStateException("free " + free + " + private " + priv + " + cached " + cached
                    + " != total " + numPages);
        }
        int freeCount = freePages.count();
        if (free != freeCount || priv != privateCount || cached != cachedCount) {
            throw new IllegalStateException("counters (free " + freeCount + ", private " + privateCount + ", cached "
                    + cachedCount + ") disagree with page states (free " + free + ", private " + priv + ", cached "
                    + cached + ")");
        }
        freePages.checkInvariants();
        for (int p = 0; p < numPages; p++) {
            boolean listed = freePages.contains(p);
            if (listed != (state[p] == FREE)) {
                throw new IllegalStateException("page " + p + " is " + (listed ? "" : "not ") + "on the free stack but "
                        + STATES[state[p]]);
            }
        }
    }

    @Override
    public String toString() {
        return "BlockAllocator[total=" + numPages + ", free=" + freePages.count() + ", private=" + privateCount
                + ", cached=" + cachedCount + "]";
    }

    private void release(int page) {
        state[page] = FREE;
        owner[page] = NO_OWNER;
        shares[page] = 0;
        freePages.add(page);
    }

    private void checkRange(int page) {
        if (page < 0 || page >= numPages) {
            throw outOfRange(page);
        }
    }

    private IllegalArgumentException outOfRange(int page) {
        return new IllegalArgumentException("page " + page + " is outside [0, " + numPages + ")");
    }

    private static IllegalStateException notPrivate(int page, byte s, String what) {
        String why = switch (s) {
            case FREE -> "it is already free (double free, or never allocated)";
            case CACHED -> "it is cache-owned (only cache eviction frees it, via freeCached)";
            default -> "its state is " + s;
        };
        return new IllegalStateException("cannot " + what + " page " + page + ": " + why);
    }
}
