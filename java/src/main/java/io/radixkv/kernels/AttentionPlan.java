package io.radixkv.kernels;

import java.lang.foreign.MemorySegment;

/**
 * One batch's attention work, made once per engine step by {@link AttentionKernels#plan} and
 * run by every layer ({@link AttentionKernels#run}): the page table (and, for append-prefill,
 * {@code qo_indptr}) validated against the pool layout, placed where the kernels read it, and
 * the work split (split-KV chunks, tiles) decided. FlashInfer's plan/run split. A plan stays
 * valid until the next {@code plan} call on the same kernels object, which may reuse its buffers.
 */
public interface AttentionPlan {
    PagedKvLayout layout();

    /** The host copy of the page table the plan was made from. */
    PageTableCsr table();

    /** The host {@code qo_indptr[batch+1]} of an append-prefill plan; {@link MemorySegment#NULL} for decode. */
    MemorySegment qoIndptr();

    int numQoHeads();

    /**
     * What the plan's runs bake into their launches (work split, buffer and table addresses), for
     * recording them in a {@link StepGraph}: a graph recorded with one plan replays correctly for
     * a later plan with an equal key. Null when the runs cannot be recorded (host kernels).
     */
    default Object graphKey() {
        return null;
    }

    /** True for a decode plan (one query row per sequence). */
    default boolean decode() {
        return qoIndptr().equals(MemorySegment.NULL);
    }
}
