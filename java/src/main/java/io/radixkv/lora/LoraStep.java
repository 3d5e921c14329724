package io.radixkv.lora;

import io.radixkv.kernels.DenseKernels;
import io.radixkv.kernels.LoraBatch;
import io.radixkv.kernels.LoraFactors;
import io.radixkv.model.ModelConfig;
import io.radixkv.model.ProjectionDelta;
import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * The adapter deltas of one step: which slot each run of rows uses (set by {@link #prepare}
 * before the forward pass), and, after every projection block, one {@link DenseKernels#lora}
 * call per adapted projection for the whole batch. A step without adapter rows costs one check
 * per block. Confined to the engine thread.
 */
public final class LoraStep implements ProjectionDelta {
    private final ModelConfig model;
    private final DenseKernels dense;
    private final LoraSlots slots;
    private final int[] segIndptr;
    private final int[] segSlot;
    private int segments;
    private int rows;
    private boolean active;

    /** {@code maxSegments}: most runs of rows one step can have (its most sequences). */
    public LoraStep(ModelConfig model, DenseKernels dense, LoraSlots slots, int maxSegments) {
        this.model = model;
        this.dense = dense;
        this.slots = slots;
        this.segIndptr = new int[maxSegments + 1];
        this.segSlot = new int[maxSegments];
    }

    /**
     * The step's rows: {@code count} runs in batch order, run {@code i} of {@code rowCounts[i]}
     * rows using slot {@code slotOf[i]} (-1: the base model). Adjacent runs of one slot merge.
     */
    public void prepare(int[] rowCounts, int[] slotOf, int count) {
        segments = 0;
        rows = 0;
        active = false;
        segIndptr[0] = 0;
        for (int i = 0; i < count; i++) {
            if (rowCounts[i] == 0) {
                continue;
            }
            if (segments == 0 || segSlot[segments - 1] != slotOf[i]) {
                segSlot[segments] = slotOf[i];
                segments++;
            }
            rows += rowCounts[i];
            segIndptr[segments] = rows;
            active |= slotOf[i] >= 0;
        }
    }

    /** No step prepared: every row is the base model's. */
    public void clear() {
        segments = 0;
        rows = 0;
        active = false;
    }

    @Override
    public void apply(int layer, String block, MemorySegment x, MemorySegment y, int n) {
        if (!active) {
            return;
        }
        if (n != rows) {
            throw new IllegalStateException("the step has " + n + " rows but its LoRA segments cover " + rows);
        }
        for (LoraModule m : LoraModule.values()) {
            if (!m.block().equals(block)) {
                continue;
            }
            List<LoraFactors> f = slots.factors(layer, m);
            if (!anyAdapted(f)) {
                continue;
            }
            dense.lora(new LoraBatch(x, y, n, m.inFeatures(model), m.outFeatures(model), m.blockWidth(model),
                    m.columnOffset(model), segIndptr, segSlot, segments, f, slots.maxRank()));
        }
    }

    private boolean anyAdapted(List<LoraFactors> f) {
        for (int i = 0; i < segments; i++) {
            if (segSlot[i] >= 0 && f.get(segSlot[i]) != null) {
                return true;
            }
        }
        return false;
    }
}
