package io.radixkv.kernels;

import io.radixkv.bindings.radixkv_h;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Memory-bandwidth baselines of libradixkv (rkv_bench_read / rkv_bench_copy), run on the
 * same OpenMP threads as the kernels: benchmarks report kernel GB/s next to these.
 */
public final class BandwidthBaselines {
    private BandwidthBaselines() {}

    /** Streams every 64-byte line of {@code src}; returns a checksum (keep it alive). */
    public static double read(MemorySegment src) {
        NativeLibrary.loadCpu();
        Checks.requireBytes("src", src, 0);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment sink = arena.allocate(ValueLayout.JAVA_DOUBLE);
            NativeLibrary.check("rkv_bench_read", radixkv_h.rkv_bench_read(src, src.byteSize(), sink));
            return sink.get(ValueLayout.JAVA_DOUBLE, 0);
        }
    }

    /** Copies {@code bytes} from src to dst over the kernels' threads. */
    public static void copy(MemorySegment dst, MemorySegment src, long bytes) {
        NativeLibrary.loadCpu();
        Checks.requireBytes("src", src, bytes);
        Checks.requireBytes("dst", dst, bytes);
        NativeLibrary.check("rkv_bench_copy", radixkv_h.rkv_bench_copy(dst, src, bytes));
    }
}
