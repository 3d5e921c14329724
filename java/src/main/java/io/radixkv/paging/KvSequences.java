package io.radixkv.paging;

import java.util.Arrays;
import java.util.Objects;
import java.util.function.IntSupplier;

/**
 * Sequence lifecycle over a {@link BlockAllocator} and a {@link PageTable}: open a slot,
 * map the prefix cache's pages at the start, allocate private pages for the rest (eagerly
 * for a prefill, one page at a time for decode), hand pages over to the cache, release.
 *
 * <p>Ownership: a page mapped by a sequence is either CACHED (owned by the
 * prefix cache, possibly mapped by many sequences, never freed here) or PRIVATE to exactly
 * this sequence (allocated with the sequence's owner id), or shared by the sequences
 * {@linkplain #fork forked} from it, which carry the same owner id. {@link #release} frees
 * exactly the pages still PRIVATE (a shared one when its last sequence lets it go). Every mutating call validates fully before changing anything, so a
 * rejected or failed call leaves all state as it was.
 *
 * <p>Length vs capacity: {@link #length} is the number of tokens whose KV is (or is being)
 * written; capacity is {@code pageCount * pageSize}. {@link #reserve} and
 * {@link #growForDecode} only add capacity; the caller advances the length with
 * {@link #setLength} once the tokens are scheduled.
 *
 * <p>Not thread-safe: owned by the engine's scheduling thread.
 */
public final class KvSequences implements AutoCloseable {
    private final BlockAllocator allocator;
    private final PageTable table;
    private final int pageSize;
    private final int maxPagesPerSeq;
    private final int[] owner;
    /** Scratch for allocations (one row's worth), reused. */
    private final int[] scratch;
    /** For {@link #checkInvariants()}: per page, the rows that hold it as PRIVATE. */
    private final int[] privateRows;
    /** For {@link #checkInvariants()}: per page, stamp of the last row that listed it. */
    private final int[] rowStamp;
    private int stamp;
    /** Pages the prefix cache could evict on demand (counted as free capacity); none by default. */
    private IntSupplier evictablePages = () -> 0;

    /**
     * @param allocator the page pool (shared with the prefix cache)
     * @param pageSize tokens per page
     * @param maxSeqs sequence slots
     * @param maxPagesPerSeq width of the page table: a sequence holds at most
     *     {@code maxPagesPerSeq * pageSize} tokens
     */
    public KvSequences(BlockAllocator allocator, int pageSize, int maxSeqs, int maxPagesPerSeq) {
        this.allocator = Objects.requireNonNull(allocator, "allocator");
        if (pageSize <= 0) {
            throw new IllegalArgumentException("pageSize must be positive, got " + pageSize);
        }
        this.pageSize = pageSize;
        this.table = new PageTable(maxSeqs, maxPagesPerSeq);
        this.maxPagesPerSeq = maxPagesPerSeq;
        this.owner = new int[maxSeqs];
        Arrays.fill(owner, BlockAllocator.NO_OWNER);
        this.scratch = new int[maxPagesPerSeq];
        this.privateRows = new int[allocator.numPages()];
        this.rowStamp = new int[allocator.numPages()];
    }

    public BlockAllocator allocator() {
        return allocator;
    }

    public PageTable pageTable() {
        return table;
    }

    public int pageSize() {
        return pageSize;
    }

    public int maxSeqs() {
        return table.maxSeqs();
    }

    public int maxPagesPerSeq() {
        return maxPagesPerSeq;
    }

    /** The most tokens one sequence can hold. */
    public long maxTokensPerSeq() {
        return (long) maxPagesPerSeq * pageSize;
    }

    public int openCount() {
        return table.activeSlots();
    }

    public int freeSlots() {
        return table.freeSlots();
    }

    public boolean isOpen(int seq) {
        return table.isActive(seq);
    }

