package io.radixkv.kernels.cpu;

import io.radixkv.bindings.radixkv_h;
import io.radixkv.bindings.rkv_logprobs_params;
import io.radixkv.kernels.DenseChecks;
import io.radixkv.kernels.LogprobKernels;
import io.radixkv.kernels.LogprobRows;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * Log-probabilities in libradixkv ({@code rkv_logprobs}): the rows are read where they lie (the
 * step's logits buffer), never copied to Java; only the results are. Rows run in parallel on
 * the kernels' threads: call it from the thread that runs them (the engine's), as {@link
 * CpuSampling}.
 */
public final class CpuLogprobs implements LogprobKernels {
    private static final CpuLogprobs INSTANCE = new CpuLogprobs();
    private static final MethodHandle LOGPROBS;

    static {
        NativeLibrary.loadCpu();
        LOGPROBS = radixkv_h.rkv_logprobs$handle();
    }

    private CpuLogprobs() {}

    public static CpuLogprobs instance() {
        return INSTANCE;
    }

    @Override
    public LogprobRows compute(MemorySegment logits, int numRows, int vocab, int[] rowIndex, int[] targets, int topK) {
        LogprobKernels.check(logits, numRows, vocab, rowIndex, targets, topK);
        DenseChecks.requireNative("logits", logits);
        int rows = rowIndex.length;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment index = arena.allocateFrom(ValueLayout.JAVA_INT, rowIndex);
            MemorySegment target = arena.allocateFrom(ValueLayout.JAVA_INT, targets);
            MemorySegment targetLp = arena.allocate(ValueLayout.JAVA_DOUBLE, Math.max(1, rows));
            long top = Math.max(1L, (long) rows * topK);
            MemorySegment topIds = arena.allocate(ValueLayout.JAVA_INT, top);
            MemorySegment topLp = arena.allocate(ValueLayout.JAVA_DOUBLE, top);
            MemorySegment p = rkv_logprobs_params.allocate(arena);
            rkv_logprobs_params.logits(p, logits);
            rkv_logprobs_params.num_logit_rows(p, numRows);
            rkv_logprobs_params.vocab(p, vocab);
            rkv_logprobs_params.row_index(p, index);
            rkv_logprobs_params.rows(p, rows);
            rkv_logprobs_params.target(p, target);
            rkv_logprobs_params.top_k(p, topK);
            rkv_logprobs_params.target_logprob(p, targetLp);
            rkv_logprobs_params.top_ids(p, topIds);
            rkv_logprobs_params.top_logprobs(p, topLp);
            NativeLibrary.call("rkv_logprobs", () -> (int) LOGPROBS.invokeExact(p));
            return new LogprobRows(topK, targetLp.asSlice(0, 8L * rows).toArray(ValueLayout.JAVA_DOUBLE),
                    topIds.asSlice(0, 4L * rows * topK).toArray(ValueLayout.JAVA_INT),
                    topLp.asSlice(0, 8L * rows * topK).toArray(ValueLayout.JAVA_DOUBLE));
        }
    }
}
