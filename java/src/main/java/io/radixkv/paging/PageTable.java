package io.radixkv.paging;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Objects;

/**
 * Per-sequence page lists: an int32 {@code [maxSeqs, maxPagesPerSeq]} table in an off-heap
 * {@link MemorySegment} (row {@code s} lists sequence slot {@code s}'s physical pages in
 * logical order), plus per-slot page counts and token lengths. Kernels and the CSR builder
 * read rows straight from the segment.
 *
 * <p>This is storage only: it knows nothing about page states (see {@link KvSequences},
 * which keeps it consistent with the {@link BlockAllocator}). Slots are handed out and
 * returned by id in O(1). Not thread-safe. The segment belongs to a shared arena that
 * {@link #close()} closes.
 */
public final class PageTable implements AutoCloseable {
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT;

    private final int maxSeqs;
    private final int maxPagesPerSeq;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment table;
    private final int[] pageCount;
    private final long[] length;
    private final boolean[] active;
    private final int[] freeSlots;
    private int freeTop;

    public PageTable(int maxSeqs, int maxPagesPerSeq) {
        if (maxSeqs <= 0) {
            throw new IllegalArgumentException("maxSeqs must be positive, got " + maxSeqs);
        }
        if (maxPagesPerSeq <= 0) {
            throw new IllegalArgumentException("maxPagesPerSeq must be positive, got " + maxPagesPerSeq);
        }
        this.maxSeqs = maxSeqs;
        this.maxPagesPerSeq = maxPagesPerSeq;
        this.table = arena.allocate(Math.multiplyExact(4L * maxSeqs, (long) maxPagesPerSeq), 64);
        this.pageCount = new int[maxSeqs];
        this.length = new long[maxSeqs];
        this.active = new boolean[maxSeqs];
        this.freeSlots = new int[maxSeqs];
        for (int i = 0; i < maxSeqs; i++) {
            freeSlots[i] = maxSeqs - 1 - i; // slot 0 first
        }
        this.freeTop = maxSeqs;
    }

    public int maxSeqs() {
        return maxSeqs;
    }

    public int maxPagesPerSeq() {
        return maxPagesPerSeq;
    }

    /** The whole {@code [maxSeqs, maxPagesPerSeq]} int32 table (entries past a row's count are stale). */
    public MemorySegment segment() {
        return table;
    }

    /** Element index of row {@code seq}'s first entry in {@link #segment()}. */
    public long rowOffset(int seq) {
        return (long) seq * maxPagesPerSeq;
    }

    public int freeSlots() {
        return freeTop;
    }

    public int activeSlots() {
        return maxSeqs - freeTop;
    }

    /** Claims a free slot with no pages and length 0; -1 if all are in use. */
    public int allocateSlot() {
        if (freeTop == 0) {
            return -1;
        }
        int seq = freeSlots[--freeTop];
        active[seq] = true;
        pageCount[seq] = 0;
        length[seq] = 0;
        return seq;
    }

    /** Returns an active slot to the free list (its pages must already be dealt with). */
    public void releaseSlot(int seq) {
        checkActive(seq);
        active[seq] = false;
        pageCount[seq] = 0;
        length[seq] = 0;
        freeSlots[freeTop++] = seq;
    }

    public boolean isActive(int seq) {
        return seq >= 0 && seq < maxSeqs && active[seq];
    }

    public int pageCount(int seq) {
        checkActive(seq);
        return pageCount[seq];
    }

    public long length(int seq) {
        checkActive(seq);
        return length[seq];
    }

    /** Sets the token length; the caller ({@link KvSequences}) checks it against capacity. */
    public void setLength(int seq, long len) {
        checkActive(seq);
        if (len < 0) {
            throw new IllegalArgumentException("length must not be negative, got " + len);
        }
        length[seq] = len;
    }

    public int pageAt(int seq, int i) {
        checkActive(seq);
        Objects.checkIndex(i, pageCount[seq]);
        return table.getAtIndex(INT, rowOffset(seq) + i);
    }

    /** Overwrites an existing entry. */
    public void setPage(int seq, int i, int page) {
        checkActive(seq);
        Objects.checkIndex(i, pageCount[seq]);
        table.setAtIndex(INT, rowOffset(seq) + i, page);
    }

    /** Appends {@code pages[off .. off+n)} to the row. */
    public void append(int seq, int[] pages, int off, int n) {
        checkActive(seq);
        Objects.checkFromIndexSize(off, n, pages.length);
        int count = pageCount[seq];
        if (n > maxPagesPerSeq - count) {
            throw new IllegalArgumentException("sequence " + seq + " would hold " + ((long) count + n)
                    + " pages, more than maxPagesPerSeq " + maxPagesPerSeq);
        }
        MemorySegment.copy(pages, off, table, INT, 4L * (rowOffset(seq) + count), n);
        pageCount[seq] = count + n;
    }

    /** Copies row {@code seq}'s first {@code n} entries into {@code dst} at element {@code dstIndex}. */
    public void copyRow(int seq, int n, MemorySegment dst, long dstIndex) {
        checkActive(seq);
        Objects.checkFromIndexSize(0, n, pageCount[seq]);
        MemorySegment.copy(table, 4L * rowOffset(seq), dst, 4L * dstIndex, 4L * n);
    }

    /** Copies row {@code seq}'s first {@code n} entries into {@code dst[off..]}. */
    public void copyRow(int seq, int n, int[] dst, int off) {
        checkActive(seq);
        Objects.checkFromIndexSize(0, n, pageCount[seq]);
        MemorySegment.copy(table, INT, 4L * rowOffset(seq), dst, off, n);
    }

    @Override
    public void close() {
        arena.close();
    }

    private void checkActive(int seq) {
        if (seq < 0 || seq >= maxSeqs) {
            throw new IllegalArgumentException("sequence slot " + seq + " is outside [0, " + maxSeqs + ")");
        }
        if (!active[seq]) {
            throw new IllegalStateException("sequence slot " + seq + " is not open");
        }
    }
}