    /**
     * Opens an empty sequence whose private pages will be allocated for {@code owner} (a
     * request id, for leak detection). Returns the sequence (slot) id.
     *
     * @throws IllegalStateException when all {@link #maxSeqs()} slots are in use
     */
    public int open(int owner) {
        int seq = table.allocateSlot();
        if (seq < 0) {
            throw new IllegalStateException("no free sequence slot (all " + table.maxSeqs() + " in use)");
        }
        this.owner[seq] = owner;
        return seq;
    }

    /** The owner id given to {@link #open}. */
    public int ownerOf(int seq) {
        table.pageCount(seq); // validates
        return owner[seq];
    }

    /**
     * Maps {@code n} cache-owned pages {@code cachedPages[off .. off+n)} as the first pages of
     * an empty sequence (a prefix-cache hit). Cached pages are full (the cache matches whole
     * pages), so the length becomes {@code n * pageSize}.
     *
     * @throws IllegalStateException if the sequence already has pages or a page is not CACHED
     */
    public void mapShared(int seq, int[] cachedPages, int off, int n) {
        Objects.requireNonNull(cachedPages, "cachedPages");
        int count = table.pageCount(seq);
        Objects.checkFromIndexSize(off, n, cachedPages.length);
        if (count != 0) {
            throw new IllegalStateException("mapShared on sequence " + seq + " which already holds " + count
                    + " pages (shared pages go first, on an empty sequence)");
        }
        if (n > maxPagesPerSeq) {
            throw new IllegalArgumentException(n + " shared pages exceed maxPagesPerSeq " + maxPagesPerSeq);
        }
        int st = nextStamp();
        for (int i = off; i < off + n; i++) {
            int page = cachedPages[i];
            allocator.stateOf(page); // range check: IllegalArgumentException naming the id
            if (!allocator.isCached(page)) {
                throw new IllegalStateException("cannot map page " + page + " as shared into sequence " + seq
                        + ": it is " + describe(page) + ", not CACHED");
            }
            if (rowStamp[page] == st) {
                throw new IllegalArgumentException("page " + page + " appears twice in the shared prefix");
            }
            rowStamp[page] = st;
        }
        table.append(seq, cachedPages, off, n);
        table.setLength(seq, (long) n * pageSize);
    }

    /**
     * Maps the first {@code pages} pages of sequence {@code from} as the first pages of the empty
     * sequence {@code to}, which must have the same owner (the samples of one request): CACHED
     * pages as they are (the caller holds the cache's lock on them for {@code to}), PRIVATE ones
     * {@linkplain BlockAllocator#share shared}. Sets the length to {@code pages * pageSize}.
     *
     * @throws IllegalStateException (nothing changed) if {@code to} holds pages or has another owner
     */
    public void share(int from, int to, int pages) {
        int have = table.pageCount(from);
        Objects.checkFromIndexSize(0, pages, have);
        if (table.pageCount(to) != 0) {
            throw new IllegalStateException("share into sequence " + to + " which already holds " + table.pageCount(to)
                    + " pages");
        }
        if (owner[from] != owner[to]) {
            throw new IllegalStateException("sequences " + from + " and " + to + " have different owners (" + owner[from]
                    + ", " + owner[to] + "): only one owner's sequences share private pages");
        }
        table.copyRow(from, pages, scratch, 0);
        for (int i = 0; i < pages; i++) {
            if (allocator.isPrivate(scratch[i])) {
                allocator.share(scratch[i]);
            }
        }
        table.append(to, scratch, 0, pages);
        table.setLength(to, (long) pages * pageSize);
    }

