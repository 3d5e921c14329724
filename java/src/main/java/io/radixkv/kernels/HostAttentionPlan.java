package io.radixkv.kernels;

import java.lang.foreign.MemorySegment;

/**
 * The plan of kernels that read host tables directly: the validated tables themselves, run
 * through {@link AttentionKernels#decode} / {@link AttentionKernels#appendPrefill}.
 */
public record HostAttentionPlan(PagedKvLayout layout, PageTableCsr table, MemorySegment qoIndptr, int numQoHeads)
        implements AttentionPlan {

    /** Validates the table (and qo_indptr, when not NULL) against {@code layout}. */
    public static HostAttentionPlan of(PagedKvLayout layout, PageTableCsr table, MemorySegment qoIndptr, int numQoHeads) {
        if (layout == null || table == null) {
            throw new IllegalArgumentException("layout and table must not be null");
        }
        Checks.requirePositive("numQoHeads", numQoHeads);
        table.validate(layout);
        MemorySegment qo = qoIndptr == null ? MemorySegment.NULL : qoIndptr;
        if (!qo.equals(MemorySegment.NULL)) {
            Checks.requireBytes("qoIndptr", qo, 4L * (table.batchSize() + 1));
        }
        return new HostAttentionPlan(layout, table, qo, numQoHeads);
    }
}
