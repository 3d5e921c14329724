package io.radixkv.kernels;

import io.radixkv.bindings.radixkv_h;
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
public final class CpuSampling {
    private static final MethodHandle SAMPLE;

    static {
        NativeLibrary.loadCpu();
        SAMPLE = Linker.nativeLinker().downcallHandle(radixkv_h.rkv_sample$address(),
                radixkv_h.rkv_sample$descriptor());
    }

    private CpuSampling() {}

    /**
     * One token per row of f32 logits {@code [rows, vocab]} (a native segment), row r drawn with
     * {@code temperature[r]}, {@code topP[r]} and {@code uniform[r]} as in {@link #sampleRow}: the
     * rows in parallel on the kernels' threads. Like the other kernels, call it from the thread
     * that runs them (the engine's): an OpenMP region entered from a second thread gives the
     * process a second thread pool (docs/measurements.md, "One OpenMP pool per process").
     * {@link #sampleRow} enters none.
     */
    public static int[] sampleRows(MemorySegment logits, int vocab, float[] temperature, float[] topP,
                                   double[] uniform) {
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
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment t = arena.allocateFrom(ValueLayout.JAVA_FLOAT, temperature);
            MemorySegment p = arena.allocateFrom(ValueLayout.JAVA_FLOAT, topP);
            MemorySegment u = arena.allocateFrom(ValueLayout.JAVA_DOUBLE, uniform);
            MemorySegment out = arena.allocate(ValueLayout.JAVA_INT, Math.max(rows, 1));
            long n = rows;
            NativeLibrary.call("rkv_sample", () -> (int) SAMPLE.invokeExact(logits, n, vocab, t, p, u, out));
            return out.asSlice(0, 4L * rows).toArray(ValueLayout.JAVA_INT);
        }
    }

    /**
     * One token from row {@code row} of f32 logits {@code [rows, vocab]} (a native segment):
     * temperature in (0, inf) (0 is the argmax), top-p in (0, 1] (1 keeps every token), uniform
     * in [0, 1). See {@code rkv_sample} in radixkv.h for the exact draw.
     */
    public static int sampleRow(MemorySegment logits, long row, int vocab, float temperature, float topP,
                                double uniform) {
        if (vocab <= 0 || row < 0) {
            throw new IllegalArgumentException("vocab must be positive and row not negative (" + vocab + ", "
                    + row + ")");
        }
        DenseChecks.requireNative("logits", logits);
        Checks.requireBytes("logits", logits, (row + 1) * vocab * 4L);
        checkRow(temperature, topP, uniform);
        MemorySegment rowLogits = logits.asSlice(row * vocab * 4L, vocab * 4L);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment t = arena.allocateFrom(ValueLayout.JAVA_FLOAT, temperature);
            MemorySegment p = arena.allocateFrom(ValueLayout.JAVA_FLOAT, topP);
            MemorySegment u = arena.allocateFrom(ValueLayout.JAVA_DOUBLE, uniform);
            MemorySegment out = arena.allocate(ValueLayout.JAVA_INT);
            NativeLibrary.call("rkv_sample", () -> (int) SAMPLE.invokeExact(rowLogits, 1L, vocab, t, p, u, out));
            return out.get(ValueLayout.JAVA_INT, 0);
        }
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