    /**
     * Eager allocation (prefill): makes the capacity at least {@code totalTokens} by
     * allocating PRIVATE pages (asking the reclaimer, i.e. cache eviction, if short).
     * All-or-nothing.
     *
     * @return false if the pages could not be had (nothing changed); true otherwise
     * @throws IllegalArgumentException if {@code totalTokens} exceeds {@link #maxTokensPerSeq()}
     */
    public boolean reserve(int seq, long totalTokens) {
        int count = table.pageCount(seq);
        if (totalTokens < 0) {
            throw new IllegalArgumentException("totalTokens must not be negative, got " + totalTokens);
        }
        if (totalTokens > maxTokensPerSeq()) {
            throw new IllegalArgumentException("sequence " + seq + " cannot hold " + totalTokens
                    + " tokens: the page table allows " + maxTokensPerSeq());
        }
        int need = (int) ceilDiv(totalTokens, pageSize) - count;
        if (need <= 0) {
            return true;
        }
        if (!allocator.allocate(need, owner[seq], scratch, 0, lastPage(seq, count))) {
            return false;
        }
        table.append(seq, scratch, 0, need);
        return true;
    }

    /**
     * Lazy decode growth: ensures room for one more token after {@link #length}, allocating a
     * single page when the length sits on a page boundary. Does not change the length.
     *
     * @return false if a page was needed and none could be had (nothing changed)
     */
    public boolean growForDecode(int seq) {
        int count = table.pageCount(seq);
        long len = table.length(seq);
        if (len < (long) count * pageSize) {
            return true;
        }
        if (count == maxPagesPerSeq) {
            throw new IllegalStateException("sequence " + seq + " is full: " + len
                    + " tokens is the page table's limit");
        }
        int page = allocator.allocateOne(owner[seq], lastPage(seq, count));
        if (page < 0) {
            return false;
        }
        scratch[0] = page;
        table.append(seq, scratch, 0, 1);
        return true;
    }

    /** The sequence's last page (new pages go after it where free: see BlockAllocator); -1 if none. */
    private int lastPage(int seq, int count) {
        return count == 0 ? -1 : table.pageAt(seq, count - 1);
    }

    /** Sets the number of tokens in the sequence; must be within its capacity. */
    public void setLength(int seq, long len) {
        long cap = capacity(seq);
        if (len < 0 || len > cap) {
            throw new IllegalArgumentException("length " + len + " of sequence " + seq + " is outside 0.." + cap
                    + " (its capacity)");
        }
        table.setLength(seq, len);
    }

    public long length(int seq) {
        return table.length(seq);
    }

    public int pageCount(int seq) {
        return table.pageCount(seq);
    }

    /** Token capacity of the pages the sequence holds. */
    public long capacity(int seq) {
        return (long) table.pageCount(seq) * pageSize;
    }

    public int pageAt(int seq, int i) {
        return table.pageAt(seq, i);
    }

    /** Copies the sequence's pages into a new array (for diagnostics / the cache's insert). */
    public int[] pages(int seq) {
        int n = table.pageCount(seq);
        int[] out = new int[n];
        table.copyRow(seq, n, out, 0);
        return out;
    }

    /** Pages the sequence still needs to hold {@code extraTokens} more tokens after its length. */
    public int pagesNeeded(int seq, long extraTokens) {
        if (extraTokens < 0) {
            throw new IllegalArgumentException("extraTokens must not be negative, got " + extraTokens);
        }
        long need = ceilDiv(table.length(seq) + extraTokens, pageSize) - table.pageCount(seq);
        return (int) Math.max(0, Math.min(need, Integer.MAX_VALUE));
    }

    /** Pages needed for a sequence of {@code tokens} tokens. */
    public int pagesFor(long tokens) {
        return (int) Math.min(ceilDiv(tokens, pageSize), Integer.MAX_VALUE);
    }

    /**
     * The prefix cache took ownership of pages {@code [fromPageIdx, fromPageIdx+count)} of the
     * sequence: each goes PRIVATE → CACHED. All must be PRIVATE pages of this sequence.
     */
    public void markCached(int seq, int fromPageIdx, int count) {
        int pages = table.pageCount(seq);
        Objects.checkFromIndexSize(fromPageIdx, count, pages);
        for (int i = fromPageIdx; i < fromPageIdx + count; i++) {
            requireOwnPrivate(seq, i, table.pageAt(seq, i), "markCached");
            requireUnshared(seq, i, table.pageAt(seq, i), "markCached");
        }
        for (int i = fromPageIdx; i < fromPageIdx + count; i++) {
            allocator.transferToCache(table.pageAt(seq, i));
        }
    }

