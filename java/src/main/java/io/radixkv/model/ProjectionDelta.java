package io.radixkv.model;

import java.lang.foreign.MemorySegment;

/**
 * Adds a per-row delta to a projection's output right after its GEMM (LoRA adapters): the seam
 * through which {@link LlamaModel} runs adapters it knows nothing about. Called on the model's
 * thread during {@link LlamaModel#forward}, once per fused block of every layer.
 */
@FunctionalInterface
public interface ProjectionDelta {
    /**
     * @param layer the decoder layer
     * @param block which projection block ({@link WeightLayout#QKV}, {@link WeightLayout#O},
     *     {@link WeightLayout#GATE_UP}, {@link WeightLayout#DOWN})
     * @param x the block's input {@code [rows, in]} f32
     * @param y the block's output {@code [rows, out]} f32 (for O and down: the residual stream it
     *     was accumulated into, or the branch before a sandwich norm), to add the delta to
     * @param rows rows of this step
     */
    void apply(int layer, String block, MemorySegment x, MemorySegment y, int rows);
}
