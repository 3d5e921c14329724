package io.radixkv.kernels;

import java.lang.foreign.MemorySegment;

/**
 * A batch's page table in FlashInfer CSR form (int32 arrays, host memory):
 * {@code kvIndptr[batch+1]}, {@code kvIndices[nnz]}, {@code kvLastPageLen[batch]}.
 * Sequence b owns pages {@code kvIndices[kvIndptr[b] .. kvIndptr[b+1])} and holds
 * {@code pageSize*(pages-1) + lastPageLen} tokens (0 with no pages).
 */
public record PageTableCsr(MemorySegment kvIndptr, MemorySegment kvIndices, MemorySegment kvLastPageLen, int batchSize) {
    public PageTableCsr {
        Checks.requireNonNegative("batchSize", batchSize);
        Checks.requireBytes("kvIndptr", kvIndptr, 4L * (batchSize + 1));
        Checks.requireBytes("kvLastPageLen", kvLastPageLen, 4L * batchSize);
        if (kvIndices == null) {
            throw new IllegalArgumentException("kvIndices must not be null (use an empty segment)");
        }
    }

    /** kvIndptr[batch]: total number of page entries. */
    public int nnz() {
        return Checks.intAt(kvIndptr, batchSize);
    }

    /** Tokens of sequence b (does not validate; see {@link #validate}). */
    public long sequenceLength(int b, int pageSize) {
        int pages = Checks.intAt(kvIndptr, b + 1) - Checks.intAt(kvIndptr, b);
        return pages == 0 ? 0 : (long) pageSize * (pages - 1) + Checks.intAt(kvLastPageLen, b);
    }

    /**
     * Checks the CSR structure against a pool: indptr starts at 0 and is non-decreasing,
     * every page id is in [0, numPages), every non-empty sequence's last_page_len is in
     * 1..pageSize. Throws IllegalArgumentException naming the offending entry.
     */
    public void validate(PagedKvLayout layout) {
        int first = Checks.intAt(kvIndptr, 0);
        if (first != 0) {
            throw new IllegalArgumentException("kv_indptr[0] must be 0, got " + first);
        }
        int prev = 0;
        for (int b = 0; b < batchSize; b++) {
            int next = Checks.intAt(kvIndptr, b + 1);
            if (next < prev) {
                throw new IllegalArgumentException("kv_indptr is not monotone at " + (b + 1) + ": " + next + " < " + prev);
            }
            if (next > prev) {
                int last = Checks.intAt(kvLastPageLen, b);
                if (last < 1 || last > layout.pageSize()) {
                    throw new IllegalArgumentException("kv_last_page_len[" + b + "] = " + last
                            + " is outside 1.." + layout.pageSize());
                }
            }
            prev = next;
        }
        if (kvIndices.byteSize() < 4L * prev) {
            throw new IllegalArgumentException("kv_indices holds " + kvIndices.byteSize() / 4
                    + " entries but kv_indptr needs " + prev);
        }
        for (int i = 0; i < prev; i++) {
            int page = Checks.intAt(kvIndices, i);
            if (page < 0 || page >= layout.numPages()) {
                throw new IllegalArgumentException("kv_indices[" + i + "] = page " + page
                        + " is outside [0, " + layout.numPages() + ")");
            }
        }
    }
}
