package io.radixkv.kernels.cpu;

import io.radixkv.bindings.radixkv_h;
import io.radixkv.bindings.rkv_sample_params;
import io.radixkv.kernels.Checks;
import io.radixkv.kernels.DenseChecks;
import io.radixkv.kernels.SamplingKernels;
import io.radixkv.kernels.SamplingRows;
import java.lang.foreign.Arena;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * Token sampling in libradixkv ({@code rkv_sample}): the logits' sparse edits (bias, masked ids,
 * penalties), then softmax(logits / temperature) cut by min-p, top-k and the top-p nucleus, drawn
 * with a caller-given uniform number, the exponentials vectorized. A decode
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
        final MemorySegment params = Arena.ofAuto().allocate(rkv_sample_params.layout());
        final MemorySegment temperature;
        final MemorySegment topP;
        final MemorySegment uniform;
        final MemorySegment topK;
        final MemorySegment minP;
        final MemorySegment repetition;
        final MemorySegment presence;
        final MemorySegment frequency;
        final MemorySegment counts;
        final MemorySegment countsLen;
        final MemorySegment biasIndptr;
        final MemorySegment maskIndptr;
        final MemorySegment out;
        MemorySegment biasIds = MemorySegment.NULL;
        MemorySegment biasValues = MemorySegment.NULL;
        MemorySegment maskIds = MemorySegment.NULL;

        RowBuffers(int capacity) {
            Arena arena = Arena.ofAuto(); // freed by the GC with the buffers (a bigger set replaces them)
            this.capacity = capacity;
            temperature = arena.allocate(ValueLayout.JAVA_FLOAT, capacity);
            topP = arena.allocate(ValueLayout.JAVA_FLOAT, capacity);
            uniform = arena.allocate(ValueLayout.JAVA_DOUBLE, capacity);
            topK = arena.allocate(ValueLayout.JAVA_INT, capacity);
            minP = arena.allocate(ValueLayout.JAVA_FLOAT, capacity);
            repetition = arena.allocate(ValueLayout.JAVA_FLOAT, capacity);
            presence = arena.allocate(ValueLayout.JAVA_FLOAT, capacity);
            frequency = arena.allocate(ValueLayout.JAVA_FLOAT, capacity);
            counts = arena.allocate(ValueLayout.ADDRESS, capacity);
            countsLen = arena.allocate(ValueLayout.JAVA_LONG, capacity);
            biasIndptr = arena.allocate(ValueLayout.JAVA_LONG, capacity + 1L);
            maskIndptr = arena.allocate(ValueLayout.JAVA_LONG, capacity + 1L);
            out = arena.allocate(ValueLayout.JAVA_INT, capacity);
        }

        /** A list buffer of at least {@code n} elements of {@code bytes} each (kept, grown by doubling). */
        static MemorySegment list(MemorySegment have, long n, long bytes) {
            return have.byteSize() >= n * bytes ? have : Arena.ofAuto().allocate(Math.max(64, 2 * n) * bytes, 8);
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
     * (in (0, 1]; 1 keeps every token), uniform number {@code uniform[r]} (in [0, 1)) and the
     * optional edits and cuts of {@link SamplingRows}; see {@code rkv_sample} in radixkv.h for
     * the exact draw. More than one row runs them in parallel on the kernels' threads: like the
     * other kernels, call it from the thread that runs them (the engine's), since an OpenMP
     * region entered from a second thread gives the process a second thread pool
     * (docs/measurements/dense.md, "One OpenMP pool per process"). One row enters none.
     */
    @Override
    public int[] sampleRows(MemorySegment logits, int vocab, SamplingRows a) {
        int rows = a.rows();
        if (vocab <= 0 || a.topP().length != rows || a.uniform().length != rows) {
            throw new IllegalArgumentException("vocab must be positive and every row needs a temperature, top-p and"
                    + " uniform number (" + vocab + ", " + rows + ", " + a.topP().length + ", " + a.uniform().length
                    + ")");
        }
        DenseChecks.requireNative("logits", logits);
        Checks.requireBytes("logits", logits, (long) rows * vocab * 4L);
        for (int r = 0; r < rows; r++) {
            checkRow(a.temperature()[r], a.topP()[r], a.uniform()[r]);
        }
        RowBuffers b = buffers(rows);
        MemorySegment p = b.params;
        rkv_sample_params.logits(p, logits);
        rkv_sample_params.rows(p, rows);
        rkv_sample_params.vocab(p, vocab);
        rkv_sample_params.temperature(p, floats(a.temperature(), b.temperature, rows));
        rkv_sample_params.top_p(p, floats(a.topP(), b.topP, rows));
        MemorySegment.copy(a.uniform(), 0, b.uniform, ValueLayout.JAVA_DOUBLE, 0, rows);
        rkv_sample_params.uniform(p, b.uniform);
        rkv_sample_params.top_k(p, ints(a.topK(), b.topK, rows));
        rkv_sample_params.min_p(p, floats(a.minP(), b.minP, rows));
        rkv_sample_params.repetition_penalty(p, floats(a.repetitionPenalty(), b.repetition, rows));
        rkv_sample_params.presence_penalty(p, floats(a.presencePenalty(), b.presence, rows));
        rkv_sample_params.frequency_penalty(p, floats(a.frequencyPenalty(), b.frequency, rows));
        if (a.counts() != null) {
            for (int r = 0; r < rows; r++) {
                MemorySegment c = a.counts()[r];
                long n = a.countsLen()[r];
                if (n > 0) {
                    DenseChecks.requireNative("counts", c);
                    Checks.requireBytes("counts", c, n * 8L);
                }
                b.counts.setAtIndex(ValueLayout.ADDRESS, r, n > 0 ? c : MemorySegment.NULL);
                b.countsLen.setAtIndex(ValueLayout.JAVA_LONG, r, n);
            }
            rkv_sample_params.counts(p, b.counts);
            rkv_sample_params.counts_len(p, b.countsLen);
        } else {
            rkv_sample_params.counts(p, MemorySegment.NULL);
            rkv_sample_params.counts_len(p, MemorySegment.NULL);
        }
        if (a.biasIndptr() != null) {
            int n = a.biasIndptr()[rows];
            b.biasIds = RowBuffers.list(b.biasIds, n, 4);
            b.biasValues = RowBuffers.list(b.biasValues, n, 4);
            MemorySegment.copy(a.biasIds(), 0, b.biasIds, ValueLayout.JAVA_INT, 0, n);
            MemorySegment.copy(a.biasValues(), 0, b.biasValues, ValueLayout.JAVA_FLOAT, 0, n);
            rkv_sample_params.bias_indptr(p, indptr(a.biasIndptr(), b.biasIndptr, rows));
            rkv_sample_params.bias_ids(p, b.biasIds);
            rkv_sample_params.bias_values(p, b.biasValues);
        } else {
            rkv_sample_params.bias_indptr(p, MemorySegment.NULL);
            rkv_sample_params.bias_ids(p, MemorySegment.NULL);
            rkv_sample_params.bias_values(p, MemorySegment.NULL);
        }
        if (a.maskIndptr() != null) {
            int n = a.maskIndptr()[rows];
            b.maskIds = RowBuffers.list(b.maskIds, n, 4);
            MemorySegment.copy(a.maskIds(), 0, b.maskIds, ValueLayout.JAVA_INT, 0, n);
            rkv_sample_params.mask_indptr(p, indptr(a.maskIndptr(), b.maskIndptr, rows));
            rkv_sample_params.mask_ids(p, b.maskIds);
        } else {
            rkv_sample_params.mask_indptr(p, MemorySegment.NULL);
            rkv_sample_params.mask_ids(p, MemorySegment.NULL);
        }
        rkv_sample_params.out(p, b.out);
        NativeLibrary.call("rkv_sample", () -> (int) SAMPLE.invokeExact(p));
        int[] tokens = new int[rows];
        MemorySegment.copy(b.out, ValueLayout.JAVA_INT, 0, tokens, 0, rows);
        return tokens;
    }

    /** {@code values} into {@code buffer} (NULL for a null array: neutral rows). */
    private static MemorySegment floats(float[] values, MemorySegment buffer, int rows) {
        if (values == null) {
            return MemorySegment.NULL;
        }
        MemorySegment.copy(values, 0, buffer, ValueLayout.JAVA_FLOAT, 0, rows);
        return buffer;
    }

    private static MemorySegment ints(int[] values, MemorySegment buffer, int rows) {
        if (values == null) {
            return MemorySegment.NULL;
        }
        MemorySegment.copy(values, 0, buffer, ValueLayout.JAVA_INT, 0, rows);
        return buffer;
    }

    private static MemorySegment indptr(int[] values, MemorySegment buffer, int rows) {
        for (int r = 0; r <= rows; r++) {
            buffer.setAtIndex(ValueLayout.JAVA_LONG, r, values[r]);
        }
        return buffer;
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
