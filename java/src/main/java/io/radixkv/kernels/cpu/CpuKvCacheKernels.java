package io.radixkv.kernels.cpu;

import io.radixkv.bindings.radixkv_h;
import io.radixkv.kernels.DType;
import io.radixkv.kernels.KvCacheChecks;
import io.radixkv.kernels.KvCacheKernels;
import io.radixkv.kernels.KvCacheView;
import io.radixkv.kernels.NativeException;
import io.radixkv.kernels.PagedKvLayout;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.List;

/**
 * {@link KvCacheKernels} of libradixkv (vectorized C++, OpenMP) over host memory.
 *
 * <p>Every argument (sizes, dtypes, each slot, each block id) is checked in Java before
 * the downcall; libradixkv checks again and would report anything missed as a
 * {@link NativeException}, never a crash. The downcalls use {@code Linker.Option.critical(true)}:
 * these kernels are bandwidth-bound, run for at most milliseconds on realistic sizes and never
 * block, so skipping the thread-state transition is worth it (and heap segments are accepted).
 * Requires libradixkv to be loaded ({@link CpuBackend} does that).
 */
public final class CpuKvCacheKernels implements KvCacheKernels {
    private static final MethodHandle RESHAPE = NativeLibrary.critical(
            radixkv_h.rkv_reshape_and_cache$address(), radixkv_h.rkv_reshape_and_cache$descriptor());
    private static final MethodHandle COPY_BLOCKS =
            NativeLibrary.critical(radixkv_h.rkv_copy_blocks$address(), radixkv_h.rkv_copy_blocks$descriptor());
    private static final MethodHandle QUANTIZE =
            NativeLibrary.critical(radixkv_h.rkv_fp8_quantize$address(), radixkv_h.rkv_fp8_quantize$descriptor());
    private static final MethodHandle DEQUANTIZE = NativeLibrary.critical(
            radixkv_h.rkv_fp8_dequantize$address(), radixkv_h.rkv_fp8_dequantize$descriptor());
    private static final MethodHandle CONVERT =
            NativeLibrary.critical(radixkv_h.rkv_convert$address(), radixkv_h.rkv_convert$descriptor());

    public CpuKvCacheKernels() {
        NativeLibrary.loadCpu();
    }

    @Override
    public void reshapeAndCache(MemorySegment k, MemorySegment v, DType srcDtype, MemorySegment slotMapping,
                                long numTokens, KvCacheView cache) {
        KvCacheChecks.reshapeAndCacheShapes(k, v, srcDtype, slotMapping, numTokens, cache);
        KvCacheChecks.slots(slotMapping, numTokens, cache.layout());
        PagedKvLayout l = cache.layout();
        NativeLibrary.call("rkv_reshape_and_cache", () -> (int) RESHAPE.invokeExact(k, v, srcDtype.code(),
                slotMapping, numTokens, l.numKvHeads(), l.headDim(), cache.kCache(), cache.vCache(),
                l.cacheDtype().code(), l.numPages(), l.pageSize(), cache.kScale(), cache.vScale()));
    }

    @Override
    public void fp8Quantize(MemorySegment src, MemorySegment dst, long n, DType fp8Dtype, float scale) {
        KvCacheChecks.fp8("fp8Quantize", src, 4, dst, 1, n, fp8Dtype, scale);
        NativeLibrary.call("rkv_fp8_quantize",
                () -> (int) QUANTIZE.invokeExact(src, dst, n, fp8Dtype.code(), scale));
    }

    @Override
    public void fp8Dequantize(MemorySegment src, MemorySegment dst, long n, DType fp8Dtype, float scale) {
        KvCacheChecks.fp8("fp8Dequantize", src, 1, dst, 4, n, fp8Dtype, scale);
        NativeLibrary.call("rkv_fp8_dequantize",
                () -> (int) DEQUANTIZE.invokeExact(src, dst, n, fp8Dtype.code(), scale));
    }

    @Override
    public void convert(MemorySegment src, DType srcDtype, MemorySegment dst, DType dstDtype, long n, float scale) {
        KvCacheChecks.convert(src, srcDtype, dst, dstDtype, n, scale);
        NativeLibrary.call("rkv_convert",
                () -> (int) CONVERT.invokeExact(src, srcDtype.code(), dst, dstDtype.code(), n, scale));
    }

    @Override
    public void copyBlocks(List<KvCacheView> layers, MemorySegment blockMapping, long numPairs) {
        PagedKvLayout layout = KvCacheChecks.layers(layers);
        KvCacheChecks.blockMapping(blockMapping, numPairs, layout);
        if (numPairs == 0) {
            return;
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment ks = KvCacheView.poolAddresses(arena, layers, true);
            MemorySegment vs = KvCacheView.poolAddresses(arena, layers, false);
            NativeLibrary.call("rkv_copy_blocks", () -> (int) COPY_BLOCKS.invokeExact(ks, vs, layers.size(),
                    blockMapping, numPairs, layout.pageBytes(), layout.numPages()));
        }
    }
}
