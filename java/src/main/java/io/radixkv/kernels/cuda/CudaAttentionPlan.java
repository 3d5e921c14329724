package io.radixkv.kernels.cuda;

import io.radixkv.kernels.AttentionPlan;
import io.radixkv.kernels.PageTableCsr;
import io.radixkv.kernels.PagedKvLayout;
import java.lang.foreign.MemorySegment;

/**
 * A plan of {@link CudaAttentionKernels}: the host tables it was made from, their device
 * copies (one upload per plan) and the native plan (split-KV count or prefill work items).
 * Valid until the next plan of the same kernels.
 *
 * @param owner the kernels that made it
 * @param generation the owner's plan counter when it was made (a later plan makes it stale)
 * @param totalQ query rows: the batch size for decode, {@code qo_indptr[batch]} for prefill
 * @param device device copies of the tables (NULL where absent)
 * @param nativePlan the rkv_cuda_attn_plan* the runs launch with
 */
record CudaAttentionPlan(CudaAttentionKernels owner, long generation, PagedKvLayout layout, PageTableCsr table,
                         MemorySegment qoIndptr, int numQoHeads, int totalQ, DeviceTables device,
                         MemorySegment nativePlan) implements AttentionPlan {

    /** Device addresses of the uploaded tables; NULL for absent ones (qo_indptr of decode, bidirectional regions). */
    record DeviceTables(MemorySegment kvIndptr, MemorySegment kvIndices, MemorySegment kvLastPageLen,
                        MemorySegment qoIndptr, MemorySegment bidirIndptr, MemorySegment bidirRegions) {}

    /** The native plan's baked values (split count, buffer) and the device table addresses. */
    private record GraphKey(long decode, long batch, long work, long buffer, long indptr, long indices, long last,
                            long qoIndptr) {}

    @Override
    public Object graphKey() {
        long[] info = owner.planInfo(nativePlan);
        return new GraphKey(info[0], info[1], info[2], info[3], device.kvIndptr().address(),
                device.kvIndices().address(), device.kvLastPageLen().address(), device.qoIndptr().address());
    }

    @Override
    public String toString() {
        return "CudaAttentionPlan[" + (decode() ? "decode" : "prefill") + ", batch " + table.batchSize() + ", rows "
                + totalQ + ", generation " + generation + "]";
    }
}
