package io.radixkv.paging;

import io.radixkv.kernels.BackendMemory;
import io.radixkv.kernels.PageTableCsr;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Objects;
import java.util.function.LongFunction;

/**
 * The per-step tables the kernels read for one batch, built into segments allocated once
 * (for {@code maxBatch} sequences, {@code maxTokens} new tokens, {@code maxPages} page
 * entries) and rewritten every step: no per-step allocation or garbage.
 *
 * <p>For each sequence {@code b} of the batch with new token positions {@code [start, end)}
 * (its KV length after this step is {@code end}, i.e. cached + new tokens):
 * <ul>
 *   <li>FlashInfer CSR: {@code kv_indptr[b+1] = kv_indptr[b] + ceil(end / pageSize)},
 *       {@code kv_indices} = its first {@code ceil(end / pageSize)} pages,
 *       {@code kv_last_page_len[b] = end - (pages-1) * pageSize}, {@code kv_lens[b] = end}
 *       (int32);</li>
 *   <li>{@code qo_indptr[b+1] = qo_indptr[b] + (end - start)} (int32);</li>
 *   <li>per new token {@code t} in {@code [start, end)}, in batch order:
 *       {@code slot_mapping} = {@code page(t / pageSize) * pageSize + t % pageSize} (int64) and
 *       {@code positions} = {@code t} (int32).</li>
 * </ul>
 *
 * <p>Use: {@link #begin}, one {@link #add} per sequence, {@link #finish}; or {@link #build}.
 * Built with a {@link BackendMemory}, the tables live in its host staging memory (page-locked
 * for CUDA), so the model's per-step uploads from them are truly asynchronous. Accessors return the full reusable segments; only the first
 * {@link #batchSize()} / {@link #numTokens()} / {@link #numPages()} entries are valid.
 * Not thread-safe; the tables are freed by {@link #close()} (staging memory: with its BackendMemory).
 */
public final class BatchTables implements AutoCloseable {
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT;
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG;

    private final int maxBatch;
    private final int maxTokens;
    private final int maxPages;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment kvIndptr;
    private final MemorySegment kvIndices;
    private final MemorySegment kvLastPageLen;
    private final MemorySegment kvLens;
    private final MemorySegment qoIndptr;
    private final MemorySegment slotMapping;
    private final MemorySegment positions;
    /** CSR views per batch size, created on first use and reused (records are immutable). */
    private final PageTableCsr[] csrs;

    private KvSequences seqs;
    private int batch;
    private int tokens;
    private int pages;
    private boolean building;
    private boolean finished;

    /** Tables in a heap-independent arena owned by this object. */
    public BatchTables(int maxBatch, int maxTokens, int maxPages) {
        this(maxBatch, maxTokens, maxPages, null);
    }

    /**
     * @param staging backend memory whose {@linkplain BackendMemory#allocateHost host staging
     *     memory} holds the tables (page-locked for a device, so uploads from them are
     *     asynchronous; freed with it); null: this object's own arena
     */
    public BatchTables(int maxBatch, int maxTokens, int maxPages, BackendMemory staging) {
        if (maxBatch <= 0) {
            throw new IllegalArgumentException("maxBatch must be positive, got " + maxBatch);
        }
        if (maxTokens <= 0) {
            throw new IllegalArgumentException("maxTokens must be positive, got " + maxTokens);
        }
        if (maxPages <= 0) {
            throw new IllegalArgumentException("maxPages must be positive, got " + maxPages);
        }
        this.maxBatch = maxBatch;
        this.maxTokens = maxTokens;
        this.maxPages = maxPages;
        LongFunction<MemorySegment> alloc = staging == null ? bytes -> arena.allocate(bytes, 64) : staging::allocateHost;
        kvIndptr = alloc.apply(4L * (maxBatch + 1));
        kvIndices = alloc.apply(4L * maxPages);
        kvLastPageLen = alloc.apply(4L * maxBatch);
        kvLens = alloc.apply(4L * maxBatch);
        qoIndptr = alloc.apply(4L * (maxBatch + 1));
        slotMapping = alloc.apply(8L * maxTokens);
        positions = alloc.apply(4L * maxTokens);
        csrs = new PageTableCsr[maxBatch + 1];
    }

    public int maxBatch() {
        return maxBatch;
    }

    public int maxTokens() {
        return maxTokens;
    }

    public int maxPages() {
        return maxPages;
    }

    /** Starts a new batch over {@code seqs}; the previous batch's tables become invalid. */
    public void begin(KvSequences seqs) {
        this.seqs = Objects.requireNonNull(seqs, "seqs");
        batch = 0;
        tokens = 0;
        pages = 0;
        kvIndptr.setAtIndex(INT, 0, 0);
        qoIndptr.setAtIndex(INT, 0, 0);
        building = true;
        finished = false;
    }

