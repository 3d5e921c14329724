package io.radixkv.paging;

import java.util.Objects;

/**
 * Where a batch's KV pages land in the pool when the engine grows it the usual way: each
 * sequence's prompt reserved one sequence after another, then the whole batch decoding together,
 * one token per sequence per step ({@link KvSequences#reserve}, {@link KvSequences#growForDecode}).
 * Benchmarks lay out their page tables with it so that decode attention reads the pages in the
 * order the engine's allocator gives them.
 */
public final class DecodeBatchLayout {
    private DecodeBatchLayout() {}

    /**
     * The page ids of sequences of {@code lens[b]} tokens, sequence after sequence (CSR order),
     * as {@code allocator} places them: {@code min(promptTokens, lens[b])} tokens reserved per
     * sequence in turn, then one token per sequence per step until each has its length.
     *
     * @throws IllegalStateException if the allocator runs out of pages
     */
    public static int[] pageIds(BlockAllocator allocator, int pageSize, long[] lens, long promptTokens) {
        Objects.requireNonNull(allocator, "allocator");
        int batch = lens.length;
        long total = 0;
        int maxPages = 1;
        for (long len : lens) {
            if (len < 0) {
                throw new IllegalArgumentException("sequence length must not be negative, got " + len);
            }
            int pages = Math.toIntExact((len + pageSize - 1) / pageSize);
            total += pages;
            maxPages = Math.max(maxPages, pages);
        }
        try (KvSequences seqs = new KvSequences(allocator, pageSize, Math.max(1, batch), maxPages)) {
            int[] seq = new int[batch];
            for (int b = 0; b < batch; b++) {
                seq[b] = seqs.open(b);
                long prompt = Math.min(promptTokens, lens[b]);
                require(seqs.reserve(seq[b], prompt), allocator);
                seqs.setLength(seq[b], prompt);
            }
            for (boolean grew = true; grew; ) {
                grew = false;
                for (int b = 0; b < batch; b++) {
                    long len = seqs.length(seq[b]);
                    if (len < lens[b]) {
                        require(seqs.growForDecode(seq[b]), allocator);
                        seqs.setLength(seq[b], len + 1);
                        grew = true;
                    }
                }
            }
            int[] ids = new int[Math.toIntExact(total)];
            for (int b = 0, pos = 0; b < batch; b++) {
                int[] pages = seqs.pages(seq[b]);
                System.arraycopy(pages, 0, ids, pos, pages.length);
                pos += pages.length;
            }
            return ids;
        }
    }

    private static void require(boolean allocated, BlockAllocator allocator) {
        if (!allocated) {
            throw new IllegalStateException("the batch does not fit in " + allocator);
        }
    }
}
