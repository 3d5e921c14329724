package io.radixkv.kernels;

import io.radixkv.bindings.radixkv_h;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * {@link KvCacheKernels} of libradixkv_cuda. Tensors and caches are device segments (from
 * {@link CudaMemory}).
 *
 * <p>{@link #reshapeAndCache}'s slot mapping is device-resident and is validated on the
 * device by rkv_cuda_reshape_and_cache itself (a check kernel sets a flag, the scatter kernel
 * writes nothing when it is set, the host reads the 8-byte flag back), so it is never copied
 * back here: a bad slot is an IllegalArgumentException naming it and the pools stay
 * unchanged. {@link #copyBlocks}'s block mapping is a <b>host</b> segment (the scheduler
 * builds it on the host; rkv_cuda_copy_blocks takes a host array), as are the per-layer
 * pointer arrays built here.
 */
final class CudaKvCacheKernels implements KvCacheKernels {
    private static final int INVALID_ARGUMENT = radixkv_h.RKV_ERR_INVALID_ARGUMENT();

    static String lastError() {
        return radixkv_h.rkv_cuda_last_error().reinterpret(Long.MAX_VALUE).getString(0);
    }

    static void check(String function, int status) {
        if (status < 0) {
            throw new NativeException(function, status, lastError());
        }
    }

    @Override
    public void reshapeAndCache(MemorySegment k, MemorySegment v, DType srcDtype, MemorySegment slotMapping,
                                long numTokens, KvCacheView cache) {
        KvCacheChecks.reshapeAndCacheShapes(k, v, srcDtype, slotMapping, numTokens, cache);
        if (numTokens == 0) {
            return;
        }
        PagedKvLayout l = cache.layout();
        int st = radixkv_h.rkv_cuda_reshape_and_cache(k, v, srcDtype.code(), slotMapping, numTokens, l.numKvHeads(),
                l.headDim(), cache.kCache(), cache.vCache(), l.cacheDtype().code(), l.numPages(), l.pageSize(),
                cache.kScale(), cache.vScale(), MemorySegment.NULL);
        if (st == INVALID_ARGUMENT) {
            // every other argument was checked above: this is the device-side slot check
            throw new IllegalArgumentException(lastError());
        }
        check("rkv_cuda_reshape_and_cache", st);
    }

    @Override
    public void fp8Quantize(MemorySegment src, MemorySegment dst, long n, DType fp8Dtype, float scale) {
        KvCacheChecks.fp8("fp8Quantize", src, 4, dst, 1, n, fp8Dtype, scale);
        check("rkv_cuda_fp8_quantize", radixkv_h.rkv_cuda_fp8_quantize(src, dst, n, fp8Dtype.code(), scale,
                MemorySegment.NULL));
    }

    @Override
    public void fp8Dequantize(MemorySegment src, MemorySegment dst, long n, DType fp8Dtype, float scale) {
        KvCacheChecks.fp8("fp8Dequantize", src, 1, dst, 4, n, fp8Dtype, scale);
        check("rkv_cuda_fp8_dequantize", radixkv_h.rkv_cuda_fp8_dequantize(src, dst, n, fp8Dtype.code(), scale,
                MemorySegment.NULL));
    }

    /**
     * libradixkv_cuda has no general conversion kernel: FP8 quantize/dequantize are routed to
     * their kernels, everything else is unsupported.
     */
    @Override
    public void convert(MemorySegment src, DType srcDtype, MemorySegment dst, DType dstDtype, long n, float scale) {
        KvCacheChecks.convert(src, srcDtype, dst, dstDtype, n, scale);
        if (srcDtype == DType.F32 && dstDtype.isFp8()) {
            fp8Quantize(src, dst, n, dstDtype, scale);
        } else if (srcDtype.isFp8() && dstDtype == DType.F32) {
            fp8Dequantize(src, dst, n, srcDtype, scale);
        } else {
            throw new UnsupportedOperationException("CUDA convert " + srcDtype + " -> " + dstDtype
                    + " is not implemented (only f32 <-> fp8)");
        }
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
            check("rkv_cuda_copy_blocks", radixkv_h.rkv_cuda_copy_blocks(ks, vs, layers.size(), blockMapping, numPairs,
                    layout.pageBytes(), layout.numPages(), MemorySegment.NULL));
        }
    }
}
