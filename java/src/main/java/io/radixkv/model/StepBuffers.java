package io.radixkv.model;

import io.radixkv.kernels.BackendMemory;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Where the model's kernels read a step's per-token inputs and write its logits. With host
 * memory these are the batch's own segments and the caller's logits buffer. With device
 * memory, the token ids, positions and slot mapping are uploaded once per step by
 * asynchronous copies into device buffers allocated once, the logits are computed into a
 * device buffer, and copying them to the host is the step's one synchronization.
 */
final class StepBuffers {
    /** A step's inputs as the kernels see them. */
    record Inputs(MemorySegment tokenIds, MemorySegment positions, MemorySegment slotMapping) {}

    private final BackendMemory memory;
    private final boolean device;
    private final MemorySegment tokenIds;
    private final MemorySegment positions;
    private final MemorySegment slots;
    private MemorySegment logits;
    private MemorySegment argmax;

    StepBuffers(BackendMemory memory, int maxTokens) {
        this.memory = memory;
        this.device = memory.isDevice();
        this.tokenIds = device ? memory.allocate(4L * maxTokens) : null;
        this.positions = device ? memory.allocate(4L * maxTokens) : null;
        this.slots = device ? memory.allocate(8L * maxTokens) : null;
    }

    /** The batch's inputs where the kernels read them (validated by the caller first). */
    Inputs upload(ForwardBatch b) {
        if (!device) {
            return new Inputs(b.tokenIds(), b.positions(), b.slotMapping());
        }
        int n = b.numTokens();
        memory.copyFromHostAsync(b.tokenIds(), tokenIds, 4L * n);
        memory.copyFromHostAsync(b.positions(), positions, 4L * n);
        memory.copyFromHostAsync(b.slotMapping(), slots, 8L * n);
        return new Inputs(tokenIds, positions, slots);
    }

    /** Where the output projection writes {@code rows × vocab} f32 logits. */
    MemorySegment logitsTarget(MemorySegment hostLogits, int rows, int vocab) {
        if (!device) {
            return hostLogits;
        }
        long bytes = 4L * rows * vocab;
        if (logits == null || logits.byteSize() < bytes) {
            // grows to the largest logit-row count seen (at most the engine's batch); freed with the memory
            logits = memory.allocate(bytes);
        }
        return logits;
    }

    /** Where the rows' argmax is computed: the caller's host buffer, or a device buffer (grown on demand). */
    MemorySegment argmaxTarget(MemorySegment hostArgmax, int rows) {
        if (!device) {
            return hostArgmax;
        }
        if (argmax == null || argmax.byteSize() < 4L * rows) {
            argmax = memory.allocate(4L * Math.max(rows, 64));
        }
        return argmax;
    }

    /**
     * Makes what {@code out} asks for visible on the host: with a device, copies the argmax (when
     * asked for) and the logits (when wanted) back, the step's synchronization.
     */
    void deliver(StepOutput out, int rows, int vocab) {
        if (!device) {
            return;
        }
        if (out.argmax() != null) {
            memory.copyToHost(argmax, out.argmax(), 4L * rows);
        }
        if (out.fullLogits()) {
            memory.copyToHost(logits, out.logits(), 4L * rows * vocab);
        }
    }

    /**
     * Copies rows {@code rowIds[0..count)} (each {@code rowBytes} long) of {@code src} to the first
     * {@code count} rows of {@code dst}, one copy per run of consecutive rows (a decode step's
     * rows are one run).
     */
    void gatherRows(MemorySegment src, MemorySegment rowIds, int count, MemorySegment dst, long rowBytes) {
        int i = 0;
        while (i < count) {
            int first = rowIds.getAtIndex(ValueLayout.JAVA_INT, i);
            int run = 1;
            while (i + run < count && rowIds.getAtIndex(ValueLayout.JAVA_INT, i + run) == first + run) {
                run++;
            }
            memory.copy(src, first * rowBytes, dst, i * rowBytes, run * rowBytes);
            i += run;
        }
    }
}
