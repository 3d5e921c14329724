package io.radixkv.kernels.cuda;

import io.radixkv.bindings.radixkv_h;
import io.radixkv.kernels.DType;
import io.radixkv.kernels.KernelBackend;
import io.radixkv.kernels.KvCacheChecks;
import io.radixkv.kernels.KvCacheKernels;
import io.radixkv.kernels.KvCacheView;
import io.radixkv.kernels.NativeException;
import io.radixkv.kernels.PagedKvLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;

/**
 * {@link KvCacheKernels} of libradixkv_cuda. Tensors and caches are device segments (from
 * {@link CudaMemory}); every kernel is launched on the backend's stream and nothing here waits
 * for the device.
 *
 * <p>{@link #reshapeAndCache}'s slot mapping is device-resident, so it cannot be checked here
 * without a copy back: the kernel checks it on the device, skips a token whose slot is out of
 * range (its K/V are not written, nothing out of bounds is) and records the first such slot in
 * the backend's device error record, which {@link KernelBackend#checkDeviceErrors()} reads once
 * per step and reports as a NativeException naming the token and the slot. Everything else
 * (shapes, dtypes, scales) is checked here before the call.
 *
 * <p>{@link #copyBlocks}'s block mapping is a <b>host</b> segment, fully validated here (ids in
 * range, distinct destinations, no destination that is a source); it and the per-layer pool
 * addresses are then copied into pinned staging and uploaded asynchronously in one copy.
 */
final class CudaKvCacheKernels implements KvCacheKernels {
    private final MemorySegment stream;
    private final CudaDeviceErrors errors;
    private final CudaStaging staging;

    CudaKvCacheKernels(MemorySegment stream, CudaDeviceErrors errors, CudaStaging staging) {
        this.stream = stream;
        this.errors = errors;
        this.staging = staging;
    }

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
        check("rkv_cuda_reshape_and_cache", radixkv_h.rkv_cuda_reshape_and_cache(k, v, srcDtype.code(), slotMapping,
                numTokens, l.numKvHeads(), l.headDim(), cache.kCache(), cache.vCache(), l.cacheDtype().code(),
                l.numPages(), l.pageSize(), cache.kScale(), cache.vScale(), errors.record(), stream));
    }

    @Override
    public void fp8Quantize(MemorySegment src, MemorySegment dst, long n, DType fp8Dtype, float scale) {
        KvCacheChecks.fp8("fp8Quantize", src, 4, dst, 1, n, fp8Dtype, scale);
        check("rkv_cuda_fp8_quantize", radixkv_h.rkv_cuda_fp8_quantize(src, dst, n, fp8Dtype.code(), scale, stream));
    }

    @Override
    public void fp8Dequantize(MemorySegment src, MemorySegment dst, long n, DType fp8Dtype, float scale) {
        KvCacheChecks.fp8("fp8Dequantize", src, 1, dst, 4, n, fp8Dtype, scale);
        check("rkv_cuda_fp8_dequantize", radixkv_h.rkv_cuda_fp8_dequantize(src, dst, n, fp8Dtype.code(), scale,
                stream));
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
    public synchronized void copyBlocks(List<KvCacheView> layers, MemorySegment blockMapping, long numPairs) {
        PagedKvLayout layout = KvCacheChecks.layers(layers);
        KvCacheChecks.blockMapping(blockMapping, numPairs, layout);
        if (numPairs == 0) {
            return;
        }
        // the K pool addresses, the V pool addresses, then the mapping: one pinned buffer, one upload
        int n = layers.size();
        long ptrBytes = 8L * n;
        long mapOffset = (2 * ptrBytes + 63) & ~63L;
        long mapBytes = 16L * numPairs;
        MemorySegment host = staging.host(mapOffset + mapBytes);
        for (int i = 0; i < n; i++) {
            host.setAtIndex(ValueLayout.ADDRESS, i, layers.get(i).kCache());
            host.setAtIndex(ValueLayout.ADDRESS, n + i, layers.get(i).vCache());
        }
        MemorySegment.copy(blockMapping, 0, host, mapOffset, mapBytes);
        MemorySegment dev = staging.upload(mapOffset + mapBytes);
        check("rkv_cuda_copy_blocks", radixkv_h.rkv_cuda_copy_blocks(dev.asSlice(0, ptrBytes),
                dev.asSlice(ptrBytes, ptrBytes), n, dev.asSlice(mapOffset, mapBytes), numPairs, layout.pageBytes(),
                layout.numPages(), errors.record(), stream));
    }
}
