package io.radixkv.kernels;

import java.lang.foreign.MemorySegment;

/**
 * Paged attention over a FlashInfer CSR page table. Queries/outputs are
 * {@code [rows, numQoHeads, headDim]} of f32, f16 or bf16; {@code lse} (optional, may be
 * {@link MemorySegment#NULL}) receives {@code [rows, numQoHeads]} natural-log LSE values.
 * A sliding window ({@link AttentionParams#windowLeft()}) bounds every query's keys from below
 * in both kinds: a query at KV position q sees keys {@code >= q - windowLeft}; the kernels read
 * no page entirely before a query's window.
 */
public interface AttentionKernels {
    /** One query per sequence ({@code rows = table.batchSize()}). Empty sequences give zeros and LSE = -inf. */
    void decode(MemorySegment q, DType qDtype, MemorySegment out, DType outDtype, MemorySegment lse,
                KvCacheView cache, PageTableCsr table, AttentionParams params);

    /**
     * Append prefill with a right-aligned causal mask: {@code qoIndptr[batch+1]} (int32) splits
     * q rows by sequence; query i of a sequence with q_len rows and kv_len cached+new tokens sees
     * KV positions {@code 0 .. kv_len - q_len + i}. {@code bidirIndptr}/{@code bidirRegions}
     * (both NULL to disable) list half-open KV ranges per sequence whose positions see each other.
     */
    void appendPrefill(MemorySegment q, DType qDtype, MemorySegment out, DType outDtype, MemorySegment lse,
                       MemorySegment qoIndptr, KvCacheView cache, PageTableCsr table,
                       MemorySegment bidirIndptr, MemorySegment bidirRegions, AttentionParams params);

    /**
     * Merges two partial states over disjoint KV ranges: {@code vOut = (va*e^sa + vb*e^sb)/(e^sa+e^sb)},
     * {@code sOut = log(e^sa + e^sb)}; f32 {@code [numTokens, numHeads, headDim]} and {@code [numTokens, numHeads]}.
     * vOut/sOut may be the same segments as va/sa.
     */
    void mergeState(MemorySegment va, MemorySegment sa, MemorySegment vb, MemorySegment sb,
                    MemorySegment vOut, MemorySegment sOut, long numTokens, int numHeads, int headDim);

    /**
     * Plans one batch for every layer of a step ({@link AttentionPlan}): {@code table} and
     * {@code qoIndptr} (NULL for a decode batch) are host segments, validated here; the plan is
     * valid until the next call. Backends reading host tables directly return the tables;
     * CUDA uploads them once and decides the split-KV/tile work once.
     *
     * @throws IllegalArgumentException for a table that does not fit {@code layout}
     */
    default AttentionPlan plan(PagedKvLayout layout, PageTableCsr table, MemorySegment qoIndptr, int numQoHeads) {
        return HostAttentionPlan.of(layout, table, qoIndptr, numQoHeads);
    }

    /**
     * Runs a plan for one layer: decode or append-prefill as {@link #decode}/{@link #appendPrefill}
     * with the plan's tables (no bidirectional regions). {@code cache} must have the plan's layout.
     */
    default void run(AttentionPlan plan, MemorySegment q, DType qDtype, MemorySegment out, DType outDtype,
                     MemorySegment lse, KvCacheView cache, AttentionParams params) {
        if (!(plan instanceof HostAttentionPlan)) {
            throw new IllegalArgumentException("plan " + plan + " was not made by these kernels");
        }
        if (!cache.layout().equals(plan.layout())) {
            throw new IllegalArgumentException("cache layout " + cache.layout() + " differs from the plan's " + plan.layout());
        }
        if (plan.decode()) {
            decode(q, qDtype, out, outDtype, lse, cache, plan.table(), params);
        } else {
            appendPrefill(q, qDtype, out, outDtype, lse, plan.qoIndptr(), cache, plan.table(), MemorySegment.NULL,
                    MemorySegment.NULL, params);
        }
    }
}
