package io.radixkv.kernels.cpu;

import io.radixkv.bindings.radixkv_bench_h;
import io.radixkv.kernels.Checks;
import io.radixkv.kernels.DType;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The benchmarks' yardsticks from libradixkv_bench (radixkv_bench.h: rkv_bench_read /
 * rkv_bench_copy / rkv_bench_read_gemv / rkv_bench_fma_peak), run on the same OpenMP threads as
 * the kernels: benchmarks report kernel GB/s and GFLOP/s next to these. The library is loaded on
 * first use ({@link NativeLibrary#loadBench}); the engine never loads it.
 */
public final class BandwidthBaselines {
    private BandwidthBaselines() {}

    /** Streams every 64-byte line of {@code src}; returns a checksum (keep it alive). */
    public static double read(MemorySegment src) {
        NativeLibrary.loadBench();
        Checks.requireBytes("src", src, 0);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment sink = arena.allocate(ValueLayout.JAVA_DOUBLE);
            NativeLibrary.checkBench("rkv_bench_read", radixkv_bench_h.rkv_bench_read(src, src.byteSize(), sink));
            return sink.get(ValueLayout.JAVA_DOUBLE, 0);
        }
    }

    /** The most rows {@link #readGemv} (and the small-m path of {@code rkv_linear}) takes. */
    public static final int GEMV_MAX_ROWS = 16;

    /**
     * Streams the weights in {@code w} like {@link #read} while doing, per weight element,
     * {@code rows} multiply-adds with the instructions {@code rkv_linear} uses for a decode batch of
     * that many rows on this CPU (x held in registers: no x loads, no partial sums): the weight
     * stream of a decode GEMV overlapped with exactly its arithmetic, i.e. the most the layer can
     * reach on this CPU. {@code prefetchBytes} > 0 also prefetches each line that far ahead (0:
     * none; which one is faster depends on the CPU and the arithmetic). Returns a checksum (keep it
     * alive).
     */
    public static double readGemv(MemorySegment w, DType wDtype, int rows, long prefetchBytes) {
        NativeLibrary.loadBench();
        Checks.requireBytes("w", w, 0);
        Checks.requireDtype("wDtype", wDtype, DType.F32, DType.BF16, DType.F16);
        if (rows < 1 || rows > GEMV_MAX_ROWS) {
            throw new IllegalArgumentException("rows must be in [1, " + GEMV_MAX_ROWS + "], got " + rows);
        }
        Checks.requireNonNegative("prefetchBytes", prefetchBytes);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment sink = arena.allocate(ValueLayout.JAVA_DOUBLE);
            NativeLibrary.checkBench("rkv_bench_read_gemv",
                    radixkv_bench_h.rkv_bench_read_gemv(w, w.byteSize(), wDtype.code(), rows, prefetchBytes, sink));
            return sink.get(ValueLayout.JAVA_DOUBLE, 0);
        }
    }

    /** Copies {@code bytes} from src to dst over the kernels' threads. */
    public static void copy(MemorySegment dst, MemorySegment src, long bytes) {
        NativeLibrary.loadBench();
        Checks.requireBytes("src", src, bytes);
        Checks.requireBytes("dst", dst, bytes);
        NativeLibrary.checkBench("rkv_bench_copy", radixkv_bench_h.rkv_bench_copy(dst, src, bytes));
    }

    /**
     * Peak f32 FMA throughput of the kernels' threads (GFLOP/s), measured for about {@code seconds}:
     * the yardstick for GEMM efficiency.
     */
    public static double fmaPeakGflops(double seconds) {
        NativeLibrary.loadBench();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.JAVA_DOUBLE);
            NativeLibrary.checkBench("rkv_bench_fma_peak", radixkv_bench_h.rkv_bench_fma_peak(seconds, out));
            return out.get(ValueLayout.JAVA_DOUBLE, 0);
        }
    }
}