    /**
     * Adds sequence {@code seq} processing new token positions {@code [start, end)}. Checked
     * before anything is written: the sequence is open, {@code 0 <= start < end <= capacity},
     * the pages the new tokens go to are PRIVATE (never cache-owned: shared KV is immutable),
     * and the batch stays within its maxima. A rejected call leaves the batch as it was.
     */
    public void add(int seq, long start, long end) {
        if (!building) {
            throw new IllegalStateException("add() outside begin()/finish()");
        }
        int pageSize = seqs.pageSize();
        long capacity = seqs.capacity(seq); // validates seq
        if (start < 0 || start >= end) {
            throw new IllegalArgumentException("sequence " + seq + ": token range [" + start + ", " + end
                    + ") must satisfy 0 <= start < end");
        }
        if (end > capacity) {
            throw new IllegalArgumentException("sequence " + seq + ": token range end " + end
                    + " exceeds its capacity " + capacity + " (reserve/growForDecode first)");
        }
        if (end > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("sequence " + seq + ": position " + end + " exceeds int32");
        }
        if (batch == maxBatch) {
            throw new IllegalArgumentException("batch is full (maxBatch " + maxBatch + "), cannot add sequence " + seq);
        }
        int n = (int) (end - start);
        if (n > maxTokens - tokens) {
            throw new IllegalArgumentException("sequence " + seq + " adds " + n + " tokens to " + tokens
                    + ", more than maxTokens " + maxTokens);
        }
        int np = (int) ((end + pageSize - 1) / pageSize);
        if (np > maxPages - pages) {
            throw new IllegalArgumentException("sequence " + seq + " adds " + np + " pages to " + pages
                    + ", more than maxPages " + maxPages);
        }
        PageTable table = seqs.pageTable();
        MemorySegment row = table.segment();
        long rowBase = table.rowOffset(seq);
        // New tokens may only land in this sequence's PRIVATE pages: writing into a
        // cache-owned page would silently change KV that other sequences share.
        BlockAllocator allocator = seqs.allocator();
        for (long pi = start / pageSize, last = (end - 1) / pageSize; pi <= last; pi++) {
            int page = row.getAtIndex(INT, rowBase + pi);
            if (!allocator.isPrivate(page)) {
                throw new IllegalStateException("sequence " + seq + ": new token " + Math.max(start, pi * pageSize)
                        + " would be written into page " + page + " which is " + allocator.stateOf(page)
                        + " (new tokens must go to the sequence's private pages)");
            }
        }

        table.copyRow(seq, np, kvIndices, pages);
        kvLastPageLen.setAtIndex(INT, batch, (int) (end - (long) (np - 1) * pageSize));
        kvLens.setAtIndex(INT, batch, (int) end);
        // slot mapping: walk page by page so each page id is read once
        int t = (int) start;
        int endT = (int) end;
        int out = tokens;
        while (t < endT) {
            int pi = t / pageSize;
            long base = (long) row.getAtIndex(INT, rowBase + pi) * pageSize;
            int pageEnd = Math.min(endT, (pi + 1) * pageSize);
            for (int off = t - pi * pageSize; t < pageEnd; t++, off++, out++) {
                slotMapping.setAtIndex(LONG, out, base + off);
                positions.setAtIndex(INT, out, t);
            }
        }
        pages += np;
        tokens += n;
        batch++;
        kvIndptr.setAtIndex(INT, batch, pages);
        qoIndptr.setAtIndex(INT, batch, tokens);
    }

    /** Ends the batch. */
    public void finish() {
        if (!building) {
            throw new IllegalStateException("finish() without begin()");
        }
        building = false;
        finished = true;
    }

    /**
     * {@link #begin}, {@link #add} for {@code seqIds[i]} with range {@code [starts[i], ends[i])}
     * for {@code i < n}, {@link #finish}.
     */
    public void build(KvSequences seqs, int[] seqIds, long[] starts, long[] ends, int n) {
        Objects.checkFromIndexSize(0, n, seqIds.length);
        Objects.checkFromIndexSize(0, n, starts.length);
        Objects.checkFromIndexSize(0, n, ends.length);
        begin(seqs);
        for (int i = 0; i < n; i++) {
            add(seqIds[i], starts[i], ends[i]);
        }
        finish();
    }

    public int batchSize() {
        return batch;
    }

    public int numTokens() {
        return tokens;
    }

    /** Page entries in {@code kv_indices}. */
    public int numPages() {
        return pages;
    }

    /** Host CSR over the built batch (cached per batch size: no garbage). */
    public PageTableCsr csr() {
        requireFinished();
        PageTableCsr c = csrs[batch];
        if (c == null) {
            c = csrs[batch] = new PageTableCsr(kvIndptr, kvIndices, kvLastPageLen, batch);
        }
        return c;
    }

    public MemorySegment kvIndptr() {
        return kvIndptr;
    }

    public MemorySegment kvIndices() {
        return kvIndices;
    }

    public MemorySegment kvLastPageLen() {
        return kvLastPageLen;
    }

    /** int32 KV length (= end) per sequence. */
    public MemorySegment kvLens() {
        return kvLens;
    }

    public MemorySegment qoIndptr() {
        return qoIndptr;
    }

    public MemorySegment slotMapping() {
        return slotMapping;
    }

    public MemorySegment positions() {
        return positions;
    }

    /** Frees the tables of this object's own arena (staging memory goes with its BackendMemory). */
    @Override
    public void close() {
        arena.close();
    }

    private void requireFinished() {
        if (!finished) {
            throw new IllegalStateException("batch not finished (call finish() after add())");
        }
    }

}
