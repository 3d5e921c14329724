package io.radixkv.bench;

import io.radixkv.kernels.Bf16;
import io.radixkv.kernels.DType;
import io.radixkv.kernels.DenseKernels;
import io.radixkv.platform.LargePages;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;

/**
 * What the dense-layer benchmarks ({@link DecodeGemvBench}, {@link GemmBench}) share: random
 * operands in any weight dtype, the {@code layout} parameter (row-major or the kernels' packed
 * layout) and the layer call for either.
 */
final class DenseLayerSetup {
    private DenseLayerSetup() {}

    /** count values uniform in [-0.5, 0.5), encoded as d, 64-byte aligned. */
    static MemorySegment random(Arena arena, long count, DType d, long seed) {
        MemorySegment s = LargePages.allocate(arena, count * d.bytes(), 64); // as the engine's weights
        SplittableRandom r = new SplittableRandom(seed);
        for (long i = 0; i < count; i++) {
            float v = (float) (r.nextDouble() - 0.5);
            switch (d) {
                case BF16 -> s.setAtIndex(ValueLayout.JAVA_SHORT, i, Bf16.fromFloat(v));
                case F16 -> s.setAtIndex(ValueLayout.JAVA_SHORT, i, Float.floatToFloat16(v));
                default -> s.setAtIndex(ValueLayout.JAVA_FLOAT, i, v);
            }
        }
        return s;
    }

    /**
     * The {@code layout} parameter: {@code rows} (row-major, {@code rkv_linear}) or {@code packed}
     * ({@code rkv_linear_pack} + {@code rkv_linear_packed}, where the kernels have a packed layout
     * for the shape; the trial fails with the reason elsewhere). Packs the weights when packed.
     */
    static boolean applyLayout(String layout, DenseKernels dense, DType dtype, long n, long k, MemorySegment... ws) {
        boolean packed = switch (layout) {
            case "rows" -> false;
            case "packed" -> true;
            default -> throw new IllegalArgumentException("layout must be rows or packed, got " + layout);
        };
        if (packed) {
            if (!dense.packsLinearWeights(dtype, n, k)) {
                throw new IllegalStateException("no packed layout for " + dtype + " [" + n + ", " + k
                        + "] on this CPU (AVX-512 and oneDNN; bf16 also AVX512-BF16 and k % 32 == 0)");
            }
            for (MemorySegment w : ws) {
                dense.packLinearWeights(w, dtype, n, k, false);
            }
        }
        return packed;
    }

    /** y = x . w^T with the weights in the layout {@link #applyLayout} gave them. */
    static void linear(DenseKernels dense, boolean packed, MemorySegment x, MemorySegment w, DType dtype,
                       MemorySegment y, long m, long n, long k) {
        if (packed) {
            dense.linearPacked(x, w, dtype, y, m, n, k, false);
        } else {
            dense.linear(x, w, dtype, y, m, n, k, false);
        }
    }
}
