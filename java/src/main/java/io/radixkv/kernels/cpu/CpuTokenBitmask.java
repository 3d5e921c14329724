package io.radixkv.kernels.cpu;

import io.radixkv.bindings.radixkv_h;
import io.radixkv.bindings.rkv_token_bitmask_params;
import io.radixkv.kernels.DenseChecks;
import io.radixkv.kernels.TokenBitmaskKernels;
import java.lang.foreign.Arena;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * Token masks in libradixkv ({@code rkv_apply_token_bitmask}). The masks are copied into a
 * per-thread native buffer, kept between calls and grown as needed.
 */
public final class CpuTokenBitmask implements TokenBitmaskKernels {
    private static final CpuTokenBitmask INSTANCE = new CpuTokenBitmask();
    private static final MethodHandle APPLY;

    static {
        NativeLibrary.loadCpu();
        APPLY = Linker.nativeLinker().downcallHandle(radixkv_h.rkv_apply_token_bitmask$address(),
                radixkv_h.rkv_apply_token_bitmask$descriptor());
    }

    private record Buffers(long maskInts, int rows, MemorySegment params, MemorySegment masks, MemorySegment rows_) {}

    private static final ThreadLocal<Buffers> BUFFERS = new ThreadLocal<>();

    private CpuTokenBitmask() {}

    public static CpuTokenBitmask instance() {
        return INSTANCE;
    }

    private static Buffers buffers(long maskInts, int rows) {
        Buffers b = BUFFERS.get();
        if (b == null || b.maskInts < maskInts || b.rows < rows) {
            Arena arena = Arena.ofAuto(); // freed by the GC with the buffers
            long ints = Math.max(maskInts, b == null ? 0 : 2 * b.maskInts);
            int r = Math.max(rows, b == null ? 64 : 2 * b.rows);
            b = new Buffers(ints, r, rkv_token_bitmask_params.allocate(arena),
                    arena.allocate(ValueLayout.JAVA_INT, ints), arena.allocate(ValueLayout.JAVA_INT, r));
            BUFFERS.set(b);
        }
        return b;
    }

    @Override
    public void applyTokenBitmask(MemorySegment logits, int rows, int vocab, int[][] masks, int[] rowIndices) {
        TokenBitmaskKernels.check(logits, rows, vocab, masks, rowIndices);
        DenseChecks.requireNative("logits", logits);
        int n = masks.length;
        if (n == 0) {
            return;
        }
        int words = (vocab + 31) >>> 5;
        Buffers b = buffers((long) n * words, n);
        for (int i = 0; i < n; i++) {
            MemorySegment.copy(masks[i], 0, b.masks, ValueLayout.JAVA_INT, (long) i * words * 4, words);
        }
        MemorySegment.copy(rowIndices, 0, b.rows_, ValueLayout.JAVA_INT, 0, n);
        MemorySegment p = b.params;
        rkv_token_bitmask_params.logits(p, logits);
        rkv_token_bitmask_params.rows(p, rows);
        rkv_token_bitmask_params.vocab(p, vocab);
        rkv_token_bitmask_params.bitmask(p, b.masks);
        rkv_token_bitmask_params.bitmask_words(p, words);
        rkv_token_bitmask_params.row_indices(p, b.rows_);
        rkv_token_bitmask_params.num_masked(p, n);
        NativeLibrary.call("rkv_apply_token_bitmask", () -> (int) APPLY.invokeExact(p));
    }
}
