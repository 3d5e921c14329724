package io.radixkv.kernels.cpu;

import io.radixkv.kernels.AttentionPlan;
import io.radixkv.kernels.PageTableCsr;
import io.radixkv.kernels.PagedKvLayout;
import java.lang.foreign.MemorySegment;

/**
 * A decode plan of {@link CpuAttentionKernels}: the host tables it was validated from and the
 * native plan (rkv_decode_plan) holding their lengths, the split-KV work per window and its
 * scratch. Valid until the next plan of the same kernels.
 */
record CpuDecodePlan(CpuAttentionKernels owner, long generation, PagedKvLayout layout, PageTableCsr table,
                     int numQoHeads) implements AttentionPlan {
    @Override
    public MemorySegment qoIndptr() {
        return MemorySegment.NULL;
    }

    @Override
    public String toString() {
        return "CpuDecodePlan[batch " + table.batchSize() + ", generation " + generation + "]";
    }
}
