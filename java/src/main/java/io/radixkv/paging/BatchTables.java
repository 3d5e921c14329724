package io.radixkv.paging;

import io.radixkv.kernels.BackendMemory;
import io.radixkv.kernels.PageTableCsr;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Objects;

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
 * <p>Use: {@link #begin}, one {@link #add} per sequence, {@link #finish} (which mirrors the
 * tables to device memory when built with a device {@link BackendMemory}); or
 * {@link #build}. Accessors return the full reusable segments; only the first
 * {@link #batchSize()} / {@link #numTokens()} / {@link #numPages()} entries are valid.
 * Not thread-safe; the arena closes with {@link #close()}.
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

    private final BackendMemory device;
    private final MemorySegment dKvIndptr;
    private final MemorySegment dKvIndices;
    private final MemorySegment dKvLastPageLen;
    private final MemorySegment dKvLens;
    private final MemorySegment dQoIndptr;
    private final MemorySegment dSlotMapping;
    private final MemorySegment dPositions;
    private final PageTableCsr[] deviceCsrs;

    private KvSequences seqs;
    private int batch;
    private int tokens;
    private int pages;
    private boolean building;
    private boolean finished;

    /** Host-only tables (CPU backends). */
    public BatchTables(int maxBatch, int maxTokens, int maxPages) {
        this(maxBatch, maxTokens, maxPages, null);
    }

    /**
     * @param device backend memory to mirror the tables to on {@link #finish()} when it
     *     {@linkplain BackendMemory#isDevice() is device memory} (the device segments are
     *     allocated once from it and freed with it); null or host memory: host tables only
     */
    public BatchTables(int maxBatch, int maxTokens, int maxPages, BackendMemory device) {
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
        kvIndptr = arena.allocate(4L * (maxBatch + 1), 64);
        kvIndices = arena.allocate(4L * maxPages, 64);
        kvLastPageLen = arena.allocate(4L * maxBatch, 64);
        kvLens = arena.allocate(4L * maxBatch, 64);
        qoIndptr = arena.allocate(4L * (maxBatch + 1), 64);
        slotMapping = arena.allocate(8L * maxTokens, 64);
        positions = arena.allocate(4L * maxTokens, 64);
        csrs = new PageTableCsr[maxBatch + 1];
        if (device != null && device.isDevice()) {
            this.device = device;
            dKvIndptr = device.allocate(kvIndptr.byteSize());
            dKvIndices = device.allocate(kvIndices.byteSize());
            dKvLastPageLen = device.allocate(kvLastPageLen.byteSize());
            dKvLens = device.allocate(kvLens.byteSize());
            dQoIndptr = device.allocate(qoIndptr.byteSize());
            dSlotMapping = device.allocate(slotMapping.byteSize());
            dPositions = device.allocate(positions.byteSize());
            deviceCsrs = new PageTableCsr[maxBatch + 1];
        } else {
            this.device = null;
            dKvIndptr = dKvIndices = dKvLastPageLen = dKvLens = dQoIndptr = dSlotMapping = dPositions = null;
            deviceCsrs = null;
        }
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

    /** Ends the batch; with device memory, copies the used part of every table to the device. */
    public void finish() {
        if (!building) {
            throw new IllegalStateException("finish() without begin()");
        }
        building = false;
        finished = true;
        if (device != null) {
            device.copyFromHost(kvIndptr, dKvIndptr, 4L * (batch + 1));
            device.copyFromHost(kvLastPageLen, dKvLastPageLen, 4L * batch);
            device.copyFromHost(kvLens, dKvLens, 4L * batch);
            device.copyFromHost(qoIndptr, dQoIndptr, 4L * (batch + 1));
            device.copyFromHost(kvIndices, dKvIndices, 4L * pages);
            device.copyFromHost(slotMapping, dSlotMapping, 8L * tokens);
            device.copyFromHost(positions, dPositions, 4L * tokens);
        }
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

    public boolean hasDevice() {
        return device != null;
    }

    /** Device CSR (device pointers: never dereference from Java). */
    public PageTableCsr deviceCsr() {
        requireDevice();
        requireFinished();
        PageTableCsr c = deviceCsrs[batch];
        if (c == null) {
            c = deviceCsrs[batch] = new PageTableCsr(dKvIndptr, dKvIndices, dKvLastPageLen, batch);
        }
        return c;
    }

    public MemorySegment deviceKvLens() {
        requireDevice();
        return dKvLens;
    }

    public MemorySegment deviceQoIndptr() {
        requireDevice();
        return dQoIndptr;
    }

    public MemorySegment deviceSlotMapping() {
        requireDevice();
        return dSlotMapping;
    }

    public MemorySegment devicePositions() {
        requireDevice();
        return dPositions;
    }

    /** Frees the host tables (device tables go with their BackendMemory). */
    @Override
    public void close() {
        arena.close();
    }

    private void requireFinished() {
        if (!finished) {
            throw new IllegalStateException("batch not finished (call finish() after add())");
        }
    }

    private void requireDevice() {
        if (device == null) {
            throw new IllegalStateException("these BatchTables have no device mirror");
        }
    }
}
