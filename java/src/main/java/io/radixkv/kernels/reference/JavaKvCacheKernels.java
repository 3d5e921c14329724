package io.radixkv.kernels.reference;

import io.radixkv.kernels.DType;
import io.radixkv.kernels.KvCacheChecks;
import io.radixkv.kernels.KvCacheKernels;
import io.radixkv.kernels.KvCacheView;
import io.radixkv.kernels.PagedKvLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;

/**
 * Plain-Java {@link KvCacheKernels}: element-by-element loops over {@link JavaConversions}.
 * The independent reference for tests and the baseline in benchmarks; shares only the
 * argument validation with the native backends.
 */
public final class JavaKvCacheKernels implements KvCacheKernels {
    @Override
    public void reshapeAndCache(MemorySegment k, MemorySegment v, DType srcDtype, MemorySegment slotMapping,
                                long numTokens, KvCacheView cache) {
        KvCacheChecks.reshapeAndCacheShapes(k, v, srcDtype, slotMapping, numTokens, cache);
        KvCacheChecks.slots(slotMapping, numTokens, cache.layout());
        PagedKvLayout l = cache.layout();
        long row = l.tokenElements();
        DType cd = l.cacheDtype();
        for (long t = 0; t < numTokens; t++) {
            long slot = slotMapping.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, t);
            if (slot < 0) {
                continue; // padding
            }
            // row of slot s: page s / pageSize, offset s % pageSize, heads and dims after it
            long page = slot / l.pageSize();
            long offset = slot % l.pageSize();
            long base = (page * l.pageSize() + offset) * row;
            for (long e = 0; e < row; e++) {
                JavaConversions.convertElement(k, srcDtype, t * row + e, cache.kCache(), cd, base + e, cache.kScale());
                JavaConversions.convertElement(v, srcDtype, t * row + e, cache.vCache(), cd, base + e, cache.vScale());
            }
        }
    }

    @Override
    public void fp8Quantize(MemorySegment src, MemorySegment dst, long n, DType fp8Dtype, float scale) {
        KvCacheChecks.fp8("fp8Quantize", src, 4, dst, 1, n, fp8Dtype, scale);
        for (long i = 0; i < n; i++) {
            JavaConversions.convertElement(src, DType.F32, i, dst, fp8Dtype, i, scale);
        }
    }

    @Override
    public void fp8Dequantize(MemorySegment src, MemorySegment dst, long n, DType fp8Dtype, float scale) {
        KvCacheChecks.fp8("fp8Dequantize", src, 1, dst, 4, n, fp8Dtype, scale);
        for (long i = 0; i < n; i++) {
            JavaConversions.convertElement(src, fp8Dtype, i, dst, DType.F32, i, scale);
        }
    }

    @Override
    public void convert(MemorySegment src, DType srcDtype, MemorySegment dst, DType dstDtype, long n, float scale) {
        KvCacheChecks.convert(src, srcDtype, dst, dstDtype, n, scale);
        for (long i = 0; i < n; i++) {
            JavaConversions.convertElement(src, srcDtype, i, dst, dstDtype, i, scale);
        }
    }

    @Override
    public void copyBlocks(List<KvCacheView> layers, MemorySegment blockMapping, long numPairs) {
        PagedKvLayout layout = KvCacheChecks.layers(layers);
        KvCacheChecks.blockMapping(blockMapping, numPairs, layout);
        long pb = layout.pageBytes();
        for (KvCacheView c : layers) {
            for (long p = 0; p < numPairs; p++) {
                long from = blockMapping.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, 2 * p);
                long to = blockMapping.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, 2 * p + 1);
                MemorySegment.copy(c.kCache(), from * pb, c.kCache(), to * pb, pb);
                MemorySegment.copy(c.vCache(), from * pb, c.vCache(), to * pb, pb);
            }
        }
    }
}
