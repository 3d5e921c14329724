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
     * temperature {@code temperature[r]} (finite, >= 0; 0 is the argmax), top-p {@code topP[r]}
     * (in (0, 1]; 1 keeps every token) and uniform number {@code uniform[r]} (in [0, 1)); see
     * {@code rkv_sample} in radixkv.h for the exact draw. More than one row runs them in parallel
     * on the kernels' threads: like the other kernels, call it from the thread that runs them (the
     * engine's), since an OpenMP region entered from a second thread gives the process a second
     * thread pool (docs/measurements.md, "One OpenMP pool per process"). One row enters none.
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
