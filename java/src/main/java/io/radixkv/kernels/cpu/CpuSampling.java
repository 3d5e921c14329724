package io.radixkv.kernels.cpu;

import io.radixkv.bindings.radixkv_h;
import io.radixkv.kernels.Checks;
import io.radixkv.kernels.DenseChecks;
import io.radixkv.kernels.SamplingKernels;
import java.lang.foreign.Arena;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * Token sampling in libradixkv ({@code rkv_sample}): softmax(logits / temperature) cut to the
 * top-p nucleus, drawn with a caller-given uniform number, the exponentials vectorized. A decode
 * step samples every row of its batch, each over the whole vocabulary: in Java, Math.exp alone
 * took a fifth of a 64-sequence step of the small model.
 */
public final class CpuSampling implements SamplingKernels {
    private static final CpuSampling INSTANCE = new CpuSampling();

    private static final MethodHandle SAMPLE;

    static {
        NativeLibrary.loadCpu();
        SAMPLE = Linker.nativeLinker().downcallHandle(radixkv_h.rkv_sample$address(),
                radixkv_h.rkv_sample$descriptor());
    }

    /**
     * A thread's argument and result buffers, kept between calls and grown as needed: an arena
     * and four allocations a call took 55 us (median; p90 130) of a 64-row call on the engine
     * thread, beside 0.6 ms in the kernel (Zen 5, the small model's decode step).
     */
    private static final class RowBuffers {
        final int capacity;
        final MemorySegment temperature;
        final MemorySegment topP;
        final MemorySegment uniform;
        final MemorySegment out;

        RowBuffers(int capacity) {
            Arena arena = Arena.ofAuto(); // freed by the GC with the buffers (a bigger set replaces them)
            this.capacity = capacity;
            temperature = arena.allocate(ValueLayout.JAVA_FLOAT, capacity);
            topP = arena.allocate(ValueLayout.JAVA_FLOAT, capacity);
            uniform = arena.allocate(ValueLayout.JAVA_DOUBLE, capacity);
            out = arena.allocate(ValueLayout.JAVA_INT, capacity);
        }
    }

    private static final ThreadLocal<RowBuffers> BUFFERS = new ThreadLocal<>();

    private CpuSampling() {}

    /** The sampler (it holds no state but per-thread buffers). */
    public static CpuSampling instance() {
        return INSTANCE;
    }

    private static RowBuffers buffers(int rows) {
        RowBuffers b = BUFFERS.get();
        if (b == null || b.capacity < rows) {
            b = new RowBuffers(Math.max(rows, b == null ? 64 : 2 * b.capacity));
            BUFFERS.set(b);
        }
        return b;
    }

    /**
     * One token per row of f32 logits {@code [rows, vocab]} (a native segment), row r drawn with
     * temperature {@code temperature[r]} (finite, >= 0; 0 is the argmax), top-p {@code topP[r]}
     * (in (0, 1]; 1 keeps every token) and uniform number {@code uniform[r]} (in [0, 1)); see
     * {@code rkv_sample} in radixkv.h for the exact draw. More than one row runs them in parallel
     * on the kernels' threads: like the other kernels, call it from the thread that runs them (the
     * engine's), since an OpenMP region entered from a second thread gives the process a second
     * thread pool (docs/measurements/dense.md, "One OpenMP pool per process"). One row enters none.
     */
    @Override
    public int[] sampleRows(MemorySegment logits, int vocab, float[] temperature, float[] topP, double[] uniform) {
        int rows = temperature.length;
        if (vocab <= 0 || topP.length != rows || uniform.length != rows) {
            throw new IllegalArgumentException("vocab must be positive and every row needs a temperature, top-p and"
                    + " uniform number (" + vocab + ", " + rows + ", " + topP.length + ", " + uniform.length + ")");
        }
        DenseChecks.requireNative("logits", logits);
        Checks.requireBytes("logits", logits, (long) rows * vocab * 4L);
        for (int r = 0; r < rows; r++) {
            checkRow(temperature[r], topP[r], uniform[r]);
        }
        RowBuffers b = buffers(rows);
        MemorySegment.copy(temperature, 0, b.temperature, ValueLayout.JAVA_FLOAT, 0, rows);
        MemorySegment.copy(topP, 0, b.topP, ValueLayout.JAVA_FLOAT, 0, rows);
        MemorySegment.copy(uniform, 0, b.uniform, ValueLayout.JAVA_DOUBLE, 0, rows);
        long n = rows;
        NativeLibrary.call("rkv_sample",
                () -> (int) SAMPLE.invokeExact(logits, n, vocab, b.temperature, b.topP, b.uniform, b.out));
        int[] tokens = new int[rows];
        MemorySegment.copy(b.out, ValueLayout.JAVA_INT, 0, tokens, 0, rows);
        return tokens;
    }

    private static void checkRow(float temperature, float topP, double uniform) {
        if (!(temperature >= 0 && temperature < Float.POSITIVE_INFINITY)) {
            throw new IllegalArgumentException("temperature must be finite and >= 0, got " + temperature);
        }
        if (!(topP > 0 && topP <= 1)) {
            throw new IllegalArgumentException("top-p must be in (0, 1], got " + topP);
        }
        if (!(uniform >= 0 && uniform < 1)) {
            throw new IllegalArgumentException("uniform must be in [0, 1), got " + uniform);
        }
    }
}
