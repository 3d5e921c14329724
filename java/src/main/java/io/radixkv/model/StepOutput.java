package io.radixkv.model;

import io.radixkv.kernels.Checks;
import java.lang.foreign.MemorySegment;

/**
 * Where a step's next-token scores go, all host memory: the logits {@code [rows, vocab]} f32
 * when {@code fullLogits}, and each row's argmax (first maximum, NaN never wins) as int32
 * {@code [rows]} when {@code argmax} is not null. A greedy batch needs only the argmax: on a
 * device the model then copies {@code rows} ints instead of {@code rows × vocab} floats.
 */
public record StepOutput(MemorySegment logits, MemorySegment argmax, boolean fullLogits) {
    public StepOutput {
        if (logits == null) {
            throw new IllegalArgumentException("logits must not be null (the model may compute into it)");
        }
        if (!fullLogits && argmax == null) {
            throw new IllegalArgumentException("a step must produce logits, argmax or both");
        }
    }

    /** Full logits only (the plain {@link LlamaModel#forward(ForwardBatch, java.util.List, MemorySegment)}). */
    public static StepOutput logits(MemorySegment logits) {
        return new StepOutput(logits, null, true);
    }

    void check(int rows, int vocab) {
        Checks.requireBytes("logits", logits, 4L * rows * vocab);
        if (!logits.isNative()) {
            throw new IllegalArgumentException("logits must be native memory");
        }
        if (argmax != null) {
            Checks.requireBytes("argmax", argmax, 4L * rows);
        }
    }
}