    /**
     * The cache already held this page's tokens (another sequence inserted the same prefix
     * first): frees this sequence's PRIVATE duplicate at {@code pageIdx} and maps the cache's
     * {@code cachedPage} there instead, so no duplicate leaks and the cache's copy is shared.
     */
    public void replaceWithCached(int seq, int pageIdx, int cachedPage) {
        int pages = table.pageCount(seq);
        Objects.checkIndex(pageIdx, pages);
        int old = table.pageAt(seq, pageIdx);
        requireOwnPrivate(seq, pageIdx, old, "replaceWithCached");
        requireUnshared(seq, pageIdx, old, "replaceWithCached");
        allocator.stateOf(cachedPage); // range check
        if (!allocator.isCached(cachedPage)) {
            throw new IllegalStateException("replaceWithCached: page " + cachedPage + " is " + describe(cachedPage)
                    + ", not CACHED");
        }
        for (int i = 0; i < pages; i++) {
            if (table.pageAt(seq, i) == cachedPage) {
                throw new IllegalStateException("replaceWithCached: sequence " + seq + " already maps page "
                        + cachedPage + " at index " + i);
            }
        }
        allocator.free(old);
        table.setPage(seq, pageIdx, cachedPage);
    }

    /**
     * Releases the sequence: frees exactly its still-PRIVATE pages, forgets the CACHED ones
     * (the cache frees those on eviction), and returns the slot.
     *
     * @throws IllegalStateException (nothing changed) if a mapped page is FREE or PRIVATE to
     *     another owner: some other component freed or re-allocated a page this sequence maps
     */
    public void release(int seq) {
        int n = table.pageCount(seq);
        table.copyRow(seq, n, scratch, 0);
        int priv = 0;
        for (int i = 0; i < n; i++) {
            int page = scratch[i];
            if (allocator.isPrivate(page)) {
                if (allocator.ownerOf(page) != owner[seq]) {
                    throw new IllegalStateException("sequence " + seq + " maps page " + page
                            + " which is PRIVATE to owner " + allocator.ownerOf(page) + ", not " + owner[seq]);
                }
                scratch[priv++] = page;
            } else if (!allocator.isCached(page)) {
                throw new IllegalStateException("sequence " + seq + " maps page " + page + " which is "
                        + describe(page) + " (freed while mapped?)");
            }
        }
        allocator.free(scratch, 0, priv);
        owner[seq] = BlockAllocator.NO_OWNER;
        table.releaseSlot(seq);
    }

    /**
     * Tells capacity queries how many cache-owned pages eviction could free on demand (the
     * radix cache's evictable count; the allocator's reclaimer frees them when needed).
     */
    public void setEvictablePages(IntSupplier evictablePages) {
        this.evictablePages = Objects.requireNonNull(evictablePages, "evictablePages");
    }

    /** Pages an allocation could get now: free pages plus evictable cache pages. */
    public int availablePages() {
        return allocator.freePages() + evictablePages.getAsInt();
    }

    /** Tokens that fit in {@link #availablePages()} (free + evictable pages). */
    public long freeTokenCapacity() {
        return (long) availablePages() * pageSize;
    }

    /**
     * PRIVATE pages mapped by no open sequence, ascending (leaked: allocated for a sequence
     * that lost track of them). Cache-owned pages are the cache's to audit.
     */
    public int[] audit() {
        markTables();
        return allocator.audit(p -> !allocator.isPrivate(p) || rowStamp[p] == stamp);
    }

    /** Frees the pages {@link #audit()} reports; returns how many. */
    public int reclaimLeaked() {
        int[] leaked = audit();
        return allocator.reclaim(leaked, 0, leaked.length);
    }

    /**
     * Checks the allocator's invariants and the tables': every mapped page is allocated
     * (PRIVATE or CACHED), no row lists a page twice, lengths fit capacities, every PRIVATE
     * page appears in as many rows as it has references and carries those sequences' owner. O(numPages + mapped
     * pages), allocation-free. Throws IllegalStateException naming the first violation.
     */
    public void checkInvariants() {
        allocator.checkInvariants();
        Arrays.fill(privateRows, 0);
        for (int seq = 0; seq < table.maxSeqs(); seq++) {
            if (!table.isActive(seq)) {
                continue;
            }
            int n = table.pageCount(seq);
            long len = table.length(seq);
            if (n > maxPagesPerSeq || len > (long) n * pageSize) {
                throw new IllegalStateException("sequence " + seq + ": length " + len + " exceeds capacity of " + n
                        + " pages");
            }
            int s = nextStamp();
            for (int i = 0; i < n; i++) {
                int page = table.pageAt(seq, i);
                if (page < 0 || page >= allocator.numPages()) {
                    throw new IllegalStateException("sequence " + seq + " page " + i + " = " + page + " is out of range");
                }
                if (rowStamp[page] == s) {
                    throw new IllegalStateException("sequence " + seq + " maps page " + page + " twice");
                }
                rowStamp[page] = s;
                PageState st = allocator.stateOf(page);
                if (st == PageState.FREE) {
                    throw new IllegalStateException("sequence " + seq + " maps page " + page + " which is FREE");
                }
                if (st == PageState.PRIVATE) {
                    privateRows[page]++;
                    if (allocator.ownerOf(page) != owner[seq]) {
                        throw new IllegalStateException("PRIVATE page " + page + " of sequence " + seq + " has owner "
                                + allocator.ownerOf(page) + ", expected " + owner[seq]);
                    }
                }
            }
        }
        for (int p = 0; p < allocator.numPages(); p++) {
            if (allocator.isPrivate(p) && privateRows[p] == 0) {
                throw new IllegalStateException("PRIVATE page " + p + " (owner " + allocator.ownerOf(p)
                        + ") is mapped by no sequence (leaked)");
            }
            if (allocator.isPrivate(p) && privateRows[p] != allocator.references(p)) {
                throw new IllegalStateException("PRIVATE page " + p + " is mapped by " + privateRows[p]
                        + " sequences but has " + allocator.references(p) + " references");
            }
        }
    }

    /** Closes the page table's memory. */
    @Override
    public void close() {
        table.close();
    }

    private void markTables() {
        int s = nextStamp();
        for (int seq = 0; seq < table.maxSeqs(); seq++) {
            if (table.isActive(seq)) {
                int n = table.pageCount(seq);
                for (int i = 0; i < n; i++) {
                    rowStamp[table.pageAt(seq, i)] = s;
                }
            }
        }
    }

    private int nextStamp() {
        if (++stamp == Integer.MAX_VALUE) {
            Arrays.fill(rowStamp, 0);
            stamp = 1;
        }
        return stamp;
    }

    private void requireOwnPrivate(int seq, int idx, int page, String op) {
        if (!allocator.isPrivate(page)) {
            throw new IllegalStateException(op + ": page " + page + " (index " + idx + " of sequence " + seq + ") is "
                    + describe(page) + ", not PRIVATE");
        }
        if (allocator.ownerOf(page) != owner[seq]) {
            throw new IllegalStateException(op + ": page " + page + " (index " + idx + " of sequence " + seq
                    + ") is PRIVATE to owner " + allocator.ownerOf(page) + ", not " + owner[seq]);
        }
    }

    private void requireUnshared(int seq, int idx, int page, String op) {
        if (allocator.references(page) > 1) {
            throw new IllegalStateException(op + ": page " + page + " (index " + idx + " of sequence " + seq + ") is "
                    + "shared by " + allocator.references(page) + " sequences");
        }
    }

    private String describe(int page) {
        return page < 0 || page >= allocator.numPages() ? "out of range [0, " + allocator.numPages() + ")"
                : allocator.stateOf(page).toString();
    }

    private static long ceilDiv(long a, int b) {
        return (a + b - 1) / b;
    }
}
